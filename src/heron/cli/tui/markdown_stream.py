"""Streamed markdown cut into blocks that render on their own (see :class:`BlockSplitter`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(slots=True)
class Block:
    """A piece of streamed markdown that renders on its own."""

    text: str


class BlockSplitter:
    """Cuts streamed markdown into blocks that can be rendered on their own.

    A block ends at a blank line outside a fenced code block, once the next non-blank
    line shows it is not a continuation (an indented line continues a list item or a
    code block, so the blank line is kept inside the block). The blocks do not depend on
    how the text was cut into chunks: a streamed answer and the same answer received at
    once split the same way. A block still growing is :meth:`pending_text`; the renderer
    prints its settled lines early (:mod:`heron.cli.tui.settled`) and shows the rest live.
    """

    def __init__(self) -> None:
        self._pending = ""  # text after the last newline
        self._lines: list[str] = []
        self._fence: str | None = None
        self._gap = False  # a blank line was seen after the current block's last line

    def feed(self, text: str) -> list[Block]:
        """Add streamed text; return the blocks it completed."""
        self._pending += text
        out: list[Block] = []
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            block = self._line(line)
            if block is not None:
                out.append(block)
        if self._gap and self._fence is None and self._pending[:1] not in ("", " ", "\t"):
            block = self._take()  # the next line has begun, unindented: the block is over
            if block is not None:
                out.append(block)
        return out

    def _line(self, line: str) -> Block | None:
        stripped = line.strip()
        if self._fence is not None:
            self._lines.append(line)
            if stripped.startswith(self._fence) and not stripped.strip(self._fence[0]):
                self._fence = None
            return None
        if not stripped:
            if self._lines:
                self._gap = True
            return None
        done: Block | None = None
        if self._gap:
            if line[:1] in (" ", "\t"):
                self._lines.append("")  # a continuation: keep the blank line inside
            else:
                done = self._take()
        self._gap = False
        match = _FENCE.match(line)
        if match:
            self._fence = match.group(1)
        self._lines.append(line)
        return done

    def _take(self) -> Block | None:
        text = "\n".join(self._lines).strip("\n")
        self._lines = []
        self._gap = False
        return Block(text) if text else None

    def pending_text(self) -> str:
        """What was received but not printed yet (for a live preview line)."""
        return "\n".join([*self._lines, self._pending]) if self._lines else self._pending

    def finish(self) -> list[Block]:
        """The remaining blocks, at the end of the stream."""
        out: list[Block] = []
        if self._pending:
            block = self._line(self._pending)
            if block is not None:
                out.append(block)
            self._pending = ""
        self._fence = None
        rest = self._take()
        if rest is not None:
            out.append(rest)
        return out
