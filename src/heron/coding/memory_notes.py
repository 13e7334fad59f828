"""Provenance and age of project-memory notes, for the system prompt.

A note is a file in the memory directory (``MEMORY.md`` included). The prompt lists each
with the date it was last changed or confirmed and how many sessions of the project began
since, so the model can weigh an old note; one not changed or confirmed for
``memory.staleAfterDays`` is marked stale, one written in a turn that ended in an error or
an abort is marked tentative until a later change or a reflection confirms it.

Everything here is read without a subprocess (file times, one small JSON file, one listing
of the project's session folder): it runs before a session's first request. The marks
(confirmed, tentative) live in the memory history's git directory (``heron-notes.json``),
heron's own, never in the memory directory the model writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heron.session.private_files import private_dir, write_private_text

MARKS_FILE = "heron-notes.json"
MAX_LISTED = 50  # notes named in the prompt; more are counted, not listed
MAX_WALKED = 500  # files looked at: a memory directory is small, a mistaken one is not walked whole
DAY = 86_400


@dataclass(frozen=True, slots=True)
class NoteAge:
    """How old one memory note is, as the system prompt shows it: the model weighs an old or
    tentative note before it trusts it (docs/memory.md)."""

    path: str  # relative to the memory directory, with "/"
    when: float  # last changed or confirmed (unix seconds)
    sessions_since: int
    stale: bool
    tentative: bool


def load_marks(git_dir: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads((git_dir / MARKS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    notes = data.get("notes") if isinstance(data, dict) else None
    return {k: v for k, v in notes.items() if isinstance(v, dict)} if isinstance(notes, dict) else {}


def set_marks(git_dir: Path, paths: list[str], *, tentative: bool, session: str, now: float | None = None) -> None:
    """Mark notes confirmed now (by a change or a reflection), tentative or not."""
    if not paths:
        return
    marks = load_marks(git_dir)
    stamp = time.time() if now is None else now
    for path in paths:
        marks[path] = {"confirmed": stamp, "tentative": tentative, "session": session}
    private_dir(git_dir)
    write_private_text(git_dir / MARKS_FILE, json.dumps({"notes": marks}, indent=1, sort_keys=True) + "\n")


def note_files(directory: Path) -> list[str]:
    """The notes: files under the directory (hidden ones left out), MEMORY.md first."""
    found: list[str] = []
    for top, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = os.path.relpath(top, directory)
        for name in sorted(names):
            if not name.startswith("."):
                found.append(name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}")
        if len(found) >= MAX_WALKED:
            break
    return sorted(found, key=lambda p: (p != "MEMORY.md", p))


def session_starts(sessions: Path, current: str | None) -> list[str]:
    """The start times (``YYYY-MM-DDTHH-MM-SS``, from the file names) of the project's sessions."""
    try:
        names = os.listdir(sessions)
    except OSError:
        return []
    return sorted(n[:19] for n in names if n.endswith(".jsonl") and not (current and current in n))


def note_ages(directory: Path, git_dir: Path, starts: list[str], *, now: float, stale_days: int) -> list[NoteAge]:
    marks = load_marks(git_dir)
    ages = []
    for path in note_files(directory):
        with contextlib.suppress(OSError):
            changed = os.stat(directory / path).st_mtime
            mark = marks.get(path, {})
            confirmed = mark.get("confirmed")
            when = max(changed, float(confirmed)) if isinstance(confirmed, int | float) else changed
            stamp = time.strftime("%Y-%m-%dT%H-%M-%S", time.gmtime(when))
            since = sum(start > stamp for start in starts)
            tentative = bool(mark.get("tentative")) and not changed > float(confirmed or 0) + 1
            ages.append(NoteAge(path, when, since, now - when > stale_days * DAY, tentative))
    return ages


def render_ages(ages: list[NoteAge], *, today: str, stale_days: int) -> str:
    """The notes list of the prompt's memory section ("" without notes)."""
    if not ages:
        return ""
    lines = [
        f"Notes in the memory directory, each with the date it was last changed or confirmed (today is {today}) "
        "and how many sessions began since. A stale note (not confirmed for "
        f"{stale_days} days) or a tentative one (written in a turn that ended in an error) may be wrong: "
        "check it before relying on it."
    ]
    for age in ages[:MAX_LISTED]:
        date = time.strftime("%Y-%m-%d", time.localtime(age.when))
        sessions = "1 session since" if age.sessions_since == 1 else f"{age.sessions_since} sessions since"
        marks = "".join([", stale" if age.stale else "", ", tentative" if age.tentative else ""])
        lines.append(f"- {age.path}: {date}, {sessions}{marks}")
    if len(ages) > MAX_LISTED:
        lines.append(f"- ... and {len(ages) - MAX_LISTED} more")
    return "\n".join(lines)
