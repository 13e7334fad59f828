"""The goal of a session as the runtime keeps it: ``/goal`` in every mode, ``--goal``, the budget.

``/goal`` is read in one place, :meth:`CodingSession.prompt`, which every mode's prompt
goes through (print, json, rpc, ACP, the interactive mode), so it behaves the same
everywhere: ``/goal TEXT`` sets the goal, ``/goal --budget 200k TEXT`` with a token
budget, ``/goal --budget 300k`` changes the budget of the current goal, ``/goal`` shows
it, ``/goal clear`` removes it. The reply is the run's answer; no model call is made.

The goal itself is a ``heron.goal`` entry in the session (:mod:`heron.context.continuity.goal`): the
view puts it at the head of every request. This object writes those entries, keeps the
head of the agent's messages in step with them, and gives the agent loop the budget
check made before every model call (the same stop as ``--max-turns``,
:mod:`heron.agent.turn_limit`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from heron.agent.messages import AgentMessage
from heron.ai.overflow import ErrorKind
from heron.coding.events import GoalEvent
from heron.context.continuity.goal import (
    GOAL_CUSTOM_TYPE,
    Goal,
    GoalError,
    budget_stop_text,
    check_budget,
    check_text,
    goal_from_entry,
    goal_on_path,
    parse_budget,
    spent_on_path,
    with_goal,
)
from heron.context.continuity.path_fold import PathFold

if TYPE_CHECKING:
    from heron.agent.agent import Agent
    from heron.coding.events import SessionEvent
    from heron.session.store import SessionStore

GOAL_COMMAND = "/goal"
BUDGET_OPTION = "--budget"


@dataclass(frozen=True, slots=True)
class GoalRequest:
    """A parsed ``/goal`` command; parsed once so the session acts on the action rather than
    re-reading the text."""

    action: Literal["show", "set", "clear", "budget"]
    text: str = ""
    budget: int | None = None


def is_goal_command(text: str) -> bool:
    stripped = text.strip()
    return stripped == GOAL_COMMAND or stripped.startswith((GOAL_COMMAND + " ", GOAL_COMMAND + "\n"))


def parse_goal_args(args: str) -> GoalRequest:
    """What ``/goal ARGS`` asks for; :class:`GoalError` for bad input."""
    rest = args.strip()
    if not rest:
        return GoalRequest("show")
    if rest == "clear":
        return GoalRequest("clear")
    budget: int | None = None
    if rest == BUDGET_OPTION or rest.startswith(BUDGET_OPTION + " ") or rest.startswith(BUDGET_OPTION + "="):
        value, _, rest = rest[len(BUDGET_OPTION) :].lstrip(" =").partition(" ")
        if not value:
            raise GoalError("--budget needs a number of tokens: /goal --budget 200k TEXT")
        budget = parse_budget(value)
        if not rest.strip():
            return GoalRequest("budget", budget=budget)
    return GoalRequest("set", text=check_text(rest), budget=budget)


class GoalHost(Protocol):
    """What the goal keeper uses of its session: the store its goal entries live in (read
    anew each time: a session may switch stores) and the agent whose turn limit it gates
    and whose messages it counts."""

    @property
    def store(self) -> SessionStore: ...

    @property
    def agent(self) -> Agent: ...


class GoalCommandHost(Protocol):
    """What ``/goal`` uses of a session: its goal keeper, and its events for the answer."""

    @property
    def goal(self) -> GoalKeeper: ...

    def emit(self, event: SessionEvent) -> None: ...


class GoalKeeper:
    """The goal of one :class:`CodingSession`: its entries, the request head, the budget."""

    def __init__(self, session: GoalHost) -> None:
        self.session = session
        self._tokens: dict[str, int] = {}  # answer tokens by entry id (entries never change)
        # the goal on the leaf's path and its index, read before every request: only the
        # entries added since the last request are looked at (heron.context.continuity.path_fold)
        self._fold: PathFold[tuple[Goal | None, int]] = PathFold(_goal_on_store, _goal_step)
        session.agent.turn_limit.gate = self._gate

    def _path(self) -> tuple[list[str], list[str]]:
        store = self.session.store
        if store.leaf_id is None:
            return [], []
        ids, types = store.lineage(store.leaf_id)
        return list(ids), list(types)

    def _on_path(self) -> tuple[Goal | None, int]:
        """:func:`goal_on_path` for the leaf's path, and the goal entry's index on it."""
        return self._fold.get(self.session.store)

    def current(self) -> Goal | None:
        return self._on_path()[0]

    def position(self) -> int:
        """The index of the goal's entry on the leaf's path (-1: none)."""
        return self._on_path()[1]

    def spent(self) -> tuple[Goal | None, int]:
        """The goal and the tokens spent for it so far (every answer since it was set)."""
        goal, index = self._on_path()
        if goal is None:
            return None, 0
        ids, types = self._path()
        store = self.session.store
        return goal, spent_on_path(goal, store.get, ids, types, index, self._tokens, store.role_of)

    def set(self, text: str, budget: int | None = None) -> Goal:
        """A new goal (its budget counts from now)."""
        checked = check_budget(budget) if budget is not None else None  # a number from the SDK is checked too
        return self._write(Goal(text=check_text(text), budget=checked))

    def adopt(self, text: str, budget: int | None) -> None:
        """``--goal``: set, unless it is already the goal (``--continue`` with the same flag)."""
        goal = self.current()
        if goal is None or goal.text != check_text(text) or goal.budget != budget:
            self.set(text, budget)

    def clear(self) -> None:
        if self.current() is not None:
            self.session.store.append_custom(GOAL_CUSTOM_TYPE, {"text": None})
        self.refresh()

    def _write(self, goal: Goal) -> Goal:
        store = self.session.store
        store.append_custom(GOAL_CUSTOM_TYPE, goal.to_data())
        store.materialize()  # a goal set before any prompt (`-p "/goal …"`) is kept for `--continue`
        self.refresh()
        return self.current() or goal

    def refresh(self) -> None:
        """The agent's messages led by the goal on the path, as a new process builds them."""
        messages = self.session.agent.state.messages
        messages[:] = with_goal(messages, self.current())

    def before_prompt(self) -> None:
        """A new prompt with a budgeted goal: the goal written again with what is spent, so
        the block tells the budget left (the same figure a resumed process reads)."""
        goal, spent = self.spent()
        if goal is not None and goal.budget is not None and spent != goal.spent:
            self._write(Goal(text=goal.text, budget=goal.budget, spent=spent))

    def _gate(self) -> tuple[str, str] | None:
        goal, spent = self.spent()
        if goal is None or goal.budget is None or spent < goal.budget:
            return None
        return budget_stop_text(goal, spent), ErrorKind.GOAL_BUDGET.value

    def command(self, text: str) -> str:
        """The reply to a typed ``/goal ...`` (bad input: :class:`GoalError`)."""
        request = parse_goal_args(text.strip()[len(GOAL_COMMAND) :])
        if request.action == "clear":
            had = self.current() is not None
            self.clear()
            return "Goal cleared." if had else "There is no goal to clear."
        if request.action == "set":
            return "Goal set.\n\n" + describe(self.set(request.text, request.budget), 0)
        if request.action == "budget":
            goal, spent = self.spent()
            if goal is None:
                raise GoalError("there is no goal to give a budget: /goal --budget 200k TEXT")
            updated = self._write(Goal(text=goal.text, budget=request.budget, spent=spent))
            return "Goal budget changed.\n\n" + describe(updated, spent)
        goal, spent = self.spent()
        return describe(goal, spent) if goal is not None else "No goal is set (/goal TEXT sets one)."


_Found = tuple[Goal | None, int]  # the goal on a path and its entry's index (-1: none)


def _goal_on_store(store: SessionStore) -> tuple[_Found, int]:
    if store.leaf_id is None:
        return (None, -1), 0
    ids, types = store.lineage(store.leaf_id)
    return goal_on_path(store.get, ids, types), len(ids)


def _goal_step(
    found: tuple[Goal | None, int], store: SessionStore, entry_id: str, index: int
) -> tuple[Goal | None, int]:
    if store.type_of(entry_id) == "custom" and (goal := goal_from_entry(store.get(entry_id))) is not False:
        return (goal if isinstance(goal, Goal) else None), index
    return found


def describe(goal: Goal, spent: int) -> str:
    """The goal as ``/goal``, ``/context`` and ``heron sessions context`` show it."""
    lines = [goal.text]
    if goal.budget is not None:
        lines.append(f"budget: {spent:,} of {goal.budget:,} tokens spent, {max(0, goal.budget - spent):,} left")
    return "\n".join(lines)


def status_text(goal: Goal | None, spent: int, width: int = 40) -> str | None:
    """The goal in a status line: its first line, cut to ``width``, with the budget used."""
    if goal is None:
        return None
    first = goal.text.splitlines()[0] if goal.text else ""
    shown = first if len(first) <= width else first[: width - 1] + "…"
    if goal.budget is not None:
        shown += f" ({min(100, spent * 100 // goal.budget)}% of budget)"
    return f"goal: {shown}"


def goal_command(session: GoalCommandHost, text: str) -> list[AgentMessage]:
    """Answer a typed ``/goal ...`` with a :class:`GoalEvent` (the run's answer); no model call."""
    try:
        reply, error = session.goal.command(text), False
    except GoalError as exc:
        reply, error = f"/goal: {exc}", True
    goal, spent = session.goal.spent()
    session.emit(
        GoalEvent(
            reply=reply,
            error=error,
            goal=goal.text if goal is not None else None,
            budget=goal.budget if goal is not None else None,
            spent=spent,
        )
    )
    return []


def goal_summary(store: SessionStore) -> dict[str, Any] | None:
    """The goal on the store's leaf path for ``/context`` and ``heron sessions context``."""
    if store.leaf_id is None:
        return None
    ids, types = store.lineage(store.leaf_id)
    goal, index = goal_on_path(store.get, ids, types)
    if goal is None:
        return None
    spent = spent_on_path(goal, store.get, ids, types, index, role_of=store.role_of)
    return {"text": goal.text, "budget": goal.budget, "spent": spent}


def goal_lines(summary: dict[str, Any] | None) -> list[str]:
    """The goal as the context breakdown lists it (nothing without one)."""
    if not summary:
        return []
    goal = Goal(text=summary["text"], budget=summary.get("budget"))
    lines = ["goal (at the head of every request, verbatim):"]
    return lines + ["  " + line for line in describe(goal, summary.get("spent") or 0).splitlines()]
