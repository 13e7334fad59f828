"""The ``task`` tool: hand a piece of work to a sub-agent and get its answer back.

The description lists the agent definitions found when the session started; it is
built once, so the tool definition sent with every request stays byte-identical.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from heron.agent.tools import AgentTool, ToolParams, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.subagents.definitions import AgentDefinitions
from heron.coding.tools import TASK_META

if TYPE_CHECKING:
    from heron.coding.subagents.manager import SubagentManager

MIN_WORDS, MAX_WORDS = 3, 7
MAX_LISTED = 30


class TaskParams(ToolParams):
    description: str = Field(description="What the sub-agent will do, in 3 to 7 words")
    prompt: str = Field(min_length=1, description="The whole task: everything the sub-agent needs to know")
    agent: str | None = Field(default=None, description="Name of an agent definition (default: a general agent)")
    context: Literal["isolated", "fork"] = Field(
        default="isolated",
        description='"isolated" (default): a fresh context with only the prompt; "fork": a copy of this '
        "conversation so far",
    )
    goal: bool | None = Field(
        default=None,
        description="true: give an isolated sub-agent this session's goal too (a fork always has it)",
    )


def task_description(definitions: AgentDefinitions) -> str:
    lines = [
        "Delegate a self-contained piece of work to a sub-agent, which works with its own context and returns "
        "its final answer (capped in length). Several task calls in one message run at the same time. Use "
        '"isolated" (the default) for work that needs only what the prompt says; "fork" when the sub-agent '
        "needs this conversation (it then has the same tools and sees everything so far).",
    ]
    agents = sorted(definitions.agents.values(), key=lambda a: a.name)
    if agents:
        lines.append("")
        lines.append("Agent definitions (the agent parameter):")
        lines += [f"- {a.name}: {a.description}" for a in agents[:MAX_LISTED]]
        if len(agents) > MAX_LISTED:
            lines.append(f"- ... and {len(agents) - MAX_LISTED} more")
    return "\n".join(lines)


class TaskTool(AgentTool[TaskParams]):
    name = "task"
    label = "Task"
    meta = TASK_META
    parameters = TaskParams

    def __init__(self, manager: SubagentManager) -> None:
        self.manager = manager
        self.description = task_description(manager.definitions)

    async def execute(
        self, call_id: str, params: TaskParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        words = len(params.description.split())
        if not MIN_WORDS <= words <= MAX_WORDS:
            return ToolResult.error(
                f"description must be {MIN_WORDS} to {MAX_WORDS} words (it has {words}): a short title for "
                "the task; put the task itself in prompt."
            )
        return await self.manager.run(call_id, params, signal, on_update)
