"""``heron -p`` (and json / rpc) when the session cannot be saved, through the real entry point.

What must hold in every case: the run stops before another tool runs, stderr holds one
line naming what failed and where (path and OS error), the exit code is not 0, and what
was saved before is exactly as it was.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.session.save_faults import (
    Sandbox,
    heron_command,
    message_lines,
    sandbox,
    torn_lines,
    unprivileged_prefix,
)
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

needs_permissions = pytest.mark.skipif(
    unprivileged_prefix() is None, reason="running as root without setpriv: permission bits are not enforced"
)


@pytest.fixture
def box() -> Sandbox:  # type: ignore[misc]
    with sandbox() as made:
        yield made


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def first_run(box: Sandbox) -> Path:
    """A saved session to continue: one tool turn and an answer."""
    result = box.run(1)
    assert result.code == 0, result.err
    files = box.session_files()
    assert len(files) == 1
    return files[0]


@pytest.mark.parametrize("budget", [2500, 9000])
def test_a_full_disk_stops_the_run_before_the_next_tool(box: Sandbox, budget: int) -> None:
    result = box.run(30, extra_env=box.disk_full_env(budget))
    line = one_line(result.err)
    assert result.code == 1
    assert line.startswith("heron: cannot save the session (")
    assert "[Errno 28] No space left on device" in line
    [path] = box.session_files()
    assert str(path) in line
    saved = message_lines(path)
    # The run stopped at the first failed append: only the message that failed is missing.
    # If that was an answer with a tool call, the tool did not run (one request more than
    # tools); if it was a tool's result, no other tool or request followed.
    assert result.tools_ran < 30 and result.requests in (result.tools_ran, result.tools_ran + 1)
    produced = 1 + result.requests + result.tools_ran
    assert len(saved) == produced - 1
    assert torn_lines(path) == 0  # the line cut short by the full disk was taken out again
    calls = [m for m in saved if m["message"]["role"] == "assistant"]
    assert len(calls) == result.tools_ran


def test_the_saved_part_of_a_full_disk_run_continues(box: Sandbox) -> None:
    box.run(30, extra_env=box.disk_full_env(6000))
    [path] = box.session_files()
    before = message_lines(path)
    result = box.run(1, "--continue")
    assert result.code == 0, result.err
    after = message_lines(path)
    assert after[: len(before)] == before
    assert [m["message"]["role"] for m in after[len(before) :]] == ["user", "assistant", "toolResult", "assistant"]


@needs_permissions
def test_a_read_only_sessions_folder(box: Sandbox) -> None:
    box.sessions.mkdir()
    box.sessions.chmod(0o555)
    result = box.run(3)
    line = one_line(result.err)
    assert result.code == 1
    assert "cannot save the session (creating the file)" in line and "[Errno 13] Permission denied" in line
    assert str(box.sessions) in line
    assert result.tools_ran == 0
    assert box.session_files() == []


@needs_permissions
def test_a_session_file_heron_may_not_write_is_refused_at_start(box: Sandbox) -> None:
    path = first_run(box)
    before = path.read_bytes()
    path.chmod(0o444)
    result = box.run(3, "--continue")
    line = one_line(result.err)
    assert result.code == 2
    what = "opening the file for writing"
    assert line == f"heron: cannot save the session ({what}): {path}: [Errno 13] Permission denied"
    assert result.requests == 0 and result.tools_ran == 0
    assert path.read_bytes() == before


@needs_permissions
def test_a_read_only_session_folder_of_a_continued_session(box: Sandbox) -> None:
    path = first_run(box)
    before = path.read_bytes()
    path.parent.chmod(0o555)  # the file can still be appended to: that is what --continue does
    result = box.run(1, "--continue")
    assert result.code == 0, result.err
    assert path.read_bytes().startswith(before)


def test_a_newer_session_version_is_refused_at_start(box: Sandbox) -> None:
    path = first_run(box)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["version"] = 99
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    before = path.read_bytes()
    result = box.run(3, "--continue")
    line = one_line(result.err)
    assert result.code == 2
    assert "version 99 is newer than this heron supports" in line and str(path) in line
    assert result.requests == 0 and result.tools_ran == 0
    assert path.read_bytes() == before


def test_json_mode_reports_the_failure_in_one_line(box: Sandbox) -> None:
    result = box.run(30, "--mode", "json", extra_env=box.disk_full_env(4000))
    assert result.code == 1
    assert "No space left on device" in one_line(result.err)
    assert result.tools_ran < 30
    events = [json.loads(line) for line in result.out.splitlines()]
    assert events[0]["type"] == "session" and events[-2]["type"] == "agent_end"
    end = events[-1]
    assert end["type"] == "run_end" and end["stop_reason"] == "error" and end["error_kind"] == "save_failed"
    assert one_line(result.err) == f"heron: {end['error']}"


def test_rpc_mode_stops_serving_and_exits_1(box: Sandbox) -> None:
    server = LocalServer()
    server.queue(
        *[openai_reply(f"step {n}", [(f"c{n}", "bash", {"command": f"echo {n} >> ran.txt"})]) for n in range(1, 31)]
    )
    commands = [{"id": 1, "type": "prompt", "message": "go"}, {"id": 2, "type": "get_state"}]
    try:
        done = subprocess.run(
            [
                *box.unprivileged,
                *heron_command(),
                "--base-url",
                server.url + "/v1",
                "--model",
                "test-model",
                "--mode",
                "rpc",
            ],
            cwd=box.cwd,
            env=dict(box.env, **box.disk_full_env(4000)),
            capture_output=True,
            text=True,
            timeout=120,
            input="\n".join(json.dumps(c) for c in commands[:1]) + "\n",
        )
    finally:
        server.close()
    assert done.returncode == 1
    assert "No space left on device" in one_line(done.stderr)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    run_end = next(e for e in events if e.get("type") == "run_end")
    assert run_end["stop_reason"] == "error" and "No space left on device" in run_end["error"]
    ran = (box.cwd / "ran.txt").read_text().splitlines() if (box.cwd / "ran.txt").exists() else []
    assert len(ran) < 30


def test_a_disk_full_before_the_first_line_leaves_no_half_file(box: Sandbox) -> None:
    result = box.run(3, extra_env=box.disk_full_env(100))
    line = one_line(result.err)
    assert result.code == 1
    assert "cannot save the session (creating the file)" in line and "No space left on device" in line
    # the file is created with the prompt, before its request: no request is sent unsaved
    assert result.tools_ran == 0 and result.requests == 0
    assert box.session_files() == []


def test_continue_works_on_a_session_poisoned_by_a_lone_surrogate(box: Sandbox) -> None:
    """Sessions written by earlier versions hold ``\\ud800`` escapes; --continue used to fail
    with UnicodeEncodeError on every run."""
    path = first_run(box)
    lines = path.read_text().splitlines()
    poisoned = [line.replace("Run the 1 steps.", "Run the \\ud800 steps.") for line in lines]
    # the prompt's message (and, written before the window probe, its journal entry)
    assert sum("\\ud800" in line for line in poisoned) >= 1
    path.write_text("\n".join(poisoned) + "\n")
    before = path.read_bytes()
    result = box.run(1, "--continue")
    assert result.code == 0, result.err
    assert "Traceback" not in result.err and result.requests == 2
    after = path.read_bytes()
    assert after.startswith(before)  # appended to, the old lines as they were
    after.decode("utf-8")  # and valid UTF-8
    from heron.session.store import SessionStore

    messages = SessionStore.open(path, read_only=True).build_context().messages
    assert messages[0].text() == "Run the \ufffd steps." and len(messages) == 8
