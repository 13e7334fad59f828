"""The summary requests of a compaction and of a branch summary.

The context layer decides what to ask and how big the request may be; it does not send
anything itself. Every request goes through a :data:`SummaryAsk` its caller provides -
in a session, the same request path as every other request (typed options with the
session's key, timeouts and retries, the context rules checked, traced; see
``heron.coding.requests``) - so a summary is never the one request that can hang for
minutes or skip the rules.

The history and the running turn's prefix are summarised concurrently. The request is sized
before it is sent: the summariser gets the window less the summary's own budget, and the
transcript is reduced to fit
(:func:`heron.context.compaction.summary.summary_text.fit_transcript`). If the provider
still rejects it as too long, the next reduction step is tried once more.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from heron.agent.messages import AgentMessage
from heron.ai.overflow import is_context_overflow
from heron.ai.types import AssistantMessage, Context, Model, StopReason, UserMessage
from heron.context.compaction.plan import CompactionPlan
from heron.context.compaction.summary.shared_summary import (
    SharedPrefix,
    SharedSummaryFailed,
    SummaryUsage,
    summarise_shared,
)
from heron.context.compaction.summary.summary_chunks import parse_summary, summarise_in_chunks
from heron.context.compaction.summary.summary_text import (
    BRANCH_SUMMARY_PROMPT,
    FALLBACK_TOOL_RESULT_CHARS,
    SUMMARISER_SYSTEM_PROMPT,
    SUMMARY_FORMAT,
    TURN_PREFIX_PROMPT,
    file_lists_text,
    fit_transcript,
    serialise_transcript,
    summary_request,
)
from heron.context.records.ledger import LedgerRecord
from heron.context.window.budget import estimate_message_tokens

# Sends one summary request (the summariser's system prompt and one user message) with
# this output cap and returns the answer; a failure is an answer with an error stop reason.
SummaryAsk = Callable[[Context, int], Awaitable[AssistantMessage]]

# Appended to every summary by heron: the way back to what it summarised.
RECALL_NOTE = "(Every message before this summary is still in the session file: search_history finds them.)"
PROMPT_OVERHEAD_CHARS = 4 * 1_500  # the system prompt and the instructions around the transcript
MIN_BUDGET_CHARS = 4_000
BRANCH_SUMMARY_MAX_TOKENS = 4_096


class SummaryFailed(RuntimeError):
    """A summary request failed (after its retries) or was aborted: nothing is written."""


@dataclass
class SummaryResult:
    summary: str
    details: dict[str, Any]
    records: list[LedgerRecord] = field(default_factory=list)
    usage: SummaryUsage = field(default_factory=SummaryUsage)


def summary_context(prompt: str) -> Context:
    """What a summary request carries: the summariser's system prompt and the prompt."""
    return Context(system_prompt=SUMMARISER_SYSTEM_PROMPT, messages=[UserMessage(content=prompt)])


async def ask_text(ask: SummaryAsk, prompt: str, max_tokens: int, what: str = "summary") -> str:
    """The answer's text; :class:`SummaryFailed` (naming the request) when it failed."""
    reply = await ask(summary_context(prompt), max_tokens)
    if reply.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
        raise SummaryFailed(f"the {what} request failed: {reply.error_message}")
    return reply.text().strip()


@dataclass(frozen=True, slots=True)
class _Sizes:
    max_tokens: int  # the summary's output cap
    budget: int  # characters of transcript the request may carry


def _sizes(model: Model, reserve_tokens: int, window: int | None, previous_summary: str | None) -> _Sizes:
    """``window``: the one the session plans for (a server may enforce less than the model's)."""
    max_tokens = min(model.max_tokens, max(1_024, int(reserve_tokens * 0.8)))
    budget = max(MIN_BUDGET_CHARS, ((window or model.context_window) - max_tokens) * 4 - PROMPT_OVERHEAD_CHARS)
    if previous_summary:
        budget = max(MIN_BUDGET_CHARS, budget - len(previous_summary))
    return _Sizes(max_tokens, budget)


async def summarise(
    plan: CompactionPlan,
    ask: SummaryAsk,
    *,
    model: Model,
    reserve_tokens: int,
    focus: str | None = None,
    window: int | None = None,
    shared: SharedPrefix | None = None,
) -> SummaryResult:
    """The summary (and the turn-prefix summary, concurrently) for ``plan``, with the
    lists heron appends itself. Raises :class:`SummaryFailed` when a request fails.

    With ``shared`` (``compaction.request: "shared"``, a server that caches prompts), one
    request repeating the last main request's prefix writes it
    (:mod:`heron.context.compaction.summary.shared_summary`); when that cannot be sent as
    one request, or its answer calls a tool, the separate summariser below writes it
    instead. Every compaction - automatic, manual, in the background - asks here."""
    previous = plan.previous.summary if plan.previous is not None else None
    sizes = _sizes(model, reserve_tokens, window, previous)
    records: list[LedgerRecord] = []
    usage = SummaryUsage()
    if shared is not None:
        try:
            outcome = await summarise_shared(
                plan,
                shared,
                max_tokens=sizes.max_tokens,
                window=window or model.context_window,
                focus=focus,
                usage=usage,
            )
        except SharedSummaryFailed as exc:
            raise SummaryFailed(str(exc)) from exc
        records += outcome.records
        if outcome.text is not None:
            return _result(plan, outcome.text, "", records, window or model.context_window, usage)

    async def counted(context: Context, max_tokens: int) -> AssistantMessage:
        reply = await ask(context, max_tokens)
        usage.add(reply)
        return reply

    history = _history(plan, counted, sizes, focus, previous, records)
    prefix = _turn_prefix(plan, counted, int(sizes.budget * 0.3), max(1_024, sizes.max_tokens // 2), focus, records)
    raw_main, raw_prefix = await asyncio.gather(history, prefix)
    return _result(plan, raw_main, raw_prefix, records, window or model.context_window, usage)


def supplied(plan: CompactionPlan, text: str, window: int) -> SummaryResult:
    """A summary given rather than asked for (an extension's), with what heron appends to
    every summary, like one the model wrote."""
    return _result(plan, text, "", [], window, SummaryUsage(mode="supplied"))


async def _history(
    plan: CompactionPlan,
    ask: SummaryAsk,
    sizes: _Sizes,
    focus: str | None,
    previous: str | None,
    records: list[LedgerRecord],
) -> str:
    """The summary of the history before the cut (in chunks when it does not fit)."""
    messages = plan.messages_to_summarize
    if not messages:
        return previous or ""
    share = sizes.budget if not plan.split_turn else int(sizes.budget * 0.7)
    chunked = None
    if len(serialise_transcript(messages, FALLBACK_TOOL_RESULT_CHARS)) > share:
        chunked = await summarise_in_chunks(
            messages,
            budget_chars=share,
            serialise=serialise_transcript,
            fit=lambda ms, size: fit_transcript(ms, size, records),
            ask=lambda prompt: ask_text(ask, prompt, sizes.max_tokens),
            request=lambda t, p: summary_request(t, p, focus),
            previous_summary=previous,
            records=records,
            merge_format=SUMMARY_FORMAT,
        )
    if chunked is not None:
        return chunked
    for attempt in range(2):
        transcript = fit_transcript(messages, share, records)
        reply = await ask(summary_context(summary_request(transcript, previous, focus)), sizes.max_tokens)
        if reply.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):
            return reply.text().strip()
        if attempt == 0 and is_context_overflow(reply):
            share //= 2  # the provider counts more than heron: the next reduction, once
            continue
        raise SummaryFailed(f"the summary request failed: {reply.error_message}")
    raise SummaryFailed("the summary request overflowed twice")


async def _turn_prefix(
    plan: CompactionPlan, ask: SummaryAsk, budget: int, max_tokens: int, focus: str | None, records: list[LedgerRecord]
) -> str:
    """The summary of the part of a split turn before the cut ("" when the turn is whole)."""
    if not plan.split_turn or not plan.turn_prefix_messages:
        return ""
    transcript = fit_transcript(plan.turn_prefix_messages, budget, records)
    prompt = f"<conversation>\n{transcript}\n</conversation>\n\n{TURN_PREFIX_PROMPT}"
    if focus:
        prompt += f"\n\nThe user asked the summary to focus on: {focus}"
    return await ask_text(ask, prompt, max_tokens, "turn-prefix summary")


# The user's own words appended to a summary take at most this share of the window (20
# requests of 500 characters are 2,500 tokens: more than half of a 4k window).
USER_REQUESTS_WINDOW_SHARE = 0.05


def requests_in(requests: list[str], window: int) -> list[str]:
    """The newest of ``requests`` within :data:`USER_REQUESTS_WINDOW_SHARE` of the window
    (each cut to what is left, the newest kept first)."""
    budget = int(window * USER_REQUESTS_WINDOW_SHARE) * 4
    kept: list[str] = []
    for request in reversed(requests):
        if budget < 40:
            break
        text = request if len(request) <= budget else request[: budget - 3] + "..."
        kept.append(text)
        budget -= len(text) + 8
    return kept[::-1]


def _result(
    plan: CompactionPlan,
    raw_main: str,
    raw_prefix: str,
    records: list[LedgerRecord],
    window: int,
    usage: SummaryUsage | None = None,
) -> SummaryResult:
    """The summary as written to the entry: the model's part, then what heron appends."""
    main, analysis = parse_summary(raw_main)
    prefix, _ = parse_summary(raw_prefix)
    summary = main
    if prefix:
        summary += "\n\n---\n\n**Turn in progress** (its later messages follow verbatim):\n\n" + prefix
    lists = file_lists_text(plan.read_files, plan.modified_files, requests_in(plan.user_requests, window))
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
    return SummaryResult(summary=summary, details=details, records=records, usage=usage or SummaryUsage())


async def summarise_branch(
    messages: Sequence[AgentMessage], ask: SummaryAsk, *, model: Model, budget_tokens: int
) -> str:
    """Summary of an abandoned branch: its newest messages first, as many as fit."""
    kept: list[AgentMessage] = []
    used = 0
    for message in reversed(messages):
        tokens = estimate_message_tokens(message)
        if kept and used + tokens > budget_tokens:
            break
        kept.append(message)
        used += tokens
    kept.reverse()
    transcript = fit_transcript(kept, budget_tokens * 4, [])
    prompt = f"<conversation>\n{transcript}\n</conversation>\n\n{BRANCH_SUMMARY_PROMPT}"
    return await ask_text(ask, prompt, min(model.max_tokens, BRANCH_SUMMARY_MAX_TOKENS), "branch summary")
