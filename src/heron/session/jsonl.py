"""Encoding and decoding one session line, so that a session file is always valid UTF-8 JSON.

Python strings can hold lone (unpaired) UTF-16 surrogates: a non-UTF-8 byte in a command
line argument or a file name decodes to one (``surrogateescape``), and JSON from a model
or an rpc client may carry ``"\\ud800"``. UTF-8 cannot encode them, and a file that holds
them escaped decodes back into them, so every later use of the session (sending it to a
provider, writing it again) fails with ``UnicodeEncodeError``. So:

- writing: an unpaired surrogate becomes U+FFFD (a pair written as two code points is
  joined into the character it stands for) - lossy only for text that was not text;
- reading: lines of older files holding ``\\ud8xx``-style escapes, and lines that are not
  valid UTF-8, are decoded the same way (U+FFFD), instead of being skipped as malformed.

Both checks cost nothing for ordinary lines: the encoder only takes the slow path when
encoding fails, the decoder only when the line holds a ``\\ud`` escape or bad bytes.
"""

from __future__ import annotations

import json
import re
from typing import Any

_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def clean_text(text: str) -> str:
    """``text`` with unpaired surrogates replaced by U+FFFD (pairs joined)."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean(value: Any) -> Any:
    """A decoded JSON value with every string (keys too) passed through :func:`clean_text`."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): clean(v) for k, v in value.items()}
    return value


def dumps_line(data: Any) -> bytes:
    """One JSONL line as pi writes it: compact, non-ASCII as is, ending in a newline, and
    always valid UTF-8 (unpaired surrogates become U+FFFD)."""
    text = _ENCODE(data) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return clean_text(text).encode("utf-8")


def loads_line(raw: bytes) -> Any:
    """Decode one line. Raises ``ValueError`` for what is not JSON; invalid UTF-8 bytes and
    escaped unpaired surrogates come back as U+FFFD."""
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        data = json.loads(raw.decode("utf-8", "replace"))
    if (b"\\ud" in raw or b"\\uD" in raw) and _SURROGATE_ESCAPE.search(raw) is not None:
        data = clean(data)
    return data


def is_clean(raw: bytes) -> bool:
    """Whether a line can be copied as it is: valid UTF-8 without escaped lone surrogates."""
    if not raw.isascii():
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return False
    return not ((b"\\ud" in raw or b"\\uD" in raw) and _SURROGATE_ESCAPE.search(raw) is not None)
