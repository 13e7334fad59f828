"""Windows learnt from rejections: learning one, doubting one, and dropping one.

A server may enforce less than the configured window (llama-server's slots, a proxy, a
model run with a smaller context). Its rejection teaches heron the window it enforces, so
such a server costs one rejection, not one per request (:meth:`WindowLearner.learn_from_overflow`).
A rejection whose stated count is more than ten times off heron's teaches nothing
(:meth:`WindowLearner.implausible_overflow`). A learned window is a guess, and two things
prove it wrong and drop it (a ``window_reset`` decision in the session, so a resumed
process plans the same way):

* the server answered a request larger than it: by its own count (the reply's usage),
  the request carried more than the learned window - the rejection that taught it was a
  proxy's hiccup, a slot that was full, an attachment it could not take;
* the user says so (``/context reset-window``, rpc ``reset_window``).

:class:`WindowLearner` is held by :class:`~heron.context.policy.ContextPolicy`; it is given
the rejected request's numbers (from that request's plan), never reads them from a field
another hook set. The error texts it reads are parsed by the functions below.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from heron.agent.messages import AgentMessage
from heron.ai.types import AssistantMessage, StopReason
from heron.context.records.decisions import LearnedWindow, window_data, window_reset_data
from heron.context.records.ledger import Ledger, LedgerRecord
from heron.context.records.recorder import DecisionRecorder
from heron.context.window.budget import IMPLAUSIBLE_RATIO

if TYPE_CHECKING:  # the window model sits at the layer's top, above the stages
    from heron.context.sizes import WindowSizes

MIN_LEARNED_WINDOW = 2_048
_FAILED = (StopReason.ERROR, StopReason.ABORTED)

# The limit a server states when it rejects a request, in the wordings seen in the wild
# (compiled by ``re``, which caches it, with the first rejection to read: not at start).
_LIMIT_PATTERNS = (
    r"maximum context length is (\d+)",
    r"\d+\s*tokens?\s*>\s*(\d+)\s*maximum",
    r"context (?:size|length|window)\D{0,20}\((\d+)\s*tokens?\)",
    r"\"?n_ctx\"?\s*[:=]\s*(\d+)",
    r"(?:limit|maximum|max) (?:of |is )?(\d+) tokens",
    r"context (?:size|length|window) (?:of |is )?(\d+)",
)


def stated_limit(text: str, window: int) -> int | None:
    """The token limit an overflow error names, when it names a plausible one."""
    for pattern in _LIMIT_PATTERNS:
        match = re.search(pattern, text, re.IGNORECASE)
        if match:
            value = int(match.group(1))
            if 1_024 <= value < window:
                return value
    return None


# The sizes a server says it counted, likewise compiled with the first rejection.
_COUNTED_TOTAL = r"(?:you )?requested (\d+) tokens"
_COUNTED_INPUT = r"n_prompt_tokens\"?\s*[:=]\s*(\d+)|prompt is too long: (\d+) tokens"


def server_count(text: str) -> int | None:
    """The size the server says it counted for the rejected request (total, else input)."""
    total = re.search(_COUNTED_TOTAL, text, re.IGNORECASE)
    if total:
        return int(total.group(1))
    counted = re.search(_COUNTED_INPUT, text, re.IGNORECASE)
    return int(counted.group(1) or counted.group(2)) if counted else None


def counted_ratio(text: str, *, heron_input: int, heron_total: int) -> float:
    """heron's count over the server's, for the request an error describes (1.0: unknown)."""
    total = re.search(_COUNTED_TOTAL, text, re.IGNORECASE)
    if total and heron_total > 0:
        return heron_total / max(1, int(total.group(1)))
    counted = re.search(_COUNTED_INPUT, text, re.IGNORECASE)
    if counted and heron_input > 0:
        value = int(counted.group(1) or counted.group(2))
        return heron_input / max(1, value)
    return 1.0


class WindowLearner:
    """What the policy does after a rejection, and when the window it learnt stops being true."""

    def __init__(self, sizes: WindowSizes, recorder: DecisionRecorder, ledger: Ledger) -> None:
        self.sizes = sizes
        self.recorder = recorder
        self.ledger = ledger

    def implausible_overflow(self, failed: AssistantMessage, tokens: int, max_tokens: int) -> bool:
        """Whether a rejection's stated count is more than :data:`IMPLAUSIBLE_RATIO` times
        off heron's own count of the request it rejected ("prompt is too long: 210000
        tokens" for a 5,000-token request: a proxy that counts differently, one oversized
        attachment). Such a rejection says nothing about the window: nothing is learned
        from it, the request is retried once after compaction. ``tokens`` and
        ``max_tokens``: heron's count and output cap of the rejected request (its plan's)."""
        ratio = counted_ratio(failed.error_message or "", heron_input=tokens, heron_total=tokens + max_tokens)
        return not 1 / IMPLAUSIBLE_RATIO <= ratio <= IMPLAUSIBLE_RATIO

    def learn_from_overflow(
        self,
        failed: AssistantMessage,
        accepted_tokens: int = 0,
        *,
        tokens: int,
        max_tokens: int,
    ) -> LearnedWindow | None:
        """Lower the window below the rejected request's size (recorded in the session), so
        a server that enforces less than the configured window costs one rejection.

        When the error names the limit, that limit is used, scaled by how the server's
        count of this request compares with heron's (when it says how much it counted).
        Otherwise 90% of the larger of the rejected input and half the whole request
        (input plus output cap): below what was refused whether the server counts the
        output cap or not.

        Never below ``accepted_tokens`` (heron's count of the last request the server
        accepted: a window it already served), and nothing is learned from an
        :meth:`implausible_overflow`. ``tokens`` and ``max_tokens``: heron's count and
        output cap of the rejected request, passed by whoever sent it (its plan's)."""
        if self.implausible_overflow(failed, tokens, max_tokens):
            return None
        text = failed.error_message or ""
        rejected = tokens + max_tokens
        current, key = self.sizes.window, self.sizes.model_key
        limit = stated_limit(text, current) or stated_limit(text, self.sizes.model.context_window + 1)
        source = "error text"
        if limit is not None:
            ratio = counted_ratio(text, heron_input=tokens, heron_total=rejected)
            # Refused below the limit it states, by its own count when it gives one (else by
            # heron's): that limit is not what it enforces (a proxy, llama-server's slots), and
            # learning from it would lower the window a token per rejection. Go below the size.
            counted = server_count(text)
            unreached = counted <= limit if counted is not None else rejected <= int(limit * 0.98)
            limit = int(limit * min(1.0, ratio) * 0.98)
            if unreached:
                limit = int(max(tokens, rejected / 2) * 0.9)
        else:
            limit, source = int(max(tokens, rejected / 2) * 0.9), "rejected size"
        window = max(MIN_LEARNED_WINDOW, accepted_tokens, min(limit, current - 1))
        if window >= current:
            return None
        learned = LearnedWindow(model=key, window=window, rejected_tokens=rejected, source=source)
        self.recorder.record(window_data(learned))
        self.ledger.add(
            LedgerRecord(
                kind="overflow",
                chars_before=rejected * 4,
                chars_after=window * 4,
                recover=f"window lowered to {window:,} tokens for {key}",
                detail={"error": text, "source": source, "window": window, "rejectedTokens": rejected},
            )
        )
        return learned

    def forget_window(self, reason: str) -> int | None:
        """Drop the window learned for the current model (recorded, so a restart plans with
        the configured one too); returns the dropped window, None when there was none."""
        key = self.sizes.model_key
        learned = self.recorder.decisions.learned_window(key)
        if learned is None:
            return None
        self.recorder.record(window_reset_data(key, learned, reason))
        self.ledger.add(
            LedgerRecord(
                kind="overflow",
                chars_before=learned * 4,
                chars_after=self.sizes.window * 4,
                recover=f"learned window of {learned:,} tokens dropped for {key} ({reason})",
                detail={"reset": reason, "window": learned},
            )
        )
        return learned

    def expire_learned_window(self, messages: Sequence[AgentMessage]) -> int | None:
        """Drop the learned window when the last answered request of this model was larger
        than it (the server's usage says so); returns the dropped window."""
        key = self.sizes.model_key
        learned = self.recorder.decisions.learned_window(key)
        if learned is None:
            return None
        for message in reversed(messages):
            if not isinstance(message, AssistantMessage) or message.stop_reason in _FAILED:
                continue
            if f"{message.provider}/{message.model}" != key:
                return None
            usage = message.usage
            served = usage.input + usage.cache_read + usage.cache_write
            return self.forget_window("a larger request was served") if served > learned else None
        return None
