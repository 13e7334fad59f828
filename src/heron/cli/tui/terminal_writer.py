"""What the interactive console prints, written above the input line at once, in order,
and with a way to know when it is on the screen.

prompt_toolkit's ``patch_stdout`` sends text through a thread that writes at most every
0.2 s, to batch redraws. For the transcript that is too late twice over: the lines of a
streamed answer leave the live block (drawn with the input line) the moment the renderer
prints them, so for up to 0.2 s (longer on a loaded machine) they were on neither; and
an ``aborted`` line waited its turn the same way. This writer is the console's file in a
terminal: what rich writes is buffered until rich flushes (once per ``print``), then
written by one ``run_in_terminal`` call on the event loop (the input line is erased,
the text written, the line redrawn). Writes queued while one is pending go with it, so a
burst of prints costs one redraw, without any wait.

:meth:`when_written` runs a callback once everything written so far is on the screen,
before the input line is redrawn: the renderer moves lines out of the live block only
then, so a line is always on the screen in one place or the other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


class TerminalWriter:
    """A text file for rich's :class:`~rich.console.Console` (see the module docstring).
    ``output`` is prompt_toolkit's :class:`~prompt_toolkit.output.Output` of the terminal."""

    def __init__(self, output: Any, encoding: str = "utf-8") -> None:
        self._output = output
        self.encoding = encoding
        self._buffer: list[str] = []
        self._callbacks: list[Callable[[], None]] = []
        self._scheduled = False

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return int(self._output.fileno())

    def write(self, text: str) -> int:
        self._buffer.append(text)
        return len(text)

    def flush(self) -> None:
        if self._scheduled or not self._buffer:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop (before it starts, after it ends): write now
            self._write()
            return
        from prompt_toolkit.application import run_in_terminal

        self._scheduled = True
        run_in_terminal(self._write, in_executor=False)

    def when_written(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once everything written so far is on the screen (at once when
        it is)."""
        if self._buffer or self._scheduled:
            self._callbacks.append(callback)
        else:
            callback()

    def close(self) -> None:
        """Write what is left, directly (the loop is ending)."""
        self._write()

    def _write(self) -> None:
        self._scheduled = False
        text = "".join(self._buffer)
        self._buffer.clear()
        callbacks, self._callbacks = self._callbacks, []
        if text:
            self._output.enable_autowrap()
            self._output.write_raw(text)
            self._output.flush()
        for callback in callbacks:
            callback()
