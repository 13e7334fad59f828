"""``SessionStore``: one session file (or an in-memory session), its entry tree and its leaf.

The store is a façade over parts with one job each:

- :mod:`heron.session._scan` indexes a file without decoding it, and
  :mod:`heron.session.index` keeps that index (types, ids, parents, roles, where each line
  is) and walks it;
- :mod:`heron.session.repair` turns ids into a tree, fixing duplicate or missing ids,
  dangling parents and parent cycles in memory;
- :mod:`heron.session.writer` writes the file (appends, creation, rewrites, the lock);
- the store itself decodes entries on demand, keeps the leaf, labels, name and settings.

Durability (docs/sessions.md): one entry is one line and one write; a torn last line is
dropped on load; one writer per file (a second gets :class:`SessionInUseError`); a new
session writes its file with its first message (:func:`starts_file`) - the user's prompt,
before the request that answers it is sent, so a process killed while waiting for the
first answer still leaves the prompt on disk. When a write fails the
store raises :class:`SessionWriteError`, keeps the file as it was, and refuses every later
append (:attr:`SessionStore.write_error`): the caller must stop rather than work on unsaved.

Opening is lazy, so a 100,000-entry file opens and builds its leaf's context in a fraction
of a second.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from heron.session import _scan, writer
from heron.session.appends import EntryAppends
from heron.session.context import SessionContext, build_context, restore_settings, settings_after
from heron.session.entries import (
    CURRENT_VERSION,
    BranchSummaryEntry,
    Entry,
    LabelEntry,
    MessageEntry,
    ModelRef,
    SessionHeader,
    SessionInfoEntry,
    entry_from_json,
    iso_now,
    new_entry_id,
    new_session_id,
    starts_file,
)
from heron.session.errors import (
    SessionError,
    SessionInUseError,
    SessionReadOnlyError,
    SessionWriteError,
)
from heron.session.index import ROOT, EntryIndex, SessionTree
from heron.session.jsonl import dumps_line, is_clean, loads_line
from heron.session.labels import SessionLabels
from heron.session.naming import new_session_path
from heron.session.repair import Repairs, load_scan
from heron.session.stats import count_by

log = logging.getLogger("heron.session")

__all__ = [
    "SessionError",
    "SessionInUseError",
    "SessionReadOnlyError",
    "SessionStore",
    "SessionTree",
    "SessionWriteError",
    "count_by",
]


class SessionStore(EntryAppends):
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
        self.write_error: SessionWriteError | None = None  # the first failed write; appends refused after it
        self._read_only_reason: str | None = "the session was opened read-only" if read_only else None
        self._writer = writer.SessionWriter(path, None, fsync=fsync) if path is not None else None
        self._rfd: int | None = None  # where lazy entries are read from
        self._on_disk = False  # header written (or the file existed)
        self._needs_rewrite = False
        self._disk_is_current = True  # False after migration: the file's lines are not the entries
        self._index = EntryIndex()
        self._repairs = Repairs()
        self._cache: dict[int, Entry] = {}
        self._leaf = ROOT
        self.opened_entries = 0  # entries read from the file when it was opened (the rest: appended here)
        self._labels = SessionLabels()  # labels and name, from entries all over the file
        self._settings: tuple[int, ModelRef | None, str | None] | None = None
        # Applied to every line before it is written (the coding layer installs its secret
        # redactor here, so no key reaches the file); the session layer knows no secrets.
        self.scrub: Callable[[str], str] | None = None

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
        """A new session for ``cwd``. Nothing is written until the first message is appended
        (or :meth:`materialize` is called); the file then goes to ``path`` or
        ``$HERON_HOME/sessions/<encoded cwd>/<time>_<uuid>.jsonl``."""
        header = SessionHeader(
            id=new_session_id(),
            timestamp=iso_now(),
            cwd=os.path.abspath(os.fspath(cwd)),
            parent_session=parent_session,
        )
        target = Path(path) if path is not None else new_session_path(header.cwd, header.id, header.timestamp, home)
        return cls(header, target, fsync=fsync)

    @classmethod
    def in_memory(cls, cwd: str | os.PathLike[str] = ".") -> SessionStore:
        """A session that is never written (``--no-session``)."""
        header = SessionHeader(id=new_session_id(), timestamp=iso_now(), cwd=os.path.abspath(os.fspath(cwd)))
        return cls(header, None)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, read_only: bool = False, fsync: bool = False) -> SessionStore:
        """Open a session file. A writer (the default) takes the file's lock first and
        raises :class:`SessionInUseError` when another process holds it, and
        :class:`SessionWriteError` when heron may not write the file or it is of a newer
        version than this heron (both can be opened ``read_only``, which takes no lock).
        Older versions are migrated in memory and the file is rewritten in the current
        version before the first append. Other problems are collected in :attr:`warnings`
        (and logged), never raised."""
        target = Path(path)
        fd = os.open(target, os.O_RDONLY) if read_only else writer.open_for_append(target)
        try:
            size = os.fstat(fd).st_size
            raw = _scan.scan(fd, size)
        except BaseException:
            os.close(fd)
            raise
        header = (
            SessionHeader.from_json_dict(raw.header)
            if raw.header is not None
            else SessionHeader(id=_id_from_name(target), timestamp=iso_now(), cwd=os.getcwd())
        )
        if not read_only and raw.header is not None and header.version > CURRENT_VERSION:
            os.close(fd)
            raise SessionReadOnlyError(
                f"session file version {header.version} is newer than this heron supports ({CURRENT_VERSION}); "
                f"it can be read (heron sessions info) but not continued: {target}",
                target,
            )
        if not read_only and raw.header is None and not raw.line_nos and _scan.foreign(fd, size):
            os.close(fd)
            raise SessionError(f"not a session file (no session header, no entry): {target}; it was left as it is")
        store = cls(header, target, fsync=fsync, read_only=read_only)
        store._rfd = fd
        if store._writer is not None and not read_only:
            store._writer.fd = fd
            store._writer.needs_newline = size > 0 and not raw.ends_with_newline
        store._on_disk = True
        store._load(raw)
        return store

    def _load(self, raw: _scan.RawIndex) -> None:
        if raw.header_problem:
            self._warn(f"{raw.header_problem}")
        for message in raw.warnings:
            self._warn(message)
        if raw.header is not None and self.header.version > CURRENT_VERSION:
            self._read_only_reason = (
                f"session file version {self.header.version} is newer than this heron supports ({CURRENT_VERSION})"
            )
            self._warn(self._read_only_reason + ": reading what can be read, appending is refused")
        loaded = load_scan(raw, self.header, self._warn)
        self._index, self._repairs, self._cache = loaded.index, loaded.repairs, loaded.cache
        self._disk_is_current = not loaded.migrated
        # migrated, or without a usable header (an empty file): rewritten before appending
        self._needs_rewrite = (loaded.migrated and raw.header is not None) or raw.header is None
        self._leaf = len(self._index) - 1
        self.opened_entries = len(self._index)
        self._labels = SessionLabels(read=False)

    def _warn(self, message: str) -> None:
        where = str(self.path) if self.path is not None else "<memory>"
        self.warnings.append(message)
        log.warning("%s: %s", where, message)

    # --- lifetime -----------------------------------------------------------------------

    def close(self) -> None:
        """Release the lock and the file. The store can still be read from its cache."""
        fds = {self._rfd, self._writer.fd if self._writer is not None else None}
        for fd in fds:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._rfd = None
        if self._writer is not None:
            self._writer.fd = None

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
        return len(self._index)

    @property
    def leaf_id(self) -> str | None:
        return self._index.ids[self._leaf] if self._leaf >= 0 else None

    @property
    def leaf_index(self) -> int | None:
        """0-based position of the leaf in the entry list (without the header)."""
        return self._leaf if self._leaf >= 0 else None

    def ids(self) -> list[str]:
        return list(self._index.ids)

    def types(self) -> list[str]:
        return list(self._index.types)

    def index_of(self, entry_id: str) -> int:
        index = self._index.by_id.get(entry_id)
        if index is None:
            raise KeyError(f"no entry {entry_id!r} in this session")
        return index

    def has(self, entry_id: str) -> bool:
        return entry_id in self._index.by_id

    def type_of(self, entry_id: str) -> str:
        return self._index.types[self.index_of(entry_id)]

    def role_of(self, entry_id: str) -> str | None:
        """The message role of a message entry (from the index when it could be read there)."""
        return self.role_at(self.index_of(entry_id))

    def role_at(self, index: int) -> str | None:
        if self._index.types[index] != "message":
            return None
        role = self._index.roles[index]
        if role is None:
            entry = self._entry(index)
            if isinstance(entry, MessageEntry):
                role = entry.message.role
                self._index.roles[index] = role
        return role

    def roles(self) -> list[str | None]:
        """Every entry's message role (None for other types), read from the lines' prefixes
        (decoding only entries whose prefix does not show it)."""
        if self._rfd is not None:
            self._index.fill_roles(self._rfd)
        return [self.role_at(i) for i in range(len(self._index))]

    def parent_id_of(self, entry_id: str) -> str | None:
        parent = self._index.parents[self.index_of(entry_id)]
        return self._index.ids[parent] if parent >= 0 else None

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
        return [e for e in (self._entry(i) for i in range(len(self._index))) if e is not None]

    def __iter__(self) -> Iterator[Entry]:
        """Every readable entry in file order, decoded one at a time and not kept (so a big
        file can be walked without holding it all)."""
        for i in range(len(self._index)):
            entry = self.entry_at(i, cache=False)
            if entry is not None:
                yield entry

    def _entry(self, index: int) -> Entry | None:
        cached = self._cache.get(index)
        if cached is not None:
            return cached
        repairs = self._repairs
        if index in repairs.bad:
            return None
        if self._rfd is None:
            raise SessionError("the session file is closed")
        line_no = self._index.line_nos[index] + 1
        try:
            entry = entry_from_json(loads_line(self._index.read(self._rfd, index)))
        except ValueError as exc:
            repairs.bad.add(index)
            self._warn(f"line {line_no}: malformed entry skipped: {_scan.error_reason(exc)}")
            return None
        expected = repairs.expected_id(index, self._index.ids)
        if entry.id != expected:
            repairs.bad.add(index)
            self._warn(
                f"line {line_no}: expected entry {expected}, found {entry.id!r}: "
                "the file changed on disk since it was opened"
            )
            return None
        repairs.fix_links(index, entry, self._index)
        self._cache[index] = entry
        return entry

    # --- the tree -----------------------------------------------------------------------

    def path_indices(self, entry_id: str | None = None) -> list[int]:
        """Positions from the root to ``entry_id`` (default: the leaf)."""
        index = self._leaf if entry_id is None else self.index_of(entry_id)
        return self._index.path_indices(index, self._warn)

    def lineage(self, entry_id: str | None) -> tuple[Sequence[str], Sequence[str]]:
        """Ids and types from the root to ``entry_id`` (for :func:`build_context`)."""
        return self._index.lineage(self.path_indices(entry_id))

    def path_ids(self, entry_id: str | None = None) -> list[str]:
        ids = self._index.ids
        return [ids[i] for i in self.path_indices(entry_id)]

    def path_to(self, entry_id: str | None = None) -> list[Entry]:
        """The entries from the root to ``entry_id`` (default: the leaf), decoded."""
        return [e for e in (self._entry(i) for i in self.path_indices(entry_id)) if e is not None]

    def children_indices(self) -> list[list[int]]:
        return self._index.children_indices()

    def tree(self) -> SessionTree:
        """Children of every entry, roots, and orphans (entries whose parent is missing
        become roots; a warning was given when the file was read, as for parent cycles,
        which are cut when the file is read)."""
        return self._index.tree(list(self._repairs.dangling))

    # --- labels, name, settings -----------------------------------------------------------

    def _read_labels_and_name(self) -> SessionLabels:
        self._labels.ensure(self._index.types, self._entry)
        return self._labels

    @property
    def labels(self) -> dict[str, str]:
        """Current label of every labelled entry (the latest label entry wins)."""
        return dict(self._read_labels_and_name().labels)

    def label_of(self, entry_id: str) -> str | None:
        return self._read_labels_and_name().labels.get(entry_id)

    @property
    def name(self) -> str | None:
        """The session's name (the latest session_info entry), or None."""
        return self._read_labels_and_name().name

    def current_settings(self) -> tuple[ModelRef | None, str | None]:
        """Model and thinking level recorded on the leaf's path (None: none recorded;
        version-1 headers count as a record)."""
        cached = self._settings
        if cached is not None and cached[0] == self._leaf:
            return cached[1], cached[2]
        ids, types = self.lineage(self.leaf_id)
        model, thinking = restore_settings(self, ids, types)
        self._settings = (self._leaf, model, thinking)
        return model, thinking

    # --- writing ------------------------------------------------------------------------

    def append(self, entry: Entry) -> Entry:
        """Append ``entry`` as a child of the leaf and make it the leaf. ``id`` (8 hex) and
        ``timestamp`` are filled when empty; ``parent_id`` is always the leaf. Raises
        :class:`SessionWriteError` (the entry is then not in the session) when it cannot be
        saved, and for every append after such a failure."""
        self._check_writable()
        index = self._index
        if not entry.id:
            entry.id = new_entry_id(index.by_id)
        elif entry.id in index.by_id:
            raise ValueError(f"entry id {entry.id!r} is already used in this session")
        leaf = self._leaf
        entry.parent_id = index.ids[leaf] if leaf >= 0 else None
        if not entry.timestamp:
            entry.timestamp = iso_now()
        line = self.scrubbed(dumps_line(entry.to_json_dict()))
        try:
            if self._on_disk:
                self._write(line)
            elif self.path is not None and starts_file(entry.type):
                self._materialize(extra=line)
        except SessionWriteError as exc:
            self.write_error = exc
            raise
        role = entry.message.role if isinstance(entry, MessageEntry) else None
        position = index.add(entry.type, entry.id, leaf, role, len(line), index.next_line_no())
        self._cache[position] = entry
        self._leaf = position
        if isinstance(entry, LabelEntry | SessionInfoEntry):
            self._read_labels_and_name().note(entry)
        cached = self._settings
        self._settings = (
            None if cached is None or cached[0] != leaf else (position, *settings_after(cached[1], cached[2], entry))
        )
        return entry

    def scrubbed(self, data: bytes) -> bytes:
        """``data`` (whole lines) as :attr:`scrub` lets it be written."""
        if self.scrub is None:
            return data
        return self.scrub(data.decode("utf-8", "surrogatepass")).encode("utf-8", "surrogatepass")

    def _check_writable(self) -> None:
        if self._read_only_reason is not None:
            raise SessionReadOnlyError(self._read_only_reason, self.path)
        if self.write_error is not None:
            raise SessionWriteError(
                f"the session is no longer saved after an earlier error: {self.write_error}",
                self.path,
                self.write_error.cause,
            )

    def _write(self, line: bytes) -> None:
        if self._needs_rewrite:
            self._rewrite()
        assert self._writer is not None
        self._writer.append(line)

    def materialize(self) -> None:
        """Write the file now (header and everything buffered) instead of waiting for the
        first message."""
        if self._on_disk or self.path is None:
            return
        self._check_writable()
        try:
            self._materialize()
        except SessionWriteError as exc:
            self.write_error = exc
            raise

    def _materialize(self, extra: bytes = b"") -> None:
        assert self._writer is not None
        chunks = [dumps_line(self.header.to_json_dict())]
        chunks.extend(dumps_line(self._cache[i].to_json_dict()) for i in range(len(self._index)))
        chunks.append(extra)
        self._rfd = self._writer.create(self.scrubbed(b"".join(chunks)))
        self._on_disk = True

    def _rewrite(self) -> None:
        """Write the whole session in the current version (after migration, or to give a
        header to a file that had none), replacing the file in one step."""
        assert self._writer is not None
        lines = [dumps_line(self.header.to_json_dict())]
        for i in range(len(self._index)):
            line = self.line_for(i)
            if line is None:
                self._warn(f"line {self._index.line_nos[i] + 1}: malformed entry dropped when the file was rewritten")
            lines.append(self.scrubbed(line or b""))
        offsets, lengths = writer.line_places(lines)
        self._rfd = self._writer.replace(b"".join(lines))
        # the entries now live at new offsets, under the ids and parents the tree has
        self._index.relocate(offsets, lengths)
        self._repairs.rewritten()
        self._disk_is_current = True
        self._needs_rewrite = False
        self._on_disk = True

    def line_for(self, index: int) -> bytes | None:
        """An entry's line for a rewrite or a fork (:mod:`heron.session.fork`): its bytes
        in the file when nothing about it changed (verbatim: unknown fields and key order
        included), else re-encoded; None for a malformed entry."""
        repairs = self._repairs
        unchanged = not repairs.changed(index) and index not in repairs.bad
        if self._disk_is_current and unchanged and self._index.offsets[index] != -1 and self._rfd is not None:
            raw = self._index.read(self._rfd, index)
            try:
                data = loads_line(raw) if is_clean(raw) else None  # else re-encoded: valid UTF-8 from now on
            except ValueError:
                data = None
            if isinstance(data, dict) and data.get("id") == self._index.ids[index]:
                return raw + b"\n"
        entry = self._entry(index)
        return None if entry is None else dumps_line(entry.to_json_dict())

    def verbatim_under(self, index: int, parent_id: str | None) -> bool:
        """Whether entry ``index``'s line (:meth:`line_for`) can be copied as it is into a
        file where its parent is ``parent_id`` (a fork): its parent here is that one, and
        the line names it (an orphan's line names a parent that is not in the file)."""
        parent = self._index.parents[index]
        return (self._index.ids[parent] if parent >= 0 else None) == parent_id and index not in self._repairs.dangling

    # --- branching ------------------------------------------------------------------------

    def branch(self, entry_id: str) -> None:
        """Move the leaf to ``entry_id``; writes nothing. The next append becomes a new
        child of that entry, which is all a branch is."""
        self._leaf = self.index_of(entry_id)

    def reset_leaf(self) -> None:
        """Move the leaf before the first entry: the next append is a new root."""
        self._leaf = ROOT

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
        with the same ids, plus the labels of those entries; see :mod:`heron.session.fork`."""
        from heron.session.fork import fork

        return fork(self, entry_id, path=path, home=home)

    def adopt(self, entry: Entry) -> None:
        """Add an entry that already has its id and parent, without writing: a fork whose
        file waits for its first message (or that lives in memory) is filled this way, with
        the entries :meth:`line_under` gave."""
        index = self._index
        parent = index.by_id.get(entry.parent_id, ROOT) if entry.parent_id is not None else ROOT
        role = entry.message.role if isinstance(entry, MessageEntry) else None
        position = index.add(entry.type, entry.id, parent, role, 0, len(index) + 1)
        self._cache[position] = entry
        self._leaf = position
        self._labels.note(entry)

    # --- context ----------------------------------------------------------------------------

    def build_context(self, leaf_id: str | None = None) -> SessionContext:
        """The messages, model and thinking level for ``leaf_id`` (default: the leaf); see
        :func:`heron.session.context.build_context`."""
        return build_context(self, self.leaf_id if leaf_id is None else leaf_id)


def _id_from_name(path: Path) -> str:
    stem = path.stem
    return stem.split("_", 1)[1] if "_" in stem else stem
