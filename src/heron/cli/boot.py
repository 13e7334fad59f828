"""The process-wide start-up tricks of the ``heron`` command, in one place, behind one switch.

A one-shot ``heron -p`` pays its start-up on every turn, so the command bends a few of
Python's process-wide defaults while it starts (docs/benchmarks.md, "The command"):

- **no collection during start-up**: the cyclic collector is paused before the heavy
  imports and, once the session is built, what start-up made is frozen (``gc.freeze``:
  never walked again) and collection resumes; it was about a tenth of a ``-p`` run's CPU;
- **no collection at exit**: the collector is switched off after the run, so the
  interpreter does not walk the SDKs' large cyclic graph (1.4-2 s on a busy machine) once
  the answer is printed;
- **the code ``@dataclass`` generates, compiled once** (:mod:`heron.cli.dataclass_code`);
- **httpx's command-line client never loaded**: httpx imports it when rich/click/pygments
  are installed (they are, for heron's screen), ~40-150 ms of a start for a CLI this
  process never runs; marked absent, httpx falls back to its stub.

They live here, not spread over the entry point, because each changes the interpreter for
the whole process: only the ``heron`` command's own process applies them (never a test or a
program calling :func:`heron.cli.main.main`, never heron used as a library), and
``HERON_BOOT_TRICKS=0`` turns all of them off at once, to rule them out when something
behaves oddly (docs/configuration.md, "Environment variables"). Python's own byte-code
switch is respected: under ``PYTHONDONTWRITEBYTECODE`` or ``-B`` heron writes no
``__pycache__`` of its own (an earlier byte-code writer overrode it, for heron's modules).

``python -m heron.cli.boot_check`` applies every trick and checks each did what it says: the
cheap run CI makes under every Python heron supports (3.11-3.13, tests/cli/test_boot.py).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Mapping

SWITCH = "HERON_BOOT_TRICKS"
_OFF = ("0", "false", "no", "off")

_paused = False


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the tricks apply: on unless ``HERON_BOOT_TRICKS`` says 0, false, no or off."""
    return environ.get(SWITCH, "1").strip().lower() not in _OFF


def begin() -> None:
    """At the command's first line, before anything heavy is imported: pause the collector
    (resumed by :func:`session_built`) and keep httpx's command-line client out."""
    if not enabled():
        return
    _pause_collection()
    if "httpx" not in sys.modules:
        sys.modules["httpx._main"] = None  # type: ignore[assignment]


def serve_dataclass_code() -> None:
    """Before the modules that define heron's classes. Not earlier: ``heron --version`` and
    ``--help`` define no class and would only pay for importing ``dataclasses``."""
    if not enabled():
        return
    from heron.cli import dataclass_code  # loads dataclasses: only for a command that runs

    dataclass_code.install()


def session_built() -> None:
    """Freeze what start-up made and collect again; does nothing unless :func:`begin` paused
    the collector (so also for a command that builds no session, called before it runs)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def end() -> None:
    """After the run: let the interpreter exit without a last collection over everything
    loaded. Nothing needs it: files are closed and atexit handlers still run; unreachable
    cycles are left for the OS to reclaim."""
    if not enabled():
        return
    gc.disable()
    gc.freeze()


def _pause_collection() -> None:
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True
