"""Each task works in its own copy: a git worktree inside a repository, else a copy."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from heron.coding.batch import workspace


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("x = 1\n")
    git(root, "init", "-q")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    return root


def test_a_repository_gets_a_worktree_and_the_same_sub_directory(tmp_path: Path, repo: Path) -> None:
    work = workspace.prepare(repo / "pkg", tmp_path / "out" / "work" / "t1")
    assert work == tmp_path / "out" / "work" / "t1" / "pkg"
    assert (work / "a.py").read_text() == "x = 1\n"
    assert str(tmp_path / "out" / "work" / "t1") in git(repo, "worktree", "list")
    (work / "a.py").write_text("x = 2\n")
    assert (repo / "pkg" / "a.py").read_text() == "x = 1\n"  # the original is untouched
    again = workspace.prepare(repo / "pkg", tmp_path / "out" / "work" / "t1")  # a retry starts afresh
    assert (again / "a.py").read_text() == "x = 1\n"


def test_a_plain_directory_is_copied_and_a_leftover_replaced(tmp_path: Path) -> None:
    source = tmp_path / "plain"
    source.mkdir()
    (source / "f.txt").write_text("one")
    dest = tmp_path / "out" / "work" / "t2"
    assert workspace.prepare(source, dest) == dest
    (dest / "extra.txt").write_text("left from a dead attempt")
    workspace.prepare(source, dest)
    assert sorted(p.name for p in dest.iterdir()) == ["f.txt"]
    assert workspace.repo_root(source) is None
