"""Recall: a full-text index (SQLite FTS5) over every session under ``$HERON_HOME``.

Compaction replaces old history by a summary in the context, but the session file keeps
every entry; this index makes those entries findable again (the ``search_history`` tool,
``heron sessions search``). What is indexed: user and assistant text (thinking and tool
calls included), tool results, ``!`` commands, compaction and branch summaries,
extension messages, and the spill files under ``$HERON_HOME/tool-output/<session id>/``
(in chunks of lines, so a hit says which lines to read).

The JSONL files stay the source of truth. The index lives in
``$HERON_HOME/index/recall.sqlite3`` and only ever catches up with them: per file it
remembers how many bytes it has read and a hash of the first and last bytes read; a
file that grew is read on from there, a file that shrank or whose bytes changed is
indexed again, a file that is gone loses its rows. A torn last line is left for the
next catch-up. The index can be deleted or rebuilt at any time; a corrupt or foreign
file in its place is replaced by a new index, never an error for the user. See
docs/recall.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heron.session.naming import heron_home, session_id_of, sessions_root
from heron.session.private_files import ensure_private_file
from heron.session.recall_query import (
    SCOPES,
    Hit,
    QueryError,
    RecallError,
    Scope,
    SearchResult,
    check_scope,
    find_hits,
    fts_query,
    is_query_error,
    scope_filter,
)
from heron.session.recall_read import (
    SessionReader,
    hashes,
    same_bytes,
    spill_chunks,
)

# The search's own types live in recall_query; callers of the index import them from here.
__all__ = [
    "SCOPES",
    "CatchUp",
    "Hit",
    "QueryError",
    "RecallError",
    "RecallIndex",
    "Scope",
    "SearchResult",
    "fts_query",
    "index_path",
]

log = logging.getLogger("heron.session.recall")

INDEX_DIR = "index"
INDEX_FILE = "recall.sqlite3"
SCHEMA_VERSION = "1"
MAX_SPILL_BYTES = 64 << 20  # bytes indexed per spill file

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS sources(
    id INTEGER PRIMARY KEY,
    path TEXT UNIQUE NOT NULL,
    kind TEXT NOT NULL,
    session TEXT NOT NULL,
    project TEXT,
    cwd TEXT,
    size INTEGER NOT NULL DEFAULT 0,
    mtime_ns INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    lines INTEGER NOT NULL DEFAULT 0,
    head TEXT NOT NULL DEFAULT '',
    tail TEXT NOT NULL DEFAULT '',
    version INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sources_session ON sources(session);
CREATE INDEX IF NOT EXISTS sources_project ON sources(project);
CREATE TABLE IF NOT EXISTS docs(
    rowid INTEGER PRIMARY KEY,
    source INTEGER NOT NULL,
    entry_id TEXT,
    role TEXT,
    tool TEXT,
    ts TEXT,
    line INTEGER,
    nlines INTEGER,
    spill TEXT
);
CREATE INDEX IF NOT EXISTS docs_source ON docs(source);
CREATE INDEX IF NOT EXISTS docs_spill ON docs(spill) WHERE spill IS NOT NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 2');
"""


@dataclass(slots=True)
class CatchUp:
    """What one catch-up did."""

    files_indexed: int = 0
    files_dropped: int = 0
    rows_added: int = 0
    rebuilt: bool = False
    # files left out, each with why: one file the index cannot take (a name that is not
    # UTF-8, say) must not make every other session unsearchable
    skipped: list[str] = field(default_factory=list)


def index_path(home: str | os.PathLike[str] | None = None) -> Path:
    return heron_home(home) / INDEX_DIR / INDEX_FILE


# --- the index ------------------------------------------------------------------------


@dataclass(slots=True)
class _Source:
    id: int
    path: str
    kind: str
    size: int
    mtime_ns: int
    done: int
    lines: int
    head: str
    tail: str
    version: int


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    """Damage that a rebuild repairs (as opposed to a busy database or a bad query)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return True
    text = str(exc).lower()
    return any(w in text for w in ("malformed", "not a database", "corrupt", "no such table"))


class RecallIndex:
    """The index of one heron home. Cheap to open; :meth:`search` catches up first."""

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        busy_timeout: float = 5.0,
    ) -> None:
        self.home = heron_home(home)
        self.path = Path(path) if path is not None else index_path(self.home)
        self.busy_timeout = busy_timeout
        self.rebuilt = False  # the file was replaced since this object was opened
        self._db = self._connect()

    # --- lifetime -----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        """Open (or create) the index; a file that is not a usable index is replaced."""
        try:
            return self._open_db()
        except sqlite3.DatabaseError as exc:
            if not _is_corruption(exc):
                raise
            log.warning("recall index %s unusable (%s): rebuilding it", self.path, exc)
            self._remove_files()
            self.rebuilt = True
            return self._open_db()

    def _open_db(self) -> sqlite3.Connection:
        ensure_private_file(self.path)  # sqlite gives its -wal and -shm files the same mode
        db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                db.execute("INSERT INTO meta(key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
            elif row[0] != SCHEMA_VERSION:
                raise sqlite3.DatabaseError(f"not a database of schema {SCHEMA_VERSION} (found {row[0]})")
            db.execute("SELECT count(*) FROM fts WHERE fts MATCH 'heron'").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    def _remove_files(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RecallIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def rebuild(self) -> CatchUp:
        """Forget everything and index every file again."""
        self._db.close()
        self._remove_files()
        self._db = self._open_db()
        self.rebuilt = True
        stats = self.catch_up("all")
        stats.rebuilt = True
        return stats

    def _recover(self, exc: sqlite3.DatabaseError) -> None:
        log.warning("recall index %s damaged (%s): rebuilding it", self.path, exc)
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        self._remove_files()
        self._db = self._open_db()
        self.rebuilt = True

    # --- catching up ------------------------------------------------------------------------

    def catch_up(
        self,
        scope: Scope = "all",
        *,
        session_id: str | None = None,
        project: str | None = None,
        files: Sequence[str | os.PathLike[str]] = (),
        lineage: Sequence[str] = (),
    ) -> CatchUp:
        """Bring the rows of the files in ``scope`` up to date with the files. ``files``:
        session files to index as well (a session kept outside ``$HERON_HOME``);
        ``lineage``: sessions scope ``session`` takes in (:func:`scope_filter`)."""
        check_scope(scope, session_id, project)
        stats = CatchUp()
        known = self._known_sources(scope, session_id, project, lineage)
        on_disk = self._files_on_disk(scope, session_id, project, lineage)
        wanted: dict[str, str] = dict(on_disk)
        for extra in files:
            wanted.setdefault(os.path.abspath(os.fspath(extra)), "session")
        for path, kind in known.items():
            if path not in wanted and os.path.exists(path):
                wanted[path] = kind  # a file indexed earlier from outside the usual folders
        for path in known:
            if path not in wanted:
                self._drop_source(path)
                stats.files_dropped += 1
        for path, kind in wanted.items():
            try:
                added = self._sync_spill(path) if kind == "spill" else self._sync_session(path)
            except UnicodeError as exc:  # rolled back: the file's rows stay as they were
                shown = os.fsencode(path).decode("utf-8", "replace")
                log.warning("recall index: %s left out (%s)", shown, exc)
                stats.skipped.append(f"{shown} was left out of the index ({exc})")
                continue
            if added is not None:
                stats.files_indexed += 1
                stats.rows_added += added
        return stats

    def _known_sources(
        self, scope: Scope, session_id: str | None, project: str | None, lineage: Sequence[str]
    ) -> dict[str, str]:
        where, args = scope_filter(scope, session_id, project, "sources", lineage)
        rows = self._db.execute(f"SELECT path, kind FROM sources WHERE {where}", args).fetchall()
        return {str(p): str(k) for p, k in rows}

    def _files_on_disk(
        self, scope: Scope, session_id: str | None, project: str | None, lineage: Sequence[str]
    ) -> dict[str, str]:
        root = sessions_root(self.home)
        sessions = {str(session_id), *lineage}
        folders = [root / str(project)] if scope == "project" else _subdirs(root)
        files: dict[str, str] = {}
        ids: set[str] = set()
        for folder in folders:
            for path in _files(folder, ".jsonl"):
                sid = session_id_of(path)
                if scope == "session" and sid not in sessions:
                    continue
                files[str(path)] = "session"
                ids.add(sid)
        spill_root = self.home / "tool-output"
        if scope == "all":
            spill_dirs = _subdirs(spill_root)
        else:
            if scope == "session":
                ids.update(sessions)
            spill_dirs = [spill_root / sid for sid in sorted(ids)]
        for folder in spill_dirs:
            for path in _files(folder, ""):
                files[str(path)] = "spill"
        return files

    def _source(self, path: str) -> _Source | None:
        row = self._db.execute(
            "SELECT id, path, kind, size, mtime_ns, done, lines, head, tail, version FROM sources WHERE path=?",
            (path,),
        ).fetchone()
        return _Source(*row) if row is not None else None

    def _drop_rows(self, source_id: int) -> None:
        self._db.execute("DELETE FROM fts WHERE rowid IN (SELECT rowid FROM docs WHERE source=?)", (source_id,))
        self._db.execute("DELETE FROM docs WHERE source=?", (source_id,))

    def _drop_source(self, path: str) -> None:
        source = self._source(path)
        if source is None:
            return
        with _transaction(self._db):
            self._drop_rows(source.id)
            self._db.execute("DELETE FROM sources WHERE id=?", (source.id,))

    def _ensure_source(self, path: str, kind: str, session: str) -> int:
        self._db.execute("INSERT OR IGNORE INTO sources(path, kind, session) VALUES (?, ?, ?)", (path, kind, session))
        return int(self._db.execute("SELECT id FROM sources WHERE path=?", (path,)).fetchone()[0])

    def _sync_session(self, path: str) -> int | None:
        """Index what is new in one session file; None when nothing changed."""
        try:
            fh = open(path, "rb")  # noqa: SIM115 - closed below, also on errors
        except OSError:
            self._drop_source(path)
            return None
        with fh:
            st = os.fstat(fh.fileno())
            source = self._source(path)
            if source is not None and source.size == st.st_size and source.mtime_ns == st.st_mtime_ns:
                return None
            resume = (
                source is not None
                and source.version >= 3
                and same_bytes(fh, source.done, source.head, source.tail, st.st_size)
            )
            with _transaction(self._db):
                source_id = self._ensure_source(path, "session", session_id_of(Path(path)))
                if source is not None and not resume:
                    self._drop_rows(source_id)
                reader = SessionReader(self._insert, fh, source_id, Path(path))
                if resume and source is not None:
                    reader.read_from(source.done, source.lines, source.version)
                else:
                    reader.read_all()
                head, tail = hashes(fh, reader.done)
                self._db.execute(
                    "UPDATE sources SET size=?, mtime_ns=?, done=?, lines=?, head=?, tail=?, version=?"
                    + (", session=?, project=?, cwd=?" if reader.header is not None else "")
                    + " WHERE id=?",
                    (
                        st.st_size,
                        st.st_mtime_ns,
                        reader.done,
                        reader.lines,
                        head,
                        tail,
                        reader.version,
                        *(
                            (
                                reader.header.id or session_id_of(Path(path)),
                                _project_of(Path(path), self.home),
                                reader.header.cwd,
                            )
                            if reader.header is not None
                            else ()
                        ),
                        source_id,
                    ),
                )
            return reader.added

    def _sync_spill(self, path: str) -> int | None:
        """A spill file is indexed whole whenever it changed (they are written once)."""
        try:
            st = os.stat(path)
        except OSError:
            self._drop_source(path)
            return None
        source = self._source(path)
        if source is not None and source.size == st.st_size and source.mtime_ns == st.st_mtime_ns:
            return None
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_SPILL_BYTES)
        except OSError:
            return None
        text = data.decode("utf-8", errors="replace")
        with _transaction(self._db):
            source_id = self._ensure_source(path, "spill", Path(path).parent.name)
            if source is not None:
                self._drop_rows(source_id)
            rows = [
                (source_id, None, None, None, None, line, count, None, body) for line, count, body in spill_chunks(text)
            ]
            self._insert(rows)
            self._db.execute(
                "UPDATE sources SET size=?, mtime_ns=?, done=? WHERE id=?",
                (st.st_size, st.st_mtime_ns, len(data), source_id),
            )
        return len(rows)

    def _insert(self, rows: list[tuple[Any, ...]]) -> None:
        """Rows of (source, entry_id, role, tool, ts, line, nlines, spill, body)."""
        if not rows:
            return
        start = int(self._db.execute("SELECT coalesce(max(rowid), 0) FROM docs").fetchone()[0]) + 1
        self._db.executemany(
            "INSERT INTO docs(rowid, source, entry_id, role, tool, ts, line, nlines, spill) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(start + i, *row[:8]) for i, row in enumerate(rows)],
        )
        self._db.executemany(
            "INSERT INTO fts(rowid, body) VALUES (?, ?)", [(start + i, row[8]) for i, row in enumerate(rows)]
        )

    # --- searching --------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        scope: Scope = "all",
        session_id: str | None = None,
        project: str | None = None,
        limit: int = 10,
        catch_up: bool = True,
        files: Sequence[str | os.PathLike[str]] = (),
        lineage: Sequence[str] = (),
    ) -> SearchResult:
        """The best ``limit`` matches (FTS5's bm25 rank, newest first on ties). Raises
        :class:`QueryError` for a query FTS5 rejects."""
        check_scope(scope, session_id, project)
        match = fts_query(query)
        notes: list[str] = []
        for attempt in range(2):
            try:
                if catch_up:
                    self._catch_up_quietly(scope, session_id, project, files, notes, lineage)
                hits = find_hits(self._db, match, scope, session_id, project, limit, lineage)
                return SearchResult(hits, notes)
            except sqlite3.DatabaseError as exc:
                if is_query_error(exc):
                    raise QueryError(f"invalid search query {query!r}: {exc}") from None
                if attempt or not _is_corruption(exc):
                    raise RecallError(f"the recall index failed: {exc}") from exc
                self._recover(exc)
                notes.append("the recall index was damaged and has been rebuilt")
        raise AssertionError("unreachable")

    def _catch_up_quietly(
        self,
        scope: Scope,
        session_id: str | None,
        project: str | None,
        files: Sequence[str | os.PathLike[str]],
        notes: list[str],
        lineage: Sequence[str] = (),
    ) -> None:
        try:
            stats = self.catch_up(scope, session_id=session_id, project=project, files=files, lineage=lineage)
            notes.extend(stats.skipped)
        except sqlite3.OperationalError as exc:
            if _is_corruption(exc):
                raise
            # busy: another heron is indexing; search what is there
            notes.append(f"the index could not be brought up to date ({exc}); recent entries may be missing")

    def stats(self) -> dict[str, int]:
        """Sizes, for the benchmark and ``--json`` diagnostics."""
        sources = int(self._db.execute("SELECT count(*) FROM sources").fetchone()[0])
        rows = int(self._db.execute("SELECT count(*) FROM docs").fetchone()[0])
        size = sum(os.path.getsize(f"{self.path}{s}") for s in ("", "-wal") if os.path.exists(f"{self.path}{s}"))
        return {"sources": sources, "rows": rows, "bytes": size}


# --- helpers ----------------------------------------------------------------------------


def _subdirs(root: Path) -> list[Path]:
    try:
        return sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return []


def _files(folder: Path, suffix: str) -> Iterator[Path]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return
    for name in names:
        if name.startswith(".") or not name.endswith(suffix):
            continue  # ".x.tmp": a spill file being written
        path = folder / name
        if path.is_file():
            yield path


def _project_of(path: Path, home: Path) -> str | None:
    """The session folder (encoded cwd) a file is in, when it is under the sessions root."""
    parent = path.parent
    return parent.name if parent.parent == sessions_root(home) else None


class _transaction(contextlib.AbstractContextManager[None]):
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        else:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
