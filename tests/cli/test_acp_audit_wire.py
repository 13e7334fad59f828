"""Audit: every message heron writes in a whole session is valid against the ACP schema."""

from __future__ import annotations

import asyncio
from typing import Any

from acp import text_block

from tests.cli.acp_wire import TIMEOUT, Editor, heron_acp
from tests.cli.test_print_json_e2e import GREET, Project, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]

TODO = ("call_todo", "todo", {"todos": [{"content": "read", "status": "completed"},
                                        {"content": "edit", "status": "in_progress"}]})


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
            reply = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("go")]),
                                           TIMEOUT)
            listed = await asyncio.wait_for(conn.list_sessions(), TIMEOUT)
            return reply, wire, listed

    reply, wire, listed = asyncio.run(run())
    assert reply.stop_reason == "end_turn"
    assert wire.problems() == []
    updates = wire.updates()
    kinds = [u["sessionUpdate"] for u in updates]
    print(kinds)
    for u in updates:
        print(u)
    assert (project.cwd / "greet.py").read_text() == GREET.replace("world", "heron")
