"""Which failures mean "the context is too long", which are worth retrying, and which not.

The distinction drives recovery: an overflow is fixed by compacting, a transient error
by waiting, anything else by telling the user. Providers word overflows differently,
so the patterns below come from their real error texts. A 429 is always a rate limit,
even when its text mentions tokens ("too many tokens per minute").

The patterns are compiled with the first failure to classify: a run whose requests
succeed never needs them (2 ms of a start; docs/benchmarks.md, "The command").
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from enum import StrEnum

from heron.ai.types import AssistantMessage, StopReason


class ErrorKind(StrEnum):
    OVERFLOW = "overflow"
    RATE_LIMIT = "rate_limit"
    TRANSIENT = "transient"
    AUTH = "auth"
    ABORTED = "aborted"
    INVALID_REQUEST = "invalid_request"
    # Not a server error: heron stopped the run at its model-call limit (heron.agent.turn_limit).
    TURN_LIMIT = "turn_limit"
    # Not a server error: heron stopped the run at the goal's token budget (heron.context.continuity.goal).
    GOAL_BUDGET = "goal_budget"
    # Not a server error: the goal loop reached its limit of automatic continuations (heron.coding.goal_loop).
    GOAL_TURNS = "goal_turns"
    # Not a server error: the model reported the goal blocked with the goal tool (heron.coding.goal_loop).
    GOAL_BLOCKED = "goal_blocked"
    UNKNOWN = "unknown"


RETRYABLE = frozenset({ErrorKind.RATE_LIMIT, ErrorKind.TRANSIENT})

_OVERFLOW_WORDING = "|".join(
    [
        r"prompt is too long",  # Anthropic
        r"input is too long",
        r"maximum context length is \d+ tokens",  # OpenAI chat, vLLM
        r"exceeds? (the )?(model'?s? )?context (window|length|size)",  # OpenAI responses
        r"context[_ ]length[_ ]exceeded",
        r"context window (is )?exceeded",
        r"model_context_window_exceeded",
        r"input token count.{0,80}exceeds the maximum",  # Gemini
        r"too many tokens",
        r"request too large",
        r"reduce the length of the messages",
        r"requested \d+ tokens.{0,40}context",  # Groq, Together
        r"greater than the context length",  # llama.cpp
        r"tokens? limit exceeded",
        r"prompt tokens? .{0,40}exceed",  # Ollama, LM Studio
        r"exceeds the available context",
    ]
)
_TRANSIENT_WORDING = (
    r"overloaded|rate.?limit|service unavailable|temporarily unavailable|connection (reset|refused|error)"
    r"|timed? ?out|bad gateway|gateway timeout|internal server error|try again|server disconnected"
    r"|peer closed connection"
)


def classify(status: int | None, message: str) -> ErrorKind:
    """Kind of a provider failure from its HTTP status (if any) and error text."""
    if status == 429:
        return ErrorKind.RATE_LIMIT
    if status in (401, 403):
        return ErrorKind.AUTH
    if status in (400, 413, 422) or status is None:
        if re.search(_OVERFLOW_WORDING, message, re.IGNORECASE):
            return ErrorKind.OVERFLOW
        if status == 413 or (status == 400 and not message.strip()):
            return ErrorKind.OVERFLOW  # a 400/413 with no body is how some proxies say it
    if status is not None and (status >= 500 or status in (408, 409)):
        return ErrorKind.TRANSIENT
    if status is None and re.search(_TRANSIENT_WORDING, message, re.IGNORECASE):
        return ErrorKind.TRANSIENT
    if status is not None and 400 <= status < 500:
        return ErrorKind.INVALID_REQUEST
    return ErrorKind.UNKNOWN


def is_context_overflow(message: AssistantMessage, context_window: int | None = None) -> bool:
    """Whether a finished assistant message shows the request did not fit.

    Works on stored messages too (no status code there): the error text is matched, with
    rate-limit wording excluded, and a "successful" answer whose reported input is above
    the window counts as a silent overflow (some servers truncate instead of refusing).
    """
    if message.stop_reason == StopReason.ERROR:
        text = message.error_message or ""
        if re.search(r"\b429\b|rate.?limit", text, re.IGNORECASE):
            return False
        return bool(re.search(_OVERFLOW_WORDING, text, re.IGNORECASE))
    if context_window and message.stop_reason in (StopReason.STOP, StopReason.TOOL_USE):
        usage = message.usage
        return usage.input + usage.cache_read > context_window
    return False


class ProviderError(Exception):
    """A failed request, normalised: providers raise it (or an error of their own that their
    ``describe_error`` turns into one)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        kind: ErrorKind | None = None,
        url: str | None = None,
        retryable: bool = True,
    ) -> None:
        super().__init__(message)
        # False for a failure of a retryable kind that was retried already where it
        # happened (a local server refusing the connection): not retried again.
        self.retryable = retryable
        # The server the request went to (``scheme://host``), named in messages of
        # failures a user may have to act on (connection, 5xx, 429).
        self.url = url
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.kind = kind if kind is not None else classify(status, message)


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or HTTP date)."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    import email.utils  # rare path; keep it off the import of heron.ai

    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)
