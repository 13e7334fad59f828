"""Simulated wall-clock time for the long-run benchmark (issue 28): the user's pauses.

The prompt-cache figures assume a user pause before each turn (``_prompt_cache.pauses``);
heron's cold-cache pruning (``pruning.cacheTtlSeconds``) decides from the time since the
last reply, so heron has to live through the same pauses. The benchmark cannot wait 15
minutes a turn: the wall clock (``time.time`` and ``time.time_ns``, which every timestamp
in the session file comes from) is shifted forward by each pause instead. In process,
:class:`WallClock` shifts it; for an agent process, ``python _sim_clock.py OFFSET_FILE
-m module args...`` runs the module with the clock shifted by the seconds written in
OFFSET_FILE (re-read when the file changes), which the driver advances before each
prompt. ``time.monotonic`` (timeouts, durations) is left alone.
"""

from __future__ import annotations

import os
import runpy
import sys
import time
from pathlib import Path
from types import TracebackType

_real_time, _real_time_ns = time.time, time.time_ns


class WallClock:
    """``with WallClock() as clock: clock.advance(seconds)``: the wall clock shifted."""

    def __init__(self) -> None:
        self.offset = 0.0

    def advance(self, seconds: float) -> None:
        self.offset += seconds

    def __enter__(self) -> WallClock:
        time.time = lambda: _real_time() + self.offset
        time.time_ns = lambda: _real_time_ns() + int(self.offset * 1e9)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        time.time, time.time_ns = _real_time, _real_time_ns


def command(offset_file: Path, module_args: list[str]) -> list[str]:
    """``[python, -m, module, ...]`` run with the clock of ``offset_file``."""
    assert module_args[1] == "-m", module_args
    return [module_args[0], str(Path(__file__).resolve()), str(offset_file), *module_args[1:]]


def advance(offset_file: Path, seconds: float) -> None:
    current = float(offset_file.read_text() or 0) if offset_file.exists() else 0.0
    offset_file.write_text(repr(current + seconds))


def _main() -> None:
    offset_file = Path(sys.argv[1])
    seen: list[object] = [None, 0.0]

    def offset() -> float:
        try:
            stamp = os.stat(offset_file).st_mtime_ns
        except OSError:
            return 0.0
        if stamp != seen[0]:
            seen[0], seen[1] = stamp, float(offset_file.read_text() or 0)
        return float(seen[1])  # type: ignore[arg-type]

    time.time = lambda: _real_time() + offset()
    time.time_ns = lambda: _real_time_ns() + int(offset() * 1e9)
    assert sys.argv[2] == "-m"
    module = sys.argv[3]
    sys.argv = [module, *sys.argv[4:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _main()
