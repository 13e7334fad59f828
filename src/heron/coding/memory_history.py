"""Project memory's history: every change to the memory directory, as commits of heron's own.

The history is a git repository at ``$HERON_HOME/memory-history/<sha256(memory dir)[:16]>``
with the memory directory as its work tree (``GIT_DIR`` / ``GIT_WORK_TREE``, through the
checkpoint code's :class:`~heron.coding.checkpoints.git_backend.GitBackend`: hooks, LFS
filters and signing off). It is never inside the memory directory, so:

* a memory directory that is (or lies inside) a git repository of the user's keeps its own
  ``.git``, index, HEAD and refs untouched - heron's history sits beside it, never in it;
* the model, which may write anywhere in the memory directory, cannot write into the history.

Each commit's message names the reason (``flush``, ``tool call``, ``reflection``,
``outside heron``, ``revert``), the session and the session entry it followed, and the
files, as ``key: value`` lines that :meth:`MemoryHistory.log` reads back. History is
linear on ``refs/heads/main``; a revert is a new commit, never a rewrite. Before a commit
the changed files are passed through the session redactor (:func:`heron.coding.secrets.redact`),
on disk as well, so a key heron knows never enters memory or its history. Files over
2 MB are left out of history (the checkpoint limit) with a notice; they stay on disk.

A history heron cannot read (a corrupted ``.git``) is moved aside, named in a notice, and a
new one started; a detached HEAD (someone checked out an old revision there) is put back
on ``main``, whose commits are all still there. The notes themselves are never touched by
either repair.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heron.coding.checkpoints.base import MAX_FILE_BYTES, CheckpointError, path_str
from heron.session.private_files import private_dir, write_private_text

if TYPE_CHECKING:
    from heron.coding.checkpoints.git_backend import GitBackend

HISTORY_DIR = "memory-history"
BRANCH = "refs/heads/main"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
FIELDS = ("reason", "session", "entry", "files", "reverts")


class MemoryHistoryError(RuntimeError):
    """A memory-history operation failed; the message says which and why (the notes are untouched)."""


@dataclass(frozen=True, slots=True)
class MemoryChange:
    """One commit of the memory history, as ``heron memory log`` lists it."""

    commit: str
    time: int  # unix seconds
    reason: str
    session: str
    entry: str
    files: tuple[str, ...]
    subject: str
    reverts: str = ""

    def to_json(self) -> dict[str, Any]:
        date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.time))
        return {
            "commit": self.commit,
            "date": date,
            "time": self.time,
            "reason": self.reason,
            "session": self.session or None,
            "entry": self.entry or None,
            "files": list(self.files),
            "subject": self.subject,
            **({"reverts": self.reverts} if self.reverts else {}),
        }


def history_dir(home: Path, directory: Path) -> Path:
    digest = hashlib.sha256(os.fsencode(os.path.realpath(directory))).hexdigest()[:16]  # any bytes a name has
    return home / HISTORY_DIR / digest


def commit_message(reason: str, *, session: str, entry: str, files: list[str], reverts: str = "") -> str:
    subject = {
        "flush": "notes saved before a compaction",
        "tool call": "notes written by a tool call",
        "reflection": "notes tidied by reflection",
        "outside heron": "changes made outside heron",
        "revert": f"revert {reverts[:12]}",
    }.get(reason, reason)
    lines = [f"heron memory: {subject}", "", f"reason: {reason}"]
    lines += [f"session: {session}"] if session else []
    lines += [f"entry: {entry}"] if entry else []
    lines += [f"reverts: {reverts}"] if reverts else []
    lines.append(f"files: {', '.join(files)}")
    return "\n".join(lines) + "\n"


def parse_change(commit: str, when: int, message: str) -> MemoryChange:
    fields = {k: v for k, v in (line.split(": ", 1) for line in message.splitlines() if ": " in line) if k in FIELDS}
    files = tuple(f for f in fields.get("files", "").split(", ") if f)
    subject = message.split("\n", 1)[0]
    return MemoryChange(
        commit,
        when,
        fields.get("reason", "unknown"),
        fields.get("session", ""),
        fields.get("entry", ""),
        files,
        subject,
        fields.get("reverts", ""),
    )


class MemoryHistory:
    """The history of one memory directory. Nothing here runs before it is asked to: building
    one costs no subprocess (a session start must not wait for git)."""

    def __init__(self, directory: Path, home: Path) -> None:
        self.directory = Path(os.path.realpath(directory))
        self.git_dir = history_dir(home, self.directory)
        self.notices: list[str] = []  # what the user should hear (repairs, large files), oldest first
        self._backend: GitBackend | None = None
        self._checked = False
        self.outside_synced = False  # outside changes were committed in this process

    def _locked(self) -> AbstractContextManager[None]:
        from heron.coding.checkpoints.repo import repo_lock

        return repo_lock(self.git_dir)

    def take_notices(self) -> list[str]:
        notices, self.notices = self.notices, []
        return notices

    @property
    def exists(self) -> bool:
        return (self.git_dir / "HEAD").exists()

    def _git(self) -> GitBackend:
        if self._backend is None:
            git = shutil.which("git")
            if git is None:
                raise MemoryHistoryError("git is not installed, so memory changes are not versioned")
            from heron.coding.checkpoints.git_backend import GitBackend  # on first use: a start runs no git

            self._backend = GitBackend(git, self.git_dir, self.directory)
        return self._backend

    def _run(self, *args: str, stdin: bytes | None = None) -> str:
        try:
            return self._git().run(*args, stdin=stdin).decode("utf-8", "replace")
        except CheckpointError as exc:
            raise MemoryHistoryError(f"memory history ({self.git_dir}): {exc}") from exc

    def _head(self) -> str | None:
        out = self._run("for-each-ref", "--format=%(objectname)", BRANCH).strip()
        return out or None

    # --- making and repairing the repository -------------------------------------------------

    def _ready(self) -> None:
        """The repository made, or checked and repaired once per process."""
        if not self.exists:
            self._init()
            return
        if self._checked:
            return
        try:
            self._run("rev-parse", "--git-dir")
            head = self._head()
            if head is not None:
                self._run("cat-file", "-e", f"{head}^{{tree}}")
        except MemoryHistoryError as exc:
            self._set_aside(str(exc))
            self._init()
            return
        if not self._git().run("symbolic-ref", "-q", "HEAD", check=False).strip():
            self._reattach()
        self._checked = True

    def _init(self) -> None:
        private_dir(self.git_dir.parent)
        try:
            self._git().init()
        except CheckpointError as exc:
            raise MemoryHistoryError(f"could not start the memory history in {self.git_dir}: {exc}") from exc
        self._run("symbolic-ref", "HEAD", BRANCH)
        private_dir(self.git_dir, narrow=True)
        write_private_text(self.git_dir / "heron-memory-dir", f"{self.directory}\n")
        self._checked = True
        if _users_repository(self.directory):
            self.notices.append(
                f"The memory directory {self.directory} is in a git repository of yours; heron keeps its own "
                f"history of it in {self.git_dir} and never touches your repository."
            )

    def _set_aside(self, why: str) -> None:
        aside = self.git_dir.with_name(f"{self.git_dir.name}.broken-{time.time_ns()}")
        os.replace(self.git_dir, aside)
        self.notices.append(
            f"heron's memory history could not be read ({why.splitlines()[0]}); it was moved to {aside} and a "
            "new history started. Your notes are untouched."
        )

    def _reattach(self) -> None:
        """A detached HEAD: back on ``main`` (made at the detached commit if it is gone)."""
        detached = self._git().run("rev-parse", "-q", "--verify", "HEAD", check=False).decode().strip()
        if self._head() is None and detached:
            self._run("update-ref", BRANCH, detached)
        self._run("symbolic-ref", "HEAD", BRANCH)
        self.notices.append(
            f"heron's memory history in {self.git_dir} had a detached HEAD; it is back on main (no commit is lost)."
        )

    # --- committing ---------------------------------------------------------------------------

    def commit(self, reason: str, *, session: str = "", entry: str = "", reverts: str = "") -> MemoryChange | None:
        """Commit the memory directory as it is now; None when nothing changed since the last
        commit (or there is no memory directory)."""
        if not self.directory.is_dir():
            return None
        private_dir(self.git_dir.parent)
        with self._locked():
            return self._commit_locked(reason, session=session, entry=entry, reverts=reverts)

    def _commit_locked(self, reason: str, *, session: str, entry: str, reverts: str) -> MemoryChange | None:
        self._ready()
        self._redact()
        try:
            tree, large = self._git().write_tree()
        except CheckpointError as exc:
            raise MemoryHistoryError(f"memory history ({self.git_dir}): {exc}") from exc
        for path in large:
            self.notices.append(
                f"{self.directory / path} is over {MAX_FILE_BYTES // (1024 * 1024)} MB: kept on disk, "
                "left out of the memory history."
            )
        head = self._head()
        old = self._run("rev-parse", f"{head}^{{tree}}").strip() if head else EMPTY_TREE
        if old == tree:
            return None
        files = sorted({path for _, path in self._git().diff(old, tree)})
        message = commit_message(reason, session=session, entry=entry, files=files, reverts=reverts)
        parents = ["-p", head] if head else []
        commit = self._run("commit-tree", tree, *parents, "-m", message).strip()
        self._run("update-ref", BRANCH, commit, *([head] if head else []))
        return parse_change(commit, int(time.time()), message)

    def _redact(self) -> None:
        """Keys heron knows out of every changed file, on disk too: memory reaches every
        later session's system prompt."""
        from heron.coding.secrets import redact

        listed = self._git().run("ls-files", "-z", "--modified", "--others", "--exclude-standard", check=False)
        for raw in listed.split(b"\0"):
            path = self.directory / path_str(raw)
            if not raw or not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_FILE_BYTES:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            clean = redact(text)
            if clean != text:
                path.write_text(clean, encoding="utf-8")
                self.notices.append(f"A secret was taken out of {path} before it was committed.")

    def sync_outside(self, session: str = "") -> MemoryChange | None:
        """Changes made outside heron since the last commit, committed as such, once a process.
        The flag is read again under the lock: the start-up job (a thread) and heron's first
        write (the loop) may both get here, and the one that waited must not commit the
        other's write as an outside change."""
        if self.outside_synced:
            return None
        if not self.directory.is_dir():
            self.outside_synced = True
            return None
        private_dir(self.git_dir.parent)
        with self._locked():
            if self.outside_synced:
                return None
            change = self._commit_locked("outside heron", session=session, entry="", reverts="")
            self.outside_synced = True
            return change

    def discard(self) -> None:
        """Put the notes back as the last commit has them: new files removed, changed and
        deleted ones restored (a dropped reflection's writes)."""
        if not self.exists or self._head() is None:
            return
        with self._locked():
            new = self._git().run("ls-files", "-z", "--others", "--exclude-standard", check=False).split(b"\0")
            for raw in new:
                if raw:
                    (self.directory / path_str(raw)).unlink(missing_ok=True)
            self._run("checkout", "-f", "HEAD", "--", ".")

    # --- reading ------------------------------------------------------------------------------

    def log(self) -> list[MemoryChange]:
        """Every commit, newest first."""
        if not self.exists or not self.directory.is_dir():
            return []
        if self._head() is None:
            return []
        out = self._run("log", "--format=%H%x00%ct%x00%B%x01", BRANCH)
        changes = []
        for record in out.split("\x01"):
            parts = record.lstrip("\n").split("\0")
            if len(parts) == 3:
                changes.append(parse_change(parts[0], int(parts[1] or 0), parts[2]))
        return changes

    def resolve(self, rev: str) -> str:
        """A full commit id for ``rev`` (an id, a prefix, ``HEAD~2``), or a clear error."""
        if rev.startswith("-"):
            raise MemoryHistoryError(f"{rev!r} is not a revision")
        found = self._git().run("rev-parse", "-q", "--verify", f"{rev}^{{commit}}", check=False).decode().strip()
        if not found:
            raise MemoryHistoryError(f"no memory change {rev!r} (see heron memory log)")
        return found

    def show(self, rev: str = "HEAD") -> str:
        return self._run("show", "--no-color", "--stat", "--patch", self.resolve(rev), "--")

    def diff(self, rev: str | None = None) -> str:
        """The files now against ``rev`` (default: the last commit), new files included."""
        base = self.resolve(rev or "HEAD")
        text = self._run("diff", "--no-color", base, "--")
        new = self._git().run("ls-files", "-z", "--others", "--exclude-standard", check=False).split(b"\0")
        text += "".join(f"new file, not yet in history: {path_str(raw)}\n" for raw in new if raw)
        return text

    def revert(self, rev: str, *, session: str = "") -> MemoryChange:
        """Undo one change as a new commit (history is never rewritten); changes made outside
        heron are committed first, so the revert takes back only ``rev``."""
        if not self.directory.is_dir():
            raise MemoryHistoryError(f"there is no memory directory {self.directory}")
        private_dir(self.git_dir.parent)
        with self._locked():
            self._commit_locked("outside heron", session=session, entry="", reverts="")
            commit = self.resolve(rev)
            git = self._git()
            try:
                git.run("revert", "--no-commit", commit)
            except CheckpointError as exc:
                git.run("revert", "--abort", check=False)
                first = str(exc).splitlines()[0] if str(exc) else "a conflict"  # git's hints are not the user's steps
                raise MemoryHistoryError(
                    f"could not revert {rev}: later changes touch the same lines ({first}); nothing changed"
                ) from exc
            git.run("revert", "--quit", check=False)
            change = self._commit_locked("revert", session=session, entry="", reverts=commit)
        if change is None:
            raise MemoryHistoryError(f"reverting {rev} changes nothing (it was already undone)")
        return change


def _users_repository(directory: Path) -> bool:
    """Whether the directory is, or lies inside, a git work tree (one with a ``.git``)."""
    return any((folder / ".git").exists() for folder in (directory, *directory.parents))
