"""Head and tail truncation by lines and UTF-8 bytes.

Every tool output passes through here before the model sees it. The functions return
not just the kept text but exactly what was cut, so callers can write precise notices
("Showing lines 1-2000 of 9120") and the ledger can record the cut.

Lines are split on ``\\n``; a trailing newline does not count as an extra empty line.
Only whole lines are kept, except when a single line is itself larger than the byte
limit: tail truncation then keeps the end of that line, cut on a character boundary
(never inside a UTF-8 sequence).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DEFAULT_MAX_LINES = 2_000
DEFAULT_MAX_BYTES = 51_200
LINE_CUT_MARKER = "... [line truncated]"

TruncatedBy = Literal["lines", "bytes"]


@dataclass(frozen=True, slots=True)
class Truncation:
    """A text cut to the limits, with the sizes before and after, so the notice the model gets
    and the ledger record state exactly what was left out."""

    content: str
    truncated: bool
    truncated_by: TruncatedBy | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    max_lines: int
    max_bytes: int
    # tail: the first kept line is only the end of a line longer than max_bytes
    last_line_partial: bool = False
    # head: the very first line is longer than max_bytes, so nothing could be shown
    first_line_exceeds_limit: bool = False


def split_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def truncate_head(text: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES) -> Truncation:
    """Keep the beginning: as many whole lines as fit both limits."""
    total_bytes = _utf8_len(text)
    lines = split_lines(text) if text else []
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return Truncation(text, False, None, total_lines, total_bytes, total_lines, total_bytes, max_lines, max_bytes)

    kept: list[str] = []
    used = 0
    by: TruncatedBy = "lines"
    for index, line in enumerate(lines):
        if index >= max_lines:
            by = "lines"
            break
        cost = _utf8_len(line) + (1 if index > 0 else 0)
        if used + cost > max_bytes:
            by = "bytes"
            break
        kept.append(line)
        used += cost
    content = "\n".join(kept)
    if len(kept) == total_lines:
        return _only_final_newline_dropped(content, total_lines, total_bytes, max_lines, max_bytes)
    return Truncation(
        content,
        True,
        by,
        total_lines,
        total_bytes,
        len(kept),
        _utf8_len(content),
        max_lines,
        max_bytes,
        first_line_exceeds_limit=not kept and bool(lines),
    )


def truncate_tail(text: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES) -> Truncation:
    """Keep the end: as many whole lines as fit, newest last (what a command printed last
    is usually what explains how it ended)."""
    total_bytes = _utf8_len(text)
    lines = split_lines(text) if text else []
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return Truncation(text, False, None, total_lines, total_bytes, total_lines, total_bytes, max_lines, max_bytes)

    kept: list[str] = []
    used = 0
    by: TruncatedBy = "lines"
    partial = False
    for count, line in enumerate(reversed(lines)):
        if count >= max_lines:
            by = "lines"
            break
        cost = _utf8_len(line) + (1 if count > 0 else 0)
        if used + cost > max_bytes:
            by = "bytes"
            if not kept:
                kept.append(tail_bytes(line, max_bytes))
                partial = True
            break
        kept.append(line)
        used += cost
    kept.reverse()
    content = "\n".join(kept)
    if not partial and len(kept) == total_lines:
        return _only_final_newline_dropped(content, total_lines, total_bytes, max_lines, max_bytes)
    return Truncation(
        content,
        True,
        by,
        total_lines,
        total_bytes,
        len(kept),
        _utf8_len(content),
        max_lines,
        max_bytes,
        last_line_partial=partial,
    )


def _only_final_newline_dropped(
    content: str, total_lines: int, total_bytes: int, max_lines: int, max_bytes: int
) -> Truncation:
    """Every line fits; only the text's final newline pushed it over the byte limit.
    Nothing a reader would miss was cut, so this is not reported as a truncation (a
    notice like "Showing lines 1-N of N" would be wrong)."""
    return Truncation(
        content, False, None, total_lines, total_bytes, total_lines, _utf8_len(content), max_lines, max_bytes
    )


def tail_bytes(text: str, max_bytes: int) -> str:
    """The last ``max_bytes`` bytes of ``text``, starting on a character boundary."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    cut = data[len(data) - max_bytes :]
    start = 0
    while start < len(cut) and (cut[start] & 0xC0) == 0x80:
        start += 1
    return cut[start:].decode("utf-8", "replace")


def head_bytes(text: str, max_bytes: int) -> str:
    """The first ``max_bytes`` bytes of ``text``, ending on a character boundary."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", "ignore")


def cut_line(line: str, max_chars: int, marker: str = LINE_CUT_MARKER) -> tuple[str, bool]:
    """A line of at most ``max_chars`` characters plus ``marker``; whether it was cut."""
    if len(line) <= max_chars:
        return line, False
    return line[:max_chars] + marker, True
