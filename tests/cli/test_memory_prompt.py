"""Memory notes with their age in the system prompt, through the real ``heron`` command.

A memory directory with a fresh note and one older than ``memory.staleAfterDays``; three
turns driven by one ``heron --mode rpc`` process and by one ``heron -p`` process per turn.
Between turns the clock moves (every note's time is pushed a year back, as if a year had
passed): the prompt a session recorded stays as it was, so both drives send the same
bytes, and a new session sees the move.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_reply

DAY = 86_400
TURNS = 3
TIMEOUT = 120


def heron() -> list[str]:
    return [os.environ.get("HERON_TEST_PYTHON", __import__("sys").executable), "-m", "heron.cli.main"]


class Server:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: Recorded) -> Reply:
        body = request.json()
        self.bodies.append(body)
        if "[heron: memory reflection]" in json.dumps(body["messages"][-1]):
            return openai_reply("Nothing to merge.\nCONFIRMED: build.md")
        return openai_reply("Fine.")


@pytest.fixture
def server() -> Iterator[tuple[LocalServer, Server]]:
    handler = Server()
    local = LocalServer(responder=handler)
    yield local, handler
    local.close()


NOW = int(time.time()) // DAY * DAY + DAY // 2  # noon today (UTC): the notes' dates do not depend on the hour


def make_project(root: Path, url: str) -> tuple[Path, Path, dict[str, str]]:
    cwd, home = root / "proj", root / "home"
    cwd.mkdir(parents=True)
    home.mkdir()
    models = {
        "providers": {
            "local": {
                "baseUrl": url + "/v1",
                "api": "openai-completions",
                "apiKey": "sk-local",
                "models": [{"id": "m", "contextWindow": 32_000, "maxTokens": 1_000}],
            }
        }
    }
    (home / "models.json").write_text(json.dumps(models))
    memory = home / "memory"
    memory.mkdir()
    (memory / "MEMORY.md").write_text("# Memory\n- [build](build.md)\n- [old](old.md)\n")
    (memory / "build.md").write_text("make build\n")
    (memory / "old.md").write_text("the tests ran with nose\n")
    for name, age in (("MEMORY.md", 1), ("build.md", 1), ("old.md", 120)):
        os.utime(memory / name, (NOW - age * DAY, NOW - age * DAY))
    settings = {"memory": {"directory": str(memory), "staleAfterDays": 90}}
    (home / "settings.json").write_text(json.dumps(settings))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env.update(HERON_HOME=str(home))
    return cwd, memory, env


def move_clock(memory: Path, days: int) -> None:
    for path in memory.iterdir():
        stat = path.stat()
        os.utime(path, (stat.st_atime - days * DAY, stat.st_mtime - days * DAY))


def drive_print(cwd: Path, memory: Path, env: dict[str, str]) -> None:
    for n in range(TURNS):
        if n:
            move_clock(memory, 365)
        args = [*heron(), "--model", "local/m", "-p", f"turn {n}", *(["--continue"] if n else [])]
        done = subprocess.run(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT)
        assert done.returncode == 0, done.stderr[-2000:]


def drive_rpc(cwd: Path, memory: Path, env: dict[str, str]) -> list[dict[str, Any]]:
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
    try:
        for n in range(TURNS):
            if n:
                move_clock(memory, 365)
            child.stdin.write(json.dumps({"id": n, "type": "prompt", "message": f"turn {n}"}) + "\n")
            child.stdin.flush()
            for raw in child.stdout:
                event = json.loads(raw)
                if event.get("type") == "run_end" and event.get("id") == n:
                    assert event.get("error") is None, event
                    break
        return memory_log(child.stdin, child.stdout)
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def memory_log(stdin: Any, stdout: Any) -> list[dict[str, Any]]:
    """rpc ``memory_log``, asked until the start-up commit of the notes (made beside the first
    turn, off its critical path) is there."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        stdin.write(json.dumps({"id": "log", "type": "memory_log"}) + "\n")
        stdin.flush()
        for raw in stdout:
            event = json.loads(raw)
            if event.get("type") == "response" and event.get("id") == "log":
                break
        assert event["success"], event
        changes: list[dict[str, Any]] = event["data"]["changes"]
        if changes or time.monotonic() > deadline:
            return changes
        time.sleep(0.2)


def system_prompts(bodies: list[dict[str, Any]], root: Path) -> list[str]:
    texts = [json.dumps(b["messages"][0], sort_keys=True).replace(str(root), "ROOT") for b in bodies]
    return [re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "SESSION", t) for t in texts]


def test_notes_carry_their_age_and_a_moved_clock_changes_no_byte(tmp_path: Path, server: Any) -> None:
    local, handler = server
    cwd_one, memory_one, env_one = make_project(tmp_path / "one", local.url)
    changes = drive_rpc(cwd_one, memory_one, env_one)
    assert [(c["reason"], sorted(c["files"])) for c in changes] == [
        ("outside heron", ["MEMORY.md", "build.md", "old.md"])
    ]
    rpc_bodies = list(handler.bodies)
    handler.bodies.clear()
    cwd_many, memory_many, env_many = make_project(tmp_path / "man", local.url)
    drive_print(cwd_many, memory_many, env_many)
    assert len(rpc_bodies) == len(handler.bodies) == TURNS
    one, many = system_prompts(rpc_bodies, tmp_path / "one"), system_prompts(handler.bodies, tmp_path / "man")
    assert one == many and len(set(one)) == 1  # the same bytes every turn, both ways
    day = time.strftime("%Y-%m-%d", time.localtime(NOW - DAY))
    old = time.strftime("%Y-%m-%d", time.localtime(NOW - 120 * DAY))
    system = json.loads(one[0])["content"]
    assert f"- build.md: {day}, 0 sessions since\\n" in json.dumps(system)
    assert f"- old.md: {old}, 0 sessions since, stale" in system
    assert "- MEMORY.md: " in system and "stale" not in system.split("- MEMORY.md: ")[1].split("\n")[0]
    # a new session sees the year that passed: every note is stale now, one session since
    args = [*heron(), "--model", "local/m", "-p", "a new session"]
    done = subprocess.run(
        args, cwd=cwd_many, env=env_many, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    fresh = handler.bodies[-1]["messages"][0]["content"]
    assert "- build.md: " in fresh and "1 session since, stale" in fresh.split("- build.md: ")[1].split("\n")[0]


def test_heron_memory_reflect_runs_the_pass_on_the_newest_session(tmp_path: Path, server: Any) -> None:
    local, handler = server
    cwd, _memory, env = make_project(tmp_path, local.url)
    args = [*heron(), "--model", "local/m", "-p", "remember the build"]
    assert subprocess.run(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True).returncode == 0
    done = subprocess.run(
        [*heron(), "memory", "reflect", "--model", "local/m"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Reflected on memory: 0 note(s) changed, 1 confirmed." in done.stdout
    reflection = handler.bodies[-1]["messages"]
    assert "remember the build" in json.dumps(reflection)  # the session's view, then the task
    assert '<note path="old.md">' in reflection[-1]["content"]
