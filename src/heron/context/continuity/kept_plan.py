"""The plan: the model's answer in plan mode, kept verbatim through compactions.

In plan mode the model may only read; its final answer there is the plan it proposes.
The coding layer records that answer as a ``custom`` entry of type ``heron.plan`` (the
latest one on the path is the plan; one with a null ``text`` clears it). After a
compaction the view puts the plan recorded before it after the summary - verbatim - unless
the kept messages still hold it, so the plan being executed is never reduced to a line of
summary. Leaving plan mode keeps it: only a newer plan replaces it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from heron.agent.messages import AgentMessage
from heron.ai.types import AssistantMessage
from heron.session.entries import CustomEntry, Entry

PLAN_CUSTOM_TYPE = "heron.plan"
PLAN_MESSAGE_TYPE = "heron.plan"
HEADER = "The plan you proposed in plan mode; it is still the plan (verbatim):"


def plan_before(get: Callable[[str], Entry | None], ids: Sequence[str], types: Sequence[str], stop: int) -> str | None:
    """The plan recorded among the first ``stop`` entries of a path (None: none, or cleared)."""
    for index in range(stop - 1, -1, -1):
        if types[index] != "custom":
            continue
        entry = get(ids[index])
        if isinstance(entry, CustomEntry) and entry.custom_type == PLAN_CUSTOM_TYPE:
            text = entry.data.get("text") if isinstance(entry.data, dict) else None
            return text if isinstance(text, str) and text else None
    return None


def render_plan(plan: str | None, kept: Sequence[AgentMessage]) -> str | None:
    """The block for ``plan``, unless a kept answer still holds it."""
    if plan is None:
        return None
    if any(isinstance(m, AssistantMessage) and plan in m.text() for m in kept):
        return None
    return f"{HEADER}\n<plan>\n{plan}\n</plan>"
