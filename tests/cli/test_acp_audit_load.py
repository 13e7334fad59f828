"""Audit: session/load in a new process after a compaction and after heron was killed
(SIGKILL) mid-turn: the replay is schema-valid, complete, leaves no tool call running,
and the session goes on."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

from acp import RequestError, text_block

from tests.cli.acp_wire import TIMEOUT, Editor, heron_acp
from tests.cli.test_print_json_e2e import Project, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]


def _open_calls(updates: list[dict[str, Any]]) -> list[str]:
    """Tool calls whose last status is pending or in_progress."""
    status: dict[str, str] = {}
    for u in updates:
        if u["sessionUpdate"] in ("tool_call", "tool_call_update") and "status" in u:
            status[u["toolCallId"]] = u["status"]
        elif u["sessionUpdate"] == "tool_call":
            status[u["toolCallId"]] = "pending"
    return [k for k, v in status.items() if v in ("pending", "in_progress")]


def _user_texts(updates: list[dict[str, Any]]) -> list[str]:
    return [u["content"]["text"] for u in updates if u["sessionUpdate"] == "user_message_chunk"]


async def _load(project: Project, server: LocalServer, sid: str, tag: str, then: str) -> tuple[Any, Any, Any]:
    editor = Editor()
    async with heron_acp(project, server, editor, tag=tag) as (conn, _proc, wire):
        await asyncio.wait_for(conn.load_session(cwd=str(project.cwd), session_id=sid, mcp_servers=[]), TIMEOUT)
        replayed = list(editor.updates)
        reply = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block(then)]), TIMEOUT)
        return replayed, reply, wire


def test_load_after_a_compaction(project: Project, local_server: LocalServer) -> None:
    project.write_settings({"compaction": {"keepRecentTokens": 1}})
    long = "Hello there. " * 600
    local_server.queue(
        openai_reply(long),
        openai_reply("", [("c1", "read", {"path": "greet.py"})]),
        openai_reply("Done."),
        openai_reply("## Goal\nSay hello.\n"),
        openai_reply("## Turn\nOk."),
        openai_reply("after load"),
    )

    async def first() -> str:
        async with heron_acp(project, local_server, Editor()) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            for text in ("say hello", "read it", "/compact"):
                await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block(text)]), TIMEOUT)
            assert wire.problems() == []
            return str(new.session_id)

    sid = asyncio.run(first())
    replayed, reply, wire = asyncio.run(_load(project, local_server, sid, "load", "and now?"))
    assert reply.stop_reason == "end_turn"
    assert wire.problems() == []
    assert _user_texts(replayed) == ["say hello", "read it"]
    kinds = [u["sessionUpdate"] for u in replayed]
    assert "tool_call" in kinds and _open_calls(replayed) == []
    compaction = [u for u in replayed if str(u.get("toolCallId", "")).startswith("compaction-")]
    assert compaction and compaction[-1]["status"] == "completed"
    body = local_server.requests[-1].body.decode()
    assert "Say hello." in body and "and now?" in body


def test_load_after_heron_was_killed_mid_tool(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("Running.", [("c1", "bash", {"command": "sleep 30"})]), openai_reply("after"))
    editor = Editor()

    async def first() -> str:
        async with heron_acp(project, local_server, editor) as (conn, proc, _wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            running = asyncio.ensure_future(conn.prompt(session_id=new.session_id, prompt=[text_block("run it")]))
            while not any(u.get("status") == "in_progress" for u in editor.updates):
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)
            os.kill(proc.pid, signal.SIGKILL)
            await proc.wait()
            await asyncio.wait([running], timeout=5)
            if running.done() and not running.cancelled():
                running.exception()  # the connection died with heron: retrieved, not an error here
            return str(new.session_id)

    sid = asyncio.run(first())
    replayed, reply, wire = asyncio.run(_load(project, local_server, sid, "load", "are you there?"))
    assert wire.problems() == []
    assert _user_texts(replayed) == ["run it"]
    assert _open_calls(replayed) == [], replayed  # the killed call is not shown as still running
    [final] = [u for u in replayed if u.get("toolCallId") == "c1" and u.get("status") == "failed"]
    assert "Interrupted" in final["content"][0]["content"]["text"]
    assert reply.stop_reason == "end_turn"
    assert "are you there?" in local_server.requests[-1].body.decode()


def test_a_refused_load_fork_or_resume_leaves_nothing_behind(project: Project, local_server: LocalServer) -> None:
    """A bad cwd is an invalid-params error that changes nothing: no fork file is made, and
    the session is not left locked by the process that refused it (another can load it)."""
    local_server.queue(openai_reply("a"), openai_reply("b"))

    async def run() -> Any:
        async with heron_acp(project, local_server, Editor()) as (conn, _proc, _wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("x")]), TIMEOUT)
        sid = new.session_id
        codes = []
        async with heron_acp(project, local_server, Editor(), tag="refuses") as (conn, proc, wire):
            for call in (conn.load_session, conn.fork_session, conn.resume_session):
                for cwd in ("project", str(project.cwd / "missing")):
                    try:
                        await asyncio.wait_for(call(cwd=cwd, session_id=sid, mcp_servers=[]), TIMEOUT)
                    except RequestError as exc:
                        codes.append(exc.code)
            files = list((project.home / "sessions").rglob("*.jsonl"))
            replayed, reply, _ = await _load(project, local_server, sid, "other", "still mine?")
            assert proc.returncode is None
        return codes, files, replayed, reply, wire

    codes, files, replayed, reply, wire = asyncio.run(run())
    assert codes == [-32602] * 6
    assert len(files) == 1
    assert _user_texts(replayed) == ["x"] and reply.stop_reason == "end_turn"
    assert wire.problems() == []
