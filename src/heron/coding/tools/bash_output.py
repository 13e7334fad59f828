"""The cleaned output of one command: line counts, a bounded tail, and the full-output file.

Memory is bounded whatever the command prints: only a rolling tail (about twice the byte
limit) is kept. Once the output passes the limits, everything -- including what was
already received -- streams to a spill file (private, and capped at ``spill_max_bytes``:
see :mod:`heron.context.tool_output.spill`), and the numbers in the notice are counted over the
*full* output, so ``read`` with an offset lands where the model expects.
"""

from __future__ import annotations

import re
import secrets
from collections import deque
from collections.abc import Callable
from pathlib import Path

from heron.context.tool_output.spill import SPILL_MAX_BYTES, CappedSpill
from heron.session.private_files import private_dir

# On a complete line: everything up to the last \r that is followed by more text.
_REDRAWN = re.compile(r"^[^\n]*\r(?=[^\r\n])", re.MULTILINE)


class OutputCollector:
    """The cleaned output of one command: counters, a rolling tail, and the spill file.

    Line semantics: ``\\n`` ends a line; ``\\r\\n`` is a line end too; a bare ``\\r``
    followed by more text on the same line discards what came before it on that line
    (the redraw of a progress bar), so only the final state of the line is kept. The
    line being written is held back so that a redraw can still replace it, up to
    ``line_cap`` characters (beyond that it is committed; a later ``\\r`` then only
    replaces the part not yet committed).

    Memory stays bounded: the committed text is kept only as a tail of at least
    ``2 * max_bytes`` bytes once the output passes the limits, and everything goes to
    the spill file from then on.
    """

    def __init__(
        self, max_lines: int, max_bytes: int, spill_path: Callable[[], Path], spill_max_bytes: int = SPILL_MAX_BYTES
    ) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.keep_bytes = 2 * max_bytes
        self.line_cap = max(max_bytes, 4096)
        self._spill_path_factory = spill_path
        self.spill_max_bytes = spill_max_bytes
        self.total_bytes = 0
        self._newlines = 0
        self._since_newline = 0  # bytes of the (committed part of the) line being written
        self._previous_line = 0  # bytes of the last completed line
        self._tail: deque[tuple[str, int]] = deque()
        self._tail_bytes = 0
        self._line: list[str] = []
        self._line_len = 0
        self._pending_cr = False
        self.spilling = False
        self.spill_path: Path | None = None
        self.spill_error: str | None = None
        self._spill: CappedSpill | None = None
        self.spill_omitted_bytes = 0  # left out of the spill file by its size cap
        self.spill_omitted_lines = 0
        self.closed = False
        self.dirty = False

    # -- input --

    def feed(self, text: str) -> None:
        if self.closed or not text:
            return
        self.dirty = True
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        first_cr = text.find("\r")
        if first_cr == -1:
            self._feed_plain(text)
            return
        # Only the lines that contain a bare \r need the redraw treatment. The first and
        # last of them may continue or leave open the line being written (stateful); the
        # complete lines between are collapsed by one regex pass (a progress bar printed
        # a million times must not mean a million Python-level steps).
        start = text.rfind("\n", 0, first_cr) + 1
        last_cr = text.rfind("\r")
        end = text.find("\n", last_cr)
        if end == -1:
            end = len(text)
        if start:
            self._feed_plain(text[:start])
        first, *rest = text[start:end].split("\n")
        self._feed_redrawn(first)
        if rest:
            last = rest.pop()
            middle = "\n".join(rest)
            if "\r" in middle:
                middle = _REDRAWN.sub("", middle).replace("\r", "")
            self._feed_plain("\n" + middle + "\n" if rest else "\n")
            self._feed_redrawn(last)
        if end < len(text):
            self._feed_plain(text[end:])

    def _feed_redrawn(self, piece: str) -> None:
        """Part of one line containing bare carriage returns: text after a \r replaces the
        line; a \r at the end is remembered, since what follows decides what it means."""
        parts = piece.split("\r")
        last = len(parts) - 1
        while last > 0 and not parts[last]:
            last -= 1
        if last:
            self._pending_cr = True
        if parts[last]:
            self._feed_plain(parts[last])
        if len(parts) > 1 and not parts[-1]:
            self._pending_cr = True

    def _feed_plain(self, text: str) -> None:
        """Text without a bare carriage return (a pending one may precede it)."""
        if self._pending_cr:
            self._pending_cr = False
            if text[0] != "\n":
                self._line.clear()
                self._line_len = 0
        newline = text.rfind("\n")
        if newline == -1:
            self._line.append(text)
            self._line_len += len(text)
            if self._line_len > self.line_cap:
                self._flush_line()
            return
        head = text[: newline + 1]
        if self._line:
            self._line.append(head)
            head = "".join(self._line)
            self._line.clear()
        self._commit(head)
        rest = text[newline + 1 :]
        self._line_len = len(rest)
        if rest:
            self._line.append(rest)
            if self._line_len > self.line_cap:
                self._flush_line()

    def _flush_line(self) -> None:
        if self._line:
            text = "".join(self._line)
            self._line.clear()
            self._line_len = 0
            self._commit(text)

    def finish(self) -> None:
        """End of output: commit the last line and close the spill file."""
        if self.closed:
            return
        self._pending_cr = False
        self._flush_line()
        self.closed = True
        if self._spill is not None:
            try:
                self._spill.close()
            except OSError as exc:
                self.spill_error = self.spill_error or str(exc)
            self.spill_omitted_bytes = self._spill.omitted_bytes
            self.spill_omitted_lines = self._spill.omitted_lines
            self._spill = None

    # -- committed text --

    def _commit(self, text: str) -> None:
        data = text.encode("utf-8", "surrogatepass")
        size = len(data)
        self.total_bytes += size
        last = data.rfind(b"\n")
        if last == -1:
            self._since_newline += size
        else:
            self._newlines += data.count(b"\n")
            before = data.rfind(b"\n", 0, last)
            self._previous_line = (self._since_newline + last) if before == -1 else (last - before - 1)
            self._since_newline = size - last - 1
        self._tail.append((text, size))
        self._tail_bytes += size
        if not self.spilling and (self.total_bytes > self.max_bytes or self.total_lines > self.max_lines):
            self._start_spill()
        elif self._spill is not None:
            self._write(data)
        if self.spilling:
            while self._tail and self._tail_bytes - self._tail[0][1] >= self.keep_bytes:
                self._tail_bytes -= self._tail.popleft()[1]

    def _start_spill(self) -> None:
        """Open the spill file and write everything received so far (still all in the tail)."""
        self.spilling = True
        try:
            path = self._spill_path_factory()
            private_dir(path.parent, narrow=True)
            try:
                self._spill = CappedSpill(path, self.spill_max_bytes)
            except FileExistsError:
                path = path.with_name(f"{path.stem}-{secrets.token_hex(4)}{path.suffix}")
                self._spill = CappedSpill(path, self.spill_max_bytes)
            self.spill_path = path
        except OSError as exc:
            self.spill_error = str(exc)
            return
        for text, _ in self._tail:
            self._write(text.encode("utf-8", "surrogatepass"))

    def _write(self, data: bytes) -> None:
        assert self._spill is not None
        try:
            self._spill.write(data)
        except OSError as exc:
            self.spill_error = str(exc)
            self._spill.abandon()
            self._spill = None

    # -- views --

    @property
    def total_lines(self) -> int:
        """Lines of the committed output; a final newline does not start another line."""
        return self._newlines + (1 if self._since_newline else 0)

    @property
    def last_line_bytes(self) -> int:
        return self._since_newline if self._since_newline else self._previous_line

    def tail_text(self) -> str:
        """The kept tail plus the line still being written."""
        return "".join(text for text, _ in self._tail) + "".join(self._line)
