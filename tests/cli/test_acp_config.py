"""``heron --mode acp``: permission modes as session modes, the model as a config option
(and the older ``session/set_model``), MCP servers passed by the client, and prompts
with images and embedded files - through the real process and the SDK's client."""

from __future__ import annotations

import asyncio
import base64
import sys
from pathlib import Path
from typing import Any

from acp import embedded_text_resource, image_block, resource_block, text_block
from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

from tests.cli.test_acp_e2e import TIMEOUT, Editor, fold, heron_acp, new_session, prompt, tool_text
from tests.cli.test_print_json_e2e import GREET, PNG, Project, anthropic_provider, project
from tests.coding.test_mcp import http_server
from tests.support.http_server import LocalServer
from tests.support.sse import anthropic_reply, openai_reply

__all__ = ["http_server", "project"]

DOUBLE = str(Path(__file__).parents[1] / "coding" / "mcp_double.py")
EDIT = ("call_edit", "edit", {"path": "greet.py", "old_text": "hello, world", "new_text": "hello, plan"})


def test_plan_mode_refuses_an_edit_and_bypass_runs_one_outside_without_asking(
    project: Project, local_server: LocalServer
) -> None:
    outside = project.cwd.parent / "outside.txt"
    write = ("call_write", "write", {"path": str(outside), "content": "new\n"})
    local_server.queue(
        openai_reply("", [EDIT]), openai_reply("Refused."), openai_reply("", [write]), openai_reply("Written.")
    )
    editor = Editor()

    async def run() -> None:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            await conn.set_session_mode(session_id=sid, mode_id="plan")
            await prompt(conn, sid, "change greet.py")
            await conn.set_session_mode(session_id=sid, mode_id="bypass")
            await prompt(conn, sid, "write outside.txt")

    asyncio.run(run())
    assert (project.cwd / "greet.py").read_text() == GREET
    assert outside.read_text() == "new\n"
    assert editor.permissions == []  # plan refuses, bypass runs: neither asks
    modes = [u["currentModeId"] for u in editor.updates if u["sessionUpdate"] == "current_mode_update"]
    assert modes == ["plan", "bypass"]
    calls = [e for e in fold(editor.updates) if isinstance(e, dict)]
    assert [(c["toolCallId"], c["kind"], c["status"]) for c in calls] == [
        ("call_edit", "edit", "failed"),
        ("call_write", "edit", "completed"),
    ]
    assert "Permission denied" in tool_text(calls[0])
    assert calls[1]["content"][0] == {"type": "diff", "path": str(outside), "newText": "new\n"}


def test_the_model_is_chosen_by_config_option_and_by_set_model(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("one"), openai_reply("two"), openai_reply("three"))
    editor = Editor()

    async def run() -> list[Any]:
        async with heron_acp(project, local_server, editor) as conn:
            response = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
            sid = response.session_id
            assert [(o.id, o.category) for o in response.config_options] == [("model", "model"), ("mode", "mode")]
            assert response.config_options[1].current_value == "default"
            await prompt(conn, sid, "a")
            changed = await conn.set_config_option(config_id="model", session_id=sid, value="other-model")
            await prompt(conn, sid, "b")
            # the request of earlier ACP versions (the SDK's client no longer has a method for it)
            await conn._conn.send_request("session/set_model", {"sessionId": sid, "modelId": "third-model"})
            await prompt(conn, sid, "c")
            return [response.config_options, changed.config_options]

    before, after = asyncio.run(run())
    sent = [r.json()["model"] for r in local_server.requests]
    assert sent == ["test-model", "other-model", "third-model"]
    assert before[0].current_value.endswith("/test-model") and after[0].current_value.endswith("/other-model")


def test_mcp_servers_from_the_client_are_connected(project: Project, local_server: LocalServer) -> None:
    call = ("call_echo", "mcp__double__echo", {"text": "hi from mcp", "times": 2})
    local_server.queue(openai_reply("", [call]), openai_reply("Echoed."))
    editor = Editor()
    server = McpServerStdio(
        name="double", command=sys.executable, args=[DOUBLE, "stdio"], env=[EnvVariable(name="DOUBLE_MARK", value="1")]
    )

    async def run() -> None:
        async with heron_acp(project, local_server, editor) as conn:
            response = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[server]), TIMEOUT)
            await prompt(conn, response.session_id, "echo something")

    asyncio.run(run())
    tools = [t["function"]["name"] for t in local_server.requests[0].json()["tools"]]
    assert "mcp__double__echo" in tools
    [entry, answer] = fold(editor.updates)
    assert (entry["toolCallId"], entry["kind"], entry["status"]) == ("call_echo", "other", "completed")
    assert "hi from mcp hi from mcp" in tool_text(entry)
    assert answer == ("agent_message_chunk", "Echoed.")


def test_an_http_mcp_server_from_the_client_is_connected_and_sse_is_skipped(
    project: Project, local_server: LocalServer, http_server: str
) -> None:
    call = ("call_echo", "mcp__web__echo", {"text": "over http"})
    local_server.queue(openai_reply("", [call]), openai_reply("Echoed."))
    editor = Editor()
    servers = [
        HttpMcpServer(type="http", name="web", url=http_server, headers=[HttpHeader(name="X-Test", value="1")]),
        SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[]),
    ]

    async def run() -> None:
        async with heron_acp(project, local_server, editor) as conn:
            response = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=servers), TIMEOUT)
            await prompt(conn, response.session_id, "echo over http")

    asyncio.run(run())
    [entry, _] = fold(editor.updates)
    assert (entry["toolCallId"], entry["status"], tool_text(entry)) == ("call_echo", "completed", "over http")
    stderr = (project.home / "acp-stderr.log").read_text()
    assert "MCP server 'old': transport 'sse' is not supported" in stderr


def test_images_and_embedded_files_reach_the_model(project: Project, local_server: LocalServer) -> None:
    project.write_models(anthropic_provider(local_server, input=["text", "image"]))
    local_server.queue(anthropic_reply("A tiny image."))
    editor = Editor()
    data = base64.b64encode(PNG).decode()
    uri = (project.cwd / "notes.md").as_uri()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor, model=[]) as conn:
            sid = await new_session(conn, project)
            return await asyncio.wait_for(
                conn.prompt(
                    session_id=sid,
                    prompt=[
                        text_block("what is this?"),
                        image_block(data, "image/png"),
                        resource_block(embedded_text_resource(uri, "remember the milk")),
                    ],
                ),
                TIMEOUT,
            )

    assert asyncio.run(run()).stop_reason == "end_turn"
    [user] = [m for m in local_server.requests[0].json()["messages"] if m["role"] == "user"]
    parts = user["content"]
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert texts[0].startswith("what is this?")
    assert f'<file path="{project.cwd / "notes.md"}">\nremember the milk\n</file>' in texts[0]
    assert [p["source"] for p in parts if p["type"] == "image"] == [
        {"type": "base64", "media_type": "image/png", "data": data}
    ]
    assert fold(editor.updates) == [("agent_message_chunk", "A tiny image.")]
