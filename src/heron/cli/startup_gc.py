"""The cyclic garbage collector paused while heron starts, and what start-up made frozen after.

Start-up creates hundreds of thousands of objects that live as long as the process (modules,
classes, functions, the session and its tools). The collector runs by allocation counts, so
it walks them again and again while they are being made: in a ``heron -p`` run on a busy
2-vCPU machine that was about a tenth of the process's CPU time (117 young, 11 middle and one
full collection before the first request; bench/cli_startup.py). Nothing start-up makes is
garbage worth that. :func:`pause` stops the collector before the heavy imports;
:func:`resume`, once the session is built, moves everything alive into the permanent
generation (``gc.freeze``: never scanned again) and lets the collector run for what the
session creates from then on, so a long session collects as before, over fewer objects.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop collecting until :func:`resume` (only in heron's own process: see cli.main)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Freeze what start-up made and collect again; does nothing unless :func:`pause` did."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
