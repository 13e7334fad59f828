"""``heron -p`` turns then ``heron rewind``, with and without the ``git`` command: where git
is missing (a PATH without it) checkpoints go through dulwich, and a file a bash command
changed in turn 3 still comes back. Also: a turn whose snapshot was pruned says so."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from heron.coding.checkpoints import prune_all
from tests.cli.test_control_e2e import bash, rewind
from tests.cli.test_print_json_e2e import Project, openai_args, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]

HAVE_GIT = shutil.which("git") is not None


def path_without_git(tmp: Path) -> str:
    """A PATH dir holding a link to every program on PATH except git."""
    bin_dir = tmp / "bin-no-git"
    bin_dir.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            target = os.path.join(folder, name)
            if not name.startswith("git") and not (bin_dir / name).exists() and os.access(target, os.X_OK):
                (bin_dir / name).symlink_to(target)
    return str(bin_dir)


def three_turns(project: Project, server: LocalServer) -> None:
    (project.cwd / ".gitignore").write_text("ignored.txt\n")
    (project.cwd / "big.bin").write_bytes(b"x" * (2 * 1024 * 1024 + 1))
    steps = [
        "echo one > notes.txt",
        "echo two >> notes.txt",
        "echo three > notes.txt && echo new > added.txt && echo y >> big.bin",
    ]
    for n, command in enumerate(steps):
        server.queue(openai_reply("", [bash(f"c{n}", command)]), openai_reply("done"))
        result = project.run(*openai_args(server), *(["-c"] if n else []), "-p", f"turn {n + 1}")
        assert result.code == 0, result.err
    assert (project.cwd / "notes.txt").read_text() == "three\n"
    (project.cwd / "ignored.txt").write_text("not mine to rewind")


@pytest.mark.parametrize(
    "backend", [pytest.param("git", marks=pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")), "dulwich"]
)
def test_a_file_changed_by_bash_in_turn_3_is_restored_with_either_backend(
    project: Project, local_server: LocalServer, tmp_path: Path, backend: str
) -> None:
    if backend == "dulwich":
        project.env["PATH"] = path_without_git(tmp_path)
        assert shutil.which("git", path=project.env["PATH"]) is None
    three_turns(project, local_server)
    dry = rewind(project, "--to", "3", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "restore notes.txt" in dry.stdout and "delete  added.txt" in dry.stdout
    assert "ignored.txt" not in dry.stdout and "big.bin" not in dry.stdout  # ignored / over 2 MB: never rewound
    assert (project.cwd / "notes.txt").read_text() == "three\n"
    done = rewind(project, "--to", "3", "--yes")
    assert done.returncode == 0, done.stderr
    assert (project.cwd / "notes.txt").read_text() == "one\ntwo\n"
    assert not (project.cwd / "added.txt").exists()
    assert (project.cwd / "ignored.txt").read_text() == "not mine to rewind"
    assert (project.cwd / "big.bin").stat().st_size == 2 * 1024 * 1024 + 3
    back = rewind(project, "--to", "2", "--code", "--yes")  # further back: before turn 2
    assert back.returncode == 0, back.stderr
    assert (project.cwd / "notes.txt").read_text() == "one\n"


def test_rewind_to_a_turn_whose_snapshot_was_pruned_says_it_is_gone(
    project: Project, local_server: LocalServer
) -> None:
    three_turns(project, local_server)
    session = project.session_files()[0]
    lines = [json.loads(line) for line in session.read_text().splitlines()]
    for record in lines:  # the session happened 40 days ago
        if "timestamp" in record and record.get("type") != "session":
            record["timestamp"] = "2000-01-01T00:00:00.000Z"
    session.write_text("".join(json.dumps(r) + "\n" for r in lines))
    reports = prune_all(project.home, 30, now=time.time() + 40 * 86_400)
    assert [r.removed for r in reports] and all(r.kept == 0 for r in reports)
    listing = rewind(project)
    assert "  1. turn 1  (snapshot pruned after 30 days: conversation only)" in listing.stdout
    gone = rewind(project, "--to", "2", "--yes")
    assert gone.returncode == 1
    assert "the snapshot of turn 2 is gone: it was pruned" in gone.stderr and "checkpoints.keepDays" in gone.stderr
    assert "--conversation" in gone.stderr
    assert (project.cwd / "notes.txt").read_text() == "three\n"
    moved = rewind(project, "--to", "2", "--conversation", "--yes")
    assert moved.returncode == 0, moved.stderr
