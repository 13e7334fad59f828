"""Finding session files again: listing a directory's sessions, the latest one, a
session by path or id prefix, and deleting one. Their names are :mod:`heron.session.naming`'s.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from heron.ai.types import TextContent
from heron.session import writer
from heron.session.entries import MessageEntry
from heron.session.naming import session_dir, session_id_of, sessions_root
from heron.session.stats import message_count


class SessionNotFoundError(LookupError):
    pass


class AmbiguousSessionError(LookupError):
    def __init__(self, ref: str, candidates: list[Path]) -> None:
        self.ref = ref
        self.candidates = candidates
        names = "\n  ".join(str(c) for c in candidates)
        super().__init__(f"session id prefix {ref!r} matches {len(candidates)} sessions:\n  {names}")


@dataclass(slots=True)
class SessionSummary:
    """What the session list shows of one session file, read without loading the whole
    session."""

    path: Path
    id: str
    cwd: str
    name: str | None
    first_message: str | None
    modified: float  # seconds since the epoch
    message_count: int
    entry_count: int
    parent_session: str | None = None  # a fork's, sub-agent's or handoff child's parent file


def _session_files(directory: Path) -> list[Path]:
    try:
        return [p for p in directory.iterdir() if p.name.endswith(".jsonl") and p.is_file()]
    except OSError:
        return []


def summarize(path: Path) -> SessionSummary:
    """Name, first user message, modified time and message count of one file, read
    cheaply: the file is indexed, and only the first user message and the session_info
    entries are decoded."""
    from heron.session.store import SessionStore

    with SessionStore.open(path, read_only=True) as store:
        types = store.types()
        first: str | None = None
        for i, kind in enumerate(types):
            if kind == "message" and store.role_at(i) == "user":
                entry = store.entry_at(i)
                if isinstance(entry, MessageEntry):
                    first = _text_of(entry.message)
                    break
        return SessionSummary(
            path=path,
            id=store.header.id or session_id_of(path),
            cwd=store.header.cwd,
            name=store.name,
            first_message=first,
            modified=path.stat().st_mtime,
            message_count=message_count(types),
            entry_count=len(types),
            parent_session=store.header.parent_session,
        )


def _text_of(message: object) -> str:
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.text for b in content if isinstance(b, TextContent))
    return ""


def list_sessions(
    cwd: str | os.PathLike[str] | None = None, *, all_cwds: bool = False, home: str | os.PathLike[str] | None = None
) -> list[SessionSummary]:
    """Sessions of ``cwd`` (default: the current directory), or of every cwd, newest first.
    Files that cannot be read at all are left out."""
    root = sessions_root(home)
    if all_cwds:
        try:
            dirs = [d for d in root.iterdir() if d.is_dir()]
        except OSError:
            dirs = []
    else:
        dirs = [session_dir(cwd if cwd is not None else os.getcwd(), home)]
    out: list[SessionSummary] = []
    for directory in dirs:
        for path in _session_files(directory):
            try:
                out.append(summarize(path))
            except OSError:
                continue
    out.sort(key=lambda s: (s.modified, s.path.name), reverse=True)
    return out


def latest_session(cwd: str | os.PathLike[str], home: str | os.PathLike[str] | None = None) -> Path | None:
    """The most recently modified session of ``cwd`` (``--continue``), or None."""
    files = _session_files(session_dir(cwd, home))
    if not files:
        return None

    def key(p: Path) -> tuple[float, str]:
        try:
            return p.stat().st_mtime, p.name
        except OSError:
            return 0.0, p.name

    return max(files, key=key)


def resolve_session(ref: str | os.PathLike[str], *, home: str | os.PathLike[str] | None = None) -> Path:
    """A session file from a path or a unique prefix of its session uuid (searched in every
    cwd's directory). Raises :class:`SessionNotFoundError` or :class:`AmbiguousSessionError`."""
    text = os.fspath(ref)
    candidate = Path(text).expanduser()
    if candidate.is_file():
        return candidate
    prefix = text.lower()
    if not prefix or os.sep in text:
        raise SessionNotFoundError(f"no session file {text}")
    root = sessions_root(home)
    matches: list[Path] = []
    try:
        dirs = [d for d in root.iterdir() if d.is_dir()]
    except OSError:
        dirs = []
    for directory in dirs:
        for path in _session_files(directory):
            if session_id_of(path).lower().startswith(prefix):
                matches.append(path)
    if not matches:
        raise SessionNotFoundError(f"no session file or session id starting with {text!r} (looked in {root})")
    if len(matches) > 1:
        raise AmbiguousSessionError(text, sorted(matches))
    return matches[0]


_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def safe_session_id(session_id: str) -> bool:
    """Whether an id (from a header heron did not necessarily write) can name a folder
    below another one without leaving it (``..``, ``/``, empty)."""
    return bool(_SAFE_ID.match(session_id)) and ".." not in session_id


def delete_session(path: Path, *, folders: Sequence[Path] = ()) -> list[Path]:
    """Delete a session file and ``folders`` (its spill files). Refused with
    :class:`SessionInUseError` while a heron process has the session open (the writer
    lock is taken first, so no writer can start in between). Returns what was removed."""
    fd = os.open(path, os.O_RDONLY)
    try:
        writer.lock(fd, path)
        os.unlink(path)
    finally:
        os.close(fd)
    removed = [path]
    for folder in folders:
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder)
            removed.append(folder)
    return removed
