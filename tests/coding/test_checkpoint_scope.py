"""What a snapshot leaves out and what it costs (issue 23): heron's own home when it lies inside
the project, generated directories (``checkpoints.exclude`` takes one back in), an unchanged
tree snapshotted without re-reading it, and no snapshot after a turn whose tools only read."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from heron.agent.tool_meta import ToolKind
from heron.coding.checkpoints import ShadowRepo
from heron.coding.checkpoints.git_backend import GitBackend
from heron.coding.checkpoints.session import Checkpoints, may_change_files
from heron.coding.tools import builtin_meta
from heron.session.store import SessionStore
from tests.coding.test_checkpoints import BACKENDS, files

HAVE_GIT = shutil.which("git") is not None


def tree_of(project: Path) -> None:
    (project / "app.py").write_text("print(1)\n")
    for name in ("node_modules/dep", ".venv/lib", "pkg/__pycache__", "target/debug"):
        (project / name).mkdir(parents=True)
        (project / name / "f").write_text("generated")


@pytest.mark.parametrize("backend", BACKENDS)
def test_heron_home_inside_the_project_is_never_snapshotted(tmp_path: Path, backend: str) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "app.py").write_text("x")
    home = project / "state" / "heron"
    repo = ShadowRepo(project, home, backend)  # type: ignore[arg-type]
    sizes = []
    for n in range(4):  # each snapshot would otherwise store the ones before it
        (home / "sessions").mkdir(parents=True, exist_ok=True)
        (home / "sessions" / f"s{n}.jsonl").write_text("{}\n")
        snap = repo.snapshot(f"n{n}")
        assert set(files(repo, snap.commit)) == {"app.py"}
        sizes.append(sum(f.stat().st_size for f in (home / "checkpoints").rglob("*") if f.is_file()))
    assert sizes[-1] - sizes[1] < 4096, sizes  # a few commits and refs, no copies of the store


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_project_being_heron_home_keeps_its_checkpoints_out(tmp_path: Path, backend: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text("{}")
    repo = ShadowRepo(home, home, backend)  # type: ignore[arg-type]
    repo.snapshot("one")
    snap = repo.snapshot("two")
    assert set(files(repo, snap.commit)) == {"settings.json"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_generated_directories_are_left_out_unless_settings_take_them_back(tmp_path: Path, backend: str) -> None:
    project = tmp_path / "p"
    project.mkdir()
    tree_of(project)
    repo = ShadowRepo(project, tmp_path / "home", backend)  # type: ignore[arg-type]
    assert set(files(repo, repo.snapshot("t").commit)) == {"app.py"}
    (project / ".heron").mkdir()
    (project / ".heron" / "settings.json").write_text(json.dumps({"checkpoints": {"exclude": ["!target/", "*.py"]}}))
    again = ShadowRepo(project, tmp_path / "home", backend)  # type: ignore[arg-type]
    assert set(files(again, again.snapshot("t").commit)) == {".heron/settings.json", "target/debug/f"}


@pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")
def test_an_unchanged_tree_is_snapshotted_from_the_index_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "p"
    project.mkdir()
    for n in range(50):
        (project / f"f{n}.txt").write_text(str(n))
    repo = ShadowRepo(project, tmp_path / "home", "git")
    first = repo.snapshot("one")
    ran: list[str] = []
    original = GitBackend.run

    def record(self: GitBackend, *args: str, **kwargs: Any) -> bytes:
        ran.append(next(a for a in args if not a.startswith("-") and "=" not in a))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(GitBackend, "run", record)
    second = repo.snapshot("two")
    assert "add" not in ran and "update-index" not in ran, ran  # nothing re-read, the index kept as it was
    assert files(repo, second.commit) == files(repo, first.commit)
    (project / "f3.txt").write_text("changed")
    ran.clear()
    third = repo.snapshot("three")
    assert "add" in ran and files(repo, third.commit)["f3.txt"] == b"changed"


def kind_of(tool: str) -> ToolKind:
    meta = builtin_meta(tool)
    return meta.kind if meta is not None else "other"  # an MCP or extension tool that declares nothing


def test_only_tools_that_can_write_count_as_changes() -> None:
    assert not any(may_change_files(kind_of(t)) for t in ("read", "grep", "find", "ls", "json_query", "search_history"))
    assert all(may_change_files(kind_of(t)) for t in ("bash", "edit", "write", "task", "mcp__srv__tool"))


def test_a_read_only_turn_takes_no_snapshot_after_it_and_a_writing_one_does(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.txt").write_text("a")
    store = SessionStore.create(project, home=tmp_path / "home")
    checkpoints = Checkpoints(project, tmp_path / "home")

    async def turn(tool: str | None) -> None:
        checkpoints.start_before_turn(store)
        if tool is not None:
            await checkpoints.before_change(tool, kind_of(tool))
        await checkpoints.after_turn(store)

    asyncio.run(turn("read"))
    assert [s.fields()["at"] for s in checkpoints.repo.snapshots()] == ["before"]
    asyncio.run(turn("bash"))
    assert [s.fields()["at"] for s in checkpoints.repo.snapshots()] == ["before", "before", "after"]
