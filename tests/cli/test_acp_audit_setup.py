"""Audit: initialize negotiation, session/new parameters, prompt blocks, errors that keep
the process serving; every message checked against the ACP schema (tests/cli/acp_wire.py)."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp import schema as s

from tests.cli.acp_wire import TIMEOUT, Editor, heron_acp
from tests.cli.test_print_json_e2e import PNG, Project, anthropic_provider, project
from tests.support.http_server import LocalServer
from tests.support.sse import anthropic_reply, openai_reply

__all__ = ["project"]


@pytest.mark.parametrize("asked", [0, PROTOCOL_VERSION, PROTOCOL_VERSION + 1, 99])
def test_initialize_negotiates_a_version_heron_speaks(project: Project, local_server: LocalServer, asked: int) -> None:
    async def run() -> Any:
        async with heron_acp(project, local_server, Editor(), protocol_version=asked) as (_conn, _proc, wire):
            return wire

    wire = asyncio.run(run())
    # The agent answers the requested version when it speaks it, else the latest one it speaks.
    assert wire.init.protocol_version == PROTOCOL_VERSION
    assert wire.problems() == []


@pytest.mark.parametrize(
    "capabilities",
    [
        s.ClientCapabilities(),
        s.ClientCapabilities(fs=s.FileSystemCapabilities(read_text_file=True, write_text_file=False)),
        s.ClientCapabilities(terminal=True),
    ],
)
def test_capabilities_without_fs_still_run_tools_on_disk(
    project: Project, local_server: LocalServer, capabilities: s.ClientCapabilities
) -> None:
    """No fs writing offered: edits go to disk, nothing is asked of the editor's fs."""
    local_server.queue(
        openai_reply("", [("c1", "edit", {"path": "greet.py", "old_text": "world", "new_text": "acp"})]),
        openai_reply("ok"),
    )
    editor = Editor()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor, capabilities=capabilities) as (conn, _proc, wire):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            reply = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("e")]), TIMEOUT)
            return reply, wire

    reply, wire = asyncio.run(run())
    assert reply.stop_reason == "end_turn"
    assert "acp" in (project.cwd / "greet.py").read_text()
    assert not [m for m in wire.sent() if str(m.get("method", "")).startswith("fs/")]
    assert wire.problems() == []


def test_session_new_bad_params_are_errors_and_the_process_serves_on(
    project: Project, local_server: LocalServer
) -> None:
    local_server.queue(openai_reply("still here"))

    async def run() -> Any:
        async with heron_acp(project, local_server, Editor()) as (conn, proc, wire):
            errors = []
            for params in (
                {"cwd": "project", "mcpServers": []},
                {"mcpServers": []},
                {"cwd": str(project.cwd / "missing"), "mcpServers": []},
                {"cwd": 5, "mcpServers": []},
            ):
                with pytest.raises(RequestError) as caught:
                    await asyncio.wait_for(conn._conn.send_request("session/new", params), TIMEOUT)
                errors.append(caught.value.code)
            with pytest.raises(RequestError) as caught:
                await conn.prompt(session_id="nope", prompt=[text_block("x")])
            errors.append(caught.value.code)
            with pytest.raises(RequestError) as caught:
                await conn._conn.send_request("session/prompt", {"sessionId": "nope"})
            errors.append(caught.value.code)
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            reply = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("x")]), TIMEOUT)
            assert proc.returncode is None
            return errors, reply, wire

    errors, reply, wire = asyncio.run(run())
    assert errors == [-32602] * 6
    assert reply.stop_reason == "end_turn"
    assert wire.problems() == []


def test_mcp_server_env_as_name_value_list_is_accepted(project: Project, local_server: LocalServer) -> None:
    """The client's stdio MCP server with env [{name, value}]: the session opens (a server
    that does not start is reported, it does not fail session/new)."""

    async def run() -> Any:
        async with heron_acp(project, local_server, Editor()) as (conn, _proc, wire):
            server = s.McpServerStdio(
                name="fake",
                command="/nonexistent/mcp-server",
                args=["--x"],
                env=[s.EnvVariable(name="TOKEN", value="abc")],
            )
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[server]), TIMEOUT)
            return new, wire

    new, wire = asyncio.run(run())
    assert new.session_id
    assert wire.problems() == []


def test_prompt_with_text_link_resource_and_image_reaches_the_model(
    project: Project, local_server: LocalServer
) -> None:
    local_server.queue(anthropic_reply("seen"))
    project.write_models(anthropic_provider(local_server, input=["text", "image"]))
    link = s.ResourceContentBlock(type="resource_link", uri=f"file://{project.cwd}/greet.py", name="greet.py")
    embedded = s.EmbeddedResourceContentBlock(
        type="resource",
        resource=s.TextResourceContents(
            uri=f"file://{project.cwd}/notes%20a.md", text="NOTE-BODY", mime_type="text/markdown"
        ),
    )
    image = s.ImageContentBlock(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png")

    async def run() -> Any:
        async with heron_acp(project, local_server, Editor(), model=["--model", "local-claude/claude-local"]) as (
            conn,
            _proc,
            wire,
        ):
            new = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
            reply = await asyncio.wait_for(
                conn.prompt(session_id=new.session_id, prompt=[text_block("look"), link, embedded, image]), TIMEOUT
            )
            return reply, wire

    reply, wire = asyncio.run(run())
    assert reply.stop_reason == "end_turn"
    body = local_server.requests[-1].body.decode()
    assert "look" in body and f"@{project.cwd}/greet.py" in body
    assert "NOTE-BODY" in body and f"{project.cwd}/notes a.md" in body
    assert '"type": "image"' in body or '"type":"image"' in body
    assert "omitted" not in body
    assert wire.problems() == []
