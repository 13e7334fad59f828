"""Checkpoints of the working tree, so a turn's changes to code can be rewound.

Before each user turn (and after it) the project's files are committed into a shadow git
repository under ``$HERON_HOME/checkpoints/<project hash>`` - outside the project, so its
own git history, index and status are never touched. Everything the turn changed is in
it, whichever tool (edit, write or a bash command) changed it. Files the project's
``.gitignore`` ignores and files over 2 MB are left out (and so never rewound).

Each snapshot's commit message names the session and the session's leaf when it was
taken, so "the state right before user turn N" is the ``before`` snapshot taken at the
leaf the Nth user message of the current branch hangs off. Nothing is added to the
session file: what a session sends is the same whether or not checkpoints were taken.
:mod:`heron.cli.rewind_cmd` restores them.

Without a ``git`` command checkpoints are off (reported once); a failed snapshot is
logged and the turn goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from heron.session.entries import MessageEntry
from heron.session.store import SessionStore

log = logging.getLogger(__name__)

REWIND_TYPE = "heron.rewind"
MAX_FILE_BYTES = 2 * 1024 * 1024
GIT_TIMEOUT = 120.0
REF = "refs/heads/checkpoints"
MAX_FILES = 100_000  # a tree this big (a home directory, not a project) is not snapshotted


class CheckpointError(RuntimeError):
    """A git command of the shadow repository failed; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    # restore: the checkpoint's content comes back; delete: it did not exist then; keep: it is on disk but in
    # no snapshot now (over 2 MB, or ignored since), so restoring would lose what it holds
    action: Literal["restore", "delete", "keep"]
    external: bool = False  # changed outside heron since its last snapshot


@dataclass
class Snapshot:
    commit: str
    skipped_large: list[str] = field(default_factory=list)


class ShadowRepo:
    """The shadow repository of one project."""

    def __init__(self, cwd: Path, home: Path) -> None:
        self.cwd = Path(os.path.realpath(cwd))
        digest = hashlib.sha256(str(self.cwd).encode()).hexdigest()[:16]
        self.git_dir = home / "checkpoints" / digest
        self.git = shutil.which("git")

    @property
    def available(self) -> bool:
        return self.git is not None

    def _env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER")}
        return {**keep, "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.cwd), "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_AUTHOR_NAME": "heron", "GIT_AUTHOR_EMAIL": "heron@localhost", "GIT_COMMITTER_NAME": "heron",
                "GIT_COMMITTER_EMAIL": "heron@localhost", "GIT_TERMINAL_PROMPT": "0"}

    def run(self, *args: str, stdin: bytes | None = None, check: bool = True) -> bytes:
        if self.git is None:
            raise CheckpointError("git is not installed, so there are no checkpoints")
        cmd = [self.git, "-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "-c", "core.hooksPath=/dev/null",
               "-c", "filter.lfs.clean=cat", "-c", "filter.lfs.smudge=cat", "-c", "filter.lfs.process=",
               "-c", "filter.lfs.required=false", *args]
        try:
            done = subprocess.run(cmd, input=stdin, capture_output=True, env=self._env(), cwd=self.cwd,
                                  timeout=GIT_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CheckpointError(f"git {args[0]}: {exc}") from exc
        if check and done.returncode != 0:
            raise CheckpointError(f"git {args[0]} failed: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout

    def _init(self) -> None:
        if (self.git_dir / "HEAD").exists():
            return
        self.git_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.run("init", "-q")
        (self.git_dir / "heron-project").write_text(str(self.cwd) + "\n", encoding="utf-8")

    def snapshot(self, message: str) -> Snapshot:
        """Commit the working tree as it is now (ignored and large files left out)."""
        self._init()
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "exclude").write_text("", encoding="utf-8")  # last time's large files are listed again
        listed = self.run("ls-files", "-z", "--cached", "--others", "--exclude-standard").split(b"\0")
        if len(listed) > MAX_FILES:
            raise CheckpointError(f"{self.cwd} holds over {MAX_FILES:,} files; no snapshot taken")
        large: list[str] = []
        for raw in listed:
            if not raw:
                continue
            path = raw.decode("utf-8", "surrogateescape")
            try:
                st = (self.cwd / path).lstat()
            except OSError:
                continue
            if st.st_size > MAX_FILE_BYTES and not os.path.islink(self.cwd / path):
                large.append(path)
        (info / "exclude").write_text("".join(f"/{_escape(p)}\n" for p in large), encoding="utf-8",
                                      errors="surrogateescape")
        if large:
            self.run("update-index", "--force-remove", "-z", "--stdin",
                     stdin=b"\0".join(p.encode("utf-8", "surrogateescape") for p in large))
        self.run("add", "-A", "--ignore-errors", check=False)
        tree = self.run("write-tree").decode().strip()
        parent = self.run("rev-parse", "-q", "--verify", REF, check=False).decode().strip()
        args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
        commit = self.run(*args).decode().strip()
        self.run("update-ref", REF, commit)
        return Snapshot(commit, large)

    def head(self) -> str | None:
        """The newest snapshot of this project (any session), if any."""
        if not (self.git_dir / "HEAD").exists():
            return None
        return self.run("rev-parse", "-q", "--verify", REF, check=False).decode().strip() or None

    def before_turn_index(self, session_id: str) -> dict[str, str]:
        """Leaf id (``""``: the empty session) -> the newest ``before`` snapshot taken there."""
        if self.head() is None:
            return {}
        out = self.run("log", "--format=%H%x00%B%x00", REF).decode("utf-8", "replace").split("\0")
        index: dict[str, str] = {}
        for commit, body in zip(out[0::2], out[1::2], strict=False):
            fields = dict(line.split(": ", 1) for line in body.splitlines() if ": " in line)
            if fields.get("session") == session_id and fields.get("at") == "before":
                index.setdefault(fields.get("leaf", ""), commit.strip())
        return index

    def diff(self, old: str, new: str) -> list[tuple[str, str]]:
        """(status, path) of every file that differs between two snapshots."""
        out = self.run("diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new).split(b"\0")
        items = [x.decode("utf-8", "surrogateescape") for x in out if x]
        return [(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]

    def restore(self, commit: str, changes: list[Change]) -> None:
        restore = [c.path for c in changes if c.action == "restore"]
        if restore:
            self.run("checkout", commit, "--pathspec-from-file=-", "--pathspec-file-nul",
                     stdin=b"\0".join(p.encode("utf-8", "surrogateescape") for p in restore))
        for change in changes:
            if change.action == "delete":
                with contextlib.suppress(FileNotFoundError):
                    (self.cwd / change.path).unlink()


def _escape(path: str) -> str:
    return "".join("\\" + ch if ch in "*?[]\\!# " else ch for ch in path)


class Checkpoints:
    """Snapshots around each turn, recorded in the session (used by the runtime)."""

    def __init__(self, cwd: Path, home: Path, enabled: bool = True) -> None:
        self.repo = ShadowRepo(cwd, home)
        # Not a project: the home directory or the root would be snapshotted whole.
        self.enabled = enabled and self.repo.available and self.repo.cwd not in (Path.home().resolve(), Path("/"))
        if enabled and not self.repo.available:
            log.warning("git is not installed: no checkpoints, so `heron rewind` cannot restore code")

    async def before_turn(self, store: SessionStore) -> None:
        await self._take(store, "before")

    async def after_turn(self, store: SessionStore) -> None:
        await self._take(store, "after")

    async def _take(self, store: SessionStore, at: str) -> None:
        if not self.enabled or store.path is None:  # an in-memory session (--no-session) cannot be rewound
            return
        message = f"heron checkpoint\n\nsession: {store.session_id}\nleaf: {store.leaf_id or ''}\nat: {at}\n"
        try:
            snap = await asyncio.to_thread(self.repo.snapshot, message)
        except CheckpointError as exc:
            log.warning("checkpoint not taken: %s", exc)
            return
        if snap.skipped_large:
            log.info("checkpoint left out %d file(s) over 2 MB", len(snap.skipped_large))


# --- rewinding -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Turn:
    number: int  # from 1, on the current branch
    entry_id: str
    text: str
    checkpoint: str | None  # the commit right before it


def turns(store: SessionStore, index: dict[str, str]) -> list[Turn]:
    """The user turns of the current branch, each with the snapshot taken right before it:
    the one taken at the nearest entry above its message, back to the previous user message
    (entries such as a model change may be appended between the snapshot and the message)."""
    out: list[Turn] = []
    since_user: list[str] = [""]  # entry ids since the last user message; "" is the empty session
    if store.leaf_id is None:
        return out
    for entry in store.path_to(store.leaf_id):
        if isinstance(entry, MessageEntry) and getattr(entry.message, "role", None) == "user":
            content = getattr(entry.message, "content", "")
            text = content if isinstance(content, str) else " ".join(getattr(b, "text", "") for b in content)
            before = next((index[i] for i in reversed(since_user) if i in index), None)
            out.append(Turn(len(out) + 1, entry.id, text, before))
            since_user = []
        since_user.append(entry.id)
    return out


def plan_code_rewind(repo: ShadowRepo, target: str) -> tuple[str, list[Change]]:
    """What restoring ``target`` would change, against the tree as it is now (snapshotted
    first, so the rewind itself can be undone). A file that differs from heron's newest
    snapshot of the project is marked ``external``. Returns (current snapshot, changes)."""
    reference = repo.head()
    current = repo.snapshot("heron: before a rewind\n\nat: rewind\n").commit
    external = {path for _, path in repo.diff(reference, current)} if reference else set()
    changes = [Change(path, _action(repo, status, path), path in external)
               for status, path in repo.diff(target, current)]
    return current, changes


def _action(repo: ShadowRepo, status: str, path: str) -> Literal["restore", "delete", "keep"]:
    if status == "A":
        return "delete"
    if status == "D" and os.path.lexists(repo.cwd / path):
        return "keep"
    return "restore"


def rewind_conversation(store: SessionStore, turn: Turn, data: dict[str, Any]) -> None:
    """Move the leaf to just before ``turn`` and record it, so the file reopens there."""
    parent = store.parent_id_of(turn.entry_id)
    if parent is None:
        store.reset_leaf()
    else:
        store.branch(parent)
    store.append_custom(REWIND_TYPE, data)
