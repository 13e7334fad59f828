"""File names as the model sees and writes them back: the shell's ``$'...'`` quoting.

A listing is one name per line, so a name holding a newline would read as two files, and
a name with a byte that is not UTF-8 cannot be shown as it is at all. Such names are
listed the way ``ls`` quotes them for a shell (``$'new\\nline.txt'``, ``$'bad\\xffname'``),
which every model has seen, and a path written back in that form is decoded to the very
bytes on disk, so the file can be read, edited and grepped like any other.
"""

from __future__ import annotations

import os
import re

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", "'": "\\'"}
_UNNAMED = {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\", "'": b"'", "e": b"\x1b", "a": b"\x07", "0": b"\0"}
_QUOTED = r"\$'((?:[^'\\]|\\.)*)'"  # compiled with the first quoted name to read, not at start
_ESCAPE = r"\\(x[0-9A-Fa-f]{1,2}|.)"


def _needs_quoting(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or code == 0x7F or 0xDC80 <= code <= 0xDCFF  # controls, and bytes that are not UTF-8


def quoted_name(name: str) -> str:
    """``name`` as a listing shows it: as it is, or ``$'...'``-quoted when it holds a control
    character or a byte that is not UTF-8 (os.fsdecode's surrogates)."""
    if "$'" not in name and not any(_needs_quoting(ch) for ch in name):
        return name  # ($' too: a name holding it would read back as a quoted one)
    out: list[str] = []
    for ch in name:
        code = ord(ch)
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif _needs_quoting(ch):
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def unquote_names(path: str) -> str:
    """``path`` with every ``$'...'`` part decoded to the name it stands for (bytes that
    are not UTF-8 come back as os.fsdecode's surrogates, which open the file)."""
    if "$'" not in path:
        return path
    return re.sub(_QUOTED, lambda match: _decode(match.group(1)), path, flags=re.DOTALL)


def _decode(body: str) -> str:
    data = bytearray()
    position = 0
    for match in re.finditer(_ESCAPE, body, re.DOTALL):
        data += body[position : match.start()].encode("utf-8", "surrogateescape")
        code = match.group(1)
        if code.startswith("x") and len(code) > 1:
            data.append(int(code[1:], 16))
        else:
            data += _UNNAMED.get(code, code.encode("utf-8", "surrogateescape"))
        position = match.end()
    data += body[position:].encode("utf-8", "surrogateescape")
    return os.fsdecode(bytes(data))
