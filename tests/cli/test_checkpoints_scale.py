"""Issue 23 acceptance: checkpoints stay complete when they stop costing the project's size.

Six ``heron -p`` turns (a new process each, ``--continue`` after the first) in a generated
repository of ~2,000 files whose heron home lies inside the project, with either backend:
edits by the write and edit tools and by bash, a read-only turn and a text-only one. Then
``heron rewind --to 2 --dry-run`` lists exactly the files turns 2-6 changed (not heron's home,
not ``node_modules``), and ``--to 2`` brings them back. The benchmark
(``bench/checkpoint_scale.py``) runs the same kind of session in 20,000 files.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_control_e2e import bash, rewind
from tests.cli.test_print_json_e2e import Project, openai_args, project
from tests.cli.test_rewind_backends import HAVE_GIT, path_without_git
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]

FILES = 2_000


def generate(cwd: Path) -> None:
    for n in range(FILES):
        folder = cwd / "src" / f"pkg{n // 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{n:04d}.py").write_text(f"VALUE = {n}\n")
    modules = cwd / "node_modules" / "dep"
    modules.mkdir(parents=True)
    (modules / "index.js").write_text("module.exports = 1\n")
    if HAVE_GIT:  # a real repository: its .git is never snapshotted nor touched
        quiet = {"check": True, "cwd": cwd, "capture_output": True}
        subprocess.run(["git", "init", "-q"], **quiet)  # type: ignore[call-overload]
        subprocess.run(["git", "add", "-A"], **quiet)  # type: ignore[call-overload]
        ident = ["-c", "user.name=t", "-c", "user.email=t@localhost"]
        subprocess.run(["git", *ident, "commit", "-qm", "generated"], **quiet)  # type: ignore[call-overload]


TURNS: list[list[tuple[str, str, dict[str, object]]]] = [
    [("w1", "write", {"path": "notes.md", "content": "first\n"})],  # turn 1
    [bash("b2", "echo changed >> src/pkg01/mod0100.py && echo x >> node_modules/dep/index.js")],  # turn 2
    [("r3", "read", {"path": "src/pkg02/mod0200.py"})],  # turn 3: read-only
    [("e4", "edit", {"path": "notes.md", "old_text": "first", "new_text": "fourth"})],  # turn 4
    [bash("b5", "rm src/pkg03/mod0300.py && echo new > src/pkg03/added.py")],  # turn 5
    [],  # turn 6: text only
]


@pytest.mark.parametrize(
    "backend", [pytest.param("git", marks=pytest.mark.skipif(not HAVE_GIT, reason="git is not installed")), "dulwich"]
)
def test_six_turns_in_a_large_repository_rewind_to_turn_2_lists_and_restores_exactly_what_changed(
    project: Project, local_server: LocalServer, tmp_path: Path, backend: str
) -> None:
    generate(project.cwd)
    state = project.cwd / ".heron-state"  # heron's home inside the project, as when heron runs in ~
    if project.home.exists():
        shutil.rmtree(project.home)
    project.env["HERON_HOME"] = str(state)
    if backend == "dulwich":
        project.env["PATH"] = path_without_git(tmp_path)
    for n, calls in enumerate(TURNS):
        local_server.queue(*(openai_reply("", [call]) for call in calls), openai_reply(f"done {n + 1}"))
        result = project.run(*openai_args(local_server), *(["-c"] if n else []), "-p", f"turn {n + 1}")
        assert result.code == 0, result.err
        assert "checkpoint not taken" not in result.err, result.err
    assert (project.cwd / "notes.md").read_text() == "fourth\n"

    dry = rewind(project, "--to", "2", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    listed = sorted(
        line.split()[:2][1] for line in dry.stdout.splitlines() if line.split()[:1] in (["restore"], ["delete"])
    )
    assert listed == ["notes.md", "src/pkg01/mod0100.py", "src/pkg03/added.py", "src/pkg03/mod0300.py"], dry.stdout
    assert ".heron-state" not in dry.stdout and "node_modules" not in dry.stdout

    done = rewind(project, "--to", "2", "--code", "--yes")
    assert done.returncode == 0, done.stderr
    assert (project.cwd / "notes.md").read_text() == "first\n"
    assert (project.cwd / "src/pkg01/mod0100.py").read_text() == "VALUE = 100\n"
    assert (project.cwd / "src/pkg03/mod0300.py").read_text() == "VALUE = 300\n"
    assert not (project.cwd / "src/pkg03/added.py").exists()
    assert (project.cwd / "node_modules/dep/index.js").read_text() == "module.exports = 1\nx\n"  # not heron's to rewind
    assert any(state.joinpath("sessions").rglob("*.jsonl"))  # heron's own files stay where they were
