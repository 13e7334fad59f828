"""The shadow repository with both backends (the git command and dulwich): what a snapshot
holds, what a rewind restores, that each backend reads the other's snapshots, and pruning
(commit dates faked with GIT_COMMITTER_DATE, so nothing sleeps)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from heron.coding.checkpoints import MAX_FILE_BYTES, ShadowRepo, plan_code_rewind, prune_all
from heron.coding.checkpoints.base import LEGACY_REF
from heron.coding.checkpoints.prune import PRUNE_MARKER, prune_due, schedule_prune

HAVE_GIT = shutil.which("git") is not None
BACKENDS = [pytest.param("git", marks=pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")), "dulwich"]
DAY = 86_400


def files(repo: ShadowRepo, commit: str) -> dict[str, bytes]:
    """Path -> content of a snapshot, read with dulwich whichever backend wrote it."""
    store = Repo(str(repo.git_dir))
    tree = store[commit.encode()]
    assert isinstance(tree, Commit)
    out = {}
    for entry in store.object_store.iter_tree_contents(tree.tree):
        blob = store[entry.sha]
        assert isinstance(blob, Blob) and entry.path is not None
        out[entry.path.decode()] = blob.data
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "p"
    path.mkdir()
    return path


@pytest.mark.parametrize("backend", BACKENDS)
def test_snapshot_skips_ignored_and_large_files(project: Path, tmp_path: Path, backend: str) -> None:
    (project / ".gitignore").write_text("*.log\nbuild/\n")
    (project / "a.txt").write_text("a")
    (project / "debug.log").write_text("ignored")
    (project / "build").mkdir()
    (project / "build" / "out.o").write_text("ignored dir")
    (project / "sub").mkdir()
    (project / "sub" / ".gitignore").write_text("*.tmp\n!keep.tmp\n")
    (project / "sub" / "x.tmp").write_text("ignored")
    (project / "sub" / "keep.tmp").write_text("kept by negation")
    (project / "big.bin").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    repo = ShadowRepo(project, tmp_path / "home", backend)  # type: ignore[arg-type]
    snap = repo.snapshot("t")
    assert set(files(repo, snap.commit)) == {".gitignore", "a.txt", "sub/.gitignore", "sub/keep.tmp"}
    assert snap.skipped_large == ["big.bin"]
    assert repo.git_dir.parent == tmp_path / "home" / "checkpoints"
    # A file ignored after it was snapshotted is left out from then on, with either backend.
    (project / ".gitignore").write_text("*.log\nbuild/\na.txt\n")
    assert "a.txt" not in files(repo, repo.snapshot("t2").commit)


@pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")
def test_the_project_own_git_repository_is_left_alone(project: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "a.txt").write_text("a")
    for backend in ("git", "dulwich"):
        repo = ShadowRepo(project, tmp_path / "home", backend)  # type: ignore[arg-type]
        assert set(files(repo, repo.snapshot("t").commit)) == {"a.txt"}  # the project's .git is never stored
    assert not (project / ".git" / "refs" / "heads" / "checkpoints").exists()
    status = subprocess.run(["git", "-C", str(project), "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == "?? a.txt\n"  # still untracked in the project's own repository


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_file_that_became_large_is_dropped_and_rewind_restores_the_rest(
    project: Path, tmp_path: Path, backend: str
) -> None:
    (project / "grows.bin").write_text("small")
    (project / "code.py").write_text("v1")
    repo = ShadowRepo(project, tmp_path / "home", backend)  # type: ignore[arg-type]
    first = repo.snapshot("1").commit
    (project / "grows.bin").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    (project / "code.py").write_text("v2")
    (project / "new.py").write_text("new")
    second = repo.snapshot("2")
    assert set(files(repo, second.commit)) == {"code.py", "new.py"}
    _, changes = plan_code_rewind(repo, first)
    by_path = {c.path: c.action for c in changes}
    # grows.bin is in no snapshot now: restoring it would lose its current content.
    assert by_path == {"code.py": "restore", "new.py": "delete", "grows.bin": "keep"}
    repo.restore(first, changes)
    assert (project / "code.py").read_text() == "v1" and not (project / "new.py").exists()
    assert (project / "grows.bin").stat().st_size == MAX_FILE_BYTES + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_restore_brings_back_modes_links_and_a_file_where_a_directory_is_now(
    project: Path, tmp_path: Path, backend: str
) -> None:
    (project / "run.sh").write_text("#!/bin/sh\n")
    (project / "run.sh").chmod(0o755)
    os.symlink("run.sh", project / "link")
    (project / "thing").write_text("a file")
    repo = ShadowRepo(project, tmp_path / "home", backend)  # type: ignore[arg-type]
    first = repo.snapshot("1").commit
    (project / "run.sh").unlink()
    (project / "link").unlink()
    (project / "thing").unlink()
    (project / "thing").mkdir()
    (project / "thing" / "inside.txt").write_text("now a directory")
    _, changes = plan_code_rewind(repo, first)
    repo.restore(first, changes)
    assert (project / "run.sh").read_text() == "#!/bin/sh\n" and os.access(project / "run.sh", os.X_OK)
    assert os.readlink(project / "link") == "run.sh"
    assert (project / "thing").read_text() == "a file"


@pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")
@pytest.mark.parametrize(("writer", "reader"), [("git", "dulwich"), ("dulwich", "git")])
def test_each_backend_reads_and_restores_the_other_backends_snapshots(
    project: Path, tmp_path: Path, writer: str, reader: str
) -> None:
    home = tmp_path / "home"
    (project / "f.txt").write_text("one")
    first = ShadowRepo(project, home, writer).snapshot("heron checkpoint\n\nsession: s\nleaf: \nat: before\n")  # type: ignore[arg-type]
    (project / "f.txt").write_text("two")
    (project / "g.txt").write_text("new")
    other = ShadowRepo(project, home, reader)  # type: ignore[arg-type]
    assert other.before_turn_index("s") == {"": first.commit}
    current, changes = plan_code_rewind(other, first.commit)
    assert sorted((c.path, c.action) for c in changes) == [("f.txt", "restore"), ("g.txt", "delete")]
    other.restore(first.commit, changes)
    assert (project / "f.txt").read_text() == "one" and not (project / "g.txt").exists()
    listed = ShadowRepo(project, home, writer).snapshots()  # type: ignore[arg-type]
    assert [s.commit for s in listed][:2] == [first.commit, current]
    assert files(other, listed[-1].commit) == {"f.txt": b"one"}  # the rewound tree, snapshotted after the rewind


def snapshot_at(repo: ShadowRepo, days_ago: float, monkeypatch: pytest.MonkeyPatch, label: str) -> str:
    monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{int(time.time() - days_ago * DAY)} +0000")
    try:
        return repo.snapshot(f"heron checkpoint\n\nsession: s\nleaf: {label}\nat: before\n").commit
    finally:
        monkeypatch.delenv("GIT_COMMITTER_DATE")


def objects(repo: ShadowRepo) -> set[bytes]:
    return set(Repo(str(repo.git_dir)).object_store)


@pytest.mark.parametrize("backend", BACKENDS)
def test_prune_drops_old_snapshots_and_frees_their_objects(
    project: Path, tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    repo = ShadowRepo(project, home, backend)  # type: ignore[arg-type]
    (project / "old.txt").write_text("only in the old snapshot")
    old = snapshot_at(repo, 40, monkeypatch, "a")
    (project / "old.txt").unlink()
    (project / "new.txt").write_text("recent")
    recent = snapshot_at(repo, 2, monkeypatch, "b")
    old_blob = Blob.from_string(b"only in the old snapshot").id
    assert old_blob in objects(repo)
    reports = prune_all(home, 30, backend=backend)  # type: ignore[arg-type]
    assert [(r.removed, r.kept, r.error) for r in reports] == [(1, 1, None)]
    assert [s.commit for s in repo.snapshots()] == [recent]
    assert old.encode() not in objects(repo) and old_blob not in objects(repo)  # gone from disk, not only hidden
    assert files(repo, recent) == {"new.txt": b"recent"}
    assert repo.before_turn_index("s") == {"b": recent}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_repository_with_nothing_left_is_removed_and_others_are_still_pruned(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    gone, kept = tmp_path / "gone", tmp_path / "kept"
    for path in (gone, kept):
        path.mkdir()
        (path / "f.txt").write_text(path.name)
    old_repo = ShadowRepo(gone, home, backend)  # type: ignore[arg-type]
    snapshot_at(old_repo, 31, monkeypatch, "x")
    shutil.rmtree(gone)  # the project itself was deleted since
    snapshot_at(ShadowRepo(kept, home, backend), 29, monkeypatch, "y")  # type: ignore[arg-type]
    reports = {Path(r.project).name: (r.removed, r.kept) for r in prune_all(home, 30, backend=backend)}  # type: ignore[arg-type]
    assert not old_repo.git_dir.exists()
    assert (1, 0) in reports.values() and (0, 1) in reports.values()
    assert sorted(p.name for p in (home / "checkpoints").iterdir() if p.is_dir()) == [
        ShadowRepo(kept, home).git_dir.name
    ]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_old_single_chain_is_read_and_pruned_snapshot_by_snapshot(
    project: Path, tmp_path: Path, backend: str
) -> None:
    """Repositories written before one ref per snapshot kept a chain on refs/heads/checkpoints."""
    home = tmp_path / "home"
    repo = ShadowRepo(project, home, backend)  # type: ignore[arg-type]
    repo.snapshot("made by the new format")  # makes the repository
    for ref in Repo(str(repo.git_dir)).refs.keys(base=b"refs/heron/snapshots/"):
        Repo(str(repo.git_dir)).refs.remove_if_equals(b"refs/heron/snapshots/" + ref, None)
    store = Repo(str(repo.git_dir))
    parent: list[bytes] = []
    now = int(time.time())
    for label, age in (("old", 45), ("new", 1)):
        blob = Blob.from_string(label.encode())
        tree = Tree()
        tree.add(b"f.txt", 0o100644, blob.id)
        commit = Commit()
        commit.tree, commit.parents = tree.id, parent
        commit.author = commit.committer = b"heron <heron@localhost>"
        commit.author_time = commit.commit_time = now - age * DAY
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = f"heron checkpoint\n\nsession: s\nleaf: {label}\nat: before\n".encode()
        for obj in (blob, tree, commit):
            store.object_store.add_object(obj)
        parent = [commit.id]
    store.refs[LEGACY_REF.encode()] = parent[0]
    assert set(repo.before_turn_index("s")) == {"old", "new"}
    assert [r.removed for r in prune_all(home, 30, backend=backend)] == [1]  # type: ignore[arg-type]
    index = repo.before_turn_index("s")
    assert set(index) == {"new"} and files(repo, index["new"]) == {"f.txt": b"new"}
    assert LEGACY_REF.encode() not in Repo(str(repo.git_dir)).refs


def test_the_prune_runs_at_most_once_a_day_in_the_background(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    assert not prune_due(home)  # no checkpoints at all
    repo = ShadowRepo(project, home)
    (project / "f.txt").write_text("x")
    snapshot_at(repo, 60, monkeypatch, "a")
    marker = home / "checkpoints" / PRUNE_MARKER
    assert marker.exists() and not prune_due(home)  # a new home waits a day
    assert schedule_prune(home, 30) is None and repo.git_dir.exists()
    os.utime(marker, (time.time() - 2 * DAY, time.time() - 2 * DAY))
    assert prune_due(home)
    child = schedule_prune(home, 30)
    assert child is not None and child.wait(timeout=60) == 0
    assert not repo.git_dir.exists()  # its only snapshot was 60 days old
    assert not prune_due(home) and schedule_prune(home, 30) is None  # done for today


@pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")
@pytest.mark.parametrize(("writer", "pruner"), [("git", "dulwich"), ("dulwich", "git")])
def test_one_backend_prunes_packed_snapshots_of_the_other(
    project: Path, tmp_path: Path, writer: str, pruner: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    repo = ShadowRepo(project, home, writer)  # type: ignore[arg-type]
    (project / "old.txt").write_text("old content, packed")
    snapshot_at(repo, 50, monkeypatch, "a")
    (project / "old.txt").unlink()
    (project / "new.txt").write_text("kept")
    recent = snapshot_at(repo, 1, monkeypatch, "b")
    assert repo.backend is not None
    repo.backend.gc()  # everything is in a pack now, not loose
    assert list((repo.git_dir / "objects" / "pack").glob("*.pack"))
    assert [(r.removed, r.kept) for r in prune_all(home, 30, backend=pruner)] == [(1, 1)]  # type: ignore[arg-type]
    assert Blob.from_string(b"old content, packed").id not in objects(repo)
    assert files(repo, recent) == {"new.txt": b"kept"}
