"""SIGTERM in the print, json and rpc modes and the interactive mode on a terminal: heron
ends promptly and in order (docs/rpc.md, "Ending"; docs/continuity.md, exit codes).

Python's own SIGTERM ends the process where it stands: a memory reflection's writes would
stay in the notes, changed and uncommitted, and a running tool's work half done. Here the
first SIGTERM does what an abort does (Ctrl+C, rpc ``abort``): the prompt's run, a
compaction, a background summary and a memory reflection are stopped through their own
abort paths (a reflection is dropped with its writes put back and a ledger record), an
``end`` reflection that has not started never starts, and the mode then ends as it does
after an abort, the session file getting its last lines. The exit status is 143 (128 +
15, what a shell reports for a process SIGTERM ended), so a caller can tell it from an
answer. A second SIGTERM ends the process at once, with the same status: an editor that
asks twice is never held up by a shutdown that hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from heron.coding.runtime import CodingSession

TERM_EXIT = 128 + int(signal.SIGTERM)  # 143


class Termination:
    """One mode's SIGTERM handling: ``abort`` stops what the mode runs (its run, its rpc
    task); the session's own abort and the memory watch's end do the rest."""

    def __init__(self, session: CodingSession, abort: Callable[[], object]) -> None:
        self.session = session
        self._abort = abort
        self.requested = False
        self._installed = False

    def install(self) -> None:
        """On the running loop, when SIGTERM has Python's default: a program that calls
        heron's ``main`` with its own handler (or one started with SIGTERM ignored) keeps
        it. Not available off the main thread or on some platforms (then SIGTERM is
        Python's own)."""
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
                loop.add_signal_handler(signal.SIGTERM, self._signalled)
                self._installed = True

    def remove(self) -> None:
        """Python's own SIGTERM again (a loop that outlives the mode, in a test)."""
        if not self._installed:
            return
        self._installed = False
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)

    def _signalled(self) -> None:
        if self.requested:
            os._exit(TERM_EXIT)  # the second one: the shutdown under way is not waited for
        self.requested = True
        print("heron: SIGTERM: stopping (what runs is aborted, the session kept)", file=sys.stderr, flush=True)
        self.stop()

    def stop(self) -> None:
        """Abort everything and start nothing new; safe to call again (what started after
        the signal, a prompt accepted as it came, is aborted too)."""
        if not self.requested:
            return
        self.session.control.memory_watch.terminate()  # no end pass starts; a running one is dropped
        self._abort()
        self.session.abort()

    def exit_code(self, code: int) -> int:
        """The mode's own status, or 143 once SIGTERM was received."""
        return TERM_EXIT if self.requested else code
