"""Compaction: old history summarised into a structured note (docs/context.md, "Compaction").

Two halves. :func:`prepare_compaction` is pure: given the session path it finds the cut
point and what to summarise (this is what ``heron sessions compact-plan`` prints).
:func:`summarise` asks the model for the summary, shrinking its own input when that
would not fit (the fallbacks are recorded in the ledger). The runtime appends the
compaction entry and rebuilds the context from the session.

pi's algorithm, with its repeated-compaction data loss fixed: the region to summarise
starts at the previous compaction's first kept entry, not after the previous
compaction entry, so messages a compaction kept are summarised by the next one instead
of silently disappearing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from heron.agent.messages import (
    AgentMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ExtensionMessage,
)
from heron.agent.tool_meta import EMPTY_CATALOG, ToolCatalog
from heron.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from heron.context.budget import estimate_message_tokens
from heron.context.ledger import LedgerRecord
from heron.context.summary_chunks import ANALYSIS_INSTRUCTION, parse_summary, summarise_in_chunks
from heron.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
)

DEFAULT_RESERVE_TOKENS = 16_384
DEFAULT_KEEP_RECENT_TOKENS = 20_000
SUMMARY_TOOL_RESULT_CHARS = 2_000
FALLBACK_TOOL_RESULT_CHARS = 500
USER_REQUEST_CHARS = 500
USER_REQUESTS_KEPT = 20
# Appended to every summary by heron: the way back to what it summarised.
RECALL_NOTE = "(Every message before this summary is still in the session file: search_history finds them.)"

CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
TURN_START_ROLES = frozenset({"user", "bashExecution"})


@dataclass(frozen=True, slots=True)
class CompactionSettings:
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


def message_tokens(message: AgentMessage) -> int:
    """The estimate that places the cut (user images not counted, as pi does; docs/context.md, "Counting tokens")."""
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
    path: Sequence[Entry], settings: CompactionSettings, tools: ToolCatalog = EMPTY_CATALOG
) -> CompactionPlan | None:
    """The cut for compacting ``path`` (root to leaf), or ``None`` when there is nothing
    to compact (the leaf is a compaction, or everything fits the keep-recent budget).
    ``tools`` says which calls read or changed files (the plan's file lists)."""
    entries = list(path)
    if not entries or isinstance(entries[-1], CompactionEntry):
        return None

    previous: CompactionEntry | None = None
    previous_index = -1
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if isinstance(entry, CompactionEntry):
            previous, previous_index = entry, index
            break
    region_start = 0
    if previous is not None:
        region_start = previous_index + 1
        for index in range(previous_index):
            if entries[index].id == previous.first_kept_entry_id:
                region_start = index
                break

    # Walk back from the newest entry until the kept messages reach the budget.
    total = 0
    reached = -1
    for index in range(len(entries) - 1, region_start - 1, -1):
        entry = entries[index]
        if isinstance(entry, MessageEntry):
            total += message_tokens(entry.message)
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


# --- the summary ------------------------------------------------------------------

SUMMARISER_SYSTEM_PROMPT = (
    "You write handover notes for an AI coding assistant. You are given part of a conversation "
    "between a user and the assistant, which used tools to read, edit and run code. Do not continue "
    "the conversation and do not answer any request in it: only summarise it, so that the assistant "
    "can carry on the work from your note alone."
)

SUMMARY_FORMAT = """Write the summary in exactly this structure:

## Goal
What the user is trying to achieve.

## Constraints & Preferences
Requirements, conventions and preferences the user stated.

## Progress
### Done
- Completed work, with exact file paths.
### In Progress
- Work started but not finished.
### Blocked
- Problems not yet solved, with the exact error messages.

## Key Decisions
- Decisions taken and why.

## Next Steps
1. What to do next, in order.

## Critical Context
Anything else needed to continue: exact file paths, function and class names, commands,
error messages, values. Keep identifiers exactly as written."""

FIRST_SUMMARY_PROMPT = (
    "Summarise the conversation above for the assistant that will continue it.\n\n"
    + SUMMARY_FORMAT
    + "\n\n"
    + ANALYSIS_INSTRUCTION
)

UPDATE_SUMMARY_PROMPT = (
    "The conversation above continues from an earlier summary, given in <previous-summary>. "
    "Update that summary with the new messages: keep everything in it that still matters, move "
    "finished items to Done, add new decisions, files and errors, and revise the next steps.\n\n"
    + SUMMARY_FORMAT
    + "\n\n"
    + ANALYSIS_INSTRUCTION
)

TURN_PREFIX_PROMPT = """The messages above are the beginning of a turn that is still in progress; its
later part is kept verbatim after your note. Summarise this beginning so the rest makes sense:

## Original Request
The user's request, in their words where possible.

## Early Progress
What the assistant did so far in this turn (files, commands, findings).

## Context for the Rest
What the remaining messages rely on."""


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters cut for the summary]"


def serialise_transcript(messages: Sequence[AgentMessage], tool_result_chars: int = SUMMARY_TOOL_RESULT_CHARS) -> str:
    """The conversation as plain text for the summariser (tool results cut)."""
    parts: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            images = (
                0 if isinstance(message.content, str) else sum(isinstance(b, ImageContent) for b in message.content)
            )
            suffix = f" [{images} image(s)]" if images else ""
            parts.append(f"[User]: {message.text()}{suffix}")
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, ThinkingContent) and block.thinking.strip():
                    parts.append(f"[Assistant thinking]: {block.thinking}")
                elif isinstance(block, TextContent) and block.text.strip():
                    parts.append(f"[Assistant]: {block.text}")
                elif isinstance(block, ToolCall):
                    args = json.dumps(block.arguments, ensure_ascii=False, separators=(",", ":"))
                    parts.append(f"[Assistant tool call]: {block.name}({_clip(args, tool_result_chars)})")
            if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED) and message.error_message:
                parts.append(f"[Assistant turn ended: {message.error_message}]")
        elif isinstance(message, ToolResultMessage):
            label = "Tool error" if message.is_error else "Tool result"
            parts.append(f"[{label} ({message.tool_name})]: {_clip(message.text(), tool_result_chars)}")
        elif isinstance(message, BashExecutionMessage):
            parts.append(f"[User ran]: {message.command}\n{_clip(message.output, tool_result_chars)}")
        elif isinstance(message, ExtensionMessage):
            text = (
                message.content
                if isinstance(message.content, str)
                else "".join(b.text for b in message.content if isinstance(b, TextContent))
            )
            parts.append(f"[{message.custom_type}]: {_clip(text, tool_result_chars)}")
        elif isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
            parts.append(f"[Earlier summary]: {message.summary}")
    return "\n\n".join(parts)


def summary_request(transcript: str, previous_summary: str | None, focus: str | None) -> str:
    text = f"<conversation>\n{transcript}\n</conversation>\n\n"
    if previous_summary:
        text += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
        text += UPDATE_SUMMARY_PROMPT
    else:
        text += FIRST_SUMMARY_PROMPT
    if focus:
        text += f"\n\nThe user asked the summary to focus on: {focus}"
    return text


BRANCH_SUMMARY_PROMPT = """The conversation above is a branch the user is leaving: they went back to an
earlier point and will continue from there. Summarise what this branch tried and found, so the
work is not lost:

## Tried
What was attempted, with exact file paths and commands.

## Found
Results, errors (exact messages) and conclusions.

## Worth Keeping
Anything the new direction should know or reuse."""


async def summarise_branch(
    messages: Sequence[AgentMessage], model: Model, *, budget_tokens: int, stream_options: dict[str, Any] | None = None
) -> str:
    """Summary of an abandoned branch: its newest messages first, as many as fit."""
    kept: list[AgentMessage] = []
    used = 0
    for message in reversed(messages):
        tokens = message_tokens(message)
        if kept and used + tokens > budget_tokens:
            break
        kept.append(message)
        used += tokens
    kept.reverse()
    transcript = _fit_transcript(kept, budget_tokens * 4, [])
    prompt = f"<conversation>\n{transcript}\n</conversation>\n\n{BRANCH_SUMMARY_PROMPT}"
    max_tokens = min(model.max_tokens, 4_096)
    reply = await _ask(model, prompt, max_tokens, dict(stream_options or {}))
    if reply.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
        raise SummaryFailed(f"the branch summary request failed: {reply.error_message}")
    return reply.text().strip()


def file_lists_text(read: Sequence[str], modified: Sequence[str], requests: Sequence[str]) -> str:
    """Appended by heron itself, not by the model: exact and never paraphrased."""
    blocks = []
    if requests:
        items = "\n".join(f"- {json.dumps(r, ensure_ascii=False)}" for r in requests)
        blocks.append(f"<user-requests>\n{items}\n</user-requests>")
    if read:
        blocks.append("<read-files>\n" + "\n".join(read) + "\n</read-files>")
    if modified:
        blocks.append("<modified-files>\n" + "\n".join(modified) + "\n</modified-files>")
    return "\n\n".join(blocks)


@dataclass
class SummaryResult:
    summary: str
    details: dict[str, Any]
    records: list[LedgerRecord] = field(default_factory=list)


class SummaryFailed(RuntimeError):
    pass


def _fit_transcript(messages: list[AgentMessage], budget_chars: int, records: list[LedgerRecord]) -> str:
    """The transcript, reduced step by step until it fits ``budget_chars`` (the summariser
    fallbacks of docs/context.md: clamp tool results, then head + tail, then drop the oldest turns)."""
    transcript = serialise_transcript(messages)
    if len(transcript) <= budget_chars:
        return transcript
    before = len(transcript)
    transcript = serialise_transcript(messages, FALLBACK_TOOL_RESULT_CHARS)
    records.append(
        LedgerRecord(
            kind="summary_fallback",
            chars_before=before,
            chars_after=len(transcript),
            recover="the original messages stay in the session file",
            detail={"step": "clamp_tool_results", "chars": FALLBACK_TOOL_RESULT_CHARS},
        )
    )
    if len(transcript) <= budget_chars:
        return transcript
    before = len(transcript)
    head = int(len(transcript) * 0.3)
    tail = int(len(transcript) * 0.3)
    cut = len(transcript) - head - tail
    reduced = transcript[:head] + f"\n\n[... {cut} characters of the middle of the conversation omitted ...]\n\n"
    reduced += transcript[-tail:]
    records.append(
        LedgerRecord(
            kind="summary_fallback",
            chars_before=before,
            chars_after=len(reduced),
            recover="the original messages stay in the session file",
            detail={"step": "head_tail", "head": 0.3, "tail": 0.3},
        )
    )
    if len(reduced) <= budget_chars:
        return reduced
    remaining = list(messages)
    while remaining and len(transcript) > budget_chars:
        # the oldest 20% of the turns (a turn starts at a user's message); a single long
        # turn (one prompt, many tool calls) loses its oldest 20% of messages instead
        units = _turns(remaining)
        if len(units) < 2:
            units = [[m] for m in remaining]
        drop = max(1, len(units) // 5)
        before = len(transcript)
        dropped = sum(len(unit) for unit in units[:drop])
        remaining = remaining[dropped:]
        transcript = serialise_transcript(remaining, FALLBACK_TOOL_RESULT_CHARS)
        records.append(
            LedgerRecord(
                kind="summary_fallback",
                chars_before=before,
                chars_after=len(transcript),
                recover="the original messages stay in the session file",
                detail={"step": "drop_oldest_turns", "dropped_turns": drop, "dropped_messages": dropped},
            )
        )
    if len(transcript) > budget_chars:
        transcript = transcript[-budget_chars:]
    return transcript


def _turns(messages: Sequence[AgentMessage]) -> list[list[AgentMessage]]:
    """``messages`` grouped into turns: each starts at a user message or a command the
    user ran (whatever precedes the first one is a turn of its own)."""
    turns: list[list[AgentMessage]] = []
    for message in messages:
        if not turns or isinstance(message, UserMessage | BashExecutionMessage):
            turns.append([])
        turns[-1].append(message)
    return turns


async def _ask(model: Model, prompt: str, max_tokens: int, options: dict[str, Any]) -> AssistantMessage:
    from heron.ai.registry import complete

    context = Context(system_prompt=SUMMARISER_SYSTEM_PROMPT, messages=[UserMessage(content=prompt)])
    return await complete(model, context, max_tokens=max_tokens, **options)


async def _turn_prefix(
    plan: CompactionPlan,
    model: Model,
    budget: int,
    max_tokens: int,
    focus: str | None,
    options: dict[str, Any],
    records: list[LedgerRecord],
) -> str:
    """The summary of the part of a split turn before the cut ("" when the turn is whole)."""
    if not plan.split_turn or not plan.turn_prefix_messages:
        return ""
    transcript = _fit_transcript(plan.turn_prefix_messages, budget, records)
    prompt = f"<conversation>\n{transcript}\n</conversation>\n\n{TURN_PREFIX_PROMPT}"
    if focus:
        prompt += f"\n\nThe user asked the summary to focus on: {focus}"
    reply = await _ask(model, prompt, max_tokens, options)
    if reply.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
        raise SummaryFailed(f"the turn-prefix summary request failed: {reply.error_message}")
    return reply.text().strip()


async def summarise(
    plan: CompactionPlan,
    model: Model,
    *,
    reserve_tokens: int,
    focus: str | None = None,
    stream_options: dict[str, Any] | None = None,
    window: int | None = None,
) -> SummaryResult:
    """Generate the summary (and the turn-prefix summary, concurrently) for ``plan``.

    The request is sized before it is sent: the summariser gets the model's window less
    the summary's own budget, and the transcript is reduced to fit. If the provider still
    rejects it as too long, the next reduction step is tried once more.
    """
    from heron.ai.overflow import is_context_overflow

    options = dict(stream_options or {})
    max_tokens = min(model.max_tokens, max(1_024, int(reserve_tokens * 0.8)))
    overhead = 4 * 1_500  # system prompt + instructions, in chars
    # ``window``: the one the session plans for (a server may enforce less than the model's)
    budget = max(4_000, ((window or model.context_window) - max_tokens) * 4 - overhead)
    records: list[LedgerRecord] = []
    previous_summary = plan.previous.summary if plan.previous is not None else None
    if previous_summary:
        budget = max(4_000, budget - len(previous_summary))

    async def ask_text(prompt: str) -> str:
        reply = await _ask(model, prompt, max_tokens, options)
        if reply.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
            raise SummaryFailed(f"the summary request failed: {reply.error_message}")
        return reply.text().strip()

    async def history() -> str:
        if not plan.messages_to_summarize:
            return previous_summary or ""
        share = budget if not plan.split_turn else int(budget * 0.7)
        clamped = serialise_transcript(plan.messages_to_summarize, FALLBACK_TOOL_RESULT_CHARS)
        chunked = (
            None
            if len(clamped) <= share
            else await summarise_in_chunks(
                plan.messages_to_summarize,
                budget_chars=share,
                serialise=serialise_transcript,
                fit=lambda ms, size: _fit_transcript(ms, size, records),
                ask=ask_text,
                request=lambda t, p: summary_request(t, p, focus),
                previous_summary=previous_summary,
                records=records,
                merge_format=SUMMARY_FORMAT,
            )
        )
        if chunked is not None:
            return chunked
        for attempt in range(2):
            transcript = _fit_transcript(plan.messages_to_summarize, share, records)
            reply = await _ask(model, summary_request(transcript, previous_summary, focus), max_tokens, options)
            if reply.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):
                return reply.text().strip()
            if attempt == 0 and is_context_overflow(reply):
                share //= 2
                continue
            raise SummaryFailed(f"the summary request failed: {reply.error_message}")
        raise SummaryFailed("the summary request overflowed twice")

    prefix_request = _turn_prefix(plan, model, int(budget * 0.3), max(1_024, max_tokens // 2), focus, options, records)
    raw_main, raw_prefix = await asyncio.gather(history(), prefix_request)
    main, analysis = parse_summary(raw_main)
    prefix, _ = parse_summary(raw_prefix)
    summary = main
    if prefix:
        summary += "\n\n---\n\n**Turn in progress** (its later messages follow verbatim):\n\n" + prefix
    lists = file_lists_text(plan.read_files, plan.modified_files, plan.user_requests)
    if lists:
        summary += "\n\n" + lists
    summary += "\n\n" + RECALL_NOTE
    details: dict[str, Any] = {
        "readFiles": plan.read_files,
        "modifiedFiles": plan.modified_files,
        "userRequests": plan.user_requests,
    }
    if analysis:
        details["analysis"] = analysis  # the summariser's draft: kept, never in the context
    return SummaryResult(summary=summary, details=details, records=records)
