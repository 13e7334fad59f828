"""The collector paused during start-up (heron.cli.startup_gc): off while heron starts, then on
again with what start-up made frozen; nothing changes for a process whose collector was off."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from heron.cli import startup_gc


@pytest.fixture(autouse=True)
def restore_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    startup_gc.resume()
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


def test_pause_stops_collection_and_resume_freezes_start_up_and_collects_again() -> None:
    gc.enable()
    gc.unfreeze()
    startup_gc.pause()
    assert not gc.isenabled()
    made_during_start_up = [[n] for n in range(1000)]
    startup_gc.resume()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made_during_start_up)  # never walked again
    startup_gc.resume()  # a second resume (a command that built no session) changes nothing
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    gc.unfreeze()
    startup_gc.pause()
    startup_gc.resume()
    assert not gc.isenabled() and gc.get_freeze_count() == 0


def test_resume_without_pause_does_nothing() -> None:
    gc.enable()
    gc.unfreeze()
    startup_gc.resume()
    assert gc.isenabled() and gc.get_freeze_count() == 0
