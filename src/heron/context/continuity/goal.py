"""The session's goal: stored in the session, rendered the same bytes at the head of every request.

A goal is what the user wants the whole session to achieve (``/goal TEXT``, ``--goal``).
Each change is a ``custom`` entry of type ``heron.goal`` (pi ignores it); the latest one
on the path is the goal, and one whose ``text`` is null clears it. The goal leads every
request, before the summary and everything else, so it survives any number of
compactions and costs one prompt-cache miss when it is set, never more.

A goal may have a token budget. Its entry records the tokens spent for the goal when the
entry was written (``spent``); the tokens of every answer after it on the path are added
to that (:func:`spent_on_path`), so the figure is the same in every process that reads
the file. While a budgeted goal is active, each new prompt writes the goal again with the
figure of that moment, which the rendered block shows as the budget left: the block then
changes once per prompt (the prefix would break anyway there if it told the exact figure
on every request) and the exact check, before every model call, stops the run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from heron.agent.messages import AgentMessage, ExtensionMessage
from heron.ai.types import AssistantMessage
from heron.session.entries import CustomEntry, Entry, MessageEntry, iso_to_ms

GOAL_CUSTOM_TYPE = "heron.goal"
GOAL_MESSAGE_TYPE = "heron.goal"
MAX_GOAL_CHARS = 4_000  # a goal is a sentence or a paragraph; longer text belongs in a file
MIN_BUDGET = 1_000
# A trillion tokens: far beyond any session, and below 2**53, so a reader of the session
# file that keeps numbers as doubles (pi, JavaScript) reads the budget exactly.
MAX_BUDGET = 1_000_000_000_000
_BUDGET = re.compile(r"^(\d+(?:\.\d+)?)\s*([km]?)$", re.IGNORECASE)


class GoalError(ValueError):
    """Bad goal input (empty text, an invalid budget); the message says what to type."""


@dataclass(frozen=True, slots=True)
class Goal:
    """The goal on a path: its text, its budget (None: none), the tokens spent for it when
    its entry was written, and where that entry is."""

    text: str
    budget: int | None = None
    spent: int = 0
    entry_id: str = ""
    timestamp_ms: int = 0

    def to_data(self) -> dict[str, Any]:
        return {"text": self.text, "budget": self.budget, "spent": self.spent}


def parse_budget(raw: str) -> int:
    """``200000``, ``200_000``, ``200,000``, ``200k``, ``1.5m`` as a number of tokens."""
    cleaned = raw.strip().replace("_", "").replace(",", "")
    match = _BUDGET.match(cleaned)
    if match is None:
        raise GoalError(f"invalid token budget {raw!r}: give a number of tokens such as 200000, 200k or 1.5m")
    scale = {"": 1, "k": 1_000, "m": 1_000_000}[match.group(2).lower()]
    # exact decimal arithmetic: a float turns 400 digits into infinity (OverflowError) and
    # rounds 20 digits; the bound is checked before the value becomes an int
    value = Decimal(match.group(1)) * scale
    if value > MAX_BUDGET:
        shown = raw if len(raw) <= 40 else f"{raw[:20]}...{raw[-8:]} ({len(raw)} characters)"
        raise GoalError(f"token budget {shown!r} is too large: at most {MAX_BUDGET:,} tokens")
    return check_budget(int(value), raw)


def check_budget(value: int, raw: object = None) -> int:
    """``value`` when it is a budget heron takes (:data:`MIN_BUDGET` to :data:`MAX_BUDGET`
    tokens), else :class:`GoalError` - for a budget given as a number (the SDK's
    ``goal.set``), as for one typed."""
    shown = repr(raw) if raw is not None else f"{value:,}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise GoalError(f"token budget {shown} is not a whole number of tokens")
    if value < MIN_BUDGET:
        raise GoalError(f"token budget {shown} is too small: at least {MIN_BUDGET:,} tokens")
    if value > MAX_BUDGET:
        raise GoalError(f"token budget {shown} is too large: at most {MAX_BUDGET:,} tokens")
    return value


def check_text(text: str) -> str:
    """The goal text as stored (stripped), or :class:`GoalError`."""
    stripped = text.strip()
    if not stripped:
        raise GoalError(
            "the goal is empty: type /goal TEXT (or --goal TEXT), /goal to show it, /goal clear to remove it"
        )
    if len(stripped) > MAX_GOAL_CHARS:
        raise GoalError(f"the goal is {len(stripped):,} characters; at most {MAX_GOAL_CHARS:,} (put details in a file)")
    return stripped


def goal_from_entry(entry: Entry | None) -> Goal | bool | None:
    """The goal an entry sets; None when it clears it; False when it is not a goal entry."""
    if not isinstance(entry, CustomEntry) or entry.custom_type != GOAL_CUSTOM_TYPE:
        return False
    data = entry.data if isinstance(entry.data, dict) else {}
    text, budget, spent = data.get("text"), data.get("budget"), data.get("spent")
    if not isinstance(text, str) or not text:
        return None
    return Goal(
        text=text,
        budget=budget if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0 else None,
        spent=spent if isinstance(spent, int) and not isinstance(spent, bool) and spent > 0 else 0,
        entry_id=entry.id,
        timestamp_ms=iso_to_ms(entry.timestamp),
    )


def goal_on_path(
    get: Callable[[str], Entry | None],
    ids: Sequence[str],
    types: Sequence[str],
    before: int | None = None,
    start: int = 0,
) -> tuple[Goal | None, int]:
    """The latest goal among the first ``before`` entries of a path, and its index (-1: none).
    ``start``: look only from that index on (the caller knows the entries before it)."""
    stop = len(ids) if before is None else before
    for index in range(stop - 1, start - 1, -1):
        if types[index] != "custom":
            continue
        found = goal_from_entry(get(ids[index]))
        if found is False:
            continue
        return (found if isinstance(found, Goal) else None), index
    return None, -1


def answer_tokens(message: AgentMessage) -> int:
    """Tokens one answer cost, as its provider reported them (input, output, cache)."""
    if not isinstance(message, AssistantMessage):
        return 0
    used = message.usage
    return used.total_tokens or used.context_tokens()


def spent_on_path(
    goal: Goal,
    get: Callable[[str], Entry | None],
    ids: Sequence[str],
    types: Sequence[str],
    start: int,
    cache: dict[str, int] | None = None,
    role_of: Callable[[str], str | None] | None = None,
) -> int:
    """Tokens spent for ``goal``: the figure its entry (at ``start``) recorded plus every
    answer after it. ``cache``: answer tokens by entry id (an entry never changes);
    ``role_of``: a message's role without decoding it (only answers are decoded)."""
    total = goal.spent
    for index in range(start + 1, len(ids)):
        if types[index] != "message":
            continue
        entry_id = ids[index]
        if role_of is not None and role_of(entry_id) != "assistant":
            continue
        tokens = cache.get(entry_id) if cache is not None else None
        if tokens is None:
            entry = get(entry_id)
            tokens = answer_tokens(entry.message) if isinstance(entry, MessageEntry) else 0
            if cache is not None:
                cache[entry_id] = tokens
        total += tokens
    return total


def render_goal(goal: Goal) -> str:
    """The block every request starts with: the text exactly as given, and the budget."""
    lines = [
        "The goal of this session, set by the user (/goal). Keep working toward it; say so when it is met.",
        "<goal>",
        goal.text,
        "</goal>",
    ]
    if goal.budget is not None:
        left = max(0, goal.budget - goal.spent)
        lines.append(
            f"Token budget for this goal: {goal.budget:,} tokens; {left:,} left when the latest prompt was sent. "
            "The run stops when none are left."
        )
    return "\n".join(lines)


def goal_message(goal: Goal) -> ExtensionMessage:
    return ExtensionMessage(
        custom_type=GOAL_MESSAGE_TYPE, content=render_goal(goal), display=False, timestamp=goal.timestamp_ms
    )


def is_goal_message(message: AgentMessage) -> bool:
    return isinstance(message, ExtensionMessage) and message.custom_type == GOAL_MESSAGE_TYPE


def with_goal(messages: list[AgentMessage], goal: Goal | None) -> list[AgentMessage]:
    """``messages`` led by the goal's block (the old block replaced, or removed with no goal)."""
    rest = messages[1:] if messages and is_goal_message(messages[0]) else messages
    return [goal_message(goal), *rest] if goal is not None else list(rest)


def budget_stop_text(goal: Goal, spent: int) -> str:
    budget = goal.budget or 0
    return (
        f"stopped: the goal's token budget is spent ({spent:,} of {budget:,} tokens used since the goal was set). "
        "The session is saved; raise the budget (/goal --budget N TEXT) or clear the goal (/goal clear), "
        "then continue (heron -p --continue)."
    )
