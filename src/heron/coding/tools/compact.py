"""The ``compact`` tool: the model asks heron to compact the context at a point it chooses.

The call itself changes nothing: heron's context owner finds the answered call in the
conversation (by its ``compact`` kind, :mod:`heron.context.compaction.boundaries`) before the next
request and runs the compaction there, with ``focus`` as what the summary must keep. The
usual bounds hold: a compaction that would save less than 5% is not written, and at most
one compaction runs per turn unless the window forces another (docs/context.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from heron.agent.tool_meta import ToolMeta
from heron.agent.tools import AgentTool, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.schema_table import builtin_params

if TYPE_CHECKING:
    from heron.coding.tools.params import CompactParams

MAX_FOCUS = 2_000


class CompactTool(AgentTool["CompactParams"]):
    name = "compact"
    label = "Compact"
    meta = ToolMeta(kind="compact")
    parameters_ref = builtin_params("compact")
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
