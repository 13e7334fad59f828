"""The fast indexer behind :meth:`SessionStore.open`.

A 100,000-entry session is ~190 MB; ``json.loads`` of every line takes seconds and
gigabytes of objects. Opening only needs each entry's ``type``, ``id`` and ``parentId``
(and, for message entries, the role), and pi and heron both write those first:
``{"type":"message","id":"a1b2c3d4","parentId":"...","timestamp":"...","message":{"role":...``.
So the file is memory-mapped and read in windows of ~16 MB; in each, one compiled
regex (``findall``, in C) matches every newline together with the prefix of the line that
follows it, so each line gives exactly one match. A window where every line's prefix was
read needs no Python work per line (columns are decoded with one join/decode/split each);
where a prefix could not be read, that window's lines are decoded one by one with
``json.loads`` and a line that is not JSON is skipped with a warning. Where each line
starts is only worked out when an entry of that window is first decoded. Entries are
decoded in full later, and only those that are needed (:meth:`SessionStore.get`).

Files older than version 3 are small (pi wrote them in 2025) and need migration, which
rewrites ids and parents, so every line of those is decoded at once (``full``).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
from dataclasses import dataclass, field
from typing import Any

from heron.ai.types import JSON
from heron.session.jsonl import loads_line

_STR = rb'[^"\\\n]*'
_PREFIX = (
    rb'\{"type":"(' + _STR + rb')","id":"(' + _STR + rb')","parentId":(?:"(' + _STR + rb')"|null)'
    rb'(?:,"timestamp":"' + _STR + rb'"(?:,"message":\{"role":"(' + _STR + rb')")?)?'
)
# Every newline, with the prefix of the line after it when it can be read: one match per line.
# (The role is left out: reading it costs a fifth more, and only listings count roles.)
_LINE = rb'\n(?:\{"type":"(' + _STR + rb')","id":"(' + _STR + rb')","parentId":(?:"(' + _STR + rb')"|null))?'
_LINE_ROLE = rb"\n(?:" + _PREFIX + rb")?"
PREFIX_BYTES = 400  # how much of a line the per-line regex looks at
_SALVAGE_ID = rb'"id"\s*:\s*"([^"\\]{1,64})"'
_SALVAGE_PARENT = rb'"parentId"\s*:\s*(?:"([^"\\]{1,64})"|null)'


# The file is indexed in windows of about this many bytes; the mapped pages of a window are
# dropped from the process once it is indexed, so the resident size of opening a 190 MB file
# stays near this, not near the file size.
WINDOW = 16 << 20
NOT_LOCATED = -2  # offsets[i] of an entry whose window's line starts are not worked out yet


@dataclass(slots=True)
class RawIndex:
    """What a scan found. Entry ``i`` is line ``line_nos[i]`` (0-based, the header is line
    0); either ``parsed[i]`` holds its decoded JSON or ``offsets[i]`` / ``lengths[i]`` locate
    its bytes."""

    header: JSON | None = None
    types: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    parents: list[str | None] = field(default_factory=list)  # None or "": no parent
    roles: list[str | None] = field(default_factory=list)  # None or "": not read (or not a message)
    offsets: list[int] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    line_nos: list[int] = field(default_factory=list)
    parsed: dict[int, JSON] = field(default_factory=dict)
    # id -> parentId of lines that could not be read but named both: children of such a
    # line are re-attached to its parent instead of becoming roots.
    bridges: dict[str, str | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    size: int = 0
    ends_with_newline: bool = True
    header_problem: str | None = None
    full: bool = False
    # windows whose line starts are left for later: (start, stop, first entry, entry count);
    # the window holds exactly those entries' lines, in order, in bytes [start, stop)
    windows: list[tuple[int, int, int, int]] = field(default_factory=list)


HEADER_START = b'{"type":"session"'  # how heron and pi begin a session file's first line


def foreign(fd: int, size: int) -> bool:
    """Whether a file without a session header or any entry holds something else - text,
    another program's data - that writing a session into it would destroy. An empty file,
    or one whose only line is the start of a header (heron stopped while creating it), is
    a session to be repaired."""
    head = os.pread(fd, min(size, 4096), 0).lstrip()
    return bool(head) and not (head.startswith(HEADER_START) or HEADER_START.startswith(head))


def header_version(header: JSON | None) -> int:
    version = header.get("version") if header else None
    return version if isinstance(version, int) and not isinstance(version, bool) else 1


def scan(fd: int, size: int, *, full: bool | None = None) -> RawIndex:
    """Index the first ``size`` bytes of the file open on ``fd``. ``full`` forces (True) or
    forbids (False) decoding every line; by default files older than version 3 are."""
    out = RawIndex(size=size)
    if size == 0:
        out.header_problem = "the file is empty"
        return out
    mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    try:
        _scan(mm, size, out, full)
    finally:
        mm.close()
    return out


def _loads(raw: bytes) -> Any:
    return loads_line(raw)


def _scan(mm: mmap.mmap, size: int, out: RawIndex, full: bool | None) -> None:
    find = mm.find
    first_nl = find(b"\n")
    first_end = size if first_nl < 0 else first_nl
    pos = 0
    line_no = 0
    try:
        first = _loads(mm[0:first_end])
    except ValueError:
        first = None
    if isinstance(first, dict) and first.get("type") == "session":
        out.header = first
        pos = first_end + 1
        line_no = 1
        if first_nl < 0:
            out.ends_with_newline = False
    elif isinstance(first, dict) and isinstance(first.get("type"), str):
        out.header_problem = "line 1 is an entry, not a session header"
    elif first_nl < 0:
        out.header_problem = f"the only line ({size} bytes) is not a complete session header: a write was interrupted"
        out.ends_with_newline = False
        return
    else:
        out.header_problem = "line 1 is not a session header"
        pos = first_end + 1
        line_no = 1
    if full is None:  # a file without a header is read as the current version
        full = out.header is not None and header_version(out.header) < 3
    out.full = full

    last_nl = mm.rfind(b"\n")
    complete_end = last_nl + 1 if last_nl >= pos else pos  # lines in [pos, complete_end) end in a newline
    if pos == 0 and complete_end > 0:  # no header: the first line has no newline before it
        nl = find(b"\n")
        _lines(mm, 0, nl + 1, line_no, out, full)
        pos, line_no = nl + 1, line_no + 1
    can_release = hasattr(mmap, "MADV_DONTNEED")
    while pos < complete_end:
        stop = find(b"\n", min(pos + WINDOW, complete_end - 1)) + 1  # a window of whole lines
        if stop <= pos:
            stop = complete_end
        line_no = _window(mm, pos, stop, line_no, out, full)
        if can_release and stop - pos >= mmap.PAGESIZE:
            start = pos & ~(mmap.PAGESIZE - 1)
            with contextlib.suppress(OSError, ValueError):
                mm.madvise(mmap.MADV_DONTNEED, start, (stop & ~(mmap.PAGESIZE - 1)) - start)
        pos = stop
    if complete_end < size:  # the last line has no newline: complete or torn?
        _last_line(mm, complete_end, size, line_no, out)


def _window(mm: mmap.mmap, pos: int, stop: int, line_no: int, out: RawIndex, full: bool) -> int:
    """Index the lines in ``[pos, stop)`` (``pos`` follows a newline, each line ends in
    one); returns the next line number."""
    if not full:
        # the newline before each line, from the one before pos up to (not including) the last
        found = re.compile(_LINE).findall(mm, pos - 1, stop - 1)
        count = len(found)
        kinds, ids, parents = zip(*found, strict=True) if count else ((), (), ())
        if count and b"" not in kinds and b"" not in ids:
            first = len(out.types)
            # one decode per column, not per value: join, decode, split (values hold no NUL)
            out.types.extend(_column(kinds))
            out.ids.extend(_column(ids))
            out.parents.extend(_column(parents))
            out.roles.extend([None] * count)
            out.offsets.extend([NOT_LOCATED] * count)
            out.lengths.extend([0] * count)
            out.line_nos.extend(range(line_no, line_no + count))
            out.windows.append((pos, stop, first, count))
            return line_no + count
    return _lines(mm, pos, stop, line_no, out, full)


def _lines(mm: mmap.mmap, pos: int, stop: int, line_no: int, out: RawIndex, full: bool) -> int:
    """Index the lines in ``[pos, stop)`` one by one."""
    find = mm.find
    match = re.compile(_PREFIX).match
    window = PREFIX_BYTES
    while pos < stop:
        end = find(b"\n", pos, stop)
        if end < 0:
            end = stop
        m = None if full else match(mm, pos, end if end - pos < window else pos + window)
        if m is not None and m.group(1) and m.group(2):
            kind, eid, parent, role = m.groups()
            out.types.append(kind.decode("utf-8", "replace"))
            out.ids.append(eid.decode("utf-8", "replace"))
            out.parents.append(parent.decode("utf-8", "replace") if parent else None)
            out.roles.append(role.decode("utf-8", "replace") if role else None)
            out.offsets.append(pos)
            out.lengths.append(end - pos)
            out.line_nos.append(line_no)
        else:
            _slow_line(mm[pos:end], pos, line_no, out)
        pos = end + 1
        line_no += 1
    return line_no


def window_roles(fd: int, window: tuple[int, int, int, int]) -> list[str | None]:
    """The message role of each line of a window indexed without roles."""
    start, stop, _first, count = window
    data = os.pread(fd, stop - start, start)
    found = re.compile(_LINE_ROLE).findall(b"\n" + data, 0, stop - start)  # the newline before each line
    if len(found) != count:
        return [None] * count
    return [f[3].decode("utf-8", "replace") or None for f in found]


def _column(values: tuple[bytes, ...]) -> list[str]:
    out = b"\x00".join(values).decode("utf-8", "replace").split("\x00")
    if len(out) != len(values):  # a value held a NUL byte (not valid JSON, but be safe)
        out = [v.decode("utf-8", "replace") for v in values]
    return out


def _slow_line(raw: bytes, offset: int, line_no: int, out: RawIndex) -> bool:
    """Decode a line the regex could not read; record it or warn. Returns whether kept."""
    if not raw.strip():
        return False
    try:
        data = _loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        _malformed(raw, line_no, f"not valid JSON ({error_reason(exc)})", out)
        return False
    if not isinstance(data, dict):
        _malformed(raw, line_no, "not a JSON object", out)
        return False
    kind = data.get("type")
    if kind == "session":
        out.warnings.append(f"line {line_no + 1}: a second session header, skipped")
        return False
    if not isinstance(kind, str) or not kind:
        _malformed(raw, line_no, "no entry type", out)
        return False
    eid = data.get("id")
    parent = data.get("parentId")
    message = data.get("message")
    role = message.get("role") if kind == "message" and isinstance(message, dict) else None
    index = len(out.types)
    out.types.append(kind)
    out.ids.append(eid if isinstance(eid, str) else "")
    out.parents.append(parent if isinstance(parent, str) else None)
    out.roles.append(role if isinstance(role, str) else None)
    out.offsets.append(offset)
    out.lengths.append(len(raw))
    out.line_nos.append(line_no)
    out.parsed[index] = data
    return True


def _malformed(raw: bytes, line_no: int, why: str, out: RawIndex) -> None:
    head = raw[:PREFIX_BYTES]
    found = re.search(_SALVAGE_ID, head)
    note = ""
    if found is not None:
        parent = re.search(_SALVAGE_PARENT, head)
        if parent is not None:
            eid = found.group(1).decode("utf-8", "replace")
            out.bridges[eid] = None if parent.group(1) is None else parent.group(1).decode("utf-8", "replace")
            note = f" (entry {eid}; its children are attached to its parent)"
    out.warnings.append(f"line {line_no + 1}: malformed entry skipped: {why}{note}")


def _last_line(mm: mmap.mmap, pos: int, size: int, line_no: int, out: RawIndex) -> None:
    out.ends_with_newline = False
    raw = mm[pos:size]
    if not raw.strip():
        return
    try:
        data = _loads(raw)
    except (ValueError, UnicodeDecodeError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("type"), str) and data.get("type") != "session":
        _slow_line(raw, pos, line_no, out)  # complete JSON, only the newline is missing
        return
    out.warnings.append(
        f"line {line_no + 1}: incomplete last line ({len(raw)} bytes, no newline) dropped: a write was interrupted"
    )


def error_reason(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 80 else text[:77] + "..."
