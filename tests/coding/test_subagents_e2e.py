"""Sub-agents through the real entry point: ``heron --mode json -p`` against a local
OpenAI-format server, with two ``task`` calls in one answer; the json output carries
the children's events tagged with their session ids, and each child's session file opens
with ``heron sessions info``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_reply

TIMEOUT = 120


def heron(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "heron.cli.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def last_user(request: Recorded) -> str:
    for message in reversed(request.json()["messages"]):
        if message["role"] == "user":
            content = message["content"]
            return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    return ""


def responder(request: Recorded) -> Reply:
    body = request.json()
    said = last_user(request)
    if said == "child job one":
        return openai_reply("answer one")
    if said == "child job two":
        return openai_reply("answer two")
    if any(m["role"] == "tool" for m in body["messages"]):
        return openai_reply("both children answered")
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("call_a", "task", {"description": "do the first job", "prompt": "child job one"}),
        ("call_b", "task", {"description": "do the second job", "prompt": "child job two"}),
    ]
    return openai_reply("", calls)


def test_json_mode_carries_child_events_and_child_sessions_open(tmp_path: Path) -> None:
    cwd, home = tmp_path / "project", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    server = LocalServer(responder)
    try:
        done = heron(
            "--base-url",
            server.url + "/v1",
            "--model",
            "test-model",
            "--mode",
            "json",
            "-p",
            "delegate",
            cwd=cwd,
            env=env,
        )
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    tagged = [e for e in events if e.get("type") == "subagent"]
    assert {e["tool_call_id"] for e in tagged} == {"call_a", "call_b"}
    answers = {
        e["tool_call_id"]: e["event"]["message"]["content"][0]["text"]
        for e in tagged
        if e["event"]["type"] == "message_end" and e["event"]["message"]["role"] == "assistant"
    }
    assert answers == {"call_a": "answer one", "call_b": "answer two"}
    ends = {e["tool_call_id"]: e for e in events if e.get("type") == "tool_execution_end"}
    children = {call: ends[call]["result"]["details"] for call in ("call_a", "call_b")}
    assert {tuple(sorted({e["session_id"] for e in tagged if e["tool_call_id"] == c})) for c in children} == {
        (children["call_a"]["sessionId"],),
        (children["call_b"]["sessionId"],),
    }
    parent = next(
        p for p in (home / "sessions").glob("*/*.jsonl") if p not in {Path(d["session"]) for d in children.values()}
    )
    for details in children.values():
        info = heron("sessions", "info", details["session"], "--json", cwd=cwd, env=env)
        assert info.returncode == 0, info.stderr
        data = json.loads(info.stdout)
        assert data["parent_session"] == str(parent) and data["by_role"] == {"user": 1, "assistant": 1}
    links = [json.loads(line) for line in parent.read_text().splitlines()]
    statuses = [e["data"]["status"] for e in links if e.get("type") == "custom" and e["customType"] == "heron.subagent"]
    assert sorted(statuses) == ["done", "done", "running", "running"]
