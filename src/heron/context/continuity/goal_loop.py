"""The goal loop's state on a path, derived from the session file alone.

While a goal is set (:mod:`heron.context.continuity.goal`), heron goes on by itself after
each answer (:mod:`heron.coding.goal_loop`). Whether it goes on is read from the entries of
the path, so a process that resumes the session (``heron -p --continue``) decides what the
process that stopped would have decided:

- ``heron.goal.verdict`` custom entries: the model's report through the ``goal`` tool
  (``complete`` or ``blocked``, with its evidence), or the evaluator's judgement that the
  goal is met (``source: "evaluator"``);
- ``heron.goal.evaluation`` custom entries: the evaluator's judgement that it is not met
  yet, with its reason, which the next continuation carries;
- ``heron.goal.continue`` messages: the continuations heron sent (custom messages, a user
  message for the model). The text is fixed - the same bytes every time - unless an
  evaluation's reason follows it;
- the user's own messages: each starts a new allowance of continuations; one after a
  ``blocked`` verdict takes the loop up again (the user answered what blocked it); one
  after a ``complete`` verdict ends the offer of the ``goal`` tool.

A goal entry with another text (or one clearing the goal) starts everything afresh; the
same goal written again (a budgeted goal is, at each prompt, with what it has spent; a
new budget) keeps its state. The state is a fold over the entries from the first entry
of that goal on (:func:`fold`, :func:`goal_start`), so it can be kept up to date one entry
at a time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from heron.agent.messages import ExtensionMessage
from heron.context.continuity.goal import Goal, goal_from_entry, goal_on_path
from heron.session.entries import CustomEntry, Entry, MessageEntry

VERDICT_TYPE = "heron.goal.verdict"
EVALUATION_TYPE = "heron.goal.evaluation"
CONTINUATION_TYPE = "heron.goal.continue"
DEFAULT_GOAL_TURNS = 20  # automatic continuations per prompt of the user (goal.maxTurns)
MAX_EVIDENCE_CHARS = 4_000

# What heron sends after an answer while the goal is active: short, and the same bytes
# every time, so the request's prefix stays cached and nothing varies between processes.
CONTINUATION_TEXT = (
    "[heron: goal loop] Go on toward the goal on your own. When it is met, call the goal tool "
    'with status "complete" and the evidence; if you cannot go on without the user, call it '
    'with status "blocked" and say why.'
)

Status = Literal["none", "active", "complete", "blocked"]
VerdictStatus = Literal["complete", "blocked"]


@dataclass(frozen=True, slots=True)
class GoalSettings:
    """``goal.*`` settings: ``maxTurns`` automatic continuations per prompt of the user (0:
    the loop is off, the goal only leads the requests), ``evaluator`` a model (``provider/id``)
    that judges after each step whether the goal is met."""

    max_turns: int = DEFAULT_GOAL_TURNS
    evaluator: str | None = None


def goal_settings(data: Mapping[str, Any]) -> GoalSettings:
    """From the checked ``goal`` object of the settings files."""
    return GoalSettings(max_turns=data.get("maxTurns", DEFAULT_GOAL_TURNS), evaluator=data.get("evaluator"))


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the goal evaluator said of a step: met or not, and why (its reason steers the next)."""

    status: VerdictStatus
    evidence: str
    source: str = "tool"  # "tool" (the model) or "evaluator"


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The evaluator's "not met yet": its reason (None when it failed) and its model."""

    reason: str | None
    model: str


@dataclass(frozen=True, slots=True)
class LoopState:
    """The loop on a path: the goal, whether a prompt or continuation came since it was set
    (the loop has started), the latest verdict that still holds, whether the user spoke
    after it, the continuations since the user last spoke (or the goal was set), and an
    evaluation recorded after the last message, not acted on yet."""

    goal: Goal | None = None
    started: bool = False
    verdict: Verdict | None = None
    prompted: bool = False
    continuations: int = 0
    evaluation: Evaluation | None = None

    @property
    def status(self) -> Status:
        if self.goal is None:
            return "none"
        return self.verdict.status if self.verdict is not None else "active"

    @property
    def offers_tool(self) -> bool:
        """The ``goal`` tool is offered from the goal's setting until the user's first
        message after a ``complete`` verdict: the tools change once when the goal is set and
        once after it is met, never within the run that met it."""
        return self.goal is not None and not (self.status == "complete" and self.prompted)


def verdict_data(status: VerdictStatus, evidence: str, source: str, model: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"status": status, "evidence": evidence, "source": source}
    if model is not None:
        data["model"] = model
    return data


def evaluation_data(reason: str | None, model: str, error: str | None = None) -> dict[str, Any]:
    return {"met": False, "reason": reason, "model": model, "error": error}


def _verdict(data: Any) -> Verdict | None:
    if not isinstance(data, dict) or data.get("status") not in ("complete", "blocked"):
        return None
    evidence = data.get("evidence")
    return Verdict(data["status"], evidence if isinstance(evidence, str) else "", str(data.get("source") or "tool"))


def _evaluation(data: Any) -> Evaluation | None:
    if not isinstance(data, dict):
        return None
    reason = data.get("reason")
    return Evaluation(reason if isinstance(reason, str) and reason else None, str(data.get("model") or ""))


def fold(state: LoopState, kind: str, role: str | None, entry: Callable[[], Entry | None]) -> LoopState:
    """``state`` after one more entry of the path (``kind``: its type, ``role``: a message's
    role; ``entry`` decodes it, asked only for custom entries and custom messages)."""
    if kind == "custom":
        found = entry()
        goal = goal_from_entry(found)
        if isinstance(goal, Goal) and state.goal is not None and goal.text == state.goal.text:
            return dataclasses.replace(state, goal=goal)  # the same goal written again (its budget)
        if goal is not False:
            return LoopState(goal=goal if isinstance(goal, Goal) else None)
        custom = found.custom_type if isinstance(found, CustomEntry) else ""
        if custom == VERDICT_TYPE and (verdict := _verdict(found.data)) is not None:  # type: ignore[union-attr]
            return dataclasses.replace(state, verdict=verdict, prompted=False)
        if custom == EVALUATION_TYPE and (evaluation := _evaluation(found.data)) is not None:  # type: ignore[union-attr]
            return dataclasses.replace(state, evaluation=evaluation)
        return state
    if kind != "message":
        return state
    if role == "user":
        verdict = state.verdict if state.verdict is not None and state.verdict.status == "complete" else None
        return dataclasses.replace(
            state, started=True, verdict=verdict, prompted=verdict is not None, continuations=0, evaluation=None
        )
    if role == "custom" and is_continuation(_message_of(entry())):
        return dataclasses.replace(state, started=True, continuations=state.continuations + 1, evaluation=None)
    return dataclasses.replace(state, evaluation=None) if state.evaluation is not None else state


def goal_start(get: Callable[[str], Entry | None], ids: Sequence[str], types: Sequence[str], latest: int) -> int:
    """Where the fold starts: the first of the entries that set the goal at ``latest`` (the
    latest goal entry) with the same text, one after another (-1: no goal)."""
    if latest < 0:
        return latest
    goal = goal_from_entry(get(ids[latest]))
    start = latest
    while isinstance(goal, Goal):
        earlier, index = goal_on_path(get, ids, types, before=start)
        if earlier is None or earlier.text != goal.text:
            break
        start = index
    return start


def _message_of(entry: Entry | None) -> Any:
    return entry.message if isinstance(entry, MessageEntry) else None


def is_continuation(message: Any) -> bool:
    return isinstance(message, ExtensionMessage) and message.custom_type == CONTINUATION_TYPE


def continuation(evaluation: Evaluation | None = None) -> ExtensionMessage:
    """The message heron sends to go on: the fixed text, then the evaluator's reason when
    one judged the last step (shown in the conversation as a step of the loop)."""
    text = CONTINUATION_TEXT
    if evaluation is not None and evaluation.reason:
        text += (
            f"\n\n<goal-check>\nNot met yet, in the judgement of {evaluation.model}: {evaluation.reason}\n</goal-check>"
        )
    return ExtensionMessage(custom_type=CONTINUATION_TYPE, content=text, display=False)


def turns_stop_text(limit: int) -> str:
    return (
        f"stopped: the goal loop reached its limit of {limit} automatic continuations "
        "(--goal-turns / goal.maxTurns) and the goal is not met. The session is saved; continue it "
        'with a prompt (heron -p --continue "…") or with a higher limit (heron -p --continue --goal-turns N).'
    )


def blocked_stop_text(evidence: str) -> str:
    return (
        f"stopped: the goal is blocked: {evidence.strip() or 'no reason given'}. The session is saved; "
        'answer what blocks it (heron -p --continue "…") and the loop goes on, or clear the goal (/goal clear).'
    )
