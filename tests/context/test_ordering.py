"""An entry that moves the usage floor gets a millisecond of its own (heron.context.records.ordering)."""

from __future__ import annotations

import time

import pytest

import heron.context.records.ordering as ordering
from heron.ai.types import now_ms
from heron.context.records.ordering import MAX_WAIT_S, strictly_ordered
from heron.session.entries import iso_now, iso_to_ms


def test_the_entry_is_strictly_between_the_messages_around_it() -> None:
    for _ in range(200):  # many tries: each lands somewhere else in its millisecond
        before = now_ms()
        with strictly_ordered():
            stamp = iso_to_ms(iso_now())
        after = now_ms()
        assert before < stamp < after


def test_it_waits_for_the_clock_to_tick_not_a_fixed_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    # The old rule slept 2 ms on each side; the wait now ends when the millisecond does.
    asked: list[float] = []
    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        asked.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(ordering.time, "sleep", sleep)
    for _ in range(20):
        asked.clear()
        with strictly_ordered():
            pass
        assert asked, "it waits on both sides"
        assert max(asked) <= 0.001 + 30e-6
        assert sum(asked) <= 2 * (0.001 + 30e-6)


def test_a_clock_set_back_does_not_stall_the_write(monkeypatch: pytest.MonkeyPatch) -> None:
    stuck_ns = time.time_ns()
    monkeypatch.setattr(ordering.time, "time_ns", lambda: stuck_ns)
    monkeypatch.setattr(ordering.time, "time", lambda: stuck_ns / 1e9)
    start = time.perf_counter()
    with strictly_ordered():
        pass
    assert time.perf_counter() - start < 2 * MAX_WAIT_S + 0.05  # capped: the clock never moves on here
