"""What a recall search asks and what it gets back (the index itself is
:mod:`heron.session.recall`).

A query that uses FTS5's own syntax (quotes, ``*``, ``AND``/``OR``/``NOT``, ``NEAR``) is
passed through as written; anything else is a list of words, each quoted so that
punctuation (``MARKER-x``, ``foo.py``) is literal. A scope (one session, one project,
every session) becomes a SQL filter, and the matched rows become :class:`Hit` objects
with a one-line snippet. What a user or the model should be told about a search is a
:class:`RecallError` (a :class:`QueryError` for the query itself).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from heron.session.jsonl import clean_text

Scope = Literal["session", "project", "all"]
SCOPES: tuple[Scope, ...] = ("session", "project", "all")

SNIPPET_TOKENS = 24

# A query that uses FTS5's own syntax is passed through as written; anything else is a
# list of words, each quoted so that punctuation (``MARKER-x``, ``foo.py``) is literal.
_OPERATOR = re.compile(r'["*]|\b(?:AND|OR|NOT)\b|\bNEAR\s*\(')
_WORD = re.compile(r"\w", re.UNICODE)


class RecallError(Exception):
    """Something the user or the model should be told about a search."""


class QueryError(RecallError):
    """The query is not valid FTS5 syntax, or has nothing to search for."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One match. ``source`` is ``"entry"`` (a session entry: ``path`` is the session file,
    ``line`` its 1-based line) or ``"spill"`` (``path`` is the spill file, ``line`` and
    ``lines`` the chunk of it that matched; ``entry_id`` the tool result it belongs to,
    when that result was indexed)."""

    session: str
    entry_id: str | None
    role: str | None
    tool: str | None
    timestamp: str | None
    snippet: str
    source: Literal["entry", "spill"]
    path: str
    line: int | None = None
    lines: int | None = None
    spill_path: str | None = None  # an entry's full output, when it has one

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "entry_id": self.entry_id,
            "role": self.role,
            "tool": self.tool,
            "timestamp": self.timestamp,
            "snippet": self.snippet,
            "source": self.source,
            "path": self.path,
            "line": self.line,
            "lines": self.lines,
            "spill_path": self.spill_path,
        }


@dataclass(slots=True)
class SearchResult:
    hits: list[Hit]
    notes: list[str] = field(default_factory=list)  # e.g. the catch-up could not run


def fts_query(text: str) -> str:
    """The FTS5 query for what a user or model typed (see the module docstring). A byte
    that is not UTF-8 (a lone surrogate from the command line) becomes U+FFFD, as it did
    in the indexed text, since SQLite cannot take it."""
    text = clean_text(text)
    stripped = text.strip()
    if not stripped:
        raise QueryError("the query is empty: give one or more words to search for")
    if _OPERATOR.search(stripped):
        return stripped
    words = [w for w in stripped.split() if _WORD.search(w)]
    if not words:
        raise QueryError(f"the query {text!r} has no letters or digits to search for")
    return " ".join('"' + w.replace('"', '""') + '"' for w in words)


def check_scope(scope: str, session_id: str | None, project: str | None) -> None:
    if scope not in SCOPES:
        raise RecallError(f"unknown scope {scope!r}: use one of {', '.join(SCOPES)}")
    if scope == "session" and not session_id:
        raise RecallError("scope 'session' needs a session id (this session is not recorded)")
    if scope == "project" and not project:
        raise RecallError("scope 'project' needs a project")


def scope_filter(
    scope: Scope, session_id: str | None, project: str | None, table: str, lineage: Sequence[str] = ()
) -> tuple[str, tuple[str, ...]]:
    """The SQL condition for ``scope``; scope ``session`` takes in the sessions of
    ``lineage`` too (those a handoff started this one from: its history goes on there)."""
    if scope == "session":
        ids = (str(session_id), *lineage)
        return f"{table}.session IN ({', '.join('?' * len(ids))})", ids
    if scope == "project":
        return (f"{table}.session IN (SELECT session FROM sources WHERE kind='session' AND project=?)", (str(project),))
    return "1", ()


def is_query_error(exc: sqlite3.DatabaseError) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and (
        "fts5" in text or "syntax error" in text or "unterminated" in text or "no such column" in text
    )


def find_hits(
    db: sqlite3.Connection,
    match: str,
    scope: Scope,
    session_id: str | None,
    project: str | None,
    limit: int,
    lineage: Sequence[str] = (),
) -> list[Hit]:
    """The best ``limit`` rows for the FTS5 query ``match`` in ``scope``, as hits (a spill
    chunk names the tool result that wrote it, when that result was indexed)."""
    where, args = scope_filter(scope, session_id, project, "s", lineage)
    sql = (
        "SELECT s.kind, s.path, s.session, d.entry_id, d.role, d.tool, d.ts, d.line, d.nlines, d.spill, "
        f"snippet(fts, 0, '**', '**', '…', {SNIPPET_TOKENS}) "
        "FROM fts JOIN docs d ON d.rowid = fts.rowid JOIN sources s ON s.id = d.source "
        f"WHERE fts MATCH ? AND {where} ORDER BY fts.rank, d.rowid DESC LIMIT ?"
    )
    rows = db.execute(sql, (match, *args, max(1, limit))).fetchall()
    hits: list[Hit] = []
    for kind, path, session, entry_id, role, tool, ts, line, nlines, spill, snippet in rows:
        if kind == "spill":
            owner = db.execute("SELECT entry_id, tool, ts FROM docs WHERE spill=? LIMIT 1", (path,)).fetchone()
            entry_id, tool, ts = owner if owner is not None else (None, None, None)
            role = "toolResult" if owner is not None else "spill"
        hits.append(
            Hit(
                session=session,
                entry_id=entry_id,
                role=role,
                tool=tool,
                timestamp=ts,
                snippet=one_line(snippet),
                source="spill" if kind == "spill" else "entry",
                path=path,
                line=line,
                lines=nlines,
                spill_path=spill,
            )
        )
    return hits


def one_line(text: str) -> str:
    return " ".join(str(text).split())
