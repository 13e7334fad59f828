"""Each task's own copy of its directory: a git worktree when it is in a repository.

Tasks of one batch often share a ``cwd`` and edit files, so none may run in the original:
a git worktree of ``HEAD`` is cheap and keeps the repository's history (uncommitted
changes of the original are not in it - documented in docs/batch.md); anything else is
copied whole. A leftover copy from an attempt that died is removed first, so every
attempt starts from the same files. Worktree changes of one repository are serialised
with a lock file, because git's own locks make concurrent ``worktree add`` fail.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path


class WorkspaceError(RuntimeError):
    """The task's copy could not be made; the message says why."""


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def repo_root(path: Path) -> Path | None:
    """The top of the git work tree holding ``path`` (None: not in one, or no git)."""
    try:
        done = _git("rev-parse", "--show-toplevel", cwd=path)
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(done.stdout.strip()).resolve() if done.returncode == 0 and done.stdout.strip() else None


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prepare(task_cwd: Path, dest: Path) -> Path:
    """Make ``dest`` a fresh copy of ``task_cwd``'s project; return the directory the task
    works in (the same sub-directory of the copy that ``task_cwd`` is of its repository)."""
    root = repo_root(task_cwd)
    with _locked(dest.parent / ".workspace.lock"):
        if root is not None:
            _remove_worktree(root, dest)
            done = _git("worktree", "add", "--detach", str(dest), "HEAD", cwd=root)
            if done.returncode != 0:
                raise WorkspaceError(f"git worktree add {dest} failed: {done.stderr.strip() or done.stdout.strip()}")
            return dest / task_cwd.relative_to(root)
    if dest.exists():
        shutil.rmtree(dest)
    try:
        shutil.copytree(task_cwd, dest, symlinks=True)
    except (OSError, shutil.Error) as exc:
        raise WorkspaceError(f"copying {task_cwd} to {dest} failed: {exc}") from exc
    return dest


def _remove_worktree(root: Path, dest: Path) -> None:
    if dest.exists():
        _git("worktree", "remove", "--force", str(dest), cwd=root)
        if dest.exists():
            shutil.rmtree(dest)
    _git("worktree", "prune", cwd=root)
