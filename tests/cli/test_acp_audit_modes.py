"""Audit: modes and models as an editor switches them (set_mode, set_config_option,
session/set_model), each mode enforced; thinking models (Anthropic thinking blocks) and a
reply cut by max tokens; a debug log does not reach stdout."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from acp import RequestError, text_block

from tests.cli.acp_wire import TIMEOUT, Editor, heron_acp
from tests.cli.test_print_json_e2e import GREET, Project, anthropic_provider, project
from tests.support.http_server import LocalServer, Reply
from tests.support.sse import anthropic_sse, openai_chunk, openai_reply, openai_sse

__all__ = ["project"]


def _edit() -> Reply:
    return openai_reply("", [("c1", "edit", {"path": "greet.py", "old_text": "world", "new_text": "mode"})])


@pytest.mark.parametrize(
    ("mode", "asked", "changed"),
    [("default", False, True), ("plan", False, False), ("accept-edits", False, True), ("bypass", False, True)],
)
def test_each_mode_is_announced_and_enforced(
    project: Project, local_server: LocalServer, mode: str, asked: bool, changed: bool
) -> None:
    local_server.queue(_edit(), openai_reply("ok"))
    editor = Editor(answer="allow_once")

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            await asyncio.wait_for(conn.set_session_mode(session_id=new.session_id, mode_id=mode), TIMEOUT)
            with pytest.raises(RequestError) as caught:
                await conn.set_session_mode(session_id=new.session_id, mode_id="yolo")
            reply = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("e")]), TIMEOUT)
            return caught.value, reply, wire

    error, reply, wire = asyncio.run(run())
    assert error.code == -32602
    assert reply.stop_reason == "end_turn"
    assert wire.problems() == []
    assert bool(editor.permissions) == asked
    assert ((project.cwd / "greet.py").read_text() != GREET) == changed
    updates = wire.updates()
    assert {"sessionUpdate": "current_mode_update", "currentModeId": mode} in updates
    [final] = [u for u in updates if u.get("toolCallId") == "c1" and u.get("status") in ("completed", "failed")]
    assert final["status"] == ("completed" if changed else "failed")


def test_mode_and_model_changes_keep_the_config_options_in_step(project: Project, local_server: LocalServer) -> None:
    """A client showing the ``mode``/``model`` selects learns of a change made through
    session/set_mode or session/set_model (a config_option_update with the new values)."""
    project.write_models(anthropic_provider(local_server))

    async def run() -> Any:
        async with heron_acp(project, local_server, Editor()) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            sid = new.session_id
            await asyncio.wait_for(conn.set_session_mode(session_id=sid, mode_id="plan"), TIMEOUT)
            await asyncio.wait_for(
                conn._conn.send_request(
                    "session/set_model", {"sessionId": sid, "modelId": "local-claude/claude-local"}
                ),
                TIMEOUT,
            )
            answer = await asyncio.wait_for(
                conn.set_config_option(config_id="mode", session_id=sid, value="bypass"), TIMEOUT
            )
            with pytest.raises(RequestError):
                await conn.set_config_option(config_id="effort", session_id=sid, value="high")
            await asyncio.sleep(0.3)
            return answer, wire

    answer, wire = asyncio.run(run())
    assert wire.problems() == []
    values = {getattr(o, "root", o).id: getattr(o, "root", o).current_value for o in answer.config_options}
    assert values == {"model": "local-claude/claude-local", "mode": "bypass"}
    changes = [
        {o["id"]: o["currentValue"] for o in u["configOptions"]}
        for u in wire.updates()
        if u["sessionUpdate"] == "config_option_update"
    ]
    first = values.get("model") and changes[0]["model"]
    assert changes == [{"model": first, "mode": "plan"}, {"model": "local-claude/claude-local", "mode": "plan"}]
    assert first != "local-claude/claude-local"
    modes = [u["currentModeId"] for u in wire.updates() if u["sessionUpdate"] == "current_mode_update"]
    assert modes == ["plan", "bypass"]


def _thinking_turn() -> bytes:
    message = {
        "id": "msg_t",
        "type": "message",
        "role": "assistant",
        "model": "claude-local",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": message})]
    events.append(
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        )
    )
    for piece in ("Let me ", "think."):
        events.append(
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": piece}},
            )
        )
    events.append(
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig=="}},
        )
    )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events.append(
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "redacted_thinking", "data": "SECRET"},
            },
        )
    )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 1}))
    events.append(
        (
            "content_block_start",
            {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
        )
    )
    events.append(
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "Answer."}},
        )
    )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 2}))
    events.append(
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}},
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return anthropic_sse(events)


def test_anthropic_thinking_blocks_become_thought_chunks(project: Project, local_server: LocalServer) -> None:
    project.write_models(anthropic_provider(local_server, reasoning=True))
    local_server.queue(Reply(body=_thinking_turn()))

    async def run() -> Any:
        async with heron_acp(
            project, local_server, Editor(), model=["--model", "local-claude/claude-local"], env={"HERON_LOG": "debug"}
        ) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            reply = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("q")]), TIMEOUT)
            return reply, wire

    reply, wire = asyncio.run(run())
    assert reply.stop_reason == "end_turn"
    assert wire.problems() == []  # also: HERON_LOG=debug wrote nothing but JSON-RPC on stdout
    updates = wire.updates()
    thought = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_thought_chunk")
    said = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert (thought, said) == ("Let me think.", "Answer.")
    assert "SECRET" not in json.dumps(updates)


def test_a_reply_cut_by_max_tokens_stops_with_max_tokens(project: Project, local_server: LocalServer) -> None:
    chunks = [
        openai_chunk({"role": "assistant", "content": "cut"}),
        openai_chunk({}, finish="length"),
        openai_chunk(usage={"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}),
    ]
    local_server.queue(Reply(body=openai_sse(chunks)))

    async def run() -> Any:
        async with heron_acp(project, local_server, Editor()) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            reply = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("q")]), TIMEOUT)
            return reply, wire

    reply, wire = asyncio.run(run())
    assert reply.stop_reason == "max_tokens"
    assert reply.usage.output_tokens == 9
    assert wire.problems() == []
