"""One project's shadow repository, whichever backend (git command or dulwich) runs it.

The repository lives at ``$HERON_HOME/checkpoints/<sha256(project)[:16]>``, outside the
project. Snapshotting, restoring and pruning hold an advisory lock on the repository, so a
prune's gc in one heron process cannot drop objects another process has just written
but not yet referenced.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from heron.coding.checkpoints.base import (
    Backend,
    CheckpointError,
    Snapshot,
    SnapshotInfo,
    exclude_patterns,
    new_ref_name,
)
from heron.coding.checkpoints.undo import SnapshotUndo
from heron.session.private_files import append_private, ensure_private_file, private_dir, write_private_text

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no cross-process lock
    fcntl = None  # type: ignore[assignment]

BackendName = Literal["git", "dulwich"]
PRUNE_MARKER = ".last-prune"  # in $HERON_HOME/checkpoints: when pruning last ran (see prune.py)


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    # restore: the checkpoint's content comes back; delete: it did not exist then; keep: it is on disk but in
    # no snapshot now (over 2 MB, or ignored since), so restoring would lose what it holds
    action: Literal["restore", "delete", "keep"]
    external: bool = False  # changed outside heron since its last snapshot


@contextlib.contextmanager
def repo_lock(git_dir: Path) -> Iterator[None]:
    """An advisory lock on a heron repository (a shadow repository, the memory history), held
    across processes, so two heron processes never write its refs and index at once."""
    lock = git_dir.parent / f"{git_dir.name}.lock"
    with os.fdopen(append_private(lock), "a") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def dulwich_installed() -> bool:
    try:
        import dulwich  # noqa: F401
    except ImportError:
        return False
    return True


def choose_backend(
    git_dir: Path, cwd: Path, name: BackendName | None = None, exclude: list[str] | None = None
) -> Backend | None:
    """The git command when it is on PATH, else dulwich when installed, else nothing."""
    git = shutil.which("git")
    if name == "git" or (name is None and git):
        from heron.coding.checkpoints.git_backend import GitBackend

        if git is None:
            raise CheckpointError("git is not installed")
        return GitBackend(git, git_dir, cwd, exclude)
    if dulwich_installed():
        from heron.coding.checkpoints.dulwich_backend import DulwichBackend

        return DulwichBackend(git_dir, cwd, exclude)
    return None


class ShadowRepo:
    """The shadow repository of one project."""

    def __init__(
        self, cwd: Path, home: Path, backend: BackendName | None = None, exclude: Sequence[str] | None = None
    ) -> None:
        """``exclude``: the ``checkpoints.exclude`` patterns; None reads them from the project's
        settings, so every snapshot of a project (a turn's, a rewind's) leaves out the same files."""
        self.cwd = Path(os.path.realpath(cwd))
        self.home = home
        digest = hashlib.sha256(str(self.cwd).encode()).hexdigest()[:16]
        self.git_dir = home / "checkpoints" / digest
        if exclude is None:
            from heron.coding.settings import load_settings

            exclude = load_settings(self.cwd, home).checkpoint_exclude
        self.exclude = exclude_patterns(self.cwd, home, list(exclude))
        self.backend = choose_backend(self.git_dir, self.cwd, backend, self.exclude)

    @classmethod
    def from_dir(cls, git_dir: Path, home: Path, backend: BackendName | None = None) -> ShadowRepo:
        """The repository at ``git_dir`` (found by the prune), its project read from the file
        written when it was made; a project that is gone leaves the repository as work tree,
        which is all pruning needs."""
        repo = cls.__new__(cls)
        try:
            project = Path((git_dir / "heron-project").read_text(encoding="utf-8").strip())
        except OSError:
            project = git_dir
        repo.cwd = project if project.is_dir() else git_dir
        repo.home, repo.git_dir, repo.exclude = home, git_dir, []
        repo.backend = choose_backend(git_dir, repo.cwd, backend)
        return repo

    @property
    def available(self) -> bool:
        return self.backend is not None

    def _engine(self) -> Backend:
        if self.backend is None:
            raise CheckpointError("neither git nor dulwich is installed, so there are no checkpoints")
        return self.backend

    @property
    def exists(self) -> bool:
        return (self.git_dir / "HEAD").exists()

    def locked(self) -> contextlib.AbstractContextManager[None]:
        return repo_lock(self.git_dir)

    def _init(self) -> None:
        if self.exists:
            return
        marker = self.git_dir.parent / PRUNE_MARKER
        private_dir(self.git_dir)
        if not marker.exists():  # a new home: nothing can be old before keepDays have passed
            ensure_private_file(marker)
        self._engine().init()
        private_dir(self.git_dir, narrow=True)  # what the backend's init made of it
        write_private_text(self.git_dir / "heron-project", str(self.cwd) + "\n")

    def snapshot(self, message: str) -> Snapshot:
        """Commit the working tree as it is now (ignored and large files left out)."""
        engine = self._engine()
        with self.locked():
            undo = SnapshotUndo(self.git_dir)  # a failure half-way leaves nothing behind
            try:
                self._init()
                tree, large = engine.write_tree()
                commit = engine.commit(tree, message)
                engine.set_ref(new_ref_name(commit), commit)
            except BaseException:
                undo.rollback()
                raise
            undo.done()
        return Snapshot(commit, large)

    def snapshots(self) -> list[SnapshotInfo]:
        """Every snapshot of the project, oldest first (the order they were taken)."""
        if not self.exists:
            return []
        found = self._engine().snapshots()
        # The old chain's commits first, by time; then the refs, whose names sort by creation time.
        return sorted(found, key=lambda s: (s.ref is not None, s.ref or "", s.time))

    def head(self) -> str | None:
        """The newest snapshot of this project (any session), if any."""
        found = self.snapshots()
        return found[-1].commit if found else None

    def before_turn_index(self, session_id: str) -> dict[str, str]:
        """Leaf id (``""``: the empty session) -> the newest ``before`` snapshot taken there."""
        index: dict[str, str] = {}
        for snap in self.snapshots():
            fields = snap.fields()
            if fields.get("session") == session_id and fields.get("at") == "before":
                index[fields.get("leaf", "")] = snap.commit  # later ones win
        return index

    def diff(self, old: str, new: str) -> list[tuple[str, str]]:
        """(status, path) of every file that differs between two snapshots."""
        return self._engine().diff(old, new)

    def restore(self, commit: str, changes: list[Change]) -> None:
        """Deletes first (and the directories they empty), so a file can come back where a
        directory was; then the snapshot's content of every ``restore``. The result is
        snapshotted, so a later rewind does not take what this one wrote for a change made
        outside heron."""
        engine = self._engine()
        with self.locked():
            for change in changes:
                if change.action == "delete":
                    with contextlib.suppress(FileNotFoundError):
                        (self.cwd / change.path).unlink()
                    _remove_empty_parents(self.cwd, self.cwd / change.path)
            engine.checkout(commit, [c.path for c in changes if c.action == "restore"])
        self.snapshot("heron: after a rewind\n\nat: rewound\n")

    def prune(self, cutoff: float) -> tuple[int, int]:
        """Remove the snapshots committed before ``cutoff`` (unix seconds) and free their space;
        a repository left with none is removed whole. Returns (removed, kept)."""
        if not self.exists:
            return 0, 0
        engine = self._engine()
        with self.locked():
            self._adopt_legacy(engine)
            found = engine.snapshots()
            old = [s for s in found if s.time < cutoff]
            if len(old) == len(found):
                shutil.rmtree(self.git_dir, ignore_errors=True)
                with contextlib.suppress(OSError):
                    (self.git_dir.parent / f"{self.git_dir.name}.lock").unlink()
                return len(old), 0
            if old:
                engine.delete_refs([s.ref for s in old if s.ref])
                engine.gc()
            return len(old), len(found) - len(old)

    def _adopt_legacy(self, engine: Backend) -> None:
        """Turn the old single chain into one parentless commit and ref per snapshot (same
        trees, messages and times), so its old snapshots can be dropped one by one."""
        chain = engine.legacy()
        for info, tree in reversed(chain):  # oldest first, so the new refs sort in the order taken
            commit = engine.commit(tree, info.message, when=info.time)
            engine.set_ref(new_ref_name(commit), commit)
        if chain:
            engine.drop_legacy()


def _remove_empty_parents(top: Path, path: Path) -> None:
    parent = path.parent
    while parent != top and top in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent
