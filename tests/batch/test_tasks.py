"""TASKS.jsonl and results.jsonl: bad input is refused with its line, nothing is lost."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from heron.coding.batch.results import ResultsLog, TaskResult
from heron.coding.batch.tasks import TaskFileError, load_tasks
from tests.batch.support import batch_env, heron_command


def write(path: Path, *lines: object) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_tasks_are_read_with_their_options(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    path = write(
        tmp_path / "t.jsonl",
        {"id": "a", "prompt": "x", "cwd": "p"},
        "",
        {
            "id": "b",
            "prompt": "y",
            "cwd": str(tmp_path / "p"),
            "model": "openai/gpt-4o",
            "settings": {"retry": {"enabled": False}},
            "tools": ["read", "ls"],
            "timeout_s": 5,
        },
    )
    a, b = load_tasks(path)
    assert a.cwd == (tmp_path / "p").resolve() and a.tools is None and a.timeout_s is None
    assert b.model == "openai/gpt-4o" and b.tools == ("read", "ls") and b.timeout_s == 5.0
    assert b.settings == {"retry": {"enabled": False}}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 1: not JSON"),
        ('["a"]', "line 1: expected a JSON object"),
        ('{"id": "a", "prompt": "x"}', '"cwd" must be a non-empty string'),
        ('{"id": "a b", "prompt": "x", "cwd": "."}', "it names files"),
        ('{"id": "a", "prompt": "x", "cwd": "missing"}', "not a directory"),
        ('{"id": "a", "prompt": "x", "cwd": ".", "tools": ["nope"]}', "unknown tool(s) nope"),
        ('{"id": "a", "prompt": "x", "cwd": ".", "timeout_s": -1}', "positive number"),
        ('{"id": "a", "prompt": "x", "cwd": ".", "colour": 1}', "unknown key(s) colour"),
        ('{"id": "a", "prompt": "x", "cwd": ".", "settings": []}', '"settings" must be an object'),
        ('{"id": "a", "prompt": "x", "cwd": ".", "settings": {"permissions": {}}}', "cannot set permissions"),
    ],
)
def test_bad_lines_are_refused_with_their_number(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(TaskFileError) as caught:
        load_tasks(write(tmp_path / "t.jsonl", line))
    assert message in str(caught.value)


def test_every_problem_is_listed_and_duplicates_found(tmp_path: Path) -> None:
    ok = {"id": "a", "prompt": "x", "cwd": "."}
    with pytest.raises(TaskFileError) as caught:
        load_tasks(write(tmp_path / "t.jsonl", ok, ok, "{", {"id": "b"}))
    text = str(caught.value)
    assert "3 bad line(s), nothing was run" in text
    assert "line 2: id 'a' already used on line 1" in text and "line 3:" in text and "line 4:" in text


def test_an_empty_or_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="no tasks"):
        load_tasks(write(tmp_path / "t.jsonl", ""))
    with pytest.raises(TaskFileError, match="cannot read"):
        load_tasks(tmp_path / "none.jsonl")


def test_the_command_refuses_a_bad_file_before_running_anything(tmp_path: Path) -> None:
    tasks = write(tmp_path / "t.jsonl", {"id": "a", "prompt": "x", "cwd": "."}, "{")
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [*heron_command(), "batch", str(tasks), "--out", str(tmp_path / "out")],
        env=batch_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "line 2: not JSON" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "0"], "--workers 0: must be at least 1"),
        (["--retries", "-1"], "--retries -1"),
        (["--ray-address", "127.0.0.1:6379"], "--ray-address needs --executor ray"),
    ],
)
def test_bad_arguments_are_refused(tmp_path: Path, args: list[str], message: str) -> None:
    tasks = write(tmp_path / "t.jsonl", {"id": "a", "prompt": "x", "cwd": "."})
    done = subprocess.run(
        [*heron_command(), "batch", str(tasks), "--out", str(tmp_path / "out"), *args],
        env=batch_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and message in done.stderr


def test_results_survive_a_torn_last_line(tmp_path: Path) -> None:
    log = ResultsLog(tmp_path)
    log.append(TaskResult(id="a", status="ok", answer="yes", attempts=2))
    log.close()
    with (tmp_path / "results.jsonl").open("a") as handle:
        handle.write('{"id": "b", "sta')  # the process died mid-write
    again = ResultsLog(tmp_path)
    assert set(again.done) == {"a"} and again.done["a"].attempts == 2
    assert "line 2 is not a result" in again.warnings[0]
    again.append(TaskResult(id="b", status="error", error="boom"))
    again.close()
    third = ResultsLog(tmp_path)
    assert set(third.done) == {"a", "b"} and third.done["b"].error == "boom"


def test_a_model_that_cannot_be_resolved_stops_the_batch_before_it_runs(tmp_path: Path) -> None:
    tasks = write(tmp_path / "t.jsonl", {"id": "a", "prompt": "x", "cwd": ".", "model": "nowhere/nothing"})
    done = subprocess.run(
        [*heron_command(), "batch", str(tasks), "--out", str(tmp_path / "out")],
        env=batch_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "model nowhere/nothing (tasks a)" in done.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()
