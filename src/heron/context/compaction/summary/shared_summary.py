"""The summary request that rides the conversation's prompt cache (``compaction.request: "shared"``).

The separate summariser sends a request of its own - its own system prompt, no tools, the
history as a transcript - so the provider's cache serves none of it and every compaction
pays for the whole history again. A shared request is instead the last main request's
exact prefix: the same system prompt, the same tools, the same messages (as the view
carried them: recorded stubs, injected blocks, the previous summary) up to the cut,
assembled by the one function that assembles a turn's request - followed by the summary
instruction as a user message. Everything before the instruction is what the provider
cached when it answered that turn.

What this module decides (docs/context.md, "The summary request"):

- **where the cut is in the view**: the first kept entry's message, looked up in the view
  the last main request carried (then in the current view, when the cut is newer);
- **whether it fits**: the prefix, the instruction and the summary's output cap must fit
  the window. A history that does not (the chunked case: it is too long for one request)
  cannot be one shared prefix; the separate summariser then chunks it as before;
- **what counts as failed**: an answer that calls a tool (the request carries the tools,
  with tool choice "none" where the API allows it without dropping the cache) or that
  overflowed. The caller then runs the separate summariser. Any other failure (a timeout,
  an error after the retries, an abort) ends the compaction as before.

Nothing here sends a request: the caller gives the function that does (:data:`SharedAsk`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from heron.agent.messages import AgentMessage
from heron.ai.overflow import is_context_overflow
from heron.ai.types import AssistantMessage, StopReason, TextContent, Usage, UserMessage
from heron.context.compaction.plan import CompactionPlan, entry_message
from heron.context.compaction.summary.summary_text import shared_instruction
from heron.context.records.ledger import LedgerRecord

# Sends the turn-shaped request of these messages (the view's prefix and the instruction)
# with this output cap, and returns the answer; a failure is an answer with an error stop reason.
SharedAsk = Callable[[list[AgentMessage], int], Awaitable[AssistantMessage]]
MIN_SHARED_OUTPUT = 1_024
MARGIN_WINDOW_SHARE = 0.03  # heron's count is chars / 4: leave the provider room to count more


class SharedSummaryFailed(RuntimeError):
    """The shared request failed in a way the separate summariser does not fix."""


@dataclass(frozen=True, slots=True)
class SharedPrefix:
    """What a shared summary request needs from the session: the views the cut is looked
    for in (the last main request's first), the function that sends it, and how a
    request of some messages is counted (system prompt and tools included)."""

    views: Sequence[Sequence[AgentMessage]]
    ask: SharedAsk
    tokens: Callable[[Sequence[AgentMessage]], int]


@dataclass(slots=True)
class SummaryUsage:
    """What the summary requests of one compaction cost, as the provider reported it:
    the input of every request (cached part included) and the part read from the cache."""

    mode: str = "separate"
    requests: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    reported: bool = False  # some answer reported input tokens

    def add(self, reply: AssistantMessage) -> None:
        usage: Usage = reply.usage
        self.requests += 1
        size = usage.input + usage.cache_read + usage.cache_write
        if size > 0:
            self.reported = True
        self.input_tokens += size
        self.cached_tokens += usage.cache_read

    def to_detail(self) -> dict[str, Any]:
        detail: dict[str, Any] = {"mode": self.mode, "requests": self.requests}
        if self.reported:
            detail["inputTokens"] = self.input_tokens
            detail["cachedTokens"] = self.cached_tokens
            detail["cacheHit"] = round(self.cached_tokens / self.input_tokens, 4) if self.input_tokens else 0.0
        return detail


@dataclass(slots=True)
class SharedOutcome:
    text: str | None  # the answer, or None: the separate summariser is to run
    records: list[LedgerRecord] = field(default_factory=list)


def cut_index(view: Sequence[AgentMessage], plan: CompactionPlan) -> int | None:
    """The position in ``view`` of the first message the compaction keeps (None: not there)."""
    kept = next((m for m in (entry_message(e) for e in plan.path[plan.first_kept_index :]) if m is not None), None)
    if kept is None:
        return None
    for index in range(len(view) - 1, -1, -1):
        if view[index] is kept:
            return index
    stamp = getattr(kept, "timestamp", None)
    for index in range(len(view) - 1, -1, -1):
        message = view[index]
        if type(message) is type(kept) and getattr(message, "timestamp", None) == stamp and _same(message, kept):
            return index
    return None


def _same(a: AgentMessage, b: AgentMessage) -> bool:
    to_a, to_b = getattr(a, "to_json_dict", None), getattr(b, "to_json_dict", None)
    return callable(to_a) and callable(to_b) and to_a() == to_b()


def _fallback(reason: str, chars: int = 0) -> LedgerRecord:
    return LedgerRecord(
        kind="summary_fallback",
        chars_before=chars,
        chars_after=chars,
        recover="the original messages stay in the session file",
        detail={"step": "separate", "reason": reason},
    )


async def summarise_shared(
    plan: CompactionPlan,
    shared: SharedPrefix,
    *,
    max_tokens: int,
    window: int,
    focus: str | None,
    usage: SummaryUsage,
) -> SharedOutcome:
    """The raw summary from one shared request, or ``text=None`` (with the ledger record
    saying why) when the separate summariser must write it. Raises
    :class:`SharedSummaryFailed` for a failure the separate summariser would repeat."""
    found = next(((v, i) for v in shared.views if (i := cut_index(v, plan)) is not None), None)
    if found is None:
        return SharedOutcome(None, [_fallback("the cut is not in the view the last request carried")])
    view, cut = found
    instruction = UserMessage(
        content=[TextContent(text=shared_instruction(plan.previous is not None, plan.split_turn, focus))]
    )
    messages = [*view[:cut], instruction]
    tokens = shared.tokens(messages)
    cap = min(max_tokens, window - tokens - int(window * MARGIN_WINDOW_SHARE))
    if cap < min(MIN_SHARED_OUTPUT, max_tokens):
        why = f"the history before the cut ({tokens:,} tokens) does not fit one request in the {window:,}-token window"
        return SharedOutcome(None, [_fallback(why, tokens * 4)])
    reply = await shared.ask(messages, cap)
    usage.add(reply)
    if reply.stop_reason == StopReason.ABORTED:
        raise SharedSummaryFailed(f"the summary request failed: {reply.error_message}")
    if reply.stop_reason == StopReason.ERROR:
        if is_context_overflow(reply):
            return SharedOutcome(None, [_fallback(f"the provider refused it as too long: {reply.error_message}")])
        raise SharedSummaryFailed(f"the summary request failed: {reply.error_message}")
    if reply.tool_calls():
        names = ", ".join(sorted({c.name for c in reply.tool_calls()}))
        return SharedOutcome(None, [_fallback(f"the summary answer called a tool ({names})")])
    text = reply.text().strip()
    if not text:
        return SharedOutcome(None, [_fallback("the summary answer was empty")])
    usage.mode = "shared"
    return SharedOutcome(text)
