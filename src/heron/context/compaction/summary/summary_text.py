"""What the summariser reads: its prompts, the conversation as text, and the fallbacks
that shrink that text to fit (docs/context.md, "Compaction" and "Summariser fallbacks").

Pure text: no request is sent from here (:mod:`heron.context.compaction.summary.summariser`
sends them) and nothing here knows where a compaction cuts
(:mod:`heron.context.compaction.plan`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from heron.agent.messages import (
    AgentMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ExtensionMessage,
)
from heron.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from heron.context.compaction.summary.summary_chunks import ANALYSIS_INSTRUCTION
from heron.context.records.ledger import LedgerRecord

SUMMARY_TOOL_RESULT_CHARS = 2_000
FALLBACK_TOOL_RESULT_CHARS = 500

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


BRANCH_SUMMARY_PROMPT = """The conversation above is a branch the user is leaving: they went back to an
earlier point and will continue from there. Summarise what this branch tried and found, so the
work is not lost:

## Tried
What was attempted, with exact file paths and commands.

## Found
Results, errors (exact messages) and conclusions.

## Worth Keeping
Anything the new direction should know or reuse."""


# The shared summary request (heron.context.compaction.summary.shared_summary) ends with this
# instruction, as a user message after the conversation's own prefix. It starts with a fixed
# mark, so the request is recognisable on the wire (a proxy's logs, a test's scripted server).
SHARED_SUMMARY_MARK = "[heron: context summary request]"


def shared_instruction(previous: bool, split_turn: bool, focus: str | None) -> str:
    """The instruction that ends a shared summary request. ``previous``: the conversation
    above starts with an earlier summary; ``split_turn``: the user's latest request is
    still being worked on (its later messages are kept verbatim after the summary)."""
    parts = [
        f"{SHARED_SUMMARY_MARK} Stop the work here: do not call any tool and do not answer or continue "
        "any request above. The conversation above is about to be replaced by a summary, and the work "
        "will go on from that summary alone. Write it now."
    ]
    if previous:
        parts.append(
            "The conversation starts with the summary of an earlier part: carry everything in it that "
            "still matters into the new summary, move finished items to Done, and revise the next steps."
        )
    if split_turn:
        parts.append(
            "The user's latest request above is still being worked on, and its later messages follow "
            "your summary verbatim: say under In Progress what has been done for it so far."
        )
    parts += [SUMMARY_FORMAT, ANALYSIS_INSTRUCTION]
    if focus:
        parts.append(f"The user asked the summary to focus on: {focus}")
    return "\n\n".join(parts)


def is_summary_request(context: Context) -> bool:
    """Whether ``context`` is a compaction's summary request, of either kind: the separate
    summariser's (its system prompt) or a shared one (its last message the instruction)."""
    if context.system_prompt == SUMMARISER_SYSTEM_PROMPT:
        return True
    last = context.messages[-1] if context.messages else None
    return isinstance(last, UserMessage) and last.text().startswith(SHARED_SUMMARY_MARK)


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


def fit_transcript(messages: list[AgentMessage], budget_chars: int, records: list[LedgerRecord]) -> str:
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
