"""Text that did not come from heron, made safe to print on a terminal: the one place.

A file shown by ``read``, the model's answer, tool-call arguments, tool output, a session's
title, a search hit or a line of ``heron sessions tree`` may hold escape sequences: clear
the screen, set the window title, write the clipboard (OSC 52), move the cursor to forge
output. Printed raw, the terminal would obey them. :func:`visible` shows every control
character instead, in caret notation as ``cat -v`` does (ESC is ``^[``, BEL ``^G``, DEL
``^?``, backspace ``^H``), the C1 controls as ``<U+009B>``, and the bidirectional
overrides that can make text read differently from what it is as ``<U+202E>``. Newlines
and tabs stay; a CR before a newline is dropped, a lone CR (which would let a line
overwrite itself) is shown as ``^M``. Every printer of such text calls it: the
interactive screen, ``heron -p`` on a terminal, ``heron sessions`` (through
:func:`visible_stream`), ``heron rewind``, the ``--resume`` list and heron's messages on
stderr (docs/interactive.md, "Nothing from outside heron controls the terminal").

JSON output stays JSON: the encoder already writes every C0 control as ``\\u001b``, and
:func:`json_visible` writes the C1 controls and the bidirectional overrides, which it
leaves raw, as ``\\u009b`` too - the same value for a program, nothing for a terminal to obey.

The same text may hold a key the model repeats or a command printed: every key heron
knows is redacted here too, as print and json modes redact their output
(:func:`heron.coding.secrets.redact`, docs/permissions.md), so the screen and its
scrollback never show one.
"""

from __future__ import annotations

import io
import re
from typing import TextIO, cast

from heron.coding.secrets import redact

_UNSAFE = re.compile(r"\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# What json.dumps(ensure_ascii=False) leaves raw that a terminal may act on (C0 it escapes).
_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _show(match: re.Match[str]) -> str:
    char = match.group(0)
    if char == "\r\n":
        return "\n"
    code = ord(char)
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    return f"<U+{code:04X}>"


def visible(text: str) -> str:
    """``text`` with every character that could control the terminal shown as text, and
    every key heron knows redacted."""
    text = redact(text)
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(_show, text)


def json_visible(encoded: str) -> str:
    """JSON text (from ``json.dumps``) with the characters a terminal may act on written
    as ``\\uXXXX`` escapes: the same JSON value. Those characters are never ASCII, so they
    can only stand inside a string, where an escape means the same character."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", encoded)


class _VisibleWriter(io.TextIOBase):
    """A text stream that writes everything through :func:`visible` (or, for JSON output,
    :func:`json_visible`) to the stream under it."""

    def __init__(self, stream: TextIO, json_output: bool) -> None:
        super().__init__()
        self.under = stream
        self._show = json_visible if json_output else visible

    def write(self, text: str) -> int:
        self.under.write(self._show(text))
        return len(text)

    def flush(self) -> None:
        self.under.flush()

    def isatty(self) -> bool:
        return self.under.isatty()

    def writable(self) -> bool:
        return True


def visible_stream(stream: TextIO, *, json_output: bool = False) -> TextIO:
    """``stream`` for a command that prints session text (``heron sessions``): whatever is
    written shows its control characters as text (JSON output: as JSON escapes)."""
    return cast(TextIO, _VisibleWriter(stream, json_output))
