"""Text that did not come from heron, made safe to print on a terminal.

A file shown by ``read``, the model's answer, tool-call arguments and tool output may
hold escape sequences: clear the screen, set the window title, write the clipboard
(OSC 52), move the cursor to forge output. Printed raw, the terminal would obey them.
:func:`visible` shows every control character instead, in caret notation as ``cat -v``
does (ESC is ``^[``, BEL ``^G``, DEL ``^?``), the C1 controls as ``<U+009B>``, and the
bidirectional overrides that can make text read differently from what it is as
``<U+202E>``. Newlines and tabs stay; a CR before a newline is dropped, a lone CR (which
would let a line overwrite itself) is shown as ``^M``.

The same text may hold a key the model repeats or a command printed: every key heron
knows is redacted here too, as print and json modes redact their output
(:func:`heron.coding.secrets.redact`, docs/permissions.md), so the screen and its
scrollback never show one.
"""

from __future__ import annotations

import re

from heron.coding.secrets import redact

_UNSAFE = re.compile(r"\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


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
