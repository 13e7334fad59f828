"""Audit: tool calls an editor must be able to follow: the permission question comes
after the call's ``tool_call`` on the wire, unknown tools and bad arguments end failed,
parallel calls each end, and a cancelled session takes the next prompt."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from acp import text_block

from tests.cli.acp_wire import TIMEOUT, Editor, heron_acp
from tests.cli.test_print_json_e2e import Project, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]


def _final_status(updates: list[dict[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for u in updates:
        if "toolCallId" in u and "status" in u:
            out[u["toolCallId"]] = u["status"]
    return out


def test_the_question_follows_the_announced_call(project: Project, local_server: LocalServer) -> None:
    outside = project.cwd.parent / "o.txt"
    local_server.queue(openai_reply("", [("w1", "write", {"path": str(outside), "content": "x"})]), openai_reply("ok"))
    editor = Editor(answer="reject")

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("w")]), TIMEOUT)
        return wire

    wire = asyncio.run(run())
    assert wire.problems() == []
    sent = wire.sent()
    start = next(
        i
        for i, m in enumerate(sent)
        if m.get("method") == "session/update" and m["params"]["update"].get("toolCallId") == "w1"
    )
    ask = next(i for i, m in enumerate(sent) if m.get("method") == "session/request_permission")
    assert start < ask
    assert sent[start]["params"]["update"]["sessionUpdate"] == "tool_call"
    assert _final_status(wire.updates())["w1"] == "failed"
    assert not outside.exists()


def test_unknown_tools_bad_arguments_and_parallel_calls_all_end(project: Project, local_server: LocalServer) -> None:
    local_server.queue(
        openai_reply(
            "",
            [
                ("u1", "no_such_tool", {"x": 1}),
                ("b1", "read", {"nopath": 3}),
                ("r1", "read", {"path": "greet.py"}),
                ("r2", "read", {"path": "greet.py", "offset": 1, "limit": 1}),
            ],
        ),
        openai_reply("done"),
    )
    editor = Editor()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            reply = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("go")]), TIMEOUT)
        return reply, wire

    reply, wire = asyncio.run(run())
    assert reply.stop_reason == "end_turn"
    assert wire.problems() == []
    assert _final_status(wire.updates()) == {"u1": "failed", "b1": "failed", "r1": "completed", "r2": "completed"}
    starts = [u["toolCallId"] for u in wire.updates() if u["sessionUpdate"] == "tool_call"]
    assert sorted(starts) == ["b1", "r1", "r2", "u1"]


def test_after_a_cancel_the_session_takes_the_next_prompt(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("", [("s1", "bash", {"command": "sleep 30"})]), openai_reply("next answer"))
    editor = Editor()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            sid = new.session_id
            first = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("one")]))
            while not any(u.get("status") == "in_progress" for u in editor.updates):
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=sid)
            cancelled = await asyncio.wait_for(first, TIMEOUT)
            second = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("two")]), TIMEOUT)
        return cancelled, second, wire

    cancelled, second, wire = asyncio.run(run())
    assert (cancelled.stop_reason, second.stop_reason) == ("cancelled", "end_turn")
    assert wire.problems() == []
    body = local_server.requests[-1].json()
    roles = [m["role"] for m in body["messages"]]
    assert roles[-1] == "user" and "two" in str(body["messages"][-1]["content"])
    assert "tool" in roles  # the cancelled call's result is in the history the model sees


def test_an_editor_offering_fs_and_terminal_gets_valid_requests(project: Project, local_server: LocalServer) -> None:
    """fs/read_text_file, fs/write_text_file and terminal/* as heron sends them are
    schema-valid, and the bash call shows the editor's terminal."""
    from acp.schema import ClientCapabilities, FileSystemCapabilities

    from tests.cli.test_acp_terminal import EditorWithTerminal

    class FullEditor(EditorWithTerminal):
        async def read_text_file(self, path: str, session_id: str, **kwargs: Any) -> Any:
            from acp.schema import ReadTextFileResponse

            return ReadTextFileResponse(content=Path(path).read_text())

        async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> Any:
            from acp.schema import WriteTextFileResponse

            Path(path).write_text(content)
            return WriteTextFileResponse()

    local_server.queue(
        openai_reply("", [("r1", "read", {"path": "greet.py"})]),
        openai_reply("", [("e1", "edit", {"path": "greet.py", "old_text": "world", "new_text": "t"})]),
        openai_reply("", [("b1", "bash", {"command": "cat greet.py"})]),
        openai_reply("done"),
    )
    editor = FullEditor()
    capabilities = ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
    )

    async def run() -> Any:
        async with heron_acp(project, local_server, editor, capabilities=capabilities) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            reply = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("go")]), TIMEOUT)
        return reply, wire

    reply, wire = asyncio.run(run())
    assert reply.stop_reason == "end_turn"
    assert wire.problems() == []
    methods = [m["method"] for m in wire.sent() if m.get("method", "").startswith(("fs/", "terminal/"))]
    assert {"fs/read_text_file", "fs/write_text_file", "terminal/create", "terminal/release"} <= set(methods)
    assert _final_status(wire.updates()) == {"r1": "completed", "e1": "completed", "b1": "completed"}
    shown = [c for u in wire.updates() if u.get("toolCallId") == "b1" for c in u.get("content", [])]
    assert {"type": "terminal", "terminalId": "term-1"} in shown
    assert 'print("hello, t")' in (project.cwd / "greet.py").read_text()


def test_two_sessions_prompted_at_once_keep_their_updates_apart(project: Project, local_server: LocalServer) -> None:
    """Two threads of one editor in one heron process: each session's updates carry its
    own id and its own calls and text; a cancel of one leaves the other running."""

    def respond(request: Any) -> Any:
        body = request.json()
        last = body["messages"][-1]
        tag = "A" if "alpha" in json.dumps(body["messages"][1:]) else "B"
        if last["role"] == "user":
            return openai_reply("", [(f"{tag}-call", "bash", {"command": "sleep 2" if tag == "A" else "sleep 30"})])
        return openai_reply(f"answer {tag}")

    local_server.responder = respond
    editor = Editor()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as (conn, _proc, wire):
            a = (await conn.new_session(cwd=str(project.cwd), mcp_servers=[])).session_id
            b = (await conn.new_session(cwd=str(project.cwd), mcp_servers=[])).session_id
            first = asyncio.ensure_future(conn.prompt(session_id=a, prompt=[text_block("alpha")]))
            second = asyncio.ensure_future(conn.prompt(session_id=b, prompt=[text_block("beta")]))
            while sum(u.get("status") == "in_progress" for u in editor.updates) < 2:
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=b)
            return a, b, await asyncio.wait_for(first, TIMEOUT), await asyncio.wait_for(second, TIMEOUT), wire

    a, b, first, second, wire = asyncio.run(run())
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "cancelled")
    assert wire.problems() == []
    by_session: dict[str, list[dict[str, Any]]] = {a: [], b: []}
    for m in wire.sent():
        if m.get("method") == "session/update":
            by_session[m["params"]["sessionId"]].append(m["params"]["update"])
    for sid, tag in ((a, "A"), (b, "B")):
        ids = {u["toolCallId"] for u in by_session[sid] if "toolCallId" in u}
        assert ids == {f"{tag}-call"}
    said = "".join(u["content"]["text"] for u in by_session[a] if u["sessionUpdate"] == "agent_message_chunk")
    assert said == "answer A"
    assert not [u for u in by_session[b] if u["sessionUpdate"] == "agent_message_chunk"]
