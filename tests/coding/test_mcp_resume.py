"""Tools that ``tool_search`` loaded stay loaded when the session goes on in a new process
(``heron -p --continue``): the next request carries the same tool list, byte for byte, as
it would have in the process that searched, and the loaded tool is callable at once."""

from __future__ import annotations

import json
import sys

from tests.coding.test_mcp_cli import DOUBLE, Env, env  # noqa: F401 - the fixture
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply


def _tools(body: dict[str, object]) -> str:
    return json.dumps(body["tools"], sort_keys=True)


def test_loaded_tools_survive_continue_in_a_new_process(env: Env) -> None:  # noqa: F811
    (env.home / "mcp.json").write_text(
        json.dumps({"mcpServers": {"w": {"command": sys.executable, "args": [DOUBLE, "many", "120"]}}})
    )
    server = LocalServer()
    try:
        server.queue(
            openai_reply("", [("s1", "tool_search", {"query": "select:mcp__w__widget_7"})]),
            openai_reply("", [("c1", "mcp__w__widget_7", {"query": "first"})]),
            openai_reply("widget 7 said first"),
            openai_reply("", [("c2", "mcp__w__widget_7", {"query": "second"})]),
            openai_reply("widget 7 said second"),
        )
        args = ["--base-url", server.url + "/v1", "--model", "test-model", "-p"]
        first = env.heron(*args, "use widget 7")
        assert first.returncode == 0, first.stderr
        second = env.heron("--continue", *args, "and again")
        assert second.returncode == 0, second.stderr
        assert second.stdout.strip() == "widget 7 said second"
        bodies = [r.json() for r in server.requests]
        names = [[t["function"]["name"] for t in b["tools"]] for b in bodies]
        assert "mcp__w__widget_7" not in names[0] and "tool_search" in names[0]
        assert names[1][-1] == "mcp__w__widget_7"
        # the new process sends what the searching process sent after the search
        assert _tools(bodies[3]) == _tools(bodies[2]) == _tools(bodies[1])
        prefix = bodies[2]["messages"]
        assert bodies[3]["messages"][: len(prefix)] == prefix  # and the same history before the new prompt
        results = [m for m in bodies[4]["messages"] if m["role"] == "tool"]
        assert results[-1]["content"] == "tool 7: second"
    finally:
        server.close()


def test_restore_replays_searches_in_order_and_skips_what_is_gone() -> None:
    from heron.ai.types import ToolResultMessage
    from heron.coding.mcp.search import ToolSearch
    from heron.coding.mcp.setup import _searched

    class Fake:
        def __init__(self, name: str) -> None:
            self.name, self.description, self.schema = name, "", {}

    messages = [
        ToolResultMessage(tool_call_id="a", tool_name="tool_search", details={"loaded": ["mcp__s__b", "mcp__s__gone"]}),
        ToolResultMessage(tool_call_id="b", tool_name="tool_search", details={"loaded": ["mcp__s__a", "mcp__s__b"]}),
        ToolResultMessage(tool_call_id="c", tool_name="tool_search", details={"loaded": ["mcp__s__c"]}, is_error=True),
        ToolResultMessage(tool_call_id="d", tool_name="tool_search", details="not a dict"),
        ToolResultMessage(tool_call_id="e", tool_name="read", details={"loaded": ["mcp__s__c"]}),
    ]
    assert _searched(messages) == [["mcp__s__b", "mcp__s__gone"], ["mcp__s__a", "mcp__s__b"]]
    search = ToolSearch([Fake("mcp__s__a"), Fake("mcp__s__b"), Fake("mcp__s__c")])  # type: ignore[list-item]
    activated: list[list[str]] = []
    search.activate = lambda found: activated.append([t.name for t in found])
    search.restore(_searched(messages))
    assert activated == [["mcp__s__b", "mcp__s__a"]]  # one change, in the order they were first loaded
    search.restore(_searched(messages))
    assert activated == [["mcp__s__b", "mcp__s__a"]]  # nothing new the second time


def test_rpc_session_switches_carry_the_tools_of_the_session_switched_to(env: Env) -> None:  # noqa: F811
    import subprocess
    from typing import Any

    (env.home / "mcp.json").write_text(
        json.dumps({"mcpServers": {"w": {"command": sys.executable, "args": [DOUBLE, "many", "120"]}}})
    )
    server = LocalServer()
    server.queue(
        openai_reply("", [("s1", "tool_search", {"query": "select:mcp__w__widget_7"})]),
        openai_reply("searched"),
        openai_reply("fresh"),
        openai_reply("back"),
    )
    rpc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "heron.cli.main",
            "--mode",
            "rpc",
            "--base-url",
            server.url + "/v1",
            "--model",
            "test-model",
        ],
        cwd=env.cwd,
        env=env.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert rpc.stdin is not None and rpc.stdout is not None

    def send(command: dict[str, Any], until: str) -> dict[str, Any]:
        assert rpc.stdin is not None and rpc.stdout is not None
        rpc.stdin.write(json.dumps(command) + "\n")
        rpc.stdin.flush()
        for line in rpc.stdout:
            record = json.loads(line)
            if record.get("type") == until or (record.get("type") == "response" and record.get("success") is False):
                return record
        raise AssertionError("heron stopped")

    try:
        send({"type": "prompt", "message": "search"}, "agent_settled")
        first = send({"type": "get_state"}, "response")["data"]["sessionFile"]
        send({"type": "new_session"}, "response")
        send({"type": "prompt", "message": "fresh"}, "agent_settled")
        switched = send({"type": "switch_session", "sessionPath": first}, "response")
        assert switched["success"] is True, switched
        send({"type": "prompt", "message": "back"}, "agent_settled")
    finally:
        rpc.stdin.close()
        rpc.wait(timeout=30)
        server.close()
    bodies = [r.json() for r in server.requests]
    names = [[t["function"]["name"] for t in b["tools"]] for b in bodies]
    assert names[1][-1] == "mcp__w__widget_7"
    assert "mcp__w__widget_7" not in names[2]  # a new session has searched nothing
    assert _tools(bodies[3]) == _tools(bodies[1])  # back in the first one: its tools again
