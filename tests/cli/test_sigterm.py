"""SIGTERM ends heron promptly and in order (docs/rpc.md, "Ending"; docs/memory.md,
"Reflection"): the real command against a scripted server, as an editor or a script stops it.

What runs is aborted as an abort aborts it: a memory reflection that already wrote is
dropped with its writes put back and a ledger record; a prompt stuck on its model is
ended. The exit status is 143, the session file is whole, and the next ``-p --continue``
goes on from it. Deadlines are generous (the machine is loaded): an orderly end takes a
second or two, Python's own SIGTERM none at all - what is checked is what is left behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pexpect
import pytest

from heron.cli.modes import termination
from heron.cli.modes.termination import Termination
from heron.session.store import SessionStore
from tests.cli.test_memory_e2e import TIMEOUT, heron, interactive, log, make_home, records, run
from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.memory_server import REFLECT_MARK, MemoryServer, seed_notes
from tests.support.sse import openai_reply

TERM_EXIT = 143  # 128 + SIGTERM, what a shell reports
DEADLINE = 30.0  # from the signal to the exit: an orderly end takes a second or two


def files_of(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): p.read_text() for p in sorted(directory.rglob("*")) if p.is_file()}


def session_files(home: Path) -> list[Path]:
    return sorted((home / "sessions").glob("*/*.jsonl"))


def assert_readable(home: Path, cwd: Path, env: dict[str, str]) -> SessionStore:
    """The one session file opens without a warning, and ``heron sessions`` lists it."""
    [path] = session_files(home)
    store = SessionStore.open(path, read_only=True)
    assert not store.warnings, store.warnings
    assert store.header is not None and store.header.id in run(cwd, env, "sessions").stdout
    return store


@pytest.fixture
def memory_server() -> Any:
    made: list[MemoryServer] = []

    def make(memory: Path) -> MemoryServer:
        server = MemoryServer(writes=memory, hang_after_writes=True)
        server.release_reflection.clear()  # the first reflection request waits for the test
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


def reflect_then_terminate(tmp_path: Path, make: Any, args: list[str], feed: str | None) -> dict[str, Any]:
    """A session whose turn wrote a note; its ``end`` reflection writes, then hangs on its
    second request; SIGTERM then. What the test checks afterwards."""
    memory = tmp_path / "proj" / "memory"
    server = make(memory)
    cwd, home, env = make_home(tmp_path, server.url, {"memory": {"directory": str(memory)}}, window=64_000)
    seed_notes(memory)
    out_path, err_path = tmp_path / "out", tmp_path / "err"
    with out_path.open("w") as out, err_path.open("w") as err:
        stdin = subprocess.PIPE if feed is not None else subprocess.DEVNULL
        child = subprocess.Popen(
            [*heron(), "--model", "local/m", *args], cwd=cwd, env=env, stdin=stdin, stdout=out, stderr=err
        )
        if feed is not None:
            assert child.stdin is not None
            child.stdin.write(feed.encode())
            child.stdin.close()  # the input ends: the end pass starts
        try:
            assert server.reflection_asked.wait(TIMEOUT)
            before = files_of(memory)  # after the turn's note, before the pass
            assert "deploy.md" in before
            server.release_reflection.set()
            assert server.reflection_wrote.wait(TIMEOUT)
            assert files_of(memory) != before  # the pass did write (and now hangs)
            child.send_signal(signal.SIGTERM)
            code = child.wait(timeout=DEADLINE)
        finally:
            if child.poll() is None:
                child.kill()
    return {
        "code": code,
        "out": out_path.read_text(),
        "err": err_path.read_text(),
        "before": before,
        "after": files_of(memory),
        "cwd": cwd,
        "home": home,
        "env": env,
    }


def assert_dropped(result: dict[str, Any]) -> None:
    assert result["code"] == TERM_EXIT, result["err"][-3000:]
    assert result["after"] == result["before"]  # the pass's writes put back
    dropped = [r for r in records(result["home"]) if r.get("dropped")]
    assert len(dropped) == 1 and "cut short" in dropped[0]["recover"], records(result["home"])
    assert [c["reason"] for c in log(result["cwd"], result["env"])] == ["tool call", "outside heron"]
    assert_readable(result["home"], result["cwd"], result["env"])


def test_sigterm_drops_the_rpc_end_reflection_with_its_writes_put_back(tmp_path: Path, memory_server: Any) -> None:
    prompt = json.dumps({"id": 1, "type": "prompt", "message": "remember how to deploy"}) + "\n"
    result = reflect_then_terminate(tmp_path, memory_server, ["--mode", "rpc"], prompt)
    assert_dropped(result)
    events = [json.loads(line) for line in result["out"].splitlines()]
    warnings = [e["message"] for e in events if e.get("type") == "context_warning"]
    assert len(warnings) == 1 and "reflection dropped: cut short" in warnings[0]
    assert [e["stop_reason"] for e in events if e.get("type") == "run_end"] == ["stop"]
    assert "SIGTERM" in result["err"]


@pytest.mark.parametrize("mode", ["print", "json"])
def test_sigterm_drops_the_end_reflection_of_a_one_shot_run(tmp_path: Path, memory_server: Any, mode: str) -> None:
    result = reflect_then_terminate(tmp_path, memory_server, ["--mode", mode, "-p", "remember how to deploy"], None)
    assert_dropped(result)
    assert "pytest, not nose" in result["out"]  # the answer was out before the pass
    if mode == "print":  # json mode's events end with run_end: the ledger record says it (above)
        assert "memory: reflection dropped: cut short" in result["err"]


class HangingTurn:
    """A model that, to a prompt saying "wait for me", writes a note in ``memory`` and then
    never answers; any other prompt it answers."""

    def __init__(self, memory: Path) -> None:
        self.memory = memory
        self.asked = threading.Event()
        self.bodies: list[dict[str, Any]] = []
        self.local = LocalServer(responder=self)

    def __call__(self, request: Recorded) -> Reply:
        if request.method != "POST" or not request.body:  # a probe of the server
            return json_reply(404, {"error": {"message": "Not Found", "type": "not_found_error"}})
        body = request.json()
        self.bodies.append(body)
        last = body["messages"][-1]
        if last["role"] == "tool":
            self.asked.set()
            return Reply(stall="silent")
        if last["content"] == "wait for me":
            write = {"path": str(self.memory / "deploy.md"), "content": "deploy with make ship\n"}
            return openai_reply("", [("w1", "write", write)])
        return openai_reply("Going on.")


def test_sigterm_ends_a_stuck_rpc_prompt_and_the_next_process_continues(tmp_path: Path) -> None:
    """The prompt's turn wrote a note and then hangs: no ``end`` reflection starts after SIGTERM."""
    memory = tmp_path / "proj" / "memory"
    server = HangingTurn(memory)
    try:
        cwd, home, env = make_home(tmp_path, f"{server.local.url}/v1", {"memory": {"directory": str(memory)}})
        seed_notes(memory)
        command = [*heron(), "--model", "local/m", "--mode", "rpc"]
        out_path = tmp_path / "out"
        with out_path.open("w") as out:
            child = subprocess.Popen(
                command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.PIPE
            )
            assert child.stdin is not None and child.stderr is not None
            child.stdin.write(json.dumps({"id": 1, "type": "prompt", "message": "wait for me"}).encode() + b"\n")
            child.stdin.flush()  # stdin stays open: an editor that is still there
            try:
                assert server.asked.wait(TIMEOUT)
                child.send_signal(signal.SIGTERM)
                code = child.wait(timeout=DEADLINE)
            finally:
                if child.poll() is None:
                    child.kill()
                child.stdin.close()
            err = child.stderr.read().decode()
            child.stderr.close()
        assert code == TERM_EXIT, err[-3000:]
        events = [json.loads(line) for line in out_path.read_text().splitlines()]
        assert [e["stop_reason"] for e in events if e.get("type") == "run_end"] == ["aborted"]
        assert not any(REFLECT_MARK in json.dumps(body) for body in server.bodies)  # no end pass started
        assert not [r for r in records(home) if r.get("reflection")]
        assert [c["reason"] for c in log(cwd, env)] == ["tool call", "outside heron"]  # the note is kept
        store = assert_readable(home, cwd, env)
        texts = [json.dumps(e.to_json_dict()) for e in store.entries()]
        assert any("wait for me" in t for t in texts)

        done = run(cwd, env, "--model", "local/m", "-p", "--continue", "go on")
        assert "Going on." in done.stdout
        sent = [m["content"] for m in server.bodies[-1]["messages"] if m["role"] in ("user", "tool")]
        assert sent[0] == "wait for me" and "deploy.md" in str(sent[1]) and sent[-1] == "go on", sent
    finally:
        server.local.close()


def test_a_second_sigterm_exits_at_once_and_the_first_aborts_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The handler itself, with real signals to this process (``os._exit`` recorded, not run)."""
    calls: list[str] = []
    exits: list[int] = []
    monkeypatch.setattr(termination.os, "_exit", exits.append)
    watch = type("Watch", (), {"terminate": lambda self: calls.append("no end pass")})()
    session: Any = type("Session", (), {"control": type("C", (), {"memory_watch": watch})(), "abort": None})()
    session.abort = lambda: calls.append("session")

    async def until(done: Any) -> None:
        deadline = time.monotonic() + TIMEOUT
        while not done() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    async def main() -> Termination:
        ending = Termination(session, lambda: calls.append("run"))
        ending.stop()  # before any signal: nothing
        ending.install()
        try:
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)  # never this process's end
            os.kill(os.getpid(), signal.SIGTERM)
            await until(lambda: calls)
            assert calls == ["no end pass", "run", "session"] and not exits
            os.kill(os.getpid(), signal.SIGTERM)
            await until(lambda: exits)
        finally:
            ending.remove()
        return ending

    ending = asyncio.run(main())
    assert exits == [143]
    assert ending.exit_code(0) == ending.exit_code(1) == 143
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


@pytest.mark.parametrize("when", ["at the input line", "during the end reflection"])
def test_sigterm_leaves_the_interactive_mode_in_order(tmp_path: Path, when: str) -> None:
    """At the input line after a prompt that wrote a note: no ``end`` pass starts. During
    the ``end`` pass (after Ctrl+D, hanging): it is dropped. Exit status 143 either way."""
    servers: list[MemoryServer] = []
    try:
        child, cwd, home, env = interactive(tmp_path, servers, hang=True, leave=when != "at the input line")
        try:
            if when != "at the input line":
                assert servers[0].reflection_asked.wait(TIMEOUT)
            child.kill(signal.SIGTERM)
            child.expect(pexpect.EOF, timeout=DEADLINE)
            child.close()
        finally:
            if child.isalive():
                child.terminate(force=True)
        assert child.exitstatus == TERM_EXIT, child.logfile_read.getvalue()[-3000:]
        dropped = [r for r in records(home) if r.get("dropped")]
        if when == "at the input line":
            assert not servers[0].reflection_asked.is_set() and not dropped
        else:
            assert len(dropped) == 1 and "cut short" in dropped[0]["recover"]
        assert [c["reason"] for c in log(cwd, env)] == ["tool call", "outside heron"]
        assert (cwd / "memory" / "nose.md").exists()
        assert_readable(home, cwd, env)
    finally:
        for server in servers:
            server.close()


def test_a_programs_own_sigterm_handler_is_kept() -> None:
    """heron's ``main`` called by a program with its own SIGTERM handler leaves it alone."""

    def own(signum: int, frame: Any) -> None:
        raise AssertionError("not sent")

    async def main() -> None:
        ending = Termination(Any, lambda: None)  # type: ignore[arg-type]
        ending.install()
        assert signal.getsignal(signal.SIGTERM) is own
        ending.remove()

    previous = signal.signal(signal.SIGTERM, own)
    try:
        asyncio.run(main())
        assert signal.getsignal(signal.SIGTERM) is own
    finally:
        signal.signal(signal.SIGTERM, previous)
