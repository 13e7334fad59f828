"""``SessionStore``: one session file (or an in-memory session), its entry tree and its leaf.

Durability (DESIGN §6, docs/sessions.md):

- one entry = one line = one ``os.write`` on an ``O_APPEND`` descriptor, so a crash leaves
  at most the last line torn; ``fsync=True`` also flushes each entry to the disk;
- a torn last line is dropped (with a warning) on load and the next append first writes a
  newline, so it starts on a fresh line; malformed lines are skipped, never fatal;
- one writer per file: writers take ``flock(LOCK_EX | LOCK_NB)`` on the file and a second
  writer gets :class:`SessionInUseError` at once (it does not wait); readers never lock;
- a new session writes nothing until its first assistant message exists (then everything
  buffered is written in one go), so starting heron and quitting leaves no file behind.

Opening is lazy: the file is indexed (type, id, parentId, role of every line, see
``_scan``) and entries are decoded only when asked for, so a 100,000-entry file opens and
builds its leaf's context in a fraction of a second.
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import fcntl
import itertools
import json
import logging
import operator
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from heron.agent.messages import AgentMessage
from heron.ai.types import JSON, AssistantMessage, ImageContent, TextContent
from heron.session import _scan
from heron.session.entries import (
    CURRENT_VERSION,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    ModelRef,
    SessionHeader,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    dumps_line,
    entry_from_json,
    iso_now,
    migrate,
    new_entry_id,
)

if TYPE_CHECKING:
    from heron.session.context import SessionContext

log = logging.getLogger("heron.session")

_ROOT = -1
_LOCATE_CHUNK = 256 << 10


class SessionError(RuntimeError):
    pass


class SessionInUseError(SessionError):
    """Another process holds the session's writer lock."""

    def __init__(self, path: Path, pid: int | None) -> None:
        self.path = path
        self.pid = pid
        holder = f"pid {pid}" if pid is not None else "pid unknown"
        super().__init__(f"session is in use by another heron process ({holder}): {path}")


class SessionReadOnlyError(SessionError):
    """Appending to a session opened read-only, or to a file heron must not write."""


@dataclass(slots=True)
class SessionTree:
    """``children[id]``: the ids whose parent is ``id``, in file order; ``roots``: entries
    without a (known) parent; ``orphans``: the roots whose ``parentId`` names no entry."""

    children: dict[str, list[str]] = field(default_factory=dict)
    roots: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)


def _holder_pid(fd: int) -> int | None:
    """The pid holding an flock on the file open on ``fd``, from ``/proc/locks`` (Linux)."""
    try:
        st = os.fstat(fd)
        key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                if "->" in parts:  # a waiter, not the holder
                    continue
                if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == key:
                    return int(parts[4])
    except (OSError, ValueError):
        return None
    return None


def _lock(fd: int, path: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SessionInUseError(path, _holder_pid(fd)) from None


class SessionStore:
    """A session's entries and leaf. Use :meth:`create`, :meth:`open` or :meth:`in_memory`."""

    def __init__(
        self,
        header: SessionHeader,
        path: Path | None,
        *,
        fsync: bool = False,
        read_only: bool = False,
    ) -> None:
        self.header = header
        self.path = path
        self.fsync = fsync
        self.read_only = read_only
        self.warnings: list[str] = []
        self.source_version = header.version  # the file's version before migration
        self._read_only_reason: str | None = "the session was opened read-only" if read_only else None
        self._fd: int | None = None  # the locked writer descriptor (O_RDWR | O_APPEND)
        self._rfd: int | None = None  # where lazy entries are read from
        self._on_disk = False  # header written (or the file existed)
        self._needs_newline = False
        self._needs_rewrite = False
        self._disk_is_current = True  # False after migration: the file's lines are not the entries
        # the index: entry i
        self._types: list[str] = []
        self._ids: list[str] = []
        self._parents: list[int] = []
        self._roles: list[str | None] = []
        self._offsets: list[int] = []
        self._lengths: list[int] = []
        self._line_nos: list[int] = []
        self._disk_ids: dict[int, str] = {}  # entries whose id in memory differs from the file
        self._relinked: set[int] = set()  # entries whose parentId in memory differs from the file
        self._dangling: dict[int, str] = {}  # orphans: index -> the parentId that names nothing
        self._cache: dict[int, Entry] = {}
        self._bad: set[int] = set()
        self._by_id: dict[str, int] = {}
        self._leaf = _ROOT
        self._labels: dict[str, str] = {}
        self._name: str | None = None
        self._labels_read = True  # label / session_info entries of the file taken into account
        self._windows: list[tuple[int, int, int, int]] = []
        self._window_firsts: list[int] = []
        # per window, [a, b]: its lines before entry a and from entry b on are located
        self._located: list[list[int]] = []
        self._settings: tuple[int, ModelRef | None, str | None] | None = None

    # --- construction -----------------------------------------------------------------

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str],
        *,
        path: str | os.PathLike[str] | None = None,
        home: str | os.PathLike[str] | None = None,
        parent_session: str | None = None,
        fsync: bool = False,
    ) -> SessionStore:
        """A new session for ``cwd``. Nothing is written until the first assistant message
        is appended (or :meth:`materialize` is called); the file then goes to ``path`` or
        ``$HERON_HOME/sessions/<encoded cwd>/<time>_<uuid>.jsonl``."""
        from heron.session.paths import new_session_path

        header = SessionHeader(id=str(uuid.uuid4()), timestamp=iso_now(), cwd=os.path.abspath(os.fspath(cwd)),
                               parent_session=parent_session)
        target = Path(path) if path is not None else new_session_path(header.cwd, header.id, header.timestamp, home)
        return cls(header, target, fsync=fsync)

    @classmethod
    def in_memory(cls, cwd: str | os.PathLike[str] = ".") -> SessionStore:
        """A session that is never written (``--no-session``)."""
        header = SessionHeader(id=str(uuid.uuid4()), timestamp=iso_now(), cwd=os.path.abspath(os.fspath(cwd)))
        return cls(header, None)

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, read_only: bool = False, fsync: bool = False
    ) -> SessionStore:
        """Open a session file. A writer (the default) takes the file's lock first and
        raises :class:`SessionInUseError` when another process holds it; ``read_only``
        takes no lock. Older versions are migrated in memory and the file is rewritten in
        the current version before the first append. Problems are collected in
        :attr:`warnings` (and logged), never raised."""
        target = Path(path)
        fd = os.open(target, os.O_RDONLY if read_only else os.O_RDWR | os.O_APPEND)
        try:
            if not read_only:
                _lock(fd, target)
            size = os.fstat(fd).st_size
            raw = _scan.scan(fd, size)
        except BaseException:
            os.close(fd)
            raise
        header_data = raw.header
        if header_data is not None:
            header = SessionHeader.from_json_dict(header_data)
        else:
            header = SessionHeader(id=_id_from_name(target), timestamp=iso_now(), cwd=os.getcwd())
        store = cls(header, target, fsync=fsync, read_only=read_only)
        store._rfd = fd
        store._fd = None if read_only else fd
        store._on_disk = True
        store._needs_newline = size > 0 and not raw.ends_with_newline
        store._load(raw)
        return store

    def _load(self, raw: _scan.RawIndex) -> None:
        if raw.header_problem:
            self._warn(f"{raw.header_problem}")
        for message in raw.warnings:
            self._warn(message)
        header = self.header
        if raw.header is not None and header.version > CURRENT_VERSION:
            self._read_only_reason = (
                f"session file version {header.version} is newer than this heron supports ({CURRENT_VERSION})"
            )
            self._warn(self._read_only_reason + ": reading what can be read, appending is refused")
        if raw.full:
            self._load_full(raw)
        else:
            self._types, self._roles = raw.types, raw.roles
            self._offsets, self._lengths, self._line_nos = raw.offsets, raw.lengths, raw.line_nos
            for index, data in raw.parsed.items():
                self._cache_parsed(index, data)
            self._resolve(raw.ids, raw.parents, raw.bridges)
        for index, entry in self._cache.items():  # entries decoded during the scan: renamed ids, new parents
            self._fix_links(index, entry)
        if raw.header is None:
            # an empty file or one without a usable header: rewritten with one before appending
            self._needs_rewrite = True
        self._leaf = len(self._types) - 1
        self._windows = raw.windows
        self._window_firsts = [w[2] for w in raw.windows]
        self._located = [[w[2], w[2] + w[3]] for w in raw.windows]
        self._labels_read = False

    def _load_full(self, raw: _scan.RawIndex) -> None:
        """Files older than version 3: decode everything and migrate."""
        n = len(raw.types)
        dicts = [raw.parsed[i] for i in range(n)]
        header_json = raw.header if raw.header is not None else {"type": "session", "version": CURRENT_VERSION}
        before = self.header.version
        for message in migrate(header_json, dicts, raw.line_nos):
            self._warn(message)
        self.header.version = max(CURRENT_VERSION, before) if raw.header is not None else CURRENT_VERSION
        if before < CURRENT_VERSION and raw.header is not None:
            self._needs_rewrite = True
        self._disk_is_current = False
        self._types = [str(d.get("type")) for d in dicts]
        self._roles = list(raw.roles)
        self._offsets, self._lengths, self._line_nos = raw.offsets, raw.lengths, raw.line_nos
        ids: list[str] = []
        parents: list[str | None] = []
        for i, data in enumerate(dicts):
            self._cache_parsed(i, data)
            eid, parent = data.get("id"), data.get("parentId")
            ids.append(eid if isinstance(eid, str) else "")
            parents.append(parent if isinstance(parent, str) else None)
        self._resolve(ids, parents, raw.bridges)

    def _cache_parsed(self, index: int, data: JSON) -> None:
        try:
            self._cache[index] = entry_from_json(data)
        except ValueError as exc:
            self._bad.add(index)
            self._warn(f"line {self._line_nos[index] + 1}: malformed entry skipped: {exc}")

    def _resolve(self, ids: list[str], parents: list[str | None], bridges: dict[str, str | None]) -> None:
        """Turn ids into positions: duplicates, missing ids and dangling parents fixed in
        memory (with warnings); the file is not changed."""
        n = len(ids)
        by_id = dict(zip(ids, range(n), strict=True))
        resolved: list[int]
        if len(by_id) == n and "" not in by_id:
            # None and "" (no parent) resolve to the root through the same C-level lookup
            lookup = cast("dict[str | None, int]", by_id)
            lookup[None] = lookup[""] = _ROOT
            resolved = list(map(lookup.get, parents, itertools.repeat(-2)))
            del lookup[None], lookup[""]
        else:
            by_id, resolved = self._resolve_slow(ids, parents)
        self._ids = ids
        self._by_id = by_id
        unresolved = [i for i, p in enumerate(resolved) if p == -2] if -2 in resolved else []
        for i in unresolved:
            wanted = parents[i]
            seen: set[str] = set()
            target: str | None = wanted
            while target is not None and target not in by_id and target in bridges and target not in seen:
                seen.add(target)
                target = bridges[target]
            where = f"line {self._line_nos[i] + 1}"
            if target is not None and target in by_id:
                resolved[i] = by_id[target]
                self._warn(f"{where}: parent {wanted} was a malformed line; entry {ids[i]} attached to {target}")
            else:
                resolved[i] = _ROOT
                self._dangling[i] = wanted or ""
                if target is None and seen:
                    self._warn(f"{where}: parent {wanted} was a malformed root line; entry {ids[i]} is a root")
                else:
                    self._warn(f"{where}: parent {wanted} not found; entry {ids[i]} treated as a root")
        if self._disk_ids or unresolved:
            for i, p in enumerate(resolved):
                if p >= 0 and ids[p] != parents[i]:
                    self._relinked.add(i)
        self._parents = resolved

    def _resolve_slow(self, ids: list[str], parents: list[str | None]) -> tuple[dict[str, int], list[int]]:
        """Duplicate or missing ids. A parentId names the latest entry with that id written
        before the child (a parent is always written before its children), so the later of
        two duplicates keeps the id (as in pi's id map) and the earlier is renamed in memory."""
        taken = set(ids)
        by_id: dict[str, int] = {}
        resolved: list[int] = []
        for i, eid in enumerate(ids):
            parent = parents[i]
            resolved.append(_ROOT if not parent else by_id.get(parent, -2))
            where = f"line {self._line_nos[i] + 1}"
            if not eid:
                new = new_entry_id(taken)
                taken.add(new)
                ids[i] = new
                self._disk_ids[i] = ""
                self._warn(f"{where}: entry without an id; given {new} in memory")
                eid = new
            elif eid in by_id:
                earlier = by_id[eid]
                new = new_entry_id(taken)
                taken.add(new)
                ids[earlier] = new
                by_id[new] = earlier
                self._disk_ids[earlier] = eid
                self._warn(
                    f"{where}: duplicate id {eid} (also on line {self._line_nos[earlier] + 1}); "
                    f"the earlier entry is renamed {new} in memory"
                )
            by_id[eid] = i
        # forward references (a parent written after its child) are resolved at the end
        for i, p in enumerate(resolved):
            if p == -2 and parents[i] in by_id:
                resolved[i] = by_id[parents[i] or ""]
        return by_id, resolved

    def _read_labels_and_name(self) -> None:
        """Labels and the name come from entries all over the file: decoded on first use."""
        if self._labels_read:
            return
        self._labels_read = True
        appended = (self._labels, self._name)  # anything appended since the file was opened
        self._labels, self._name = {}, None
        types = self._types
        wanted = [i for i, kind in enumerate(types) if kind == "label" or kind == "session_info"]
        for i in wanted:
            entry = self._entry(i)
            if entry is not None:
                self._note(entry)
        del appended

    def _note(self, entry: Entry) -> None:
        if isinstance(entry, LabelEntry):
            if entry.label:
                self._labels[entry.target_id] = entry.label
            else:
                self._labels.pop(entry.target_id, None)
        elif isinstance(entry, SessionInfoEntry):
            self._name = entry.name

    def _warn(self, message: str) -> None:
        where = str(self.path) if self.path is not None else "<memory>"
        self.warnings.append(message)
        log.warning("%s: %s", where, message)

    # --- lifetime -----------------------------------------------------------------------

    def close(self) -> None:
        """Release the lock and the file. The store can still be read from its cache."""
        for fd in {self._fd, self._rfd}:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._rfd = None

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # --- reading ------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.header.id

    @property
    def in_memory_only(self) -> bool:
        return self.path is None

    @property
    def on_disk(self) -> bool:
        return self._on_disk

    def __len__(self) -> int:
        return len(self._types)

    @property
    def leaf_id(self) -> str | None:
        return self._ids[self._leaf] if self._leaf >= 0 else None

    @property
    def leaf_index(self) -> int | None:
        """0-based position of the leaf in the entry list (without the header)."""
        return self._leaf if self._leaf >= 0 else None

    def ids(self) -> list[str]:
        return list(self._ids)

    def types(self) -> list[str]:
        return list(self._types)

    def index_of(self, entry_id: str) -> int:
        index = self._by_id.get(entry_id)
        if index is None:
            raise KeyError(f"no entry {entry_id!r} in this session")
        return index

    def has(self, entry_id: str) -> bool:
        return entry_id in self._by_id

    def type_of(self, entry_id: str) -> str:
        return self._types[self.index_of(entry_id)]

    def role_of(self, entry_id: str) -> str | None:
        """The message role of a message entry (from the index when it could be read there)."""
        return self.role_at(self.index_of(entry_id))

    def role_at(self, index: int) -> str | None:
        if self._types[index] != "message":
            return None
        role = self._roles[index]
        if role is None:
            entry = self._entry(index)
            if isinstance(entry, MessageEntry):
                role = entry.message.role
                self._roles[index] = role
        return role

    def roles(self) -> list[str | None]:
        """Every entry's message role (None for other types), read from the lines' prefixes
        (decoding only entries whose prefix does not show it)."""
        if self._rfd is not None:
            for window in self._windows:
                _start, _stop, first, count = window
                if any(r is None for r in self._roles[first:first + count]):
                    roles = _scan.window_roles(self._rfd, window)
                    for k, role in enumerate(roles):
                        if role is not None and self._roles[first + k] is None:
                            self._roles[first + k] = role
        return [self.role_at(i) for i in range(len(self._types))]

    def parent_id_of(self, entry_id: str) -> str | None:
        parent = self._parents[self.index_of(entry_id)]
        return self._ids[parent] if parent >= 0 else None

    def get(self, entry_id: str) -> Entry | None:
        """The entry, decoded (and cached); None for a line found malformed when decoded."""
        return self._entry(self.index_of(entry_id))

    def entry_at(self, index: int, *, cache: bool = True) -> Entry | None:
        """Entry ``index`` decoded; ``cache=False`` does not keep it (walking a big file)."""
        if not cache and index not in self._cache:
            entry = self._entry(index)
            self._cache.pop(index, None)
            return entry
        return self._entry(index)

    def entries(self) -> list[Entry]:
        """Every readable entry in file order (decodes the whole file: slow for big ones)."""
        return [e for e in (self._entry(i) for i in range(len(self._types))) if e is not None]

    def __iter__(self) -> Iterator[Entry]:
        """Every readable entry in file order, decoded one at a time and not kept (so a big
        file can be walked without holding it all)."""
        for i in range(len(self._types)):
            entry = self.entry_at(i, cache=False)
            if entry is not None:
                yield entry

    def _entry(self, index: int) -> Entry | None:
        cached = self._cache.get(index)
        if cached is not None:
            return cached
        if index in self._bad:
            return None
        raw = self._read(index)
        try:
            data = json.loads(raw)
            entry = entry_from_json(data)
        except (ValueError, UnicodeDecodeError) as exc:
            self._bad.add(index)
            self._warn(f"line {self._line_nos[index] + 1}: malformed entry skipped: {_scan._reason(exc)}")
            return None
        expected = self._disk_ids.get(index, self._ids[index])
        if entry.id != expected:
            self._bad.add(index)
            self._warn(f"line {self._line_nos[index] + 1}: expected entry {expected}, found {entry.id!r}: "
                       "the file changed on disk since it was opened")
            return None
        self._fix_links(index, entry)
        self._cache[index] = entry
        return entry

    def _fix_links(self, index: int, entry: Entry) -> None:
        """The entry as the tree has it: renamed ids and re-attached parents."""
        entry.id = self._ids[index]
        parent = self._parents[index]
        if parent >= 0:
            entry.parent_id = self._ids[parent]
        elif index not in self._dangling:
            entry.parent_id = None

    def _read(self, index: int) -> bytes:
        if self._rfd is None:
            raise SessionError("the session file is closed")
        if self._offsets[index] == _scan.NOT_LOCATED:
            self._locate(index)
        length = self._lengths[index]
        data = os.pread(self._rfd, length, self._offsets[index])
        if len(data) != length:
            return b""
        return data

    def _locate(self, index: int) -> None:
        """Work out where the line of entry ``index`` starts (the scan left it for later),
        walking from the nearest located line of its window: reading backwards from the
        window's end for entries near the end (a leaf's context), forwards otherwise."""
        assert self._rfd is not None
        w = bisect.bisect_right(self._window_firsts, index) - 1
        start, stop, first, count = self._windows[w]
        located = self._located[w]
        if index - located[0] < located[1] - index:
            self._locate_forward(w, index, start, first)
        else:
            self._locate_backward(w, index, start, stop, first, count)

    def _locate_forward(self, w: int, target: int, start: int, first: int) -> None:
        assert self._rfd is not None
        located = self._located[w]
        line = located[0]
        pos = self._offsets[line - 1] + self._lengths[line - 1] + 1 if line > first else start
        buf, buf_lo = b"", pos
        while line <= target:
            nl = buf.find(b"\n", pos - buf_lo)
            while nl < 0:
                chunk = os.pread(self._rfd, _LOCATE_CHUNK, buf_lo + len(buf))
                if not chunk:  # the file is shorter than when it was opened
                    self._give_up(line, target + 1)
                    located[0] = target + 1
                    return
                buf, buf_lo = buf[pos - buf_lo:] + chunk, pos
                nl = buf.find(b"\n")
            end = buf_lo + nl
            self._offsets[line], self._lengths[line] = pos, end - pos
            pos = end + 1
            line += 1
        located[0] = line

    def _locate_backward(self, w: int, target: int, start: int, stop: int, first: int, count: int) -> None:
        assert self._rfd is not None
        located = self._located[w]
        line = located[1]
        end = self._offsets[line] - 1 if line < first + count else stop - 1  # the newline ending line - 1
        buf, buf_lo = b"", end
        while line > target:
            nl = buf.rfind(b"\n", 0, end - buf_lo)
            while nl < 0 and buf_lo > start:
                lo = max(start, buf_lo - _LOCATE_CHUNK)
                chunk = os.pread(self._rfd, buf_lo - lo, lo)
                if len(chunk) != buf_lo - lo:
                    self._give_up(target, line)
                    located[1] = target
                    return
                buf, buf_lo = chunk, lo  # the newline looked for is before the old buffer
                nl = buf.rfind(b"\n")
            line_start = buf_lo + nl + 1 if nl >= 0 else start
            line -= 1
            self._offsets[line], self._lengths[line] = line_start, end - line_start
            end = line_start - 1
        located[1] = line

    def _give_up(self, low: int, high: int) -> None:
        """Lines that cannot be found any more read as empty (and so as malformed)."""
        for line in range(low, high):
            if self._offsets[line] == _scan.NOT_LOCATED:
                self._offsets[line], self._lengths[line] = 0, 0

    # --- the tree -----------------------------------------------------------------------

    def path_indices(self, entry_id: str | None = None) -> list[int]:
        """Positions from the root to ``entry_id`` (default: the leaf)."""
        index = self._leaf if entry_id is None else self.index_of(entry_id)
        parents = self._parents
        out: list[int] = []
        limit = len(parents)
        # runs of entries each the child of the one before are taken a block at a time (a
        # slice compare in C); where a block is not such a run, smaller blocks, then one by one
        blocks = (1024, 64, 8)
        while index >= 0:
            for block in blocks:
                low = index - block + 1
                if low > 0 and parents[low:index + 1] == list(range(low - 1, index)):
                    out.extend(range(index, low - 1, -1))
                    index = low - 1
                    break
            else:
                out.append(index)
                index = parents[index]
            if len(out) > limit:
                self._warn(f"parent links form a cycle at entry {self._ids[index]}; the path is cut there")
                break
        out.reverse()
        return out

    def lineage(self, entry_id: str | None) -> tuple[Sequence[str], Sequence[str]]:
        """Ids and types from the root to ``entry_id`` (for :func:`build_context`)."""
        indices = self.path_indices(entry_id)
        if not indices:
            return (), ()
        if len(indices) == 1:
            return (self._ids[indices[0]],), (self._types[indices[0]],)
        pick = operator.itemgetter(*indices)
        return pick(self._ids), pick(self._types)

    def path_ids(self, entry_id: str | None = None) -> list[str]:
        ids = self._ids
        return [ids[i] for i in self.path_indices(entry_id)]

    def path_to(self, entry_id: str | None = None) -> list[Entry]:
        """The entries from the root to ``entry_id`` (default: the leaf), decoded."""
        return [e for e in (self._entry(i) for i in self.path_indices(entry_id)) if e is not None]

    def children_indices(self) -> list[list[int]]:
        children: list[list[int]] = [[] for _ in self._types]
        for i, parent in enumerate(self._parents):
            if parent >= 0:
                children[parent].append(i)
        return children

    def tree(self) -> SessionTree:
        """Children of every entry, roots, and orphans (entries whose parent is missing
        become roots; a warning was given when the file was read)."""
        ids = self._ids
        out = SessionTree()
        reached = 0
        children = self.children_indices()
        roots = [i for i, p in enumerate(self._parents) if p < 0]
        stack = list(roots)
        while stack:
            i = stack.pop()
            reached += 1
            stack.extend(children[i])
        if reached < len(ids):  # a cycle: nothing in it is reachable from a root
            seen = [False] * len(ids)
            stack = list(roots)
            while stack:
                i = stack.pop()
                seen[i] = True
                stack.extend(children[i])
            for i, ok in enumerate(seen):
                if not ok and (self._parents[i] < 0 or seen[self._parents[i]] is False):
                    self._warn(f"entry {ids[i]} is part of a parent cycle; shown as a root")
                    roots.append(i)
                    self._parents[i] = _ROOT
                    break
            return self.tree()
        for i, kids in enumerate(children):
            if kids:
                out.children[ids[i]] = [ids[k] for k in kids]
        out.roots = [ids[i] for i in sorted(roots)]
        out.orphans = [ids[i] for i in sorted(self._dangling)]
        return out

    # --- labels, name, settings -----------------------------------------------------------

    @property
    def labels(self) -> dict[str, str]:
        """Current label of every labelled entry (the latest label entry wins)."""
        self._read_labels_and_name()
        return dict(self._labels)

    def label_of(self, entry_id: str) -> str | None:
        self._read_labels_and_name()
        return self._labels.get(entry_id)

    @property
    def name(self) -> str | None:
        """The session's name (the latest session_info entry), or None."""
        self._read_labels_and_name()
        return self._name

    def current_settings(self) -> tuple[ModelRef | None, str | None]:
        """Model and thinking level recorded on the leaf's path (None: none recorded;
        version-1 headers count as a record)."""
        cached = self._settings
        if cached is not None and cached[0] == self._leaf:
            return cached[1], cached[2]
        from heron.session.context import restore_settings

        ids, types = self.lineage(self.leaf_id)
        model, thinking = restore_settings(self, ids, types)
        self._settings = (self._leaf, model, thinking)
        return model, thinking

    # --- writing ------------------------------------------------------------------------

    def append(self, entry: Entry) -> Entry:
        """Append ``entry`` as a child of the leaf and make it the leaf. ``id`` (8 hex) and
        ``timestamp`` are filled when empty; ``parent_id`` is always the leaf."""
        if self._read_only_reason is not None:
            raise SessionReadOnlyError(self._read_only_reason)
        if not entry.id:
            entry.id = new_entry_id(self._by_id)
        elif entry.id in self._by_id:
            raise ValueError(f"entry id {entry.id!r} is already used in this session")
        leaf = self._leaf
        entry.parent_id = self._ids[leaf] if leaf >= 0 else None
        if not entry.timestamp:
            entry.timestamp = iso_now()
        line = dumps_line(entry.to_json_dict())
        if self._on_disk:
            self._write(line)
        elif self.path is not None and _is_assistant(entry):
            self._materialize(extra=line)
        index = len(self._types)
        self._types.append(entry.type)
        self._ids.append(entry.id)
        self._parents.append(leaf)
        self._roles.append(entry.message.role if isinstance(entry, MessageEntry) else None)
        self._offsets.append(-1)
        self._lengths.append(len(line))
        self._line_nos.append(self._line_nos[-1] + 1 if self._line_nos else 1)
        self._by_id[entry.id] = index
        self._cache[index] = entry
        self._leaf = index
        if isinstance(entry, LabelEntry | SessionInfoEntry):
            self._read_labels_and_name()
            self._note(entry)
        self._track_settings(leaf, index, entry)
        return entry

    def _track_settings(self, old_leaf: int, new_leaf: int, entry: Entry) -> None:
        cached = self._settings
        if cached is None or cached[0] != old_leaf:
            self._settings = None
            return
        model, thinking = cached[1], cached[2]
        if isinstance(entry, ModelChangeEntry):
            model = entry.model
        elif isinstance(entry, ThinkingLevelChangeEntry):
            thinking = entry.thinking_level
        elif (
            isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage)
            and entry.message.provider and entry.message.model
        ):
            model = ModelRef(entry.message.provider, entry.message.model)
        self._settings = (new_leaf, model, thinking)

    def _write(self, line: bytes) -> None:
        if self._needs_rewrite:
            self._rewrite()
        fd = self._fd
        if fd is None:
            raise SessionError("the session file is closed")
        data = b"\n" + line if self._needs_newline else line
        written = os.write(fd, data)  # one write per entry: O_APPEND makes it atomic w.r.t. other appends
        if written != len(data):
            self._needs_newline = True
            raise OSError(f"short write to {self.path}: {written} of {len(data)} bytes")
        self._needs_newline = False
        if self.fsync:
            os.fsync(fd)

    def materialize(self) -> None:
        """Write the file now (header and everything buffered) instead of waiting for the
        first assistant message."""
        if self._on_disk or self.path is None:
            return
        if self._read_only_reason is not None:
            raise SessionReadOnlyError(self._read_only_reason)
        self._materialize()

    def _materialize(self, extra: bytes = b"") -> None:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        try:
            _lock(fd, self.path)
            chunks = [dumps_line(self.header.to_json_dict())]
            chunks.extend(dumps_line(self._cache[i].to_json_dict()) for i in range(len(self._types)))
            chunks.append(extra)
            data = b"".join(chunks)
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write to {self.path}: {written} of {len(data)} bytes")
            if self.fsync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = self._rfd = fd
        self._on_disk = True

    def _rewrite(self) -> None:
        """Write the whole session in the current version (after migration, or to give a
        header to a file that had none): to a temporary file, locked before it replaces
        the old one, so no other writer can slip in between."""
        assert self.path is not None and self._fd is not None
        lines = [dumps_line(self.header.to_json_dict())]
        offset = len(lines[0])
        offsets: list[int] = []
        lengths: list[int] = []
        for i in range(len(self._types)):
            line = self._line_for(i)
            if line is None:
                self._warn(f"line {self._line_nos[i] + 1}: malformed entry dropped when the file was rewritten")
                line = b""
            lines.append(line)
            offsets.append(offset)
            lengths.append(max(0, len(line) - 1))
            offset += len(line)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        try:
            _lock(fd, tmp)
            data = b"".join(lines)
            if os.write(fd, data) != len(data):
                raise OSError(f"short write to {tmp}")
            os.fsync(fd)
            os.replace(tmp, self.path)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        old = self._fd
        self._fd = self._rfd = fd
        os.close(old)
        # the entries now live at new offsets, under the ids and parents the tree has
        self._offsets, self._lengths = offsets, lengths
        self._disk_ids.clear()
        self._relinked.clear()
        self._disk_is_current = True
        self._line_nos = list(range(1, len(self._types) + 1))
        self._needs_rewrite = False
        self._needs_newline = False
        self._on_disk = True

    def _line_for(self, index: int) -> bytes | None:
        """An entry's line for a rewrite or a fork: its bytes in the file when nothing about
        it changed (verbatim: unknown fields and key order included), else re-encoded; None
        for a malformed entry."""
        changed = index in self._disk_ids or index in self._dangling or index in self._relinked
        if self._disk_is_current and not changed and self._offsets[index] != -1 and index not in self._bad:
            raw = self._read(index)
            try:
                data = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                data = None
            if isinstance(data, dict) and data.get("id") == self._ids[index]:
                return raw + b"\n"
        entry = self._entry(index)
        return None if entry is None else dumps_line(entry.to_json_dict())

    # --- convenience appends --------------------------------------------------------------

    def append_message(self, message: AgentMessage) -> MessageEntry:
        entry = MessageEntry(message=message)
        self.append(entry)
        return entry

    def append_model_change(self, provider: str, model_id: str) -> ModelChangeEntry:
        entry = ModelChangeEntry(provider=provider, model_id=model_id)
        self.append(entry)
        return entry

    def append_thinking_level_change(self, level: str) -> ThinkingLevelChangeEntry:
        entry = ThinkingLevelChangeEntry(thinking_level=level)
        self.append(entry)
        return entry

    def append_compaction(
        self, summary: str, first_kept_entry_id: str, tokens_before: int, details: Any = None,
        from_hook: bool | None = None,
    ) -> CompactionEntry:
        entry = CompactionEntry(summary=summary, first_kept_entry_id=first_kept_entry_id,
                                tokens_before=tokens_before, details=details, from_hook=from_hook)
        self.append(entry)
        return entry

    def append_custom(self, custom_type: str, data: Any = None) -> CustomEntry:
        entry = CustomEntry(custom_type=custom_type, data=data)
        self.append(entry)
        return entry

    def append_custom_message(
        self, custom_type: str, content: str | list[TextContent | ImageContent], display: bool = True,
        details: Any = None,
    ) -> CustomMessageEntry:
        entry = CustomMessageEntry(custom_type=custom_type, content=content, display=display, details=details)
        self.append(entry)
        return entry

    def set_label(self, target_id: str, label: str | None) -> LabelEntry:
        """Label an entry (``None`` clears). Appended like any entry, so it moves the leaf."""
        if target_id not in self._by_id:
            raise KeyError(f"no entry {target_id!r} in this session")
        entry = LabelEntry(target_id=target_id, label=label or None)
        self.append(entry)
        return entry

    def set_name(self, name: str | None) -> SessionInfoEntry:
        entry = SessionInfoEntry(name=name or None)
        self.append(entry)
        return entry

    # --- branching ------------------------------------------------------------------------

    def branch(self, entry_id: str) -> None:
        """Move the leaf to ``entry_id``; writes nothing. The next append becomes a new
        child of that entry, which is all a branch is."""
        self._leaf = self.index_of(entry_id)

    def reset_leaf(self) -> None:
        """Move the leaf before the first entry: the next append is a new root."""
        self._leaf = _ROOT

    def branch_with_summary(
        self, entry_id: str | None, summary: str, details: Any = None, from_hook: bool | None = None
    ) -> BranchSummaryEntry:
        """Move the leaf to ``entry_id`` (None: before the first entry) and append a summary
        of the branch being left there."""
        from_id = self.leaf_id
        if entry_id is None:
            self.reset_leaf()
        else:
            self.branch(entry_id)
        entry = BranchSummaryEntry(from_id=from_id, summary=summary, details=details, from_hook=from_hook)
        self.append(entry)
        return entry

    def fork(
        self,
        entry_id: str | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        home: str | os.PathLike[str] | None = None,
    ) -> SessionStore:
        """A new session holding the path from the root to ``entry_id`` (default: the leaf),
        with the same ids, plus the labels of those entries; its header names this session
        (``parentSession``). Entries are copied byte for byte where nothing about them
        changed. In-memory sessions fork in memory. The new file is written at once when the
        path holds an assistant message (else at its first one, like a new session), and it
        is returned open for writing."""
        indices = self.path_indices(entry_id)
        parent_session = str(self.path) if self.path is not None else None
        has_assistant = any(self.role_at(i) == "assistant" for i in reversed(indices))
        write_now = self.path is not None and has_assistant
        if self.path is None:
            new = SessionStore.in_memory(self.header.cwd)
            new.header.parent_session = parent_session
        else:
            new = SessionStore.create(self.header.cwd, path=path, home=home, parent_session=parent_session,
                                      fsync=self.fsync)
        lines: list[bytes] = []
        taken: set[str] = set()
        previous: str | None = None
        for i in indices:
            parent = self._parents[i]
            # verbatim when the entry's parent in the fork is the one it has in the file (not
            # when a malformed entry before it was left out, or it is an orphan made a root)
            verbatim = (self._ids[parent] if parent >= 0 else None) == previous and i not in self._dangling
            line = self._line_for(i) if verbatim else None
            entry: Entry | None = None
            if line is None:
                decoded = self._entry(i)
                if decoded is None:
                    continue
                entry = copy.copy(decoded)
                entry.parent_id = previous
                line = dumps_line(entry.to_json_dict())
            if not write_now:
                entry = entry or self._entry(i)
                if entry is None:
                    continue
                new._adopt(copy.copy(entry))
            lines.append(line)
            previous = self._ids[i]
            taken.add(previous)
        labels = self.labels
        for i in indices:
            label = labels.get(self._ids[i])
            if label is not None:
                entry = LabelEntry(target_id=self._ids[i], label=label, id=new_entry_id(taken), parent_id=previous,
                                   timestamp=iso_now())
                taken.add(entry.id)
                lines.append(dumps_line(entry.to_json_dict()))
                if not write_now:
                    new._adopt(entry)
                previous = entry.id
        if not write_now or new.path is None:
            return new
        new.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(new.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        try:
            data = dumps_line(new.header.to_json_dict()) + b"".join(lines)
            if os.write(fd, data) != len(data):
                raise OSError(f"short write to {new.path}")
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        return SessionStore.open(new.path, fsync=self.fsync)

    def _adopt(self, entry: Entry) -> None:
        """Add an entry that already has its id and parent (fork), without writing."""
        index = len(self._types)
        parent = self._by_id.get(entry.parent_id, _ROOT) if entry.parent_id is not None else _ROOT
        self._types.append(entry.type)
        self._ids.append(entry.id)
        self._parents.append(parent)
        self._roles.append(entry.message.role if isinstance(entry, MessageEntry) else None)
        self._offsets.append(-1)
        self._lengths.append(0)
        self._line_nos.append(index + 1)
        self._by_id[entry.id] = index
        self._cache[index] = entry
        self._leaf = index
        self._note(entry)

    # --- context ----------------------------------------------------------------------------

    def build_context(self, leaf_id: str | None = None) -> SessionContext:
        """The messages, model and thinking level for ``leaf_id`` (default: the leaf); see
        :func:`heron.session.context.build_context`."""
        from heron.session.context import build_context

        return build_context(self, self.leaf_id if leaf_id is None else leaf_id)


def _is_assistant(entry: Entry) -> bool:
    return isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage)


def _id_from_name(path: Path) -> str:
    stem = path.stem
    return stem.split("_", 1)[1] if "_" in stem else stem


def count_by(values: Sequence[str | None]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        if value is not None:
            out[value] = out.get(value, 0) + 1
    return out
