"""The ``goal`` tool: the model reports that the session's goal is met, or blocked.

Offered only while a goal is active (:mod:`heron.coding.goal_loop` adds it to a request's
tools, derived from the session). A call records a ``heron.goal.verdict`` entry through
the callback the loop gives; the loop reads it once the model's answer is in: ``complete``
ends the loop after that answer, ``blocked`` ends it and says why (docs/continuity.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from heron.agent.tools import AgentTool, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.tools import GOAL_META, GOAL_TOOL
from heron.coding.tools.schema_table import builtin_params
from heron.context.continuity.goal_loop import VerdictStatus

if TYPE_CHECKING:
    from heron.coding.tools.params import GoalParams

# Records the verdict; returns the text the model is told (ToolError when no goal is set).
RecordVerdict = Callable[[VerdictStatus, str], str]


class GoalTool(AgentTool["GoalParams"]):
    name = GOAL_TOOL
    label = "Goal"
    meta = GOAL_META
    parameters_ref = builtin_params("goal")
    description = (
        "Report on the session's goal (the <goal> block at the top of the conversation). "
        'status "complete" when it is met, with the evidence (what you ran, what changed): heron stops '
        'working on its own after your next answer. status "blocked" when you cannot go on without the '
        "user, with what you need and why: heron stops and asks them. Until then heron asks you to go on "
        "after each answer."
    )

    def __init__(self, record: RecordVerdict) -> None:
        self._record = record

    async def execute(
        self, call_id: str, params: GoalParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        evidence = params.evidence.strip()
        text = self._record(params.status, evidence)
        return ToolResult.text(text, details={"status": params.status, "evidence": evidence})
