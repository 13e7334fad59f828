"""session/close, session/fork and session/resume (unstable parts of ACP that SDK 0.12
routes): close frees the session (its id is unknown afterwards, its file can be opened
again), fork starts a new session holding the conversation, resume opens a stored session
without replaying it. The real ``heron --mode acp`` driven by the SDK's client."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from acp import RequestError

from tests.cli.test_acp_e2e import TIMEOUT, Editor, fold, heron_acp, new_session, prompt
from tests.cli.test_print_json_e2e import Project, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]


def user_texts(server: LocalServer, index: int = -1) -> list[str]:
    return [m["content"] for m in server.requests[index].json()["messages"] if m["role"] == "user"]


def test_initialize_advertises_close_fork_and_resume(project: Project, local_server: LocalServer) -> None:
    async def run() -> Any:
        async with heron_acp(project, local_server, Editor()) as conn:
            return await conn.initialize(protocol_version=1)

    caps = asyncio.run(run()).agent_capabilities.session_capabilities
    assert caps.close is not None and caps.fork is not None and caps.resume is not None and caps.list is not None


def test_close_frees_the_session_and_load_opens_it_again(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("Hello."), openai_reply("Again."))
    editor = Editor()

    async def run() -> None:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            await prompt(conn, sid, "hi")
            await asyncio.wait_for(conn.close_session(session_id=sid), TIMEOUT)
            with pytest.raises(RequestError) as info:
                await prompt(conn, sid, "still there?")
            assert info.value.code == -32602 and "unknown session" in str(info.value.data)
            with pytest.raises(RequestError) as info:  # closing twice: unknown too
                await conn.close_session(session_id=sid)
            assert info.value.code == -32602
            await asyncio.wait_for(conn.load_session(cwd=str(project.cwd), session_id=sid, mcp_servers=[]), TIMEOUT)
            assert (await prompt(conn, sid, "and again")).stop_reason == "end_turn"

    asyncio.run(run())
    assert user_texts(local_server) == ["hi", "and again"]
    assert len(local_server.requests) == 2


def test_close_cancels_a_running_prompt(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("", [("call_sleep", "bash", {"command": "sleep 30"})]), openai_reply("never"))
    editor = Editor()
    editor.wanted = ("tool_call_update", "in_progress")

    async def run() -> tuple[Any, float]:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            running = asyncio.ensure_future(prompt(conn, sid, "wait"))
            await asyncio.wait_for(editor.seen.wait(), TIMEOUT)
            started = time.monotonic()
            await asyncio.wait_for(conn.close_session(session_id=sid), TIMEOUT)
            response = await asyncio.wait_for(running, 10)
            return response, time.monotonic() - started

    response, took = asyncio.run(run())
    assert response.stop_reason == "cancelled" and took < 6
    assert len(local_server.requests) == 1


def test_fork_starts_a_new_session_with_the_conversation(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("Hello."), openai_reply("Forked answer."), openai_reply("Original answer."))
    editor = Editor()

    async def run() -> tuple[str, str]:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            await prompt(conn, sid, "hi")
            forked = await asyncio.wait_for(
                conn.fork_session(cwd=str(project.cwd), session_id=sid, mcp_servers=[]), TIMEOUT
            )
            assert forked.modes.current_mode_id == "default"
            await prompt(conn, forked.session_id, "in the fork")
            await prompt(conn, sid, "in the original")
            listed = await conn.list_sessions(cwd=str(project.cwd))
            assert {s.session_id for s in listed.sessions} == {sid, forked.session_id}
            return sid, forked.session_id

    sid, fork_id = asyncio.run(run())
    assert fork_id != sid
    assert user_texts(local_server, 1) == ["hi", "in the fork"]
    assert user_texts(local_server, 2) == ["hi", "in the original"]  # the fork's turn is not in the original


def test_resume_without_replay_and_fork_of_a_stored_session(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("Hello."), openai_reply("Resumed."), openai_reply("From the fork."))
    first, second, third = Editor(), Editor(), Editor()

    async def create() -> str:
        async with heron_acp(project, local_server, first) as conn:
            sid = await new_session(conn, project)
            await prompt(conn, sid, "hi")
            return sid

    async def resume(sid: str) -> None:
        async with heron_acp(project, local_server, second) as conn:
            await asyncio.wait_for(conn.resume_session(cwd=str(project.cwd), session_id=sid, mcp_servers=[]), TIMEOUT)
            assert (await prompt(conn, sid, "resumed?")).stop_reason == "end_turn"
            with pytest.raises(RequestError) as info:
                await conn.resume_session(cwd=str(project.cwd), session_id="no-such-session", mcp_servers=[])
            assert info.value.code == -32602

    async def fork(sid: str) -> str:
        async with heron_acp(project, local_server, third) as conn:  # the session is not open in this process
            forked = await asyncio.wait_for(
                conn.fork_session(cwd=str(project.cwd), session_id=sid, mcp_servers=[]), TIMEOUT
            )
            await prompt(conn, forked.session_id, "from the fork")
            with pytest.raises(RequestError) as info:
                await conn.fork_session(cwd=str(project.cwd), session_id="no-such-session", mcp_servers=[])
            assert info.value.code == -32602
            return str(forked.session_id)

    sid = asyncio.run(create())
    asyncio.run(resume(sid))
    assert fold(second.updates)[0] == ("agent_message_chunk", "Resumed.")  # nothing replayed before it
    assert not any(u["sessionUpdate"] == "user_message_chunk" for u in second.updates)
    assert user_texts(local_server, 1) == ["hi", "resumed?"]
    assert asyncio.run(fork(sid)) != sid
    assert user_texts(local_server, 2) == ["hi", "resumed?", "from the fork"]
