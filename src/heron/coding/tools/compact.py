"""The ``compact`` tool: the model asks heron to compact the context at a point it chooses.

The call itself changes nothing: heron's context owner finds the answered call in the
conversation (by its ``compact`` kind, :mod:`heron.context.boundaries`) before the next
request and runs the compaction there, with ``focus`` as what the summary must keep. The
usual bounds hold: a compaction that would save less than 5% is not written, and at most
one compaction runs per turn unless the window forces another (docs/context.md).
"""

from __future__ import annotations

from pydantic import Field

from heron.agent.tool_meta import ToolMeta
from heron.agent.tools import AgentTool, ToolParams, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.tools.env import ToolEnv

MAX_FOCUS = 2_000


class CompactParams(ToolParams):
    focus: str | None = Field(
        default=None,
        max_length=MAX_FOCUS,
        description="What the summary must keep (the task at hand, a decision, an exact error...)",
    )


class CompactTool(AgentTool[CompactParams]):
    name = "compact"
    label = "Compact"
    meta = ToolMeta(kind="compact")
    parameters = CompactParams
    description = (
        "Compact the conversation before your next request: older messages are replaced by a summary "
        "(the task list, the user's requests and recently read files are kept). Call it when a piece of "
        "work is done and its details are no longer needed; `focus` says what the summary must keep. "
        "Nothing happens if it would save less than 5% or a compaction already ran in this turn."
    )

    def __init__(self, env: ToolEnv) -> None:
        self.env = env

    async def execute(
        self, call_id: str, params: CompactParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        focus = (params.focus or "").strip()
        text = "Compaction requested: it runs before your next request"
        text += f", keeping: {focus}" if focus else "."
        return ToolResult.text(text, details={"focus": focus or None})
