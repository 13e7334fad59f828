"""Handoff: a fresh, short session for the next phase, started from the parent's frontier.

A long session carries its whole transcript (or a summary of it) into every request. A
handoff starts a new session instead, linked to its parent (header ``parentSession``),
whose history begins with the frontier - what survives a compaction: the goal, the plan,
the skills in use, the task list, the last steps, the files read and changed, the user's
own requests - and not with a summary of the transcript. The old transcript stays in the
parent's file, where ``search_history`` in the child still reaches it (:func:`lineage`).

Everything the child's requests are derived from is in the child's file, so a process
that reopens it sends the same bytes as the one that created it:

- a ``heron.goal`` entry with the parent's goal (its budget and what was spent on it), so
  the goal keeps leading every request and its budget keeps counting (the frontier
  message leaves it out: the request carries it once, at its head);
- a ``heron.todos`` entry with the parent's task list (the ``todo`` tool continues it);
- a ``custom_message`` of type ``heron.handoff`` whose content is the rendered frontier
  (a user message in the request) and whose details name the parent and the lineage.

The parent records the handoff too: a ``custom`` entry ``heron.handoff`` naming the child.
Memory needs no copy: it is project memory, read into the child's system prompt as into
every session's. The draft first prompt is the focus text (or a default); the caller
decides whether it is sent (print mode) or edited first (interactive, rpc).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from heron.agent.messages import AgentMessage
from heron.coding.handoff_link import HANDOFF_CUSTOM_TYPE, lineage
from heron.context.compaction.plan import collect_files, collect_user_requests
from heron.context.compaction.summary.summary_text import file_lists_text
from heron.context.continuity.goal import GOAL_CUSTOM_TYPE, Goal
from heron.context.continuity.kept_plan import PLAN_CUSTOM_TYPE, plan_before, render_plan
from heron.context.continuity.kept_skills import SKILL_CUSTOM_TYPE, SkillUse, render_skills, skills_before
from heron.context.continuity.recent_steps import steps_before
from heron.context.continuity.todos import TODOS_CUSTOM_TYPE, TodoItem, render_todos
from heron.session.entries import MessageEntry
from heron.session.store import SessionStore

if TYPE_CHECKING:
    from heron.agent.tool_meta import ToolCatalog
    from heron.coding.goal import GoalKeeper
    from heron.coding.settings import Settings

HANDOFF_COMMAND = "/handoff"
DEFAULT_DRAFT = "Continue from the handoff above: take the next open step toward the goal."
HEADER = (
    "This session continues the work of an earlier session (a handoff: a fresh session for the next "
    "phase). Its full history is not in this context; search_history finds anything in it. Where the "
    "work stands:"
)
STEPS_HEADER = "The last steps of the earlier session (oldest first):"
TODOS_HEADER = "The task list you were keeping (todo tool):"
FILES_HEADER = "Files read and changed in the earlier session, and the user's own requests there:"
LINEAGE_DEPTH = 64  # ancestors kept in a child's lineage (a chain of handoffs is never that long)


class HandoffError(ValueError):
    """A handoff that cannot be made (nothing recorded, nothing to hand off)."""


@dataclass(frozen=True, slots=True)
class Handoff:
    """The child session (open for writing) and its draft first prompt."""

    child: SessionStore
    draft: str
    frontier: str


def draft_prompt(focus: str | None) -> str:
    """The first prompt offered in the child: the focus text, else a default."""
    text = (focus or "").strip()
    return text if text else DEFAULT_DRAFT


@dataclass(frozen=True, slots=True)
class _Kept:
    """What the parent's path records that the child keeps as entries as well: the plan and
    the skills (a compaction in the child then carries them on, as in the parent)."""

    plan: str | None
    skills: tuple[SkillUse, ...]


def _kept(store: SessionStore, ids: Sequence[str], types: Sequence[str]) -> _Kept:
    return _Kept(plan_before(store.get, ids, types, len(ids)), tuple(skills_before(store.get, ids, types, len(ids))))


class HandoffSource(Protocol):
    """What a handoff uses of the session it leaves: the store its child is made beside and
    its path read from, the goal and task list the child is seeded with, the catalog that
    names the files the path touched, the continuity settings, and the home of its files."""

    @property
    def store(self) -> SessionStore: ...

    @property
    def home(self) -> Path: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def goal(self) -> GoalKeeper: ...

    @property
    def todos(self) -> list[TodoItem]: ...

    @property
    def tool_catalog(self) -> ToolCatalog: ...


def frontier_text(session: HandoffSource, kept: _Kept) -> str:
    """The parent's frontier, rendered from its path (a pure function of the file). The
    goal is not in it: the child's ``heron.goal`` entry already puts the goal at the head
    of every request (:mod:`heron.context.continuity.goal`), and a second copy here would only make
    the first request carry it twice."""
    store = session.store
    ids, types = store.lineage(store.leaf_id)
    stop = len(ids)
    settings = session.settings.continuity
    blocks = [HEADER]
    plan = render_plan(kept.plan, [])
    if plan is not None:
        blocks.append(plan)
    skills = render_skills(kept.skills, [], per_skill=settings.skill_tokens, total=settings.skills_tokens)
    if skills is not None:
        blocks.append(skills)
    todos = session.todos
    if todos:
        blocks.append(f"{TODOS_HEADER}\n{render_todos(todos)}")
    steps = steps_before(store.get, ids, types, stop, settings.recent_steps)
    if steps:
        blocks.append("\n".join([STEPS_HEADER, *steps]))
    messages = _path_messages(store, ids, types)
    read, modified = collect_files(messages, {}, session.tool_catalog)
    files = file_lists_text(read, modified, collect_user_requests(messages, {}))
    if files:
        blocks.append(f"{FILES_HEADER}\n{files}")
    return "\n\n".join(blocks)


def _path_messages(store: SessionStore, ids: Sequence[str], types: Sequence[str]) -> list[AgentMessage]:
    out: list[AgentMessage] = []
    for entry_id, kind in zip(ids, types, strict=True):
        if kind == "message" and isinstance(entry := store.get(entry_id), MessageEntry):
            out.append(entry.message)
    return out


def hand_off(session: HandoffSource, focus: str | None = None) -> Handoff:
    """Create the child of ``session``'s store (the caller switches to it) and record the
    handoff in both files."""
    parent = session.store
    if parent.path is None:
        raise HandoffError("this session is not recorded (--no-session): there is no parent file to link to")
    if parent.leaf_id is None:
        raise HandoffError("the session has no entries yet: nothing to hand off")
    goal, spent = session.goal.spent()
    kept = _kept(parent, *parent.lineage(parent.leaf_id))
    frontier = frontier_text(session, kept)
    child = SessionStore.create(
        parent.header.cwd, home=session.home, parent_session=str(parent.path), fsync=parent.fsync
    )
    child.scrub = parent.scrub  # the secret redactor, as a fork keeps it
    # The parent's record first: the child, written last, is the newest file (`--continue`).
    parent.append_custom(
        HANDOFF_CUSTOM_TYPE,
        {"child": str(child.path), "childId": child.session_id, "focus": (focus or "").strip() or None},
    )
    _seed_child(child, goal, spent, session.todos, kept)
    _introduce(child, parent, frontier)
    return Handoff(child=child, draft=draft_prompt(focus), frontier=frontier)


def _seed_child(
    child: SessionStore,
    goal: Goal | None,
    spent: int,
    todos: Sequence[TodoItem],
    kept: _Kept,
) -> None:
    """The entries the child's state is read from: goal, task list, plan, skills."""
    if goal is not None:
        child.append_custom(GOAL_CUSTOM_TYPE, {"text": goal.text, "budget": goal.budget, "spent": spent})
    if todos:
        child.append_custom(TODOS_CUSTOM_TYPE, {"todos": [dict(item) for item in todos]})
    if kept.plan is not None:
        child.append_custom(PLAN_CUSTOM_TYPE, {"text": kept.plan})
    for use in kept.skills:
        child.append_custom(SKILL_CUSTOM_TYPE, use.to_data())


def _introduce(child: SessionStore, parent: SessionStore, frontier: str) -> None:
    """The frontier message, naming the parent and the lineage; the file written at once."""
    details = {
        "parentSession": str(parent.path),
        "parentId": parent.session_id,
        "parentLeaf": parent.leaf_id,
        "lineage": [parent.session_id, *lineage(parent)][:LINEAGE_DEPTH],
    }
    child.append_custom_message(HANDOFF_CUSTOM_TYPE, frontier, display=True, details=details)
    child.materialize()  # the rpc response and `--continue` name this file before its first prompt
