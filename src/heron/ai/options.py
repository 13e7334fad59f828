"""Per-request options shared by every provider."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from heron.ai.abort import AbortSignal
from heron.ai.events import RetryEvent
from heron.ai.types import ThinkingLevel

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


@dataclass(slots=True)
class StreamOptions:
    api_key: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    thinking: ThinkingLevel = "off"
    signal: AbortSignal | None = None
    headers: dict[str, str] | None = None
    # Stable per conversation: providers use it as the prompt-cache key.
    session_id: str | None = None
    cache_retention: CacheRetention = "short"
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    on_retry: Callable[[RetryEvent], None] | None = None
    # Called with the request body just before it is sent (debugging, tests, the ledger).
    on_payload: Callable[[dict[str, Any]], None] | None = None
    timeout: float = 600.0
