"""Messages every mode shows the same way: retries as they happen, and what a refused key
means.

The runtime emits ``retry_start`` before each wait and ``retry_end`` when the retried
request finished. After an abort during the wait that request ends *aborted*, which the
event reports as a success; :class:`RetryNotices` knows an abort was asked for and says
"cancelled" instead. Print and json mode write these lines to stderr (stdout is the
answer or the event stream), the interactive mode prints them in the conversation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from heron.ai.types import AssistantMessage, StopReason
from heron.coding.outcome import explain_error as explain_error


def format_delay(seconds: float) -> str:
    """``4 s``, ``0.5 s``, ``90 s``: whole seconds when they are whole."""
    return f"{seconds:.0f} s" if seconds >= 10 or float(seconds).is_integer() else f"{seconds:.1f} s"


def retry_start_text(event: Any) -> str:
    cause = (getattr(event, "error_message", "") or "").strip() or "the request failed"
    return f"{cause}; retrying in {format_delay(event.delay)} ({event.attempt}/{event.max_attempts})…"


class RetryNotices:
    """Turns retry events into lines for ``say``; call :meth:`cancel` when the user aborts."""

    def __init__(self, say: Callable[[str, str], None]) -> None:
        self._say = say  # (text, kind): kind is "retry", "ok", "cancelled" or "failed"
        self._pending = 0  # the attempt being waited for or running, 0 when none
        self._cancelled = False

    def reset(self) -> None:
        """A new run starts: an earlier abort no longer applies."""
        self._pending = 0
        self._cancelled = False

    def cancel(self) -> None:
        """The user aborted; a retry in progress is cancelled, not successful."""
        self._cancelled = True
        if self._pending:
            self._say(f"retry {self._pending} cancelled", "cancelled")
            self._pending = 0

    def handle(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind == "retry_start":
            self._pending = event.attempt
            self._say(retry_start_text(event), "retry")
        elif kind == "retry_end":
            attempt, self._pending = event.attempt, 0
            if self._cancelled:
                return  # said already, when the abort came
            if event.success:
                self._say(f"retry {attempt} succeeded", "ok")
            else:
                self._say(f"gave up after {attempt} retries: {event.final_error or 'error'}", "failed")
        elif (
            kind == "message_end"
            and self._pending
            and isinstance(event.message, AssistantMessage)
            and event.message.stop_reason == StopReason.ABORTED
        ):  # aborted without a retry_end
            self.cancel()


def context_warning_text(event: Any) -> str | None:
    """The one line for a ``context_warning`` event (automatic compaction switched off, a
    window learnt from a refusal, a context rule broken); None for other events. Print
    mode writes it to stderr as ``heron: warning: ...``."""
    kind = getattr(event, "type", "")
    if kind == "context_warning":
        return str(event.message) if event.kind in ("extension", "memory") else f"context: {event.message}"
    return None
