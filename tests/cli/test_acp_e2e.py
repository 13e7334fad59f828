"""``heron --mode acp`` end to end: the real ``heron`` process driven by the ACP SDK's
own client side (``spawn_agent_process``), against a local server speaking the OpenAI
Chat Completions format that scripts the model. Each test checks the whole transcript
of ``session/update`` notifications the editor received, folded into one entry per
message, tool call and plan (see :func:`fold`)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import AllowedOutcome, ClientCapabilities, DeniedOutcome, RequestPermissionResponse

from tests.cli.test_print_json_e2e import GREET, READ, Project, heron_command, openai_args, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]

TIMEOUT = 60.0


class Editor:
    """The client: records every update, answers permission requests with ``answer``."""

    def __init__(self, answer: str | None = "allow_once") -> None:
        self.updates: list[dict[str, Any]] = []
        self.permissions: list[dict[str, Any]] = []
        self.answer = answer
        self.seen = asyncio.Event()
        self.wanted: tuple[str, str] | None = None  # (sessionUpdate, status) that sets `seen`

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        data = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.updates.append(data)
        if self.wanted and (data.get("sessionUpdate"), data.get("status")) == self.wanted:
            self.seen.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append(
            {
                "toolCall": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
                "options": [o.model_dump(mode="json", by_alias=True) for o in options],
            }
        )
        if self.answer == "wait":  # the user has not decided yet: only a cancel ends the question
            self.seen.set()
            await asyncio.Event().wait()
        if self.answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))


@asynccontextmanager
async def heron_acp(
    project: Project,
    server: LocalServer,
    editor: Editor,
    *flags: str,
    model: list[str] | None = None,
    capabilities: ClientCapabilities | None = None,
) -> AsyncIterator[Any]:
    """heron --mode acp, initialized; the model is the local server's (``openai_args``)
    unless ``model`` gives other flags."""
    command = heron_command()
    log = (project.home / "acp-stderr.log").open("ab")
    try:
        async with spawn_agent_process(
            editor,
            command[0],
            *command[1:],
            "--mode",
            "acp",
            *(openai_args(server) if model is None else model),
            *flags,
            env=project.env,
            cwd=project.cwd,
            transport_kwargs={"stderr": log.fileno()},
        ) as (conn, process):
            reply = await asyncio.wait_for(
                conn.initialize(
                    protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities or ClientCapabilities()
                ),
                TIMEOUT,
            )
            assert reply.protocol_version == PROTOCOL_VERSION
            assert reply.agent_capabilities.load_session is True
            assert reply.agent_capabilities.prompt_capabilities.image is True
            assert reply.agent_capabilities.mcp_capabilities.http is True
            yield conn
            assert process.returncode is None, "heron stopped serving"
    finally:
        log.close()


def fold(updates: list[dict[str, Any]]) -> list[Any]:
    """One entry per message (consecutive chunks joined), per tool call (its updates
    merged into its start, in the place it started) and per plan; usage updates (sent at
    the end of each prompt) left out, as boundaries between messages."""
    out: list[Any] = []
    calls: dict[str, dict[str, Any]] = {}
    joinable = False
    for update in updates:
        kind = update["sessionUpdate"]
        if kind == "usage_update":
            joinable = False
        elif kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
            text = update["content"].get("text", f"<{update['content']['type']}>")
            if joinable and out and isinstance(out[-1], tuple) and out[-1][0] == kind:
                out[-1] = (kind, out[-1][1] + text)
            else:
                out.append((kind, text))
            joinable = True
        elif kind == "tool_call":
            calls[update["toolCallId"]] = dict(update)
            out.append(calls[update["toolCallId"]])
        elif kind == "tool_call_update":
            calls[update["toolCallId"]].update({k: v for k, v in update.items() if k != "sessionUpdate"})
        elif kind == "plan":
            out.append(("plan", [(e["content"], e["status"]) for e in update["entries"]]))
    return out


def tool_text(call: dict[str, Any]) -> str:
    return "".join(c["content"]["text"] for c in call.get("content", []) if c["type"] == "content")


async def new_session(conn: Any, project: Project) -> str:
    response = await asyncio.wait_for(conn.new_session(cwd=str(project.cwd), mcp_servers=[]), TIMEOUT)
    assert response.modes.current_mode_id == "default"
    assert [m.id for m in response.modes.available_modes] == ["default", "plan", "accept-edits", "bypass"]
    return str(response.session_id)


async def prompt(conn: Any, session_id: str, text: str) -> Any:
    return await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block(text)]), TIMEOUT)


def test_a_read_streams_a_read_tool_call_naming_its_file(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("Reading.", [READ]), openai_reply("It prints hello."))
    editor = Editor()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            return await prompt(conn, sid, "what does greet.py print?")

    response = asyncio.run(run())
    assert response.stop_reason == "end_turn"
    assert response.usage.input_tokens == 200 and response.usage.output_tokens == 40
    folded = fold(editor.updates)
    path = str(project.cwd / "greet.py")
    assert folded[0] == ("agent_message_chunk", "Reading.")
    call = folded[1]
    assert {k: call[k] for k in ("toolCallId", "title", "kind", "status", "locations", "rawInput")} == {
        "toolCallId": "call_read",
        "title": "Read greet.py",
        "kind": "read",
        "status": "completed",
        "locations": [{"path": path}],
        "rawInput": {"path": "greet.py"},
    }
    assert GREET.strip() in tool_text(call)
    assert folded[2:] == [("agent_message_chunk", "It prints hello.")]
    statuses = [u.get("status") for u in editor.updates if u.get("toolCallId") == "call_read"]
    assert statuses == ["pending", "in_progress", "completed"]
    usage = [u for u in editor.updates if u["sessionUpdate"] == "usage_update"]
    assert len(usage) == 1 and usage[0]["size"] > usage[0]["used"] > 0
    assert editor.updates[-1]["sessionUpdate"] == "usage_update"
    assert editor.permissions == []


def _edit_outside(project: Project) -> tuple[Path, tuple[str, str, dict[str, object]]]:
    outside = project.cwd.parent / "outside.py"
    outside.write_text(GREET)
    return outside, (
        "call_edit",
        "edit",
        {"path": str(outside), "old_text": "hello, world", "new_text": "hello, editor"},
    )


@pytest.mark.parametrize("answer", ["allow_once", "allow_always", "reject", None])
def test_an_edit_outside_the_project_asks_the_editor(
    project: Project, local_server: LocalServer, answer: str | None
) -> None:
    outside, edit = _edit_outside(project)
    local_server.queue(openai_reply("", [edit]), openai_reply("Finished."))
    editor = Editor(answer)

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            return await prompt(conn, sid, "change outside.py")

    assert asyncio.run(run()).stop_reason == "end_turn"
    allowed = answer in ("allow_once", "allow_always")
    assert outside.read_text() == (GREET.replace("world", "editor") if allowed else GREET)
    [asked] = editor.permissions
    assert asked["toolCall"]["toolCallId"] == "call_edit"
    assert asked["toolCall"]["kind"] == "edit"
    assert asked["toolCall"]["locations"] == [{"path": str(outside)}]
    assert asked["toolCall"]["content"] == [
        {"type": "diff", "path": str(outside), "oldText": "hello, world", "newText": "hello, editor"}
    ]
    assert [(o["optionId"], o["kind"]) for o in asked["options"]] == [
        ("allow_once", "allow_once"),
        ("allow_always", "allow_always"),
        ("reject", "reject_once"),
    ]
    [call, final] = fold(editor.updates)
    assert call["title"] == "Edit ../outside.py" or call["title"] == f"Edit {outside}"
    assert call["kind"] == "edit"
    assert call["status"] == ("completed" if allowed else "failed")
    if allowed:
        assert {"type": "diff", "path": str(outside), "oldText": "hello, world", "newText": "hello, editor"} in call[
            "content"
        ]
    else:
        assert "denied" in tool_text(call)
    assert final == ("agent_message_chunk", "Finished.")
    local_rules = project.cwd / ".heron" / "settings.local.json"
    if answer == "allow_always":
        assert json.loads(local_rules.read_text())["permissions"]["allow"]
    else:
        assert not local_rules.exists()


def test_cancel_stops_a_running_command_within_five_seconds(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("", [("call_sleep", "bash", {"command": "sleep 30"})]), openai_reply("never sent"))
    editor = Editor()
    editor.wanted = ("tool_call_update", "in_progress")

    async def run() -> tuple[Any, float]:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            task = asyncio.ensure_future(prompt(conn, sid, "wait a while"))
            await asyncio.wait_for(editor.seen.wait(), TIMEOUT)
            await asyncio.sleep(0.3)  # the command is running
            started = time.monotonic()
            await conn.cancel(session_id=sid)
            response = await asyncio.wait_for(task, 10)
            return response, time.monotonic() - started

    response, took = asyncio.run(run())
    assert response.stop_reason == "cancelled"
    assert took < 5.0
    [call] = fold(editor.updates)
    assert (call["toolCallId"], call["kind"], call["title"], call["status"]) == (
        "call_sleep",
        "execute",
        "`sleep 30`",
        "failed",
    )
    assert len(local_server.requests) == 1  # the run stopped: no request after the cancelled tool


def test_cancel_while_the_editor_is_asked_denies_the_call(project: Project, local_server: LocalServer) -> None:
    outside, edit = _edit_outside(project)
    local_server.queue(openai_reply("", [edit]), openai_reply("never sent"))
    editor = Editor("wait")

    async def run() -> tuple[Any, float]:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            task = asyncio.ensure_future(prompt(conn, sid, "change outside.py"))
            await asyncio.wait_for(editor.seen.wait(), TIMEOUT)
            started = time.monotonic()
            await conn.cancel(session_id=sid)
            return await asyncio.wait_for(task, 10), time.monotonic() - started

    response, took = asyncio.run(run())
    assert response.stop_reason == "cancelled" and took < 5.0
    assert outside.read_text() == GREET
    [call] = fold(editor.updates)
    assert call["status"] == "failed"
    assert len(local_server.requests) == 1


def test_compact_command_shows_the_compaction_as_a_tool_call(project: Project, local_server: LocalServer) -> None:
    project.write_settings({"compaction": {"keepRecentTokens": 1}})
    long = "Hello there. " * 600  # enough history for a summary to shrink
    local_server.queue(
        openai_reply(long),
        openai_reply("Done."),
        openai_reply("## Goal\nSay hello.\n"),
        openai_reply("## Turn\nThanked."),
    )  # the history's summary, then the split turn's
    editor = Editor()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            await prompt(conn, sid, "say hello")
            await prompt(conn, sid, "thanks")
            return await prompt(conn, sid, "/compact")

    assert asyncio.run(run()).stop_reason == "end_turn"
    [answer, done, compaction] = fold(editor.updates)
    assert answer == ("agent_message_chunk", long)
    assert done == ("agent_message_chunk", "Done.")
    text = tool_text(compaction)
    assert (compaction["title"], compaction["kind"], compaction["status"]) == (
        "Compact the context",
        "other",
        "completed",
    ), text
    assert compaction["toolCallId"].startswith("compaction-")
    assert "Say hello." in text
    assert "Compacted (manual)" in text
    compactions = [
        json.loads(line)
        for f in (project.home / "sessions").rglob("*.jsonl")
        for line in f.read_text().splitlines()
        if '"compaction"' in line
    ]
    assert [c["type"] for c in compactions if c["type"] == "compaction"] == ["compaction"]


TODO = (
    "call_todo",
    "todo",
    {
        "todos": [
            {"content": "read greet.py", "status": "completed"},
            {"content": "explain it", "status": "in_progress"},
        ]
    },
)


def test_session_load_after_a_restart_replays_what_the_editor_saw(project: Project, local_server: LocalServer) -> None:
    local_server.queue(
        openai_reply("Reading.", [READ]),
        openai_reply("", [TODO]),
        openai_reply("It prints hello."),
        openai_reply("Still hello."),
    )
    live, loaded = Editor(), Editor()

    async def first() -> str:
        async with heron_acp(project, local_server, live) as conn:
            sid = await new_session(conn, project)
            await prompt(conn, sid, "what does greet.py print?")
            return sid

    async def second(sid: str) -> tuple[Any, Any, Any]:
        async with heron_acp(project, local_server, loaded) as conn:
            listed = await conn.list_sessions(cwd=str(project.cwd))
            response = await asyncio.wait_for(
                conn.load_session(cwd=str(project.cwd), session_id=sid, mcp_servers=[]), TIMEOUT
            )
            replayed = list(loaded.updates)
            assert (await prompt(conn, sid, "and now?")).stop_reason == "end_turn"
            return listed, response, replayed

    sid = asyncio.run(first())
    listed, response, replayed = asyncio.run(second(sid))
    assert [(s.session_id, s.cwd, s.title) for s in listed.sessions] == [
        (sid, str(project.cwd), "what does greet.py print?")
    ]
    assert response.modes.current_mode_id == "default"
    folded = fold(replayed)
    assert folded[0] == ("user_message_chunk", "what does greet.py print?")
    assert folded[1:] == fold(live.updates)
    assert ("plan", [("read greet.py", "completed"), ("explain it", "in_progress")]) in folded
    kinds = [(e["kind"], e["status"]) for e in folded if isinstance(e, dict)]
    assert kinds == [("read", "completed"), ("other", "completed")]
    history = local_server.requests[-1].json()["messages"]
    assert [m["content"] for m in history if m["role"] == "user"][-2:] == ["what does greet.py print?", "and now?"]
    assert fold(loaded.updates[len(replayed) :]) == [("agent_message_chunk", "Still hello.")]


def test_thinking_is_streamed_as_thought_chunks_and_a_reload_in_the_same_process_replays_it(
    project: Project, local_server: LocalServer
) -> None:
    from tests.support.http_server import Reply
    from tests.support.sse import openai_chunk, openai_sse

    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    local_server.queue(
        Reply(
            body=openai_sse(
                [
                    openai_chunk({"role": "assistant", "content": ""}),
                    openai_chunk({"reasoning_content": "Let me "}),
                    openai_chunk({"reasoning_content": "think."}),
                    openai_chunk({"content": "Answer."}),
                    openai_chunk({}, finish="stop"),
                    openai_chunk(usage=usage),
                ]
            )
        )
    )
    editor = Editor()

    async def run() -> list[dict[str, Any]]:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            await prompt(conn, sid, "think first")
            seen = len(editor.updates)
            await asyncio.wait_for(conn.load_session(cwd=str(project.cwd), session_id=sid, mcp_servers=[]), TIMEOUT)
            return editor.updates[seen:]

    replayed = asyncio.run(run())
    live = ("agent_thought_chunk", "Let me think."), ("agent_message_chunk", "Answer.")
    assert fold(editor.updates[: len(editor.updates) - len(replayed)]) == list(live)
    assert fold(replayed) == [("user_message_chunk", "think first"), *live]
