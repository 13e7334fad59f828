"""What a newcomer sees when heron cannot start: no key and no model, an unknown model, a
key missing for the chosen provider, no task. Each "not configured" case is exit code 3
(a bad command line is 2) with a message that gives the cause first and says what to do,
never a traceback, and nothing on stdout (a script reading it gets nothing half-done).

Run as real subprocesses with an environment holding no ``*_API_KEY`` and a
``HERON_HOME`` without settings, so the machine's own configuration cannot leak in.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_print_json_e2e import Result, heron_command

TIMEOUT = 120


def run(tmp_path: Path, *args: str, home: Path | None = None) -> Result:
    home = home or tmp_path / "empty-home"
    home.mkdir(exist_ok=True)
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    done = subprocess.run(
        [*heron_command(), *args],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.mark.parametrize(
    "args", [("-p", "fix the bug"), ("--mode", "json", "-p", "fix the bug"), ()], ids=["print", "json", "interactive"]
)
def test_no_key_and_no_model_prints_setup_help(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = run(tmp_path, *args)
    assert result.code == 3
    assert result.out == ""
    assert "Traceback" not in result.err
    for needed in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "--base-url", "models.json", "settings.json"):
        assert needed in result.err, needed
    # The paths shown are the ones this heron reads.
    assert str(tmp_path / "empty-home" / "models.json") in result.err
    # It wrote nothing: no session for a run that never started.
    assert list((tmp_path / "empty-home").iterdir()) == []


def test_broken_models_json_is_reported_with_the_help(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.json").write_text('{"providers": {"local": {"api": "no-such-api", "models": [{"id": "m"}]}}}')
    result = run(tmp_path, "-p", "hi", home=home)
    assert result.code == 3
    # the cause first (the file and what is wrong), then only a pointer to the set-up help
    first = result.err.splitlines()[0]
    assert str(home / "models.json") in first and "no-such-api" in first
    assert "--setup-help" in result.err and "export ANTHROPIC_API_KEY" not in result.err
    assert "Traceback" not in result.err


def test_unknown_model_suggests_close_names(tmp_path: Path) -> None:
    result = run(tmp_path, "--model", "anthropic/claude-sonet-4-5", "-p", "hi")
    assert result.code == 3
    assert "unknown model" in result.err and "anthropic/claude-sonnet-4-5" in result.err
    assert "Traceback" not in result.err and result.out == ""


def test_hosted_model_without_its_key(tmp_path: Path) -> None:
    result = run(tmp_path, "--model", "anthropic/claude-sonnet-4-5", "-p", "hi")
    assert result.code == 3
    assert "ANTHROPIC_API_KEY" in result.err and "--api-key" in result.err
    assert "Traceback" not in result.err and result.out == ""


def test_base_url_without_model_says_which_flag_is_missing(tmp_path: Path) -> None:
    result = run(tmp_path, "--base-url", "http://localhost:11434/v1", "-p", "hi")
    assert result.code == 3
    assert "--model" in result.err and "Traceback" not in result.err


def test_no_task_in_print_mode(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "local": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-chat", "models": [{"id": "m"}]}
                }
            }
        )
    )
    result = run(tmp_path, "-p", home=home)  # stdin is empty
    assert result.code == 2
    assert "no task" in result.err and "Traceback" not in result.err


def test_bad_settings_file_warns_but_runs_into_setup_help(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text("{not json")
    result = run(tmp_path, "-p", "hi", home=home)
    assert result.code == 3
    assert "settings.json" in result.err and "invalid JSON" in result.err
    assert "ANTHROPIC_API_KEY" in result.err
