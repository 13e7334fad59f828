"""One contract for how a run ends, whatever drives it.

The same scripted OpenAI-compatible server and the same four faults - a server error that
outlasts the retries, a session that cannot be saved (a full disk), an abort while a
slow bash call runs, an overflow compaction cannot cure - are driven through the real
``heron`` in print, json, rpc and ACP mode. Each mode shows the end in its own shape (an
exit code and a line on stderr, json's last event, rpc's ``run_end`` and
``agent_settled``, ACP's stop reason or error); read back into one :class:`Seen`, they must
all say the same: the stop reason, the error kind, the explanation, and what the session
file kept.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from acp import RequestError, text_block

from heron.coding.outcome import OVERFLOW_HINT
from tests.cli.acp_wire import Editor, heron_acp
from tests.cli.test_print_json_e2e import Project, heron_command, openai_args, project
from tests.session.save_faults import SITECUSTOMIZE, message_lines, torn_lines
from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.sse import openai_reply

TIMEOUT = 120
PROMPT = "Do the task."
FAULTS = ["server_error", "disk_full", "abort", "overflow"]
MODES = ["print", "json", "rpc", "acp"]
CRASH = "the model crashed"
TOO_LONG = "context length exceeded"
PADDING = "x" * 400
DISK_BYTES = 6000  # the session file's room: the run starts, then a write fails


@dataclass
class Seen:
    """A mode's end of the run, in common terms. ``kind`` is None where the mode cannot
    show one (print mode has only its exit code and stderr)."""

    stop: str  # "stop", "aborted" or "error"
    kind: str | None
    explanation: str | None


def script(fault: str, started: Path) -> Callable[[Recorded], Reply]:
    """The model for ``fault``: what it answers each request (summary requests included)."""

    def reply(request: Recorded) -> Reply:
        messages = request.json().get("messages", [])
        results = sum(1 for m in messages if m.get("role") == "tool")
        if fault == "server_error":
            return json_reply(500, {"error": {"message": CRASH, "type": "server_error"}})
        if fault == "overflow":
            error = {"message": TOO_LONG, "type": "invalid_request_error", "code": "context_length_exceeded"}
            return json_reply(400, {"error": error})
        if fault == "abort":
            if results:
                return openai_reply("Stopped waiting.")
            command = f"touch {started} && sleep 60"
            return openai_reply("Waiting.", [("call_wait", "bash", {"command": command})])
        n = results + 1  # disk_full: one padded step after another, far past the disk's room
        if n > 40:
            return openai_reply("All steps done.")
        command = f"echo {n} >> ran.txt # {PADDING}"
        return openai_reply(f"step {n}", [(f"call_{n}", "bash", {"command": command})])

    return reply


@dataclass
class Case:
    project: Project
    server: LocalServer
    fault: str
    started: Path
    env: dict[str, str]

    def session_file(self) -> Path:
        files = sorted((self.project.home / "sessions").glob("*/*.jsonl"))
        assert len(files) == 1, files
        return files[0]

    def interrupt_when_started(self, interrupt: Callable[[], None]) -> None:
        """For the abort: once the slow bash call is running, interrupt the mode its own way."""
        if self.fault != "abort":
            return
        deadline = time.monotonic() + TIMEOUT
        while not self.started.exists():
            assert time.monotonic() < deadline, "the bash call never started"
            time.sleep(0.05)
        time.sleep(0.3)
        interrupt()


@pytest.fixture
def case(request: pytest.FixtureRequest, project: Project, tmp_path: Path) -> Iterator[Case]:
    fault = request.param
    started = tmp_path / "started"
    server = LocalServer(responder=script(fault, started))
    project.write_settings({"retry": {"maxRetries": 1, "baseDelayMs": 1, "maxDelayMs": 5}})
    env = dict(project.env)
    if fault == "disk_full":
        shim = tmp_path / "shim"
        shim.mkdir()
        (shim / "sitecustomize.py").write_text(SITECUSTOMIZE)
        path = os.environ.get("PYTHONPATH")
        env.update(PYTHONPATH=str(shim) + (os.pathsep + path if path else ""), HERON_TEST_DISK_BYTES=str(DISK_BYTES))
    try:
        yield Case(project, server, fault, started, env)
    finally:
        server.close()


def spawn(case: Case, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*heron_command(), *openai_args(case.server), *args],
        cwd=case.project.cwd,
        env=case.env,
        stdin=subprocess.PIPE if "rpc" in args else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stderr_explanation(err: str, code: int) -> str | None:
    """Print and json mode end a failed run with ``heron: <explanation>`` (possibly several
    lines), after any retry notices."""
    if code == 0:
        return None
    lines = err.rstrip("\n").split("\n")
    start = max(i for i, line in enumerate(lines) if line.startswith("heron: ") and "retrying in" not in line)
    return "\n".join(lines[start:])[len("heron: ") :]


def drive_print(case: Case, json_mode: bool = False) -> Seen:
    child = spawn(case, *(["--mode", "json"] if json_mode else []), "-p", PROMPT)
    case.interrupt_when_started(lambda: child.send_signal(signal.SIGINT))
    out, err = child.communicate(timeout=TIMEOUT)
    explanation = stderr_explanation(err, child.returncode)
    assert "Traceback" not in err, err
    if not json_mode:
        stop = "stop" if child.returncode == 0 else ("aborted" if explanation == "aborted" else "error")
        return Seen(stop, None, explanation)
    end = json.loads(out.splitlines()[-1])
    assert end["type"] == "run_end", end
    assert child.returncode == (0 if end["stop_reason"] == "stop" else 1)
    if end["stop_reason"] == "error":  # stderr says what run_end says
        assert explanation == end["error"], (explanation, end)
    return Seen(end["stop_reason"], end["error_kind"], end["error"] or explanation)


def drive_rpc(case: Case) -> Seen:
    child = spawn(case, "--mode", "rpc")
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(json.dumps({"id": "p", "type": "prompt", "message": PROMPT}) + "\n")
    child.stdin.flush()

    def abort() -> None:
        assert child.stdin is not None
        child.stdin.write(json.dumps({"id": "a", "type": "abort"}) + "\n")
        child.stdin.flush()

    case.interrupt_when_started(abort)
    events = []
    for line in child.stdout:
        events.append(json.loads(line))
        if events[-1].get("type") == "agent_settled":
            break
    child.stdin.close()
    child.wait(timeout=TIMEOUT)
    end = next(e for e in events if e.get("type") == "run_end")
    settled = events[-1]
    assert end["id"] == "p" and settled["type"] == "agent_settled", events[-3:]
    assert settled["aborted"] == (end["stop_reason"] == "aborted")
    return Seen(end["stop_reason"], end["error_kind"], end["error"] or ("aborted" if settled["aborted"] else None))


async def _drive_acp(case: Case) -> Seen:
    project = Project(case.project.cwd, case.project.home, case.env)
    async with heron_acp(project, case.server, Editor(), env=case.env) as (conn, _proc, _wire):
        new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
        sid = new.session_id
        run = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(PROMPT)]))
        if case.fault == "abort":
            while not case.started.exists():
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)
            await conn.cancel(session_id=sid)
        try:
            reply = await asyncio.wait_for(run, TIMEOUT)
        except RequestError as exc:
            data = exc.data or {}
            return Seen("error", data.get("errorKind"), data.get("message"))
    stop = {"end_turn": "stop", "cancelled": "aborted"}[reply.stop_reason]
    return Seen(stop, None, "aborted" if stop == "aborted" else None)


def drive(mode: str, case: Case) -> Seen:
    if mode in ("print", "json"):
        return drive_print(case, json_mode=mode == "json")
    if mode == "rpc":
        return drive_rpc(case)
    return asyncio.run(_drive_acp(case))


def expected(case: Case) -> Seen:
    if case.fault == "server_error":
        return Seen("error", "transient", f"500 server_error: {CRASH} ({case.server.url})")
    if case.fault == "overflow":
        refused = f"400 invalid_request_error (context_length_exceeded): {TOO_LONG}"
        return Seen("error", "overflow", f"{refused}\n{OVERFLOW_HINT}")
    if case.fault == "abort":
        return Seen("aborted", None, "aborted")
    full = f"cannot save the session (appending an entry): {case.session_file()}: [Errno 28] No space left on device"
    return Seen("error", "save_failed", full)


def check_saved(case: Case) -> None:
    """What the session file kept is the same whatever the mode."""
    path = case.session_file()
    messages = [m["message"] for m in message_lines(path)]
    assert messages[0]["role"] == "user"
    last = messages[-1]
    if case.fault == "server_error":
        assert last["role"] == "assistant" and last["stopReason"] == "error" and last["errorKind"] == "transient"
    elif case.fault == "overflow":
        assert last["role"] == "assistant" and last["stopReason"] == "error" and last["errorKind"] == "overflow"
    elif case.fault == "abort":
        # the call, its result (the command was stopped), and at most the aborted next answer
        call = next(i for i, m in enumerate(messages) if m["role"] == "assistant")
        assert messages[call]["content"][-1]["name"] == "bash"
        result = messages[call + 1]
        assert result["role"] == "toolResult" and result["toolCallId"] == "call_wait" and result["isError"]
        assert all(m["role"] == "assistant" and m["stopReason"] == "aborted" for m in messages[call + 2 :])
    else:  # a full disk: nothing torn, and no tool ran whose call was not saved
        assert torn_lines(path) == 0
        ran_file = case.project.cwd / "ran.txt"
        ran = len(ran_file.read_text().splitlines()) if ran_file.exists() else 0
        results = sum(1 for m in messages if m["role"] == "toolResult")
        assert results <= ran <= results + 1, (results, ran)
        assert 0 < ran < 40


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", FAULTS, indirect=True)
def test_every_mode_ends_a_run_the_same_way(mode: str, case: Case) -> None:
    assert project is not None  # the fixture the case builds on
    seen = drive(mode, case)
    want = expected(case)
    assert seen.stop == want.stop, (mode, seen)
    if mode != "print":  # print mode shows no kind, only exit code 1 and the explanation
        assert seen.kind == want.kind, (mode, seen)
    assert seen.explanation == want.explanation, (mode, seen)
    check_saved(case)


def test_the_explanation_has_no_key(project: Project, local_server: LocalServer) -> None:
    """A server error that echoes the key it was sent: the explanation every mode shows
    carries no key."""
    key = "sk-test-" + "k" * 32
    local_server.fallback = json_reply(401, {"error": {"message": f"bad key {key}", "type": "auth"}})
    result = project.run(*openai_args(local_server), "--api-key", key, "--mode", "json", "-p", PROMPT)
    end = result.lines()[-1]
    assert result.code == 1 and end["type"] == "run_end" and end["error_kind"] == "auth"
    assert key not in result.out and key not in result.err
    assert re.search(r"bad key", end["error"])
