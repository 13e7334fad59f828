"""ACP's protocol messages through heron's one JSON output encoder.

The ACP SDK serialises its messages itself (``json.dumps`` with ASCII escapes), so a
lone surrogate - a file name or a project directory with a byte that is not UTF-8, as
``os.fsdecode`` gives it - goes out as an escaped ``"\\udcff"``: ASCII, but not text a
strict JSON reader accepts. Every line the SDK writes passes through :class:`CleanWriter`:
a line without such an escape is written as it is (the usual case, no cost but a scan);
one with it (or with a surrogate pair's escapes, which read the same) is decoded and
written again by :func:`heron.cli.events_json.encode_line`, the
encoder of json mode and rpc, so the character becomes U+FFFD there as everywhere.
"""

from __future__ import annotations

import asyncio
from typing import Any

from heron.cli.events_json import encode_line
from heron.session.jsonl import is_clean, loads_line


def clean_lines(data: bytes) -> bytes:
    """``data`` (whole JSON lines) with each line holding a lone surrogate encoded again."""
    if is_clean(data):
        return data
    out = []
    for line in data.splitlines(keepends=True):
        if is_clean(line):
            out.append(line)
            continue
        try:
            value = loads_line(line)
        except ValueError:
            out.append(line)  # not a JSON line: not the SDK's, and not ours to change
            continue
        out.append(encode_line(value) if isinstance(value, dict) else line)
    return b"".join(out)


class CleanWriter(asyncio.StreamWriter):
    """The protocol's stream writer (the SDK requires a ``StreamWriter``) on the same
    transport and protocol as ``writer``, with :func:`clean_lines` applied to what is
    written."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        # the protocol that paces ``drain``: the SDK's, not exposed by a public name
        super().__init__(writer.transport, getattr(writer, "_protocol"), None, asyncio.get_running_loop())  # noqa: B009
        # held: a StreamWriter closes its transport when it is collected (Python 3.11+)
        self._wrapped = writer

    def write(self, data: Any) -> None:
        super().write(clean_lines(bytes(data)))
