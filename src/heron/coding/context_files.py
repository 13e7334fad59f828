"""Project context files (AGENTS.md / CLAUDE.md) for the system prompt, within budgets.

Which files, in order:

1. ``$HERON_HOME/AGENTS.md``: the user's own instructions for every project;
2. for each directory from the filesystem root down to the cwd, its ``AGENTS.md``, or
   its ``CLAUDE.md`` when it has no ``AGENTS.md`` (one file per directory: projects that
   keep both usually keep the same text in both).

A file closer to the cwd is more specific, so it comes later: the model reads general
rules first and the most specific last, where they take precedence.

Budgets (docs/context.md, "Context files"): each file is cut to ``per_file_chars`` (default 12,000) keeping
75% head + 25% tail, since a file's ending often holds its most pointed rules; a marker
line between the two says how many characters were cut and names the file, so the model
can read it whole. Then the total (default 60,000) is shared out **from the cwd
outwards**: the files closest to the cwd are kept whole while they fit, the first one
that does not fit is cut to what is left, and files farther out get only a line naming
them. The global file counts as the farthest: project instructions are what the task at
hand depends on. Only characters of the files count against the budgets; the marker
lines are extra.

Every file found is returned as a :class:`ContextFile` record (path, original and kept
characters, truncated flag) for the ``/context`` breakdown and the ledger, including the
ones the total budget left out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from heron.ai.models import heron_home
from heron.context.records.ledger import LedgerRecord

PER_FILE_CHARS = 12_000
TOTAL_CHARS = 60_000
HEAD_SHARE = 0.75
CONTEXT_FILE_NAMES = ("AGENTS.md", "CLAUDE.md")  # in preference order, one per directory

# Below this many characters of budget, cutting a file leaves nothing useful: name it instead.
MIN_USEFUL_CHARS = 200


@dataclass(frozen=True, slots=True)
class ContextFile:
    """One context file as it goes into the system prompt.

    ``content`` is what the model sees (with a cut marker when truncated);
    ``kept_chars`` counts only the file's own characters in it.
    """

    path: Path
    content: str
    original_chars: int
    kept_chars: int
    truncated: bool
    is_global: bool = False

    @property
    def cut_chars(self) -> int:
        return self.original_chars - self.kept_chars


def discover_context_files(cwd: Path, home: Path | None = None) -> list[Path]:
    """Paths of the context files for ``cwd``, global first, then root down to cwd."""
    home = home if home is not None else heron_home()
    found: list[Path] = []
    seen: set[str] = set()

    def add(path: Path) -> None:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            found.append(path)

    global_file = home / "AGENTS.md"
    if global_file.is_file():
        add(global_file)
    cwd = Path(os.path.abspath(cwd))
    for directory in (*reversed(cwd.parents), cwd):
        for name in CONTEXT_FILE_NAMES:
            candidate = directory / name
            if candidate.is_file():
                add(candidate)
                break
    return found


def cut_middle(text: str, budget: int, path: Path | str) -> tuple[str, int]:
    """``text`` cut to ``budget`` characters, 75% head + 25% tail, and the number kept.

    The cut snaps to line boundaries when one is near (within a fifth of each part),
    so the model does not see half a rule; the marker between head and tail names the
    file and how much is missing."""
    if len(text) <= budget:
        return text, len(text)
    head_len = int(budget * HEAD_SHARE)
    tail_len = budget - head_len
    head = text[:head_len]
    newline = head.rfind("\n")
    if newline >= head_len - head_len // 5:
        head = head[: newline + 1]
    tail = text[len(text) - tail_len :] if tail_len > 0 else ""
    newline = tail.find("\n")
    if 0 <= newline < tail_len // 5:
        tail = tail[newline + 1 :]
    kept = len(head) + len(tail)
    marker = f"[... {len(text) - kept} characters cut from the middle of {path}; read the file to see all of it ...]"
    joined = head if head.endswith("\n") or not head else head + "\n"
    return f"{joined}{marker}\n{tail}", kept


def _omitted_notice(path: Path, chars: int) -> str:
    return f"[{path} ({chars} characters) left out: the context-file budget is used up; read it if it matters.]"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def load_context_files(
    cwd: Path,
    home: Path | None = None,
    *,
    per_file_chars: int = PER_FILE_CHARS,
    total_chars: int = TOTAL_CHARS,
) -> list[ContextFile]:
    """The context files for ``cwd``, each within ``per_file_chars``, all within ``total_chars``.

    Unreadable and empty files are skipped. Order is the prompt order (global first)."""
    home = home if home is not None else heron_home()
    global_file = home / "AGENTS.md"
    texts: list[tuple[Path, str]] = []
    for path in discover_context_files(cwd, home):
        text = _read(path)
        if text is not None and text.strip():
            texts.append((path, text.strip("\n")))

    # Per-file budget first, then the total shared out from the cwd outwards.
    remaining = max(0, total_chars)
    records: list[ContextFile] = []
    for path, text in reversed(texts):
        allowed = min(per_file_chars, remaining)
        is_global = path == global_file
        if allowed < min(len(text), MIN_USEFUL_CHARS):
            record = ContextFile(path, _omitted_notice(path, len(text)), len(text), 0, True, is_global)
        else:
            content, kept = cut_middle(text, allowed, path)
            record = ContextFile(path, content, len(text), kept, kept < len(text), is_global)
        remaining -= record.kept_chars
        records.append(record)
    records.reverse()
    return records


def ledger_records(files: list[ContextFile]) -> list[LedgerRecord]:
    """One ``context_file`` ledger record per file the budgets cut or left out."""
    return [
        LedgerRecord(
            kind="context_file",
            ref=str(record.path),
            chars_before=record.original_chars,
            chars_after=record.kept_chars,
            recover=f"read {record.path}",
            detail={"path": str(record.path), "omitted": record.kept_chars == 0},
        )
        for record in files
        if record.truncated
    ]
