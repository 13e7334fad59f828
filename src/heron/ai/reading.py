"""Waiting for a local server that is still reading the prompt.

A model served on this machine (llama.cpp, Ollama, LM Studio, vLLM on a CPU or a small
GPU) reads a long prompt slowly: 8,000 tokens at 30 tokens a second is more than four
minutes before the first event of the answer. A fixed bound (``timeouts.firstByteMs``)
then fails a request the server is working on, and the retry that follows queues behind
the copy still being read - the reading starts over, and over. For a local server heron
therefore:

- asks for progress where the server offers it: llama.cpp streams ``prompt_progress``
  objects (``total``, ``cache``, ``processed``, ``time_ms``) while it reads, when the
  request says ``"return_progress": true`` (``heron.ai.providers.openai_chat`` sends it
  to a local server); each one that advances counts as the server working;
- gives the server the time the prompt needs: the tokens still to read over its speed -
  the speed the progress shows, else one measured on earlier answers (both twice over: a
  longer prompt reads slower per token, a second slot shares the machine), else the speed
  assumed until one is measured (``timeouts.readingTokensPerSecond``) - and never less
  than the configured bound. The tokens are heron's estimate of the whole request (the
  server may have most of it cached: the wait is then longer than needed only when the
  server has really stopped);
- learns the speed from each answer (:func:`sample_of`): llama.cpp's ``timings``
  (``prompt_n`` tokens read in ``prompt_ms``), else the uncached input tokens the usage
  reports over the time to the answer's first event. The caller keeps the samples where
  a restart finds them (``StreamOptions.on_reading``, ``reading_speed``);
- never sends a request again that timed out while the server may still be reading it
  (the error says so, and is not retried).

"Local" is a base URL on this machine or a private network, unless ``compat.localServer``
(true / false) says otherwise; ``compat.promptProgress`` (true / false) overrides whether
progress is asked for. ``timeouts.requestMs`` counts, for a local server, from the end of
the reading: the reading has its own bound above.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from heron.ai.providers.http import is_local_url
from heron.ai.tokens import estimate_context_tokens
from heron.ai.types import Context, Model

if TYPE_CHECKING:
    from heron.ai.builder import MessageBuilder

MARGIN = 2.0  # a measured speed may halve on the next prompt (longer, or sharing the machine)
MIN_SAMPLE_TOKENS = 256  # a shorter reading is mostly overhead: not a measurement of the speed


@dataclass(frozen=True, slots=True)
class ReadingSample:
    """One measurement: ``tokens`` read in ``seconds``."""

    tokens: int
    seconds: float

    @property
    def speed(self) -> float:
        return self.tokens / self.seconds


@dataclass(frozen=True, slots=True)
class PromptProgress:
    """llama.cpp's ``prompt_progress``: of ``total`` prompt tokens, ``cache`` came from its
    cache and ``processed`` are done (the cached ones included), ``time_ms`` after it began."""

    total: int
    cache: int
    processed: int
    time_ms: int

    def live_speed(self) -> float | None:
        """Tokens per second of this reading so far (None: too little read to tell)."""
        read = self.processed - self.cache
        if self.time_ms <= 0 or read < MIN_SAMPLE_TOKENS:
            return None
        return read / (self.time_ms / 1000)


def _flag(model: Model, key: str) -> bool | None:
    compat = model.compat if isinstance(model.compat, dict) else {}
    value = compat.get(key)
    return value if isinstance(value, bool) else None


def is_local_server(model: Model) -> bool:
    """Whether ``model`` is served from this machine or a private network (``compat.localServer`` wins)."""
    stated = _flag(model, "localServer")
    if stated is not None:
        return stated
    if not model.base_url:
        return False
    return is_local_url(model.base_url)


def asks_progress(model: Model) -> bool:
    """Whether a request to ``model`` asks the server to stream its prompt progress."""
    stated = _flag(model, "promptProgress")
    return stated if stated is not None else is_local_server(model)


def progress_of(value: Any) -> PromptProgress | None:
    """A ``prompt_progress`` object as sent, or None when it is not one."""
    if not isinstance(value, dict):
        return None
    fields = [value.get(name) for name in ("total", "cache", "processed", "time_ms")]
    numbers = [f if isinstance(f, int | float) and not isinstance(f, bool) else 0 for f in fields]
    total, cache, processed, time_ms = (int(n) for n in numbers)
    if total <= 0:
        return None
    return PromptProgress(total, max(0, cache), max(0, processed), max(0, time_ms))


class ReadingWait:
    """One attempt's wait for a local server to read its prompt: the deadline while it may
    still be reading, and what a timeout then says."""

    def __init__(self, context: Context, measured: float | None, assumed: float) -> None:
        self._context = context
        self._tokens: int | None = None
        self.measured = measured
        self.assumed = assumed
        self.started = time.monotonic()

    @property
    def tokens(self) -> int:
        """heron's estimate of the request's tokens (computed once, when first needed)."""
        if self._tokens is None:
            self._tokens = estimate_context_tokens(self._context)
        return self._tokens

    def seconds_left(self, progress: PromptProgress | None) -> float:
        """How long the rest of the reading may take."""
        remaining = self.tokens if progress is None else max(0, progress.total - progress.processed)
        live = progress.live_speed() if progress is not None else None
        speed = live or self.measured
        if speed:
            return MARGIN * remaining / speed
        return remaining / self.assumed

    def reading(self, builder: MessageBuilder) -> bool:
        """Whether the server may still be reading: no event of the answer itself yet."""
        return builder.answering_at is None

    def deadline(self, builder: MessageBuilder, bound_s: float) -> float:
        """When to give up while the server may still be reading: from the last sign of
        work (the request, its headers, progress that advanced), the longer of ``bound_s``
        and the time the rest of the prompt needs."""
        anchor = max(self.started, builder.responded_at or 0.0, builder.progress_at or 0.0)
        return anchor + max(bound_s, self.seconds_left(builder.progress))

    def timeout_text(self, where: str, builder: MessageBuilder, setting: str) -> str:
        progress = builder.progress
        if progress is not None:
            read = f"it had read {progress.processed:,} of {progress.total:,} prompt tokens"
        else:
            read = f"it may still be reading the prompt (about {self.tokens:,} tokens)"
        waited = time.monotonic() - self.started
        return (
            f"Request timed out: {where} sent no answer within {waited:.0f} s ({setting}, "
            f"extended to the reading time for a local server): {read}. heron does not send it "
            "again (a second copy would wait behind the first)"
        )


def sample_of(wait: ReadingWait, builder: MessageBuilder) -> ReadingSample | None:
    """The speed measurement an answer gives, or None: llama.cpp's ``timings``, else the
    uncached input tokens over the time to the answer's first event."""
    timing = builder.prompt_timing
    if timing is not None:
        tokens, ms = timing
        if tokens >= MIN_SAMPLE_TOKENS and ms > 0:
            return ReadingSample(tokens, ms / 1000)
        return None
    if builder.answering_at is None:
        return None
    tokens = builder.usage.input
    seconds = builder.answering_at - wait.started
    if tokens < MIN_SAMPLE_TOKENS or not math.isfinite(seconds) or seconds <= 0:
        return None
    return ReadingSample(tokens, seconds)


__all__ = [
    "MARGIN",
    "PromptProgress",
    "ReadingSample",
    "ReadingWait",
    "asks_progress",
    "is_local_server",
    "progress_of",
    "sample_of",
]
