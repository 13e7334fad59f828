"""Audit: every message heron writes in a whole session is valid against the ACP schema."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp import text_block

from tests.cli.acp_wire import TIMEOUT, Editor, heron_acp
from tests.cli.test_print_json_e2e import GREET, Project, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]

TODO = (
    "call_todo",
    "todo",
    {"todos": [{"content": "read", "status": "completed"}, {"content": "edit", "status": "in_progress"}]},
)


def test_a_whole_turn_is_schema_valid(project: Project, local_server: LocalServer) -> None:
    (project.cwd / "notes.txt").write_text("old\n")
    local_server.queue(
        openai_reply("Reading.", [("c1", "read", {"path": "greet.py"})]),
        openai_reply("", [TODO]),
        openai_reply("", [("c2", "edit", {"path": "greet.py", "old_text": "world", "new_text": "heron"})]),
        openai_reply("", [("c3", "write", {"path": "notes.txt", "content": "new\n"})]),
        openai_reply("", [("c4", "bash", {"command": "echo hi"})]),
        openai_reply("Done."),
    )
    editor = Editor()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            reply = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("go")]), TIMEOUT)
            listed = await asyncio.wait_for(conn.list_sessions(), TIMEOUT)
            return reply, wire, listed

    reply, wire, listed = asyncio.run(run())
    assert reply.stop_reason == "end_turn"
    assert wire.problems() == []
    updates = wire.updates()
    calls: dict[str, list[dict[str, Any]]] = {}
    for u in updates:
        if "toolCallId" in u:
            calls.setdefault(u["toolCallId"], []).append(u)
    assert list(calls) == ["c1", "call_todo", "c2", "c3", "c4"]
    for call_id, seen in calls.items():
        assert [u.get("status") for u in seen] == ["pending", "in_progress", "completed"], call_id
        assert seen[0]["sessionUpdate"] == "tool_call"
    assert [calls[c][0]["kind"] for c in calls] == ["read", "other", "edit", "edit", "execute"]
    assert calls["c1"][-1]["rawOutput"]["output"] == GREET.strip()
    assert calls["c4"][-1]["rawOutput"]["isError"] is False and calls["c4"][-1]["rawOutput"]["output"] == "hi"
    assert all(seen[0]["rawInput"] for seen in calls.values())
    for c in ("c1", "c2", "c3"):
        assert all(Path(loc["path"]).is_absolute() for loc in calls[c][0]["locations"])
    assert calls["c3"][0]["content"] == [
        {"type": "diff", "path": str(project.cwd / "notes.txt"), "oldText": "old\n", "newText": "new\n"}
    ]
    [plan] = [u for u in updates if u["sessionUpdate"] == "plan"]
    assert plan["entries"] == [
        {"content": "read", "priority": "medium", "status": "completed"},
        {"content": "edit", "priority": "medium", "status": "in_progress"},
    ]
    assert updates[-1]["sessionUpdate"] == "usage_update"
    assert [i.session_id for i in listed.sessions] == [wire.sent()[-1]["result"]["sessions"][0]["sessionId"]]
    assert (project.cwd / "greet.py").read_text() == GREET.replace("world", "heron")


def test_a_write_over_a_file_carries_its_old_text(project: Project, local_server: LocalServer) -> None:
    """ACP's diff without oldText means a new file: an overwrite gives the old text, live
    and in the permission question; a reload shows the diff only for a created file."""
    outside = project.cwd.parent / "outside.txt"
    outside.write_text("before\n")
    local_server.queue(
        openai_reply(
            "",
            [
                ("w1", "write", {"path": str(outside), "content": "after\n"}),
                ("w2", "write", {"path": "fresh.txt", "content": "new\n"}),
            ],
        ),
        openai_reply("ok"),
    )
    editor, loaded = Editor(), Editor()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("w")]), TIMEOUT)
        async with heron_acp(project, local_server, loaded, tag="load") as (conn, _proc, again):
            await asyncio.wait_for(
                conn.load_session(cwd=str(project.cwd), session_id=new.session_id, mcp_servers=[]), TIMEOUT
            )
        return wire, again

    wire, again = asyncio.run(run())
    assert wire.problems() == [] and again.problems() == []
    assert outside.read_text() == "after\n"
    old = {"type": "diff", "path": str(outside), "oldText": "before\n", "newText": "after\n"}
    created = {"type": "diff", "path": str(project.cwd / "fresh.txt"), "newText": "new\n"}
    [asked] = editor.permissions
    assert asked["toolCall"]["content"] == [old]
    live = {u["toolCallId"]: u for u in wire.updates() if u.get("status") == "completed"}
    assert old in live["w1"]["content"] and created in live["w2"]["content"]
    [start] = [u for u in wire.updates() if u["sessionUpdate"] == "tool_call" and u["toolCallId"] == "w1"]
    assert start["content"] == [old]
    replayed = {u["toolCallId"]: u for u in again.updates() if u.get("status") == "completed"}
    assert not [c for c in replayed["w1"]["content"] if c["type"] == "diff"]
    assert created in replayed["w2"]["content"]
