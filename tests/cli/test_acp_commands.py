"""``available_commands_update``: the slash commands that work as an ACP prompt
(``/compact``, extension commands, prompt templates, ``/skill:name``), sent right after
the session/new and session/load responses, never before them (the client would not
know the session yet). Read from heron's raw stdout, so the order on the wire is what
is checked."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from heron.cli.acp.commands import available
from heron.coding.templates import PromptTemplate, TemplateSet
from tests.cli.test_acp_e2e import Editor, heron_acp, new_session, prompt
from tests.cli.test_acp_errors import Raw, request
from tests.cli.test_print_json_e2e import Project, openai_args, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]

INIT = {"protocolVersion": 1, "clientCapabilities": {}}


def commands_of(message: dict[str, Any]) -> dict[str, dict[str, Any]]:
    update = message["params"]["update"]
    assert update["sessionUpdate"] == "available_commands_update"
    return {c["name"]: c for c in update["availableCommands"]}


def test_commands_follow_the_new_and_load_responses(project: Project, local_server: LocalServer) -> None:
    prompts = project.cwd / ".heron" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "review.md").write_text("---\ndescription: Review the change\n---\nReview $ARGUMENTS\n")
    local_server.queue(openai_reply("Hello."))
    raw = Raw(project, *openai_args(local_server))
    try:
        raw.send(request(1, "initialize", INIT))
        created = raw.send(request(2, "session/new", {"cwd": str(project.cwd), "mcpServers": []}))
        sid = created["result"]["sessionId"]
        note = raw.next()
        assert raw.log[-2:] == [created, note]  # the response first, then the commands
        assert note["method"] == "session/update" and note["params"]["sessionId"] == sid
        listed = commands_of(note)
        assert list(listed)[:1] == ["compact"]
        assert listed["compact"]["input"] == {"hint": "what the summary should keep (optional)"}
        assert listed["review"]["description"] == "Review the change"
        assert raw.send(request(3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}))[
            "result"
        ]
    finally:
        raw.close()
    raw = Raw(project, *openai_args(local_server))
    try:
        raw.send(request(1, "initialize", INIT))
        start = len(raw.log)
        loaded = raw.send(request(2, "session/load", {"sessionId": sid, "cwd": str(project.cwd), "mcpServers": []}))
        assert "result" in loaded
        note = raw.next()
        replayed = raw.log[start:-2]
        assert replayed and all(
            m["params"]["update"]["sessionUpdate"] != "available_commands_update" for m in replayed
        )  # the history came before the response
        assert raw.log[-2:] == [loaded, note] and note["params"]["sessionId"] == sid
        assert {"compact", "review"} <= set(commands_of(note))
    finally:
        code, _ = raw.close()
    assert code == 0


def test_the_sdk_client_gets_the_commands_and_compact_works_as_typed(
    project: Project, local_server: LocalServer
) -> None:
    local_server.queue(openai_reply("Hello."), openai_reply("Summary of the talk."))
    editor = Editor()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            await prompt(conn, sid, "hi")
            return await prompt(conn, sid, "/compact")

    assert asyncio.run(run()).stop_reason == "end_turn"
    kinds = [u["sessionUpdate"] for u in editor.updates]
    assert kinds[0] == "available_commands_update"
    assert editor.updates[0]["availableCommands"][0]["name"] == "compact"
    assert any(u.get("title") == "Compact the context" for u in editor.updates)


def test_an_unknown_skill_is_an_invalid_params_error(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("Fine."))
    editor = Editor()

    async def run() -> None:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            with pytest.raises(RequestError) as info:
                await prompt(conn, sid, "/skill:nope do it")
            assert info.value.code == -32602 and "nope" in str(info.value.data)
            assert (await prompt(conn, sid, "hi")).stop_reason == "end_turn"  # the session goes on

    asyncio.run(run())
    assert len(local_server.requests) == 1


@dataclass
class Command:
    name: str
    description: str
    extension: str


@dataclass
class Skill:
    name: str
    description: str


@dataclass
class Skills:
    skills: list[Skill] = field(default_factory=list)


class Extensions:
    def command_list(self) -> list[Command]:
        return [Command("deploy", "", "shipit"), Command("review", "the extension's review", "shipit")]


@dataclass
class Session:
    extensions: Extensions
    templates: TemplateSet
    skills: Skills


def test_extension_commands_come_before_templates_of_the_same_name(tmp_path: Path) -> None:
    templates = TemplateSet({"review": PromptTemplate("review", "the file's review", "x", tmp_path, "project")})
    session = Session(Extensions(), templates, Skills([Skill("pdf", "Work with PDFs")]))
    listed = {c.name: c.description for c in available(session).available_commands}
    assert listed == {
        "compact": listed["compact"],
        "goal": listed["goal"],
        "deploy": "extension shipit",
        "review": "the extension's review",
        "skill:pdf": "Work with PDFs",
    }
