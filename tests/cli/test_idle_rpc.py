"""The idle policy in ``heron --mode rpc`` (a real subprocess against a local server): the
session waits after its answer, warms the prompt cache before the lifetime ends with the
last request's exact messages and a one-token cap, says so with an ``idle`` event, and the
next prompt's request carries the conversation without the warm-up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_rpc_mode import Client, request_messages, turn
from tests.support.http_server import LocalServer


def body(server: LocalServer, index: int) -> dict[str, Any]:
    data: dict[str, Any] = server.requests[index].json()
    return data


def test_an_idle_rpc_session_warms_its_cache_once_before_it_expires(local_server: LocalServer, tmp_path: Path) -> None:
    home, work = tmp_path / "heron-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    # A 3 s lifetime (a local server has none unless told): the warm-up is due 0.3 s before its end.
    settings = {"pruning": {"cacheTtlSeconds": 3}, "idle": {"policy": "warm"}}
    (home / "settings.json").write_text(json.dumps(settings))
    local_server.queue(turn("first answer"), turn("x"), turn("second answer"))
    client = Client(local_server, work, home)
    try:
        _warm_once(client, local_server, home)
    finally:
        client.kill()


def _warm_once(client: Client, local_server: LocalServer, home: Path) -> None:
    end = client.run("hello")
    assert end["stop_reason"] == "stop"
    idle = client.until(lambda o: o["type"] == "idle", timeout=60)
    assert idle["action"] == "warm" and idle["failed"] is None and "idle.policy is warm" in idle["reason"]
    assert len(local_server.requests) == 2
    first, warm = body(local_server, 0), body(local_server, 1)
    assert warm["messages"] == first["messages"] and warm["tools"] == first["tools"]
    assert warm.get("max_completion_tokens", warm.get("max_tokens")) == 1
    end = client.run("next")
    assert end["stop_reason"] == "stop"
    roles = [m["role"] for m in request_messages(local_server, len(local_server.requests) - 1)]
    assert roles == ["system", "user", "assistant", "user"]  # no warm-up in the conversation
    messages = client.call({"type": "get_messages"})["data"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert client.close() == 0
    state_file = next(home.rglob("*.jsonl"))
    records = [json.loads(line) for line in state_file.read_text().splitlines()]
    idle_records = [r["data"] for r in records if r.get("type") == "custom" and r["data"].get("op") == "idle"]
    assert idle_records and idle_records[0]["action"] == "warm" and idle_records[0]["ttlSeconds"] == 3
