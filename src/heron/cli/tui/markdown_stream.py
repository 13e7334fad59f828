"""Streamed markdown cut into blocks that render on their own (see :class:`BlockSplitter`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(slots=True)
class Block:
    """A piece of streamed markdown ready to print. ``continued``: it carries on the
    paragraph printed just before it (a long paragraph cut at a sentence), so no blank
    line goes between them."""

    text: str
    continued: bool = False


_SENTENCE_END = re.compile(r"[.!?:;](?=\s)")


def _balanced(text: str) -> bool:
    """No inline code span or bold/italic run left open, so ``text`` renders on its own."""
    return text.count("`") % 2 == 0 and text.count("**") % 2 == 0 and text.replace("**", "").count("*") % 2 == 0


class BlockSplitter:
    """Cuts streamed markdown into blocks that can be rendered on their own.

    A block ends at a blank line outside a fenced code block, once the next non-blank
    line shows it is not a continuation (an indented line continues a list item or a
    code block, so the blank line is kept inside the block). Rendering block by block
    means a paragraph appears as soon as it is complete, and nothing printed is ever
    redrawn.

    A paragraph that grows past ``soft_limit`` characters (the renderer uses the
    terminal's width) is not held back until it ends: its complete lines, else its text
    up to the last finished sentence, else up to the last space, are printed as a
    ``continued`` block, so a long answer keeps appearing line by line while it streams,
    with or without punctuation. The unfinished rest is shown live in the status line
    (:meth:`pending_text`). Fenced code and tables are always printed whole.
    """

    def __init__(self, soft_limit: int | None = 320) -> None:
        self.soft_limit = soft_limit
        self._pending = ""  # text after the last newline
        self._lines: list[str] = []
        self._fence: str | None = None
        self._gap = False  # a blank line was seen after the current block's last line
        self._continued = False  # the current block continues one already emitted

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
        early = self._early()
        if early is not None:
            out.append(early)
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

    def _early(self) -> Block | None:
        """Part of a long paragraph, when it is safe to print it before the end."""
        limit = self.soft_limit
        if limit is None or self._fence is not None or self._gap:
            return None
        size = sum(len(line) + 1 for line in self._lines) + len(self._pending)
        if size <= limit:
            return None
        first = (self._lines[0] if self._lines else self._pending).lstrip()
        if first.startswith(("|", "```", "~~~")) or self._pending.lstrip().startswith(("|", "```", "~~~")):
            return None
        if self._lines and _balanced("\n".join(self._lines)):
            block = self._take()
            self._continued = True
            return block
        if self._lines:
            return None
        cut = -1
        for match in _SENTENCE_END.finditer(self._pending):
            if _balanced(self._pending[: match.end()]):
                cut = match.end()
        if cut <= 0 and len(self._pending) > limit:
            space = self._pending.rfind(" ")
            if space > 0 and _balanced(self._pending[:space]):
                cut = space
        if cut <= 0:
            return None
        head, self._pending = self._pending[:cut], self._pending[cut:].lstrip()
        block = Block(head.strip(), continued=self._continued)
        self._continued = True
        return block

    def _take(self) -> Block | None:
        text = "\n".join(self._lines).strip("\n")
        continued = self._continued
        self._lines = []
        self._gap = False
        self._continued = False
        return Block(text, continued) if text else None

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
