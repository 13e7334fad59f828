"""Compaction: old history summarised into a structured note (docs/context.md, "Compaction").

This module is the pure half: :func:`prepare_compaction`, given the session path, finds the
cut point and what to summarise (this is what ``heron sessions compact-plan`` prints). What
the summariser reads is :mod:`heron.context.compaction.summary.summary_text`, the requests
are :mod:`heron.context.compaction.summary.summariser`, and
:mod:`heron.context.compaction.compactor` sizes the result and writes the compaction entry.

pi's algorithm, with its repeated-compaction data loss fixed: the region to summarise
starts at the previous compaction's first kept entry, not after the previous
compaction entry, so messages a compaction kept are summarised by the next one instead
of silently disappearing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from heron.agent.messages import AgentMessage, BranchSummaryMessage, ExtensionMessage
from heron.agent.tool_meta import EMPTY_CATALOG, ToolCatalog
from heron.ai.types import AssistantMessage, UserMessage
from heron.context.view.call_args import shown_message
from heron.context.window.budget import estimate_message_tokens
from heron.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
)

DEFAULT_RESERVE_TOKENS = 16_384
DEFAULT_KEEP_RECENT_TOKENS = 20_000
USER_REQUEST_CHARS = 500
USER_REQUESTS_KEPT = 20
SUMMARY_ALLOWANCE_TOKENS = 1_000  # what a summary (and the kept turn prompt) adds back, about
SHRINK_REQUIRED = 0.05  # a compaction that saves less than this switches automatic compaction off

CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
TURN_START_ROLES = frozenset({"user", "bashExecution"})


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """How much room a compaction keeps free and how much recent context it keeps verbatim;
    scaled to each model's window by ``for_window``."""

    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS

    def for_window(self, context_window: int) -> CompactionSettings:
        """Both capped at 25% of the window, so a 16k model still has room
        (docs/context.md, "Limits that scale with the window")."""
        quarter = max(1, context_window // 4)
        return CompactionSettings(
            reserve_tokens=min(self.reserve_tokens, quarter),
            keep_recent_tokens=min(self.keep_recent_tokens, quarter),
        )


def message_tokens(message: AgentMessage, call_args: Mapping[str, dict[str, Any]] | None = None) -> int:
    """The estimate that places the cut (user images not counted, as pi does; docs/context.md,
    "Counting tokens"). ``call_args``: the tool calls requests show shortened
    (:mod:`heron.context.view.call_args`), counted as shown - a 5 MB ``write`` counted whole
    would fill the keep-recent budget alone and leave nothing to summarise."""
    if call_args and isinstance(message, AssistantMessage) and any(c.id in call_args for c in message.tool_calls()):
        return estimate_message_tokens(shown_message(message, dict(call_args)))
    return estimate_message_tokens(message)


# --- the plan ---------------------------------------------------------------------


@dataclass
class CompactionPlan:
    """What a compaction would do. Indices are positions in ``path``."""

    path: list[Entry]
    region_start: int
    first_kept_index: int
    turn_start_index: int  # -1 when the cut is a clean turn boundary
    split_turn: bool
    messages_to_summarize: list[AgentMessage]
    turn_prefix_messages: list[AgentMessage]
    previous: CompactionEntry | None
    read_files: list[str]
    modified_files: list[str]
    user_requests: list[str]

    @property
    def first_kept_entry_id(self) -> str:
        return self.path[self.first_kept_index].id

    @property
    def has_work(self) -> bool:
        return bool(self.messages_to_summarize or self.turn_prefix_messages)


@dataclass(frozen=True, slots=True)
class CompactionChoice:
    """What a pluggable compaction (an extension's ``before_compact``) chose: cancel it,
    supply the summary (heron still appends its lists: files, the user's requests, the
    recall note), or keep another range (``plan``, from :func:`replan_at`). ``source``
    names who chose, recorded in the compaction entry's details."""

    source: str
    cancel: bool = False
    summary: str | None = None
    plan: CompactionPlan | None = None


def _role(entry: Entry) -> str | None:
    return entry.message.role if isinstance(entry, MessageEntry) else None


def _is_cut_point(entry: Entry) -> bool:
    if isinstance(entry, BranchSummaryEntry | CustomMessageEntry):
        return True
    return _role(entry) in CUT_ROLES


def _is_turn_start(entry: Entry) -> bool:
    if isinstance(entry, BranchSummaryEntry | CustomMessageEntry):
        return True
    return _role(entry) in TURN_START_ROLES


def entry_message(entry: Entry) -> AgentMessage | None:
    """The message an entry contributes to a summary transcript."""
    if isinstance(entry, MessageEntry):
        return entry.message
    if isinstance(entry, CustomMessageEntry):
        return ExtensionMessage(custom_type=entry.custom_type, content=entry.content, display=entry.display)
    if isinstance(entry, BranchSummaryEntry) and entry.summary:
        return BranchSummaryMessage(summary=entry.summary, from_id=entry.from_id or "")
    return None


def prepare_compaction(
    path: Sequence[Entry],
    settings: CompactionSettings,
    tools: ToolCatalog = EMPTY_CATALOG,
    call_args: Mapping[str, dict[str, Any]] | None = None,
) -> CompactionPlan | None:
    """The cut for compacting ``path`` (root to leaf), or ``None`` when there is nothing
    to compact (the leaf is a compaction, or everything fits the keep-recent budget).
    ``tools`` says which calls read or changed files (the plan's file lists);
    ``call_args``: the calls requests show shortened (the session's decisions)."""
    entries = list(path)
    if not entries or isinstance(entries[-1], CompactionEntry):
        return None

    previous, region_start = _region(entries)
    # Walk back from the newest entry until the kept messages reach the budget.
    total = 0
    reached = -1
    for index in range(len(entries) - 1, region_start - 1, -1):
        entry = entries[index]
        if isinstance(entry, MessageEntry):
            total += message_tokens(entry.message, call_args)
            if total >= settings.keep_recent_tokens:
                reached = index
                break
    if reached == -1:
        return None  # everything fits: keep it all

    cut = next((i for i in range(reached, len(entries)) if _is_cut_point(entries[i])), -1)
    if cut == -1:
        cut = next((i for i in range(reached, region_start - 1, -1) if _is_cut_point(entries[i])), -1)
    if cut == -1:
        return None
    # Settings, labels and the like travel with the message they precede.
    while cut > region_start and not isinstance(entries[cut - 1], MessageEntry | CompactionEntry):
        cut -= 1

    return _plan_from_cut(entries, region_start, cut, previous, tools)


def _region(entries: Sequence[Entry]) -> tuple[CompactionEntry | None, int]:
    """The latest compaction on the path and where the region to summarise starts: at
    that compaction's first kept entry (pi starts after the compaction entry, and so
    loses what it kept)."""
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if isinstance(entry, CompactionEntry):
            for kept in range(index):
                if entries[kept].id == entry.first_kept_entry_id:
                    return entry, kept
            return entry, index + 1
    return None, 0


def plan_keeping(
    path: Sequence[Entry], first_kept_entry_id: str, tools: ToolCatalog = EMPTY_CATALOG
) -> CompactionPlan | None:
    """The plan of ``path`` (root to leaf) whose first kept entry is ``first_kept_entry_id``
    (a cut chosen earlier, on a shorter path: a background summary's), or None when that
    entry is not a cut in the path's region or leaves nothing to summarise."""
    entries = list(path)
    if not entries or isinstance(entries[-1], CompactionEntry):
        return None
    previous, region_start = _region(entries)
    cut = next((i for i in range(region_start, len(entries)) if entries[i].id == first_kept_entry_id), -1)
    if cut == -1:
        return None
    return _plan_from_cut(entries, region_start, cut, previous, tools)


def _plan_from_cut(
    entries: list[Entry], region_start: int, cut: int, previous: CompactionEntry | None, tools: ToolCatalog
) -> CompactionPlan | None:
    """The plan whose first kept entry is ``entries[cut]`` (None: nothing to summarise)."""
    judge = next((entries[i] for i in range(cut, len(entries)) if isinstance(entries[i], MessageEntry)), None)
    turn_start = -1
    if judge is not None and _role(judge) != "user":
        turn_start = next((i for i in range(cut, region_start - 1, -1) if _is_turn_start(entries[i])), -1)
    split = turn_start != -1 and turn_start < cut

    history_end = turn_start if split else cut
    to_summarize = _messages(entries[region_start:history_end])
    prefix = _messages(entries[turn_start:cut]) if split else []
    if not to_summarize and not prefix:
        return None

    previous_details: dict[str, Any] = previous.details if previous and isinstance(previous.details, dict) else {}
    read, modified = collect_files(to_summarize + prefix, previous_details, tools)
    requests = collect_user_requests(to_summarize + prefix, previous_details)
    return CompactionPlan(
        path=entries,
        region_start=region_start,
        first_kept_index=cut,
        turn_start_index=turn_start if split else -1,
        split_turn=split,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        previous=previous,
        read_files=read,
        modified_files=modified,
        user_requests=requests,
    )


def cut_points(plan: CompactionPlan) -> list[str]:
    """The entries a compaction of ``plan``'s region may keep from (first kept entry ids):
    message entries that may start the kept part, never a tool result."""
    entries = plan.path
    return [entries[i].id for i in range(plan.region_start + 1, len(entries)) if _is_cut_point(entries[i])]


def replan_at(plan: CompactionPlan, first_kept_entry_id: str, tools: ToolCatalog) -> CompactionPlan:
    """``plan`` with another kept range: from ``first_kept_entry_id`` (one of
    :func:`cut_points`) to the leaf. Raises ``ValueError`` for any other id."""
    if first_kept_entry_id not in cut_points(plan):
        raise ValueError(
            f"{first_kept_entry_id!r} is not an entry a compaction may keep from "
            "(a message after the region's start that is not a tool result)"
        )
    cut = next(i for i, e in enumerate(plan.path) if e.id == first_kept_entry_id)
    replanned = _plan_from_cut(plan.path, plan.region_start, cut, plan.previous, tools)
    if replanned is None:
        raise ValueError(f"keeping from {first_kept_entry_id!r} leaves nothing to summarise")
    return replanned


def _messages(entries: Sequence[Entry]) -> list[AgentMessage]:
    out = []
    for entry in entries:
        message = entry_message(entry)
        if message is not None:
            out.append(message)
    return out


def collect_files(
    messages: Sequence[AgentMessage], previous: dict[str, Any], tools: ToolCatalog
) -> tuple[list[str], list[str]]:
    """Files read (by ``read``-kind tools) and files changed (by any tool's declared
    writes), as the calls name them, accumulated across compactions. A file that was
    modified is listed only as modified."""
    read: list[str] = [p for p in previous.get("readFiles", []) if isinstance(p, str)]
    modified: list[str] = [p for p in previous.get("modifiedFiles", []) if isinstance(p, str)]
    for message in messages:
        if not isinstance(message, AssistantMessage):
            continue
        for call in message.tool_calls():
            reads = tools.kind(call.name) == "read"
            for use in tools.uses(call):
                if use.access == "write":
                    if use.path not in modified:
                        modified.append(use.path)
                elif reads and not use.walks and use.path not in read:
                    read.append(use.path)
    return [p for p in read if p not in modified], modified


def collect_user_requests(messages: Sequence[AgentMessage], previous: dict[str, Any]) -> list[str]:
    """The user's own words, verbatim (each cut), the most recent ones - what every
    harness's summaries lose first."""
    requests: list[str] = [r for r in previous.get("userRequests", []) if isinstance(r, str)]
    for message in messages:
        if isinstance(message, UserMessage):
            text = message.text().strip()
            if not text:
                continue
            if len(text) > USER_REQUEST_CHARS:
                text = text[:USER_REQUEST_CHARS] + "..."
            requests.append(text)
    return requests[-USER_REQUESTS_KEPT:]
