"""Which lines of a block still being streamed are settled: they will render the same
whatever text follows, so the transcript may print them now.

The renderer prints an answer block by block (:class:`~heron.cli.tui.markdown_stream.BlockSplitter`),
each block rendered whole by rich. A long paragraph or list would then sit in the live
block until it ends. Instead, while it grows, the lines of it that cannot change any
more are printed: rich wraps greedily, so appending words to a paragraph changes only
its last line, and appending an item to a bullet list changes none of the items before
it. The lines printed early are therefore exactly the lines the whole block renders to,
and a streamed answer leaves the same transcript as the same answer received at once.

Only what is known to be prefix-stable is printed early: a plain paragraph cut after its
last complete word (with no code span, emphasis or link left open), the complete items
of a bullet list, and thinking text. Everything else (headings, numbered lists, whose
number column widens at the tenth item, code blocks, tables, quotes) is printed whole
when it ends, and shown in the live block until then.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BULLET = re.compile(r"^[-*+] ")
# a line that starts something other than paragraph text (or may turn it into a heading)
_BLOCK_START = re.compile(r"^ {0,3}([#>|<]|```|~~~|[-*+] |\d+[.)] |(=+|-+|\*+|_+)\s*$)|^( {4}|\t)")
_OPEN_LINK = re.compile(r"\]\([^)]*$")


@dataclass(frozen=True, slots=True)
class Settled:
    """``text`` (a prefix of the growing block) renders to lines of which all but the
    last ``unsettled`` are final."""

    text: str
    unsettled: int


def balanced(text: str) -> bool:
    """No code span, bold or italic run, or link left open: ``text`` renders on its own
    the way it renders inside the longer text."""
    if text.count("`") % 2 or text.count("**") % 2 or text.replace("**", "").count("*") % 2:
        return False
    return text.count("[") == text.count("]") and _OPEN_LINK.search(text) is None


def settled(kind: str, pending: str) -> Settled | None:
    """What of ``pending`` (the block received so far, not yet ended) may be printed:
    see the module docstring. None when nothing may be."""
    if not pending.strip():
        return None
    if kind == "thinking":  # plain text: wrapped greedily like a paragraph
        cut = _last_space(pending)
        return Settled(pending[:cut].rstrip(), 1) if cut > 0 else None
    lines = pending.split("\n")
    if _BULLET.match(lines[0]):
        return _list_items(lines)
    if any(_BLOCK_START.match(line) for line in lines):
        return None
    cut = _last_space(pending)
    head = pending[:cut].rstrip()
    return Settled(head, 1) if cut > 0 and head and balanced(head) else None


def _last_space(text: str) -> int:
    """Where the last complete word ends (0: there is none yet)."""
    match = re.search(r"\s(?=\S*$)", text)
    return match.start() if match else 0


def _list_items(lines: list[str]) -> Settled | None:
    """The items of a bullet list before the last one begun: each is complete."""
    marker = lines[0][0]
    starts = [n for n, line in enumerate(lines) if line.startswith(f"{marker} ")]
    # a blank line may make the list loose, a fence holds lines the list does not see
    if len(starts) < 2 or any(not line.strip() or line.lstrip().startswith(("```", "~~~")) for line in lines[:-1]):
        return None
    head = "\n".join(lines[: starts[-1]]).rstrip()
    return Settled(head, 0) if balanced(head) else None
