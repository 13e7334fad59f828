"""Per-request options shared by every provider."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from heron.ai.abort import AbortSignal
from heron.ai.events import RetryEvent
from heron.ai.types import ThinkingLevel

if TYPE_CHECKING:
    from heron.ai.reading import ReadingSample

CacheRetention = Literal["none", "short", "long"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff for transient failures (by default 3 retries, 2 s base, 60 s cap).

    A server's ``retry-after`` wins over the computed delay; one longer than ``max_delay``
    is not waited for - the error is reported instead, so a user is never stuck for an
    hour on a quota reset.
    """

    max_retries: int = 3
    base_delay: float = 2.0
    max_delay: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        return float(min(self.max_delay, self.base_delay * (2**attempt)))


NO_RETRY = RetryPolicy(max_retries=0)

# Bounds on every wait, in milliseconds (the settings ``timeouts.firstByteMs``,
# ``timeouts.idleMs`` and ``timeouts.requestMs``). Below MIN_TIMEOUT_MS is refused.
FIRST_BYTE_MS = 60_000
IDLE_MS = 120_000
REQUEST_MS = 900_000
MIN_TIMEOUT_MS = 1_000
# A local server's prompt-reading speed (tokens per second) assumed until one is measured
# (the setting ``timeouts.readingTokensPerSecond``; heron.ai.reading).
READING_TOKENS_PER_SECOND = 20

# The setting each timer is configured by, as a user writes it: named in the error.
TIMEOUT_SETTINGS = {
    "first_byte_ms": "timeouts.firstByteMs",
    "idle_ms": "timeouts.idleMs",
    "request_ms": "timeouts.requestMs",
}


@dataclass(frozen=True, slots=True)
class ContextManagement:
    """Server-side context management a request asks for (docs/context.md,
    "Provider-native compaction"). ``compact_trigger``: the provider compacts the
    conversation itself once the input passes this many tokens (Anthropic's
    ``compact_20260112`` edit, OpenAI Responses' ``compact_threshold``), with
    ``instructions`` replacing its summary prompt where the API takes one.
    ``clear_trigger``: Anthropic clears old tool results server-side above this many
    input tokens (``clear_tool_uses_20250919``), keeping the last ``clear_keep`` tool
    uses, clearing at least ``clear_at_least`` tokens, never ``exclude_tools``."""

    compact_trigger: int | None = None
    instructions: str | None = None
    clear_trigger: int | None = None
    clear_keep: int = 3
    clear_at_least: int | None = None
    exclude_tools: tuple[str, ...] = ()


@dataclass(slots=True)
class StreamOptions:
    """Per-request options; ``None`` leaves the choice to the provider adapter or the server."""

    api_key: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    thinking: ThinkingLevel = "off"
    signal: AbortSignal | None = None
    headers: dict[str, str] | None = None
    # Stable per conversation: providers use it as the prompt-cache key.
    session_id: str | None = None
    cache_retention: CacheRetention = "short"
    # "none": the answer must not call a tool, though the tools are sent (a summary request
    # that shares the conversation's cached prefix). Sent where the API has it and it does
    # not cost the cache: OpenAI chat / responses ``tool_choice``, Gemini's function calling
    # mode; not to Anthropic, whose cache drops the messages when tool_choice changes.
    tool_choice: Literal["none"] | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    on_retry: Callable[[RetryEvent], None] | None = None
    # Called with the request body just before it is sent (debugging, tests, the ledger).
    on_payload: Callable[[dict[str, Any]], None] | None = None
    # Server-side compaction / clearing to ask for, where the provider offers it. A request
    # the server rejects with it is sent once more without it (the answer then says so).
    context_management: ContextManagement | None = None
    # No byte of the answer yet (connecting, the server thinking before its headers).
    first_byte_ms: int = FIRST_BYTE_MS
    # No content for this long once the answer started; SSE comments and pings do not count.
    idle_ms: int = IDLE_MS
    # The whole request, from sending it to its last event.
    request_ms: int = REQUEST_MS
    # A local server (heron.ai.reading): its prompt-reading speed measured before (tokens per
    # second; None: not yet), the speed assumed until then, and where a new measurement goes.
    reading_speed: float | None = None
    assumed_reading_speed: float = READING_TOKENS_PER_SECOND
    on_reading: Callable[[ReadingSample], None] | None = None
    # Kept for callers of earlier versions; the three bounds above are what is enforced.
    timeout: float = 600.0

    def __post_init__(self) -> None:
        for name in TIMEOUT_SETTINGS:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < MIN_TIMEOUT_MS:
                raise ValueError(
                    f"{TIMEOUT_SETTINGS[name]} must be a whole number of milliseconds "
                    f">= {MIN_TIMEOUT_MS}, got {value!r}"
                )
        for name in ("reading_speed", "assumed_reading_speed"):
            speed = getattr(self, name)
            if speed is not None and (isinstance(speed, bool) or not isinstance(speed, int | float) or speed <= 0):
                raise ValueError(f"{name} must be a number of tokens per second > 0, got {speed!r}")
