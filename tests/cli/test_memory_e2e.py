"""Project memory through the real ``heron`` command, as a user runs it (docs/memory.md).

A scripted chat-completions server (tests/support/memory_server.py) plays flushes,
reflections and long answers. Checked from outside: the memory history (``heron memory
log --json`` / ``revert`` / ``show`` / ``diff``), the request bodies the server received,
stderr, and the session's ledger records.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.coding.memory import memory_dir
from tests.support.memory_server import MemoryServer, seed_notes

TIMEOUT = 180
SECRET = "sk-memory-e2e-" + "Qx7" * 12
TURNS = 16  # a 16k window and ~2k-token answers: at least three compactions


def heron() -> list[str]:
    return [sys.executable, "-m", "heron.cli.main"]


def make_home(
    root: Path, url: str, settings: dict[str, Any], window: int = 16_384
) -> tuple[Path, Path, dict[str, str]]:
    cwd, home = root / "proj", root / "home"
    cwd.mkdir(parents=True)
    home.mkdir()
    local = {"baseUrl": url, "api": "openai-completions", "apiKey": "MEMORY_E2E_KEY"}
    local["models"] = [{"id": "m", "contextWindow": window, "maxTokens": 2_048}]  # type: ignore[assignment]
    (home / "models.json").write_text(json.dumps({"providers": {"local": local}}))
    (home / "settings.json").write_text(json.dumps(settings))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env.update(HERON_HOME=str(home), MEMORY_E2E_KEY=SECRET)
    return cwd, home, env


def run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*heron(), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, (args, done.stderr[-3000:])
    return done


def log(cwd: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = json.loads(run(cwd, env, "memory", "log", "--json").stdout)
    return changes


def records(home: Path) -> list[dict[str, Any]]:
    """The memory ledger records of every session of ``home``."""
    out = []
    for path in (home / "sessions").glob("*/*.jsonl"):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("customType") == "heron.ledger" and entry["data"]["kind"] == "memory":
                out.append({"recover": entry["data"]["recover"], **entry["data"].get("detail", {})})
    return out


def session_ids(home: Path) -> set[str]:
    return {json.loads(p.read_text().splitlines()[0])["id"] for p in (home / "sessions").glob("*/*.jsonl")}


def drive_rpc(cwd: Path, env: dict[str, str], prompts: list[str]) -> None:
    child = subprocess.Popen(
        [*heron(), "--model", "local/m", "--mode", "rpc"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    for n, prompt in enumerate(prompts):
        child.stdin.write(json.dumps({"id": n, "type": "prompt", "message": prompt}) + "\n")
        child.stdin.flush()
        for raw in child.stdout:
            event = json.loads(raw)
            if event.get("type") == "run_end" and event.get("id") == n:
                assert event.get("error") is None, event
                break
    child.stdin.close()
    assert child.wait(timeout=TIMEOUT) == 0


@pytest.fixture
def servers() -> Iterator[list[MemoryServer]]:
    made: list[MemoryServer] = []
    yield made
    for server in made:
        server.close()


def test_a_16k_session_commits_each_flush_and_sends_the_same_bytes_from_one_process(
    tmp_path: Path, servers: list[MemoryServer]
) -> None:
    prompts = [f"go on, part {n}" for n in range(TURNS)]
    # no background summary: when it comes back is up to the machine's load, and one rpc
    # process does not wait for it after a turn as a -p process does (docs/context.md)
    settings = {"memory": {"reflect": "off"}, "compaction": {"background": False}}
    bodies = []
    for drive in ("print", "rpc"):
        # the same paths both times (they are in the prompt): the first run's folder moved away
        if drive == "rpc":
            os.replace(tmp_path / "run", tmp_path / "print-run")
        server = MemoryServer(secret=SECRET)
        servers.append(server)
        cwd, home, env = make_home(tmp_path / "run", server.url, settings)
        if drive == "print":
            for n, prompt in enumerate(prompts):
                run(cwd, env, "--model", "local/m", "-p", prompt, *(["--continue"] if n else []))
        else:
            drive_rpc(cwd, env, prompts)
        bodies.append(server.bodies)
        flushes = [b for b, k in zip(server.bodies, server.kinds, strict=True) if k == "flush"]
        changes = log(cwd, env)
        # a commit per flush (each flush asks twice: the write, then its answer), naming the session
        assert len(changes) == len(flushes) // 2 >= 3, server.kinds
        assert {c["reason"] for c in changes} == {"flush"} and {c["session"] for c in changes} == session_ids(home)
        assert all(c["date"].endswith("Z") and len(c["files"]) == 1 for c in changes)
        # the key heron uses never reaches a note or its history
        git_dir = next(p for p in (home / "memory-history").iterdir() if p.is_dir())
        history = subprocess.run(["git", "--git-dir", str(git_dir), "log", "-p"], capture_output=True, text=True)
        memory = memory_dir(home, cwd)
        assert "[redacted]" in history.stdout and SECRET not in history.stdout
        assert all(SECRET not in p.read_text() for p in memory.iterdir())
    assert bodies[0] == bodies[1]  # a process per turn and one rpc process: the same requests

    # revert a flush's note: it goes, and the revert is itself a logged change
    target = changes[1]
    note = memory / target["files"][0]
    assert note.exists()
    assert "reverted" in run(cwd, env, "memory", "revert", target["commit"][:10]).stdout
    assert not note.exists()
    after = log(cwd, env)
    assert after[0]["reason"] == "revert" and after[0]["reverts"] == target["commit"]
    assert "-- a fact from" in run(cwd, env, "memory", "show", after[0]["commit"][:8]).stdout
    (memory / "by-hand.md").write_text("by hand\n")
    diff = run(cwd, env, "memory", "diff", target["commit"][:8]).stdout
    assert "new file, not yet in history: by-hand.md" in diff and f"{target['files'][0]}" in diff


def test_end_reflection_merges_and_removes_in_one_commit_without_holding_the_answer(
    tmp_path: Path, servers: list[MemoryServer]
) -> None:
    memory = tmp_path / "proj" / "memory"
    server = MemoryServer(writes=memory)
    servers.append(server)
    cwd, home, env = make_home(tmp_path, server.url, {"memory": {"directory": str(memory)}}, window=64_000)
    seed_notes(memory)
    server.release_reflection.clear()  # the reflection answers only once the turn's answer is out
    child = subprocess.Popen(
        [*heron(), "--model", "local/m", "-p", "remember how to deploy"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert "pytest, not nose" in child.stdout.readline()  # the answer, while the reflection is held
    server.release_reflection.set()
    _, err = child.communicate(timeout=TIMEOUT)
    assert child.returncode == 0, err
    assert server.reflection_asked.is_set()
    changes = log(cwd, env)
    assert [c["reason"] for c in changes] == ["reflection", "tool call", "outside heron"]
    assert sorted(changes[0]["files"]) == ["MEMORY.md", "nose.md", "tests-copy.md"]
    assert not (memory / "tests-copy.md").exists() and not (memory / "nose.md").exists()
    assert (memory / "tests.md").read_text() == "run pytest -q\n"
    assert any(r.get("reflection") and r.get("confirmed") == ["build.md"] for r in records(home))
    run(cwd, env, "memory", "revert", changes[0]["commit"])  # one revert takes the whole pass back
    assert (memory / "nose.md").exists() and "tests again" in (memory / "MEMORY.md").read_text()


def test_a_hanging_reflection_is_dropped_on_ctrl_c_with_its_writes_put_back(
    tmp_path: Path, servers: list[MemoryServer]
) -> None:
    memory = tmp_path / "proj" / "memory"
    server = MemoryServer(writes=memory, hang_reflection=True)
    servers.append(server)
    cwd, home, env = make_home(tmp_path, server.url, {"memory": {"directory": str(memory)}}, window=64_000)
    seed_notes(memory)
    child = subprocess.Popen(
        [*heron(), "--model", "local/m", "-p", "remember how to deploy"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and "pytest" in child.stdout.readline()
    assert server.reflection_asked.wait(TIMEOUT)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=TIMEOUT)
    assert child.returncode == 0, err
    assert "memory: reflection dropped: cut short" in err
    assert any(r.get("dropped") for r in records(home))
    assert [c["reason"] for c in log(cwd, env)] == ["tool call", "outside heron"]
    assert (memory / "nose.md").exists() and (memory / "deploy.md").exists()


def test_ctrl_c_drops_a_hanging_reflection_an_rpc_process_waits_for_at_its_end(
    tmp_path: Path, servers: list[MemoryServer]
) -> None:
    memory = tmp_path / "proj" / "memory"
    server = MemoryServer(writes=memory, hang_reflection=True)
    servers.append(server)
    cwd, home, env = make_home(tmp_path, server.url, {"memory": {"directory": str(memory)}}, window=64_000)
    seed_notes(memory)
    drive = [*heron(), "--model", "local/m", "--mode", "rpc"]
    child = subprocess.Popen(drive, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(json.dumps({"id": 1, "type": "prompt", "message": "remember how to deploy"}) + "\n")
    child.stdin.close()  # the input ends: the end pass starts, and hangs
    assert server.reflection_asked.wait(TIMEOUT)
    child.send_signal(signal.SIGINT)
    out = child.stdout.read()
    assert child.wait(timeout=TIMEOUT) == 0
    warnings = [json.loads(line) for line in out.splitlines() if '"context_warning"' in line]
    assert [w["kind"] for w in warnings] == ["memory"] and "reflection dropped" in warnings[0]["message"]
    assert any(r.get("dropped") for r in records(home))
    assert (memory / "nose.md").exists()


def test_a_users_repository_and_a_history_that_cannot_be_written_are_said_and_lose_nothing(
    tmp_path: Path, servers: list[MemoryServer]
) -> None:
    memory = tmp_path / "proj" / "memory"
    server = MemoryServer(writes=memory)
    servers.append(server)
    cwd, home, env = make_home(tmp_path, server.url, {"memory": {"directory": str(memory), "reflect": "off"}})
    seed_notes(memory)
    git = ["git", "-C", str(memory), "-c", "user.name=u", "-c", "user.email=u@example.com"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "mine"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    done = run(cwd, env, "--model", "local/m", "-p", "remember how to deploy")
    assert "in a git repository of yours" in done.stderr and "never touches your repository" in done.stderr
    assert subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout == head
    assert subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True).stdout == "?? deploy.md\n"

    # a file where heron's history directory should be: the turn goes on, the user is told
    history = home / "memory-history"
    os.replace(history, tmp_path / "history-aside")
    history.write_text("in the way\n")
    (memory / "deploy.md").unlink()
    done = run(cwd, env, "--model", "local/m", "-p", "remember how to deploy, again")
    assert "pytest, not nose" in done.stdout and (memory / "deploy.md").exists()
    assert "heron: warning: memory: " in done.stderr and "not recorded in the memory history" in done.stderr
    assert history.read_text() == "in the way\n"


pexpect = pytest.importorskip("pexpect")


def interactive(
    tmp_path: Path, servers: list[MemoryServer], *, hang: bool, leave: bool = True
) -> tuple[Any, Path, Path, dict[str, str]]:
    """The interactive mode after one prompt that wrote a note; Ctrl+D sent (``leave``)."""
    memory = tmp_path / "proj" / "memory"
    server = MemoryServer(writes=memory, hang_reflection=hang)
    servers.append(server)
    cwd, home, env = make_home(tmp_path, server.url, {"memory": {"directory": str(memory)}}, window=64_000)
    seed_notes(memory)
    env.update(TERM="xterm", COLUMNS="100", LINES="40", PROMPT_TOOLKIT_NO_CPR="1", PYTHONUNBUFFERED="1")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "heron.cli.main", "--model", "local/m"],
        cwd=str(cwd),
        env=env,
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(40, 100),
    )
    child.logfile_read = io.StringIO()
    children.append(child)
    child.expect("Ctrl\\+D exits")
    child.send("remember how to deploy\r")
    child.expect("not nose")
    child.send("/memory\r")  # the same list as heron memory log
    child.expect("tool call")
    child.expect("deploy.md")
    assert not server.reflection_asked.is_set()  # not during the session
    if leave:
        child.send("\x04")
        child.expect("reflecting on the project memory before exiting")
    return child, cwd, home, env


children: list[Any] = []


@pytest.fixture(autouse=True)
def _no_child_left() -> Iterator[None]:
    yield
    while children:
        child = children.pop()
        if child.isalive():
            child.terminate(force=True)


def test_the_interactive_mode_runs_the_end_reflection_when_its_session_ends(
    tmp_path: Path, servers: list[MemoryServer]
) -> None:
    child, cwd, _, env = interactive(tmp_path, servers, hang=False)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.logfile_read.getvalue()[-3000:]
    assert servers[0].reflection_asked.is_set()
    changes = log(cwd, env)
    assert [c["reason"] for c in changes] == ["reflection", "tool call", "outside heron"]
    assert not (cwd / "memory" / "nose.md").exists()


def test_ctrl_c_drops_the_interactive_modes_end_reflection(tmp_path: Path, servers: list[MemoryServer]) -> None:
    child, cwd, home, env = interactive(tmp_path, servers, hang=True)
    assert servers[0].reflection_asked.wait(TIMEOUT)
    child.sendintr()
    child.expect("reflection dropped")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.logfile_read.getvalue()[-3000:]
    assert any(r.get("dropped") for r in records(home))
    assert [c["reason"] for c in log(cwd, env)] == ["tool call", "outside heron"]
    assert (cwd / "memory" / "nose.md").exists()
