"""What both shadow-repository backends share: the types, the limits and the snapshot format.

The format is plain git, so the git command and dulwich read each other's repositories:
each snapshot is a commit without parents, named by its own ref
``refs/heron/snapshots/<creation time in ns>-<commit>``. One ref per snapshot is what
makes pruning cheap and real: deleting a ref leaves its objects unreachable and a gc
frees their space, with no history to rewrite. The commit message holds the metadata
(``session:``, ``leaf:``, ``at:`` lines). Repositories made before this format kept one
chain on ``refs/heads/checkpoints``; both backends still read it (see ``LEGACY_REF``).
"""

from __future__ import annotations

import datetime
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_FILES = 250_000  # a tree this big (a home directory, not a project) is not snapshotted
# Generated trees and other tools' state, left out of every snapshot (gitignore patterns, added after
# the project's own ignore files): restoring them is their tool's job, and a dependency tree alone can
# be most of a project's files. ``checkpoints.exclude`` in settings adds patterns; "!node_modules/"
# takes one back in (docs/permissions.md, "Checkpoints").
DEFAULT_EXCLUDES = (
    "node_modules/",
    ".venv/",
    "venv/",
    "__pycache__/",
    "*.pyc",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".tox/",
    ".nox/",
    "target/",
    "dist/",
    "build/",
    ".next/",
    ".nuxt/",
    ".gradle/",
    ".terraform/",
    ".direnv/",
    ".cache/",
    ".hg/",
    ".svn/",
    ".jj/",
)
SNAPSHOT_PREFIX = "refs/heron/snapshots/"
LEGACY_REF = "refs/heads/checkpoints"


class CheckpointError(RuntimeError):
    """A shadow-repository operation failed; the message says which and why."""


@dataclass
class Snapshot:
    """A snapshot just taken: its commit, and the files left out of it for their size (the
    checkpoint logs them: a rewind will not restore those)."""

    commit: str
    skipped_large: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    """One snapshot as listed: its ref (``None`` for a commit of the old single chain),
    commit, commit time (unix seconds) and message."""

    ref: str | None
    commit: str
    time: int
    message: str

    def fields(self) -> dict[str, str]:
        return dict(line.split(": ", 1) for line in self.message.splitlines() if ": " in line)


class Backend(Protocol):
    """The operations a shadow repository needs; one implementation per git engine."""

    name: str

    def init(self) -> None: ...

    def write_tree(self) -> tuple[str, list[str]]:
        """Record the working tree (ignored and large files left out): (tree id, large files)."""
        ...

    def commit(self, tree: str, message: str, when: int | None = None) -> str:
        """A commit without parents; ``when`` (unix seconds) keeps an older commit's time."""
        ...

    def set_ref(self, ref: str, commit: str) -> None: ...

    def delete_refs(self, refs: list[str]) -> None: ...

    def snapshots(self) -> list[SnapshotInfo]:
        """Every snapshot, the old chain's commits included, in no particular order."""
        ...

    def legacy(self) -> list[tuple[SnapshotInfo, str]]:
        """The old chain's commits with their trees, newest first (empty when there is none)."""
        ...

    def drop_legacy(self) -> None: ...

    def diff(self, old: str, new: str) -> list[tuple[str, str]]:
        """(status A/D/M/T, path) for each file that differs between two snapshots."""
        ...

    def checkout(self, commit: str, paths: list[str]) -> None:
        """Write these paths from the snapshot into the working tree."""
        ...

    def gc(self) -> None:
        """Drop unreachable objects now, so a pruned snapshot's space is freed."""
        ...


def new_ref_name(commit: str) -> str:
    return f"{SNAPSHOT_PREFIX}{time.time_ns():020d}-{commit[:12]}"


def commit_time() -> tuple[int, int]:
    """(unix seconds, tz offset seconds) for a new commit, honouring ``GIT_COMMITTER_DATE``
    in the forms ``@<seconds> [+zzzz]``, ``<seconds> +zzzz`` and ISO 8601 as git does, so
    both backends date snapshots alike (and tests can make old ones)."""
    raw = os.environ.get("GIT_COMMITTER_DATE", "").strip()
    match = re.fullmatch(r"@?(\d+)(?:\s+([+-])(\d\d)(\d\d))?", raw)
    if match:
        offset = 0
        if match.group(2):
            offset = (int(match.group(3)) * 3600 + int(match.group(4)) * 60) * (-1 if match.group(2) == "-" else 1)
        return int(match.group(1)), offset
    if raw:
        try:
            parsed = datetime.datetime.fromisoformat(raw)
        except ValueError:
            parsed = None
        if parsed is not None:
            if parsed.tzinfo is None:
                parsed = parsed.astimezone()
            delta = parsed.utcoffset()
            return int(parsed.timestamp()), int(delta.total_seconds()) if delta else 0
    now = time.time()
    return int(now), time.localtime(now).tm_gmtoff


def exclude_patterns(cwd: Path, home: Path, extra: tuple[str, ...] | list[str] = ()) -> list[str]:
    """What a snapshot of ``cwd`` leaves out besides the project's ignore files: the built-in
    list, the user's patterns, and heron's own home when it lies inside the project (last, so
    no pattern takes it back: each snapshot would otherwise store the previous ones)."""
    patterns = [*DEFAULT_EXCLUDES, *extra]
    for inside in (home, home / "checkpoints"):
        try:
            rel = os.path.relpath(os.path.realpath(inside), cwd)
        except ValueError:  # another drive
            continue
        if rel == ".":
            continue  # the project is the home itself: its checkpoints directory is caught below
        if not rel.startswith(".." + os.sep) and rel != ".." and not os.path.isabs(rel):
            patterns.append("/" + escape_pattern(rel.replace(os.sep, "/")) + "/")
    return patterns


def escape_pattern(path: str) -> str:
    """``path`` as a gitignore pattern that matches only itself."""
    return "".join("\\" + ch if ch in "*?[]\\!# " else ch for ch in path)


def path_bytes(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def path_str(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def is_large(cwd: Path, path: str) -> bool:
    """Over the size limit (a symlink never is: only its target path is stored)."""
    full = os.path.join(cwd, path)  # strings, not Paths: a first snapshot asks this of every file
    try:
        st = os.lstat(full)
    except OSError:
        return False
    return st.st_size > MAX_FILE_BYTES and not os.path.islink(full)
