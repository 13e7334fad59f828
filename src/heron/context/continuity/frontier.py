"""The frontier: where the agent is, injected after a compaction from the session path.

A summary keeps the facts; the frontier keeps the position: the plan proposed in plan
mode (:mod:`heron.context.continuity.kept_plan`), the skills whose instructions the model was
following (:mod:`heron.context.continuity.kept_skills`) and its last operational steps
(:mod:`heron.context.continuity.recent_steps`). The goal (:mod:`heron.context.continuity.goal`)
leads every request, compaction or not. Each block is a pure function of the entries
before the latest compaction on the path (and the kept messages), so a process that
opens the session later renders the same bytes, and the bytes do not change between
two compactions.

A compaction reads the frontier twice: to size the new view before writing (the entry
not yet on the path) and to build the view from the file after (the entry just written).
Both read the same entries - those before the compaction - so the second reuses the
first's reading (:func:`_recorded`); the kept messages, which can differ, are rendered
against each time.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from heron.agent.messages import AgentMessage, ExtensionMessage
from heron.context.continuity.kept_plan import PLAN_MESSAGE_TYPE, plan_before, render_plan
from heron.context.continuity.kept_skills import (
    SKILL_TOKENS,
    SKILLS_MESSAGE_TYPE,
    SKILLS_TOKENS,
    SkillUse,
    render_skills,
    skills_before,
)
from heron.context.continuity.recent_steps import RECENT_STEPS, STEPS_MESSAGE_TYPE, render_steps, steps_before
from heron.session.entries import Entry

FRONTIER_TYPES = frozenset({PLAN_MESSAGE_TYPE, SKILLS_MESSAGE_TYPE, STEPS_MESSAGE_TYPE})


@dataclass(frozen=True, slots=True)
class FrontierSettings:
    """``continuity.*`` settings: recent steps kept, skill budgets (tokens)."""

    recent_steps: int = RECENT_STEPS
    skill_tokens: int = SKILL_TOKENS
    skills_tokens: int = SKILLS_TOKENS


def compaction_frontier(
    get: Callable[[str], Entry | None],
    ids: Sequence[str],
    types: Sequence[str],
    compaction_index: int,
    kept: Sequence[AgentMessage],
    timestamp_ms: int,
    settings: FrontierSettings,
) -> list[AgentMessage]:
    """The plan, skills and recent-steps blocks of the compaction at ``compaction_index``."""
    out: list[AgentMessage] = []
    recorded = _recorded(get, ids, types, compaction_index, settings.recent_steps)
    plan = render_plan(recorded.plan, kept)
    if plan is not None:
        out.append(_message(PLAN_MESSAGE_TYPE, plan, timestamp_ms))
    skills = render_skills(recorded.skills, kept, per_skill=settings.skill_tokens, total=settings.skills_tokens)
    if skills is not None:
        out.append(_message(SKILLS_MESSAGE_TYPE, skills, timestamp_ms))
    steps = render_steps(recorded.steps)
    if steps is not None:
        out.append(_message(STEPS_MESSAGE_TYPE, steps, timestamp_ms))
    return out


def _message(kind: str, text: str, timestamp_ms: int) -> ExtensionMessage:
    return ExtensionMessage(custom_type=kind, content=text, display=False, timestamp=timestamp_ms)


@dataclass(frozen=True, slots=True)
class _Recorded:
    """What the entries before a compaction hold for its frontier."""

    plan: str | None
    skills: tuple[SkillUse, ...]
    steps: tuple[str, ...]


# The last reading, with the session it was read from (weakly: a closed session is not
# kept alive) and the key that fixes its entries: a path's entries before ``stop`` are the
# ancestors of its entry ``stop - 1``, and a session's entries never change once written.
_last: tuple[weakref.ref[Any], tuple[Any, str | None, int, int], _Recorded] | None = None


def _recorded(
    get: Callable[[str], Entry | None], ids: Sequence[str], types: Sequence[str], stop: int, steps: int
) -> _Recorded:
    global _last
    owner = getattr(get, "__self__", None)
    key = (getattr(get, "__func__", get), ids[stop - 1] if stop else None, stop, steps)
    last = _last
    if owner is not None and last is not None and last[0]() is owner and last[1] == key:
        return last[2]
    found = _Recorded(
        plan_before(get, ids, types, stop),
        tuple(skills_before(get, ids, types, stop)),
        tuple(steps_before(get, ids, types, stop, steps)),
    )
    if owner is not None:
        try:
            _last = (weakref.ref(owner), key, found)
        except TypeError:  # an entry source that cannot be weakly referenced: no reuse
            _last = None
    return found
