"""A snapshot that fails leaves nothing half-made (docs/permissions.md, "Checkpoints"): its
objects, temporary packs and a repository it had just made are removed, the index is put
back, a later snapshot works, and a full disk turns snapshots off for the session instead of
filling the space the user frees. A real full disk (a 256 KiB tmpfs made by bubblewrap,
without root) and an injected failure, with both backends."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from heron.coding.checkpoints import ShadowRepo
from heron.coding.checkpoints.base import CheckpointError
from heron.coding.checkpoints.session import Checkpoints
from heron.coding.checkpoints.undo import sweep_temporaries
from heron.coding.sandbox.bwrap import availability

HAVE_GIT = shutil.which("git") is not None
BACKENDS = [pytest.param("git", marks=pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")), "dulwich"]
ROOT = Path(__file__).resolve().parents[2]


def tree_files(path: Path) -> dict[str, int]:
    return {str(p.relative_to(path)): p.stat().st_size for p in path.rglob("*") if p.is_file()}


def project_with(tmp_path: Path, sizes: list[int]) -> Path:
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    for n, size in enumerate(sizes):
        (project / f"f{n}.bin").write_bytes(os.urandom(size))  # incompressible: the pack is as large
    return project


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_failure_after_the_objects_were_written_takes_them_back(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = project_with(tmp_path, [1000, 2000])
    repo = ShadowRepo(project, tmp_path / "home", backend=backend)  # type: ignore[arg-type]
    first = repo.snapshot("one")
    before = tree_files(repo.git_dir)
    (project / "new.bin").write_bytes(os.urandom(50_000))
    engine = repo.backend
    assert engine is not None

    def broken(tree: str, message: str, when: int | None = None) -> str:
        raise CheckpointError("commit-tree failed: No space left on device")

    monkeypatch.setattr(engine, "commit", broken)
    with pytest.raises(CheckpointError, match="No space left"):
        repo.snapshot("two")
    assert tree_files(repo.git_dir) == before  # the new file's objects, the index change: gone
    monkeypatch.undo()
    later = repo.snapshot("three")  # the index put back: the new file is stored again, whole
    assert later.commit != first.commit and [s.commit for s in repo.snapshots()][-1] == later.commit


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_repository_the_failed_snapshot_made_is_removed_whole(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = project_with(tmp_path, [3000])
    repo = ShadowRepo(project, tmp_path / "home", backend=backend)  # type: ignore[arg-type]
    engine = repo.backend
    assert engine is not None

    def broken() -> tuple[str, list[str]]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(engine, "write_tree", broken)
    with pytest.raises(OSError):
        repo.snapshot("one")
    assert not repo.git_dir.exists()


def test_temporaries_of_a_killed_snapshot_are_swept(tmp_path: Path) -> None:
    git_dir = tmp_path / "repo"
    (git_dir / "objects" / "pack").mkdir(parents=True)
    (git_dir / "objects" / "ab").mkdir()
    leftovers = [
        git_dir / "objects" / "pack" / "tmp_pack_x1",
        git_dir / "objects" / "pack" / "tmpk2a.pack",
        git_dir / "objects" / "ab" / "tmp_obj_q",
        git_dir / "index.lock",
    ]
    kept = [git_dir / "objects" / "pack" / "pack-1.pack", git_dir / "objects" / "ab" / "cdef", git_dir / "index"]
    for path in leftovers + kept:
        path.write_bytes(b"x")
    assert sweep_temporaries(git_dir) == len(leftovers)
    assert all(p.exists() for p in kept) and not any(p.exists() for p in leftovers)
    assert sweep_temporaries(tmp_path / "missing") == 0


def test_a_full_disk_turns_snapshots_off_for_the_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = project_with(tmp_path, [100])
    checkpoints = Checkpoints(project, tmp_path / "home")
    calls: list[str] = []

    def full(message: str) -> None:
        calls.append(message)
        raise CheckpointError("git add failed: error: No space left on device")

    monkeypatch.setattr(checkpoints, "_snapshot", full)
    asyncio.run(checkpoints._take("m1", None))
    assert checkpoints.enabled is False and calls == ["m1"]
    # no later snapshot is even started (it would fill again the space the user frees)
    assert checkpoints._message(object(), "before") is None  # type: ignore[arg-type]


REAL_DISK = """
import json, os, sys
from pathlib import Path
from heron.coding.checkpoints import ShadowRepo
from heron.coding.checkpoints.base import CheckpointError
project, home, backend = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
def usage():
    return sum(p.stat().st_size for p in home.rglob("*") if p.is_file())
out = {}
repo = ShadowRepo(project, home, backend=backend)
try:
    repo.snapshot("first, on a disk too small")
    out["first"] = "taken"
except Exception as exc:
    out["first"] = str(exc)
out["after_first"] = {"exists": repo.git_dir.exists(), "bytes": usage()}
for p in sorted(project.iterdir())[1:]:
    p.unlink()  # a project that fits
small = repo.snapshot("small")
out["small"] = small.commit
size = usage()
(project / "big.bin").write_bytes(os.urandom(400_000))
try:
    repo.snapshot("too big")
    out["big"] = "taken"
except Exception as exc:
    out["big"] = str(exc)
out["after_big"] = {"bytes": usage(), "before": size, "refs": [s.commit for s in repo.snapshots()]}
tmp = [str(p) for p in repo.git_dir.rglob("*") if p.name.startswith(("tmp", "index.lock"))]
out["temporaries"] = tmp
print(json.dumps(out))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_real_full_disk_leaves_no_half_made_repository(tmp_path: Path, backend: str) -> None:
    if not availability().ok:
        pytest.skip("bubblewrap cannot make the small tmpfs here")
    project = project_with(tmp_path, [8_000, 300_000, 300_000])
    home = tmp_path / "home"
    home.mkdir()
    script = tmp_path / "real_disk.py"
    script.write_text(REAL_DISK)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [
            "bwrap",
            "--dev-bind",
            "/",
            "/",
            "--size",
            str(256 * 1024),
            "--tmpfs",
            str(home),
            "--",
            sys.executable,
            str(script),
            str(project),
            str(home),
            backend,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "No space left on device" in out["first"] or "space" in out["first"].lower()
    assert out["after_first"]["exists"] is False  # the repository it had just made: removed
    assert out["small"] and out["big"] != "taken"
    assert out["after_big"]["bytes"] == out["after_big"]["before"]  # nothing of the big file kept
    assert out["after_big"]["refs"] == [out["small"]]
    assert out["temporaries"] == []
