"""The frontier: where the agent is, injected after a compaction from the session path.

A summary keeps the facts; the frontier keeps the position: the plan proposed in plan
mode (:mod:`heron.context.kept_plan`), the skills whose instructions the model was
following (:mod:`heron.context.kept_skills`) and its last operational steps
(:mod:`heron.context.recent_steps`). The goal (:mod:`heron.context.goal`)
leads every request, compaction or not. Each block is a pure function of the entries
before the latest compaction on the path (and the kept messages), so a process that
opens the session later renders the same bytes, and the bytes do not change between
two compactions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from heron.agent.messages import AgentMessage, ExtensionMessage
from heron.context.kept_plan import PLAN_MESSAGE_TYPE, plan_before, render_plan
from heron.context.kept_skills import SKILL_TOKENS, SKILLS_MESSAGE_TYPE, SKILLS_TOKENS, render_skills, skills_before
from heron.context.recent_steps import RECENT_STEPS, STEPS_MESSAGE_TYPE, render_steps, steps_before
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
    plan = render_plan(plan_before(get, ids, types, compaction_index), kept)
    if plan is not None:
        out.append(_message(PLAN_MESSAGE_TYPE, plan, timestamp_ms))
    skills = render_skills(
        skills_before(get, ids, types, compaction_index),
        kept,
        per_skill=settings.skill_tokens,
        total=settings.skills_tokens,
    )
    if skills is not None:
        out.append(_message(SKILLS_MESSAGE_TYPE, skills, timestamp_ms))
    steps = render_steps(steps_before(get, ids, types, compaction_index, settings.recent_steps))
    if steps is not None:
        out.append(_message(STEPS_MESSAGE_TYPE, steps, timestamp_ms))
    return out


def _message(kind: str, text: str, timestamp_ms: int) -> ExtensionMessage:
    return ExtensionMessage(custom_type=kind, content=text, display=False, timestamp=timestamp_ms)
