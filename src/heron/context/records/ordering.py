"""A millisecond of its own for an entry that moves the usage floor.

Prune steps and compactions change what every later request carries. Whether a reply
came before or after such a change is read from the session file by timestamps, at
millisecond resolution: the entry must be strictly newer than every message written
before it and strictly older than every message written after it, so that the question
has one answer in every process that reads the file (docs/context.md, "Rules for reading
decisions back").

This used to sleep 2 ms on each side of the write, 4 ms in all: a compaction's largest
single cost once its summary was ready, paid while the turn waits for it. Waiting only
until the clock has left the millisecond it read gives the same guarantee for at most a
millisecond on each side (half of one on average). Messages are stamped from
``time.time()`` and entries from ``time.time_ns()``, which can disagree by one at a
millisecond's edge; both are read, and the wait lasts until both have moved on. A clock
set back meanwhile cannot hold the write up: the wait never exceeds the old 2 ms.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

MAX_WAIT_S = 0.002  # the most one side waits (the old fixed sleep): a clock set back cannot stall a write


def _latest_ms() -> int:
    """The current millisecond, the later of the two ways heron stamps times."""
    return max(time.time_ns() // 1_000_000, int(time.time() * 1000))


def _past(ms: int) -> None:
    """Return once both clocks read a millisecond after ``ms`` (or after :data:`MAX_WAIT_S`)."""
    deadline = time.perf_counter() + MAX_WAIT_S
    while True:
        now_ns = time.time_ns()
        if min(now_ns // 1_000_000, int(time.time() * 1000)) > ms:
            return
        left = deadline - time.perf_counter()
        if left <= 0:
            return
        time.sleep(min(left, max(0.0, (ms + 1) * 1_000_000 - now_ns) / 1e9 + 20e-6))


@contextmanager
def strictly_ordered() -> Iterator[None]:
    """Run the write inside in a millisecond no message before or after it shares."""
    _past(_latest_ms())
    try:
        yield
    finally:
        _past(_latest_ms())


__all__ = ["strictly_ordered"]
