"""Pluggable compaction: an extension's ``before_compact`` handler.

Before a compaction summarises anything, each enabled extension's handler gets a
:class:`CompactionInput` - what would be summarised, what would be kept (with the entry
ids the kept range may start at), the previous summary, the reason and the focus - and
may return a :class:`CompactionAnswer`: cancel the compaction, supply the summary itself,
or keep another range. The first handler that answers decides. The result is written to
the session like any compaction (its entry's details name the extension), so a process
that resumes the session replays it, and the context rules are checked on it as on every
compaction. A handler that raises or answers nonsense disables its extension, and the
normal compaction runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from heron.agent.messages import AgentMessage
from heron.agent.tool_meta import ToolCatalog
from heron.context.compaction.plan import CompactionChoice, CompactionPlan, cut_points, entry_message, replan_at


@dataclass(frozen=True, slots=True)
class CompactionInput:
    """What a ``before_compact`` handler sees."""

    reason: str  # threshold, boundary, requested, overflow or manual
    focus: str | None  # what the summary must keep, when one was asked for
    messages: list[AgentMessage]  # what would be summarised
    turn_prefix: list[AgentMessage]  # the start of a turn the cut splits (summarised apart)
    kept: list[AgentMessage]  # what would be kept verbatim
    first_kept_entry_id: str  # where the kept range starts
    cut_points: list[str]  # the entry ids a replaced kept range may start at
    previous_summary: str | None  # the summary of the compaction before, if any


@dataclass(frozen=True, slots=True)
class CompactionAnswer:
    """A handler's answer. ``cancel``: no compaction now. ``summary``: used instead of
    asking the model (heron appends its lists of files and user requests). ``first_kept_entry_id``:
    keep from this entry (one of ``cut_points``) instead."""

    cancel: bool = False
    summary: str | None = None
    first_kept_entry_id: str | None = None


CompactHandler = Callable[[CompactionInput], Any]


def compaction_input(plan: CompactionPlan, reason: str, focus: str | None) -> CompactionInput:
    kept = [m for m in (entry_message(e) for e in plan.path[plan.first_kept_index :]) if m is not None]
    return CompactionInput(
        reason=reason,
        focus=focus,
        messages=list(plan.messages_to_summarize),
        turn_prefix=list(plan.turn_prefix_messages),
        kept=kept,
        first_kept_entry_id=plan.first_kept_entry_id,
        cut_points=cut_points(plan),
        previous_summary=plan.previous.summary if plan.previous is not None else None,
    )


def choice_from(answer: Any, plan: CompactionPlan, source: str, tools: ToolCatalog) -> CompactionChoice | None:
    """The compactor's choice from a handler's answer (None: no opinion). Raises
    ``ValueError`` (naming what is wrong) for an answer heron cannot use."""
    if answer is None:
        return None
    if not isinstance(answer, CompactionAnswer):
        raise ValueError(f"returned {type(answer).__name__}, not None or a CompactionAnswer")
    if answer.cancel:
        return CompactionChoice(source=source, cancel=True)
    summary = answer.summary
    if summary is not None and (not isinstance(summary, str) or not summary.strip()):
        raise ValueError("supplied an empty summary")
    chosen = None
    if answer.first_kept_entry_id is not None:
        chosen = replan_at(plan, answer.first_kept_entry_id, tools)
    if summary is None and chosen is None:
        return None
    return CompactionChoice(source=source, summary=summary.strip() if summary else None, plan=chosen)


__all__ = ["CompactHandler", "CompactionAnswer", "CompactionInput", "choice_from", "compaction_input"]
