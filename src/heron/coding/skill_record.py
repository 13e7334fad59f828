"""Recording what the model must keep following - the skills it was given, the plan it
proposed - so both survive compactions.

Skills come two ways: the user types ``/skill:name`` (the prompt carries the skill's body)
or the model reads a ``SKILL.md``. Each is recorded as a ``heron.skill`` entry holding the
text the model saw (:mod:`heron.context.continuity.kept_skills`). A plan is the model's final answer
to a prompt run in plan mode, recorded as a ``heron.plan`` entry
(:mod:`heron.context.continuity.kept_plan`). After a compaction the view re-injects both verbatim.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from heron.agent.events import ToolExecutionEndEvent
from heron.agent.messages import AgentMessage
from heron.ai.types import AssistantMessage, StopReason, TextContent
from heron.coding.skills import parse_skill_command
from heron.context.continuity.kept_plan import PLAN_CUSTOM_TYPE
from heron.context.continuity.kept_skills import SKILL_CUSTOM_TYPE, SkillUse, is_skill_path, is_skill_read, read_body

if TYPE_CHECKING:
    from heron.agent.agent import Agent
    from heron.agent.tool_meta import ToolCatalog
    from heron.coding.control import Control
    from heron.coding.skills import SkillSet
    from heron.session.store import SessionStore


class Recorded(Protocol):
    """The store every record goes in."""

    @property
    def store(self) -> SessionStore: ...


class SkillPromptHost(Recorded, Protocol):
    """A typed skill: the session's skills name it."""

    @property
    def skills(self) -> SkillSet: ...


class SkillReadHost(Recorded, Protocol):
    """A read skill: the call found among the agent's messages, its path read by the
    catalog and resolved from where the session runs."""

    @property
    def agent(self) -> Agent: ...

    @property
    def tool_catalog(self) -> ToolCatalog: ...

    @property
    def cwd(self) -> Path: ...


class PlanHost(Recorded, Protocol):
    """A plan: only in plan mode, which control's permissions hold."""

    @property
    def control(self) -> Control: ...


def record_skill_prompt(session: SkillPromptHost, typed: str, expanded: str) -> None:
    """``/skill:name args`` expanded: the ``<skill>`` block the prompt carries, recorded."""
    parsed = parse_skill_command(typed) if expanded != typed else None
    skill = session.skills.get(parsed[0]) if parsed is not None else None
    if skill is None:
        return
    end = expanded.find("</skill>")
    if end < 0:
        return
    body = expanded[: end + len("</skill>")]
    session.store.append_custom(SKILL_CUSTOM_TYPE, SkillUse(skill.name, str(skill.file_path), body).to_data())


def record_skill_read(session: SkillReadHost, event: ToolExecutionEndEvent) -> None:
    """A read of a ``SKILL.md`` that succeeded: the text it returned, recorded."""
    if event.is_error or session.tool_catalog.kind(event.tool_name) != "read":
        return
    call = next(
        (
            c
            for m in reversed(session.agent.state.messages)
            if isinstance(m, AssistantMessage)
            for c in m.tool_calls()
            if c.id == event.tool_call_id
        ),
        None,
    )
    if not is_skill_read(call, session.tool_catalog) or call is None:
        return
    use = next(u for u in session.tool_catalog.uses(call) if is_skill_path(u.path))
    text = "".join(b.text for b in event.result.content if isinstance(b, TextContent))
    if not text:
        return
    path = use.resolved(session.cwd)
    body = read_body(use.path, text)
    session.store.append_custom(SKILL_CUSTOM_TYPE, SkillUse(Path(path).parent.name, path, body).to_data())


def record_plan(session: PlanHost, added: list[AgentMessage]) -> None:
    """A prompt run in plan mode that ended with an answer: that answer is the plan."""
    if session.control.permissions.mode != "plan":
        return
    last = next((m for m in reversed(added) if isinstance(m, AssistantMessage)), None)
    if last is None or last.stop_reason != StopReason.STOP or last.tool_calls():
        return
    text = last.text().strip()
    if text:
        session.store.append_custom(PLAN_CUSTOM_TYPE, {"text": text})
