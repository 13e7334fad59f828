"""``heron batch --executor local`` end to end: a real subprocess against a scripted
OpenAI-compatible server on 127.0.0.1 (two requests and one ``read`` per task)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.batch.support import (
    ScriptedServer,
    batch_args,
    batch_env,
    make_project,
    read_results,
    run_batch,
    write_tasks,
)
from tests.support.http_server import Recorded, json_reply


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


def test_fifty_tasks_give_fifty_results_and_a_rerun_does_nothing(tmp_path: Path, server: ScriptedServer) -> None:
    project = make_project(tmp_path)
    ids = write_tasks(tmp_path / "tasks.jsonl", project, 50)
    args = batch_args(tmp_path / "tasks.jsonl", tmp_path / "out", server, "--workers", "8")
    done = run_batch(args, batch_env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr
    results = read_results(tmp_path / "out")
    assert sorted(r["id"] for r in results) == ids
    for result in results:
        assert result["status"] == "ok" and result["answer"] == f"done: task {result['id']}"
        assert result["attempts"] == 1 and result["usage"]["total_tokens"] == 103
        session = [json.loads(line) for line in Path(result["session"]).read_text().splitlines()]
        assert session[0]["type"] == "session" and session[0]["cwd"] == result["workdir"]
        assert any(e.get("message", {}).get("role") == "toolResult" for e in session)
    assert len(server.times) == 100 and sorted(server.prompts) == [f"task {i}" for i in ids]
    assert sorted(p.name for p in project.iterdir()) == ["task.txt"]  # the original is untouched
    assert "[50/50]" in done.stderr

    started = time.monotonic()
    again = run_batch(args, batch_env(tmp_path), tmp_path)
    assert again.returncode == 0 and "nothing to do: all 50 tasks" in again.stderr
    assert time.monotonic() - started < 30 and len(server.times) == 100
    assert len(read_results(tmp_path / "out")) == 50


def test_timeouts_and_failed_requests_are_results(tmp_path: Path, server: ScriptedServer) -> None:
    project = make_project(tmp_path)
    lines = [
        {"id": "slow", "prompt": "slow one", "cwd": str(project), "timeout_s": 0.5},
        {"id": "bad", "prompt": "refused one", "cwd": str(project), "settings": {"retry": {"enabled": False}}},
        {"id": "fine", "prompt": "fine one", "cwd": str(project)},
    ]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))

    def script(request: Recorded, count: int) -> None:
        text = request.body.decode()
        if "slow one" in text:
            time.sleep(3)

    server.on_request = script
    original = server._respond

    def respond(request: Recorded):  # type: ignore[no-untyped-def]
        if "refused one" in request.body.decode():
            return json_reply(400, {"error": {"message": "bad request for this task", "type": "invalid_request"}})
        return original(request)

    server.server.responder = respond
    done = run_batch(batch_args(tmp_path / "tasks.jsonl", tmp_path / "out", server), batch_env(tmp_path), tmp_path)
    assert done.returncode == 1, done.stderr
    by_id = {r["id"]: r for r in read_results(tmp_path / "out")}
    assert by_id["slow"]["status"] == "timeout" and "0.5 s" in by_id["slow"]["error"]
    assert by_id["bad"]["status"] == "error" and "bad request for this task" in by_id["bad"]["error"]
    assert by_id["fine"]["status"] == "ok"
    assert "1 failed" not in done.stderr and "2 failed" in done.stderr


def wait_for_results(out: Path, count: int, process: subprocess.Popen[str], limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while len(read_results(out)) < count:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no results in time"
        time.sleep(0.05)


def interrupt_and_resume(tmp_path: Path, server: ScriptedServer, *extra: str) -> None:
    """Ctrl+C (SIGINT to the process group, as a terminal sends it) after some results:
    exit 130 and whole lines; the rerun runs exactly the tasks without a line."""
    project = make_project(tmp_path)
    ids = write_tasks(tmp_path / "tasks.jsonl", project, 30)
    server.delay = 0.1
    args = batch_args(tmp_path / "tasks.jsonl", tmp_path / "out", server, "--workers", "2", *extra)
    process = subprocess.Popen(
        args,
        env=batch_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for_results(tmp_path / "out", 5, process)
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert "stopping" in err
    first = read_results(tmp_path / "out")
    assert 5 <= len(first) < 30
    finished = {r["id"] for r in first}
    prompts_before = len(server.prompts)
    done = run_batch(args, batch_env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{len(finished)} of 30 tasks already done" in done.stderr
    results = read_results(tmp_path / "out")
    assert sorted(r["id"] for r in results) == ids  # one line per task, none twice
    rerun = server.prompts[prompts_before:]
    assert sorted(rerun) == sorted(f"task {i}" for i in ids if i not in finished)


def test_ctrl_c_keeps_what_finished_and_the_rerun_runs_only_the_rest(tmp_path: Path, server: ScriptedServer) -> None:
    interrupt_and_resume(tmp_path, server)


def test_the_users_extensions_run_in_batch_tasks(tmp_path: Path, server: ScriptedServer) -> None:
    (tmp_path / "extensions").mkdir()  # HERON_HOME is tmp_path (batch_env)
    (tmp_path / "extensions" / "guard.py").write_text(
        "def register(api):\n"
        "    @api.before_tool_call\n"
        "    def no_reads(call):\n"
        "        return api.block('reads are off in this batch') if call.tool_name == 'read' else None\n"
    )
    project = make_project(tmp_path)
    write_tasks(tmp_path / "tasks.jsonl", project, 2)
    done = run_batch(batch_args(tmp_path / "tasks.jsonl", tmp_path / "out", server), batch_env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr
    for result in read_results(tmp_path / "out"):
        assert result["status"] == "ok"
        entries = [json.loads(line) for line in Path(result["session"]).read_text().splitlines()]
        tool_results = [e["message"] for e in entries if e.get("message", {}).get("role") == "toolResult"]
        assert tool_results and tool_results[0]["isError"] is True
        assert "Blocked by extension guard: reads are off in this batch" in json.dumps(tool_results[0]["content"])


def test_an_error_quoting_the_key_is_written_redacted(tmp_path: Path, server: ScriptedServer) -> None:
    key = "sk-batch-secret-0123456789abcdef"
    project = make_project(tmp_path)
    line = {"id": "bad", "prompt": "refused one", "cwd": str(project), "settings": {"retry": {"enabled": False}}}
    (tmp_path / "tasks.jsonl").write_text(json.dumps(line) + "\n")
    server.server.responder = lambda request: json_reply(
        401, {"error": {"message": f"Incorrect API key provided: {key}", "type": "invalid_request"}}
    )
    args = [*batch_args(tmp_path / "tasks.jsonl", tmp_path / "out", server), "--api-key", key]
    done = run_batch(args, batch_env(tmp_path), tmp_path)
    assert done.returncode == 1
    (result,) = read_results(tmp_path / "out")
    assert result["status"] == "error" and "Incorrect API key provided: [redacted]" in result["error"]
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file() and key in p.read_text(errors="replace")]
    assert written == [] and key not in done.stdout + done.stderr
