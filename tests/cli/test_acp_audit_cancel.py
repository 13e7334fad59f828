"""Audit: session/cancel while text streams, while a tool runs and while a permission
question is open: the prompt answers ``cancelled`` within 5 s and nothing about the turn
is sent after that answer; a second prompt while one runs is refused and the first goes on."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from acp import RequestError, text_block

from tests.cli.acp_wire import TIMEOUT, Editor, Wire, heron_acp, lines
from tests.cli.test_print_json_e2e import Project, project
from tests.support.http_server import LocalServer, Reply
from tests.support.sse import openai_reply, openai_turn

__all__ = ["project"]


def _slow_text() -> Reply:
    """A reply whose text streams for a minute (small pieces, a pause between them)."""
    return Reply(body=openai_turn("word " * 400), chunk_size=40, chunk_delay=0.15)


def _after_response(wire: Wire) -> list[dict[str, Any]]:
    """session/update notifications written after the session/prompt response."""
    prompt_ids = {m["id"] for m in lines(wire.incoming) if m.get("method") == "session/prompt"}
    sent = wire.sent()
    answered = [i for i, m in enumerate(sent) if m.get("id") in prompt_ids and "method" not in m]
    return [
        m
        for m in sent[answered[-1] + 1 :]
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] != "available_commands_update"
    ]


async def _cancel_when(conn: Any, sid: str, ready: Any) -> tuple[Any, float]:
    run = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("go")]))
    await asyncio.wait_for(ready(), TIMEOUT)
    started = time.monotonic()
    await conn.cancel(session_id=sid)
    reply = await asyncio.wait_for(run, TIMEOUT)
    elapsed = time.monotonic() - started
    await asyncio.sleep(1.5)  # anything the turn still sends would arrive now
    return reply, elapsed


async def _until(predicate: Any) -> None:
    while not predicate():
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("where", ["request", "text", "tool", "permission"])
def test_cancel_answers_cancelled_quickly_and_sends_nothing_after(
    project: Project, local_server: LocalServer, where: str
) -> None:
    outside = project.cwd.parent / "outside.txt"
    outside.write_text("x\n")
    if where == "request":  # the model has not answered yet
        local_server.queue(Reply(body=openai_turn("late"), delay=30))
    elif where == "text":
        local_server.queue(_slow_text())
    elif where == "tool":
        local_server.queue(openai_reply("", [("c1", "bash", {"command": "sleep 30"})]), openai_reply("late"))
    else:
        local_server.queue(
            openai_reply("", [("c1", "write", {"path": str(outside), "content": "y\n"})]), openai_reply("late")
        )
    editor = Editor(answer="wait")

    def ready() -> bool:
        if where == "request":
            return len(local_server.requests) >= 1
        if where == "text":
            return sum(u["sessionUpdate"] == "agent_message_chunk" for u in editor.updates) >= 3
        if where == "tool":
            return any(u.get("status") == "in_progress" for u in editor.updates)
        return editor.asked.is_set()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as (conn, proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            reply, elapsed = await _cancel_when(conn, new.session_id, lambda: _until(ready))
            assert proc.returncode is None
            return reply, elapsed, wire

    reply, elapsed, wire = asyncio.run(run())
    assert reply.stop_reason == "cancelled"
    assert elapsed < 5
    assert _after_response(wire) == []
    assert wire.problems() == []
    assert outside.read_text() == "x\n"
    calls = [u for u in wire.updates() if u.get("toolCallId") == "c1"]
    if where in ("tool", "permission"):  # the call the cancel stopped is not left pending or running
        assert calls[-1]["status"] in ("failed", "completed"), calls


def test_a_second_prompt_while_one_runs_is_refused_and_the_first_finishes(
    project: Project, local_server: LocalServer
) -> None:
    local_server.queue(
        openai_reply("", [("c1", "bash", {"command": "sleep 1"})]), openai_reply("first done"), openai_reply("second")
    )
    editor = Editor()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            first = asyncio.ensure_future(conn.prompt(session_id=new.session_id, prompt=[text_block("one")]))
            await asyncio.wait_for(
                _until(lambda: any(u.get("status") == "in_progress" for u in editor.updates)), TIMEOUT
            )
            with pytest.raises(RequestError) as caught:
                await conn.prompt(session_id=new.session_id, prompt=[text_block("two")])
            done = await asyncio.wait_for(first, TIMEOUT)
            again = await asyncio.wait_for(
                conn.prompt(session_id=new.session_id, prompt=[text_block("three")]), TIMEOUT
            )
            return caught.value, done, again, wire

    error, done, again, wire = asyncio.run(run())
    assert error.code == -32600
    assert done.stop_reason == "end_turn" and again.stop_reason == "end_turn"
    assert wire.problems() == []


def test_a_prompt_right_after_a_cancel_waits_for_the_cancelled_one(project: Project, local_server: LocalServer) -> None:
    """An editor that sends session/cancel and at once the user's next message (without
    waiting for the cancelled prompt's answer) gets both: ``cancelled``, then the new turn."""
    local_server.queue(openai_reply("", [("c1", "bash", {"command": "sleep 30"})]), openai_reply("second answer"))
    editor = Editor()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            sid = new.session_id
            first = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("one")]))
            await asyncio.wait_for(
                _until(lambda: any(u.get("status") == "in_progress" for u in editor.updates)), TIMEOUT
            )
            await conn.cancel(session_id=sid)
            second = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("two")]), TIMEOUT)
            return await asyncio.wait_for(first, TIMEOUT), second, wire

    first, second, wire = asyncio.run(run())
    assert (first.stop_reason, second.stop_reason) == ("cancelled", "end_turn")
    assert wire.problems() == []
    said = "".join(u["content"]["text"] for u in wire.updates() if u["sessionUpdate"] == "agent_message_chunk")
    assert said == "second answer"
    first_id = next(m["id"] for m in lines(wire.incoming) if m.get("method") == "session/prompt")
    sent = wire.sent()
    answered = next(i for i, m in enumerate(sent) if m.get("id") == first_id and "result" in m)
    spoke = next(
        i
        for i, m in enumerate(sent)
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert answered < spoke  # the new turn's text comes after the cancelled prompt's answer


def test_cancel_during_a_compaction(project: Project, local_server: LocalServer) -> None:
    project.write_settings({"compaction": {"keepRecentTokens": 1}})
    local_server.queue(
        openai_reply("Hello there. " * 600),
        openai_reply("Done."),
        Reply(body=openai_turn("## Goal\nlate"), delay=30),
        openai_reply("## Turn\nOk."),
        openai_reply("after"),
        openai_reply("after"),
    )  # a summary request may not be made
    editor = Editor()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as (conn, proc, wire):
            sid = (await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)).session_id
            for text in ("say hello", "thanks"):
                await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block(text)]), TIMEOUT)
            run = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("/compact")]))
            await asyncio.wait_for(_until(lambda: len(local_server.requests) >= 3), TIMEOUT)
            started = time.monotonic()
            await conn.cancel(session_id=sid)
            reply = await asyncio.wait_for(run, TIMEOUT)
            elapsed = time.monotonic() - started
            after = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("go on")]), TIMEOUT)
            assert proc.returncode is None
            return reply, elapsed, after, wire

    reply, elapsed, after, wire = asyncio.run(run())
    assert reply.stop_reason == "cancelled" and elapsed < 5
    assert after.stop_reason == "end_turn"
    assert wire.problems() == []
    [compaction] = {u["toolCallId"] for u in wire.updates() if str(u.get("toolCallId", "")).startswith("compaction")}
    statuses = [u.get("status") for u in wire.updates() if u.get("toolCallId") == compaction]
    assert statuses[-1] == "failed", statuses  # the editor does not show it running for ever
