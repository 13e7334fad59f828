"""A goal set before any prompt (``heron -p "/goal …"``, which asks no model) starts the
session file, so the next ``--continue`` finds the session and its goal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _heron(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    base = [sys.executable, "-m", "heron.cli.main", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    return subprocess.run(
        [*base, *args], cwd=project, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )


def test_a_goal_set_first_is_there_for_continue(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    first = _heron(project, home, "-p", "/goal ship the parser behind a flag")
    assert first.returncode == 0, first.stderr
    assert len(list(home.rglob("*.jsonl"))) == 1
    shown = _heron(project, home, "-c", "-p", "/goal")
    assert shown.returncode == 0, shown.stderr
    assert "ship the parser behind a flag" in shown.stdout
