"""The shadow repository: what a snapshot holds and what a rewind restores."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from heron.coding.checkpoints import MAX_FILE_BYTES, ShadowRepo, plan_code_rewind

pytestmark = pytest.mark.skipif(ShadowRepo(Path("."), Path(".")).git is None, reason="git is not installed")


def files(repo: ShadowRepo, commit: str) -> set[str]:
    return set(repo.run("ls-tree", "-r", "--name-only", commit).decode().split())


def test_snapshot_skips_ignored_and_large_files_and_leaves_the_project_git_alone(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / ".gitignore").write_text("*.log\n")
    (project / "a.txt").write_text("a")
    (project / "debug.log").write_text("ignored")
    (project / "big.bin").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    repo = ShadowRepo(project, tmp_path / "home")
    snap = repo.snapshot("t")
    assert files(repo, snap.commit) == {".gitignore", "a.txt"}
    assert snap.skipped_large == ["big.bin"]
    assert not (project / ".git" / "refs" / "heads" / "checkpoints").exists()
    status = subprocess.run(["git", "-C", str(project), "status", "--porcelain"], capture_output=True, text=True)
    assert "a.txt" in status.stdout  # still untracked in the project's own repository
    assert repo.git_dir.parent == tmp_path / "home" / "checkpoints"


def test_a_file_that_became_large_is_dropped_and_rewind_restores_the_rest(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "grows.bin").write_text("small")
    (project / "code.py").write_text("v1")
    repo = ShadowRepo(project, tmp_path / "home")
    first = repo.snapshot("1").commit
    (project / "grows.bin").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    (project / "code.py").write_text("v2")
    (project / "new.py").write_text("new")
    second = repo.snapshot("2")
    assert files(repo, second.commit) == {"code.py", "new.py"}
    _, changes = plan_code_rewind(repo, first)
    by_path = {c.path: c.action for c in changes}
    # grows.bin is in no snapshot now: restoring it would lose its current content.
    assert by_path == {"code.py": "restore", "new.py": "delete", "grows.bin": "keep"}
    repo.restore(first, changes)
    assert (project / "code.py").read_text() == "v1" and not (project / "new.py").exists()
    assert (project / "grows.bin").stat().st_size == MAX_FILE_BYTES + 1
