"""The ``task`` tool: hand a piece of work to a sub-agent and get its answer back.

The description lists the agent definitions found when the session started; it is
built once, so the tool definition sent with every request stays byte-identical.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from heron.agent.tools import AgentTool, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.subagents.definitions import AgentDefinitions
from heron.coding.tools import TASK_META
from heron.coding.tools.schema_table import builtin_params

if TYPE_CHECKING:
    from heron.coding.subagents.manager import SubagentManager
    from heron.coding.tools.params import TaskParams

MIN_WORDS, MAX_WORDS = 3, 7
MAX_LISTED = 30


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


class TaskTool(AgentTool["TaskParams"]):
    name = "task"
    label = "Task"
    meta = TASK_META
    parameters_ref = builtin_params("task")

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
