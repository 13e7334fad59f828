"""Retry lines shared by every mode: shown as they happen, and a retry the user aborted
is reported as cancelled, never as "succeeded" (the runtime reports the aborted retried
request as a success)."""

from __future__ import annotations

from heron.agent.events import MessageEndEvent
from heron.ai.types import AssistantMessage, StopReason
from heron.cli.notices import RetryNotices
from heron.coding.events import RetryEndEvent, RetryStartEvent


def lines() -> tuple[RetryNotices, list[tuple[str, str]]]:
    said: list[tuple[str, str]] = []
    return RetryNotices(lambda text, kind: said.append((text, kind))), said


def start(attempt: int, delay: float = 4.0) -> RetryStartEvent:
    return RetryStartEvent(attempt=attempt, max_attempts=3, delay=delay, error_message="503 overloaded")


def test_retries_are_announced_and_their_outcome_said() -> None:
    notices, said = lines()
    notices.handle(start(1, 2.0))
    notices.handle(start(2, 0.5))
    notices.handle(RetryEndEvent(success=True, attempt=2))
    assert said == [
        ("503 overloaded; retrying in 2 s (1/3)…", "retry"),
        ("503 overloaded; retrying in 0.5 s (2/3)…", "retry"),
        ("retry 2 succeeded", "ok"),
    ]


def test_an_abort_during_the_wait_is_a_cancellation() -> None:
    notices, said = lines()
    notices.handle(start(2))
    notices.cancel()  # Ctrl+C / Esc while waiting
    notices.handle(RetryEndEvent(success=True, attempt=2))  # what the runtime then reports
    assert said[-1] == ("retry 2 cancelled", "cancelled")
    assert not any("succeeded" in text for text, _ in said)


def test_an_aborted_answer_without_a_retry_end_is_a_cancellation_too() -> None:
    notices, said = lines()
    notices.handle(start(1))
    aborted = AssistantMessage(api="faux", provider="faux", model="m", stop_reason=StopReason.ABORTED)
    notices.handle(MessageEndEvent(message=aborted))
    assert said[-1] == ("retry 1 cancelled", "cancelled")
    notices.reset()  # a new run: a later success is a success again
    notices.handle(start(1))
    notices.handle(RetryEndEvent(success=True, attempt=1))
    assert said[-1] == ("retry 1 succeeded", "ok")
