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
from typing import TYPE_CHECKING

from heron.agent.events import ToolExecutionEndEvent
from heron.agent.messages import AgentMessage
from heron.ai.types import AssistantMessage, StopReason, TextContent
from heron.coding.skills import parse_skill_command
from heron.context.continuity.kept_plan import PLAN_CUSTOM_TYPE
from heron.context.continuity.kept_skills import SKILL_CUSTOM_TYPE, SkillUse, is_skill_path, is_skill_read, read_body

if TYPE_CHECKING:
    from heron.coding.runtime import CodingSession


def record_skill_prompt(session: CodingSession, typed: str, expanded: str) -> None:
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


def record_skill_read(session: CodingSession, event: ToolExecutionEndEvent) -> None:
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


def record_plan(session: CodingSession, added: list[AgentMessage]) -> None:
    """A prompt run in plan mode that ended with an answer: that answer is the plan."""
    if session.control.permissions.mode != "plan":
        return
    last = next((m for m in reversed(added) if isinstance(m, AssistantMessage)), None)
    if last is None or last.stop_reason != StopReason.STOP or last.tool_calls():
        return
    text = last.text().strip()
    if text:
        session.store.append_custom(PLAN_CUSTOM_TYPE, {"text": text})
