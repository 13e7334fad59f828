"""The client's ``fs/*`` methods: when the editor offers them, heron's edit matches
against the editor's buffer (unsaved changes included) and write and edit hand the new
text to the editor instead of replacing the file behind its back."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.schema import ClientCapabilities, FileSystemCapabilities, ReadTextFileResponse, WriteTextFileResponse

from tests.cli.test_acp_e2e import Editor, fold, heron_acp, new_session, prompt, tool_text
from tests.cli.test_print_json_e2e import GREET, Project, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]

UNSAVED = 'print("hello, unsaved")\n'


class EditorWithBuffers(Editor):
    """Holds open buffers; writes go to the buffer, and to disk only for files it saves."""

    def __init__(self, buffers: dict[str, str], save: set[str], refuse: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.buffers = buffers
        self.save = save
        self.refuse = refuse
        self.calls: list[tuple[str, str]] = []

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        self.calls.append(("read", path))
        if path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.calls.append(("write", path))
        if path in self.refuse:
            raise RequestError.internal_error({"message": "the buffer is read-only"})
        self.buffers[path] = content
        if path in self.save:
            Path(path).write_text(content)
        return WriteTextFileResponse()


FS = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))


def test_edit_and_write_go_through_the_editor(project: Project, local_server: LocalServer) -> None:
    greet, new = str(project.cwd / "greet.py"), str(project.cwd / "new.txt")
    edit = ("call_edit", "edit", {"path": "greet.py", "old_text": "hello, unsaved", "new_text": "hello, agent"})
    write = ("call_write", "write", {"path": "new.txt", "content": "fresh\n"})
    local_server.queue(openai_reply("", [edit]), openai_reply("", [write]), openai_reply("Done."))
    editor = EditorWithBuffers({greet: UNSAVED}, save={new})

    async def run() -> None:
        async with heron_acp(project, local_server, editor, capabilities=FS) as conn:
            sid = await new_session(conn, project)
            await prompt(conn, sid, "change the greeting")

    asyncio.run(run())
    assert editor.buffers[greet] == 'print("hello, agent")\n'  # matched against the unsaved buffer
    assert (project.cwd / "greet.py").read_text() == GREET  # the editor has not saved it: heron did not either
    assert (project.cwd / "new.txt").read_text() == "fresh\n"  # written by the editor
    assert editor.calls == [("read", greet), ("write", greet), ("write", new)]
    calls = [e for e in fold(editor.updates) if isinstance(e, dict)]
    assert [(c["toolCallId"], c["status"]) for c in calls] == [("call_edit", "completed"), ("call_write", "completed")]


def test_a_file_the_editor_does_not_hold_is_matched_on_disk(project: Project, local_server: LocalServer) -> None:
    greet = str(project.cwd / "greet.py")
    edit = ("call_edit", "edit", {"path": "greet.py", "old_text": "hello, world", "new_text": "hello, disk"})
    local_server.queue(openai_reply("", [edit]), openai_reply("Done."))
    editor = EditorWithBuffers({}, save={greet})

    async def run() -> None:
        async with heron_acp(project, local_server, editor, capabilities=FS) as conn:
            sid = await new_session(conn, project)
            await prompt(conn, sid, "change it")

    asyncio.run(run())
    assert editor.calls == [("read", greet), ("write", greet)]  # asked, not held: the disk text was matched
    assert editor.buffers[greet] == GREET.replace("world", "disk")
    assert (project.cwd / "greet.py").read_text() == GREET.replace("world", "disk")


def test_a_write_the_editor_refuses_changes_nothing(project: Project, local_server: LocalServer) -> None:
    target = str(project.cwd / "locked.txt")
    write = ("call_write", "write", {"path": "locked.txt", "content": "x\n"})
    local_server.queue(openai_reply("", [write]), openai_reply("Could not."))
    editor = EditorWithBuffers({}, save=set(), refuse=frozenset({target}))

    async def run() -> None:
        async with heron_acp(project, local_server, editor, capabilities=FS) as conn:
            sid = await new_session(conn, project)
            await prompt(conn, sid, "write it")

    asyncio.run(run())
    assert not (project.cwd / "locked.txt").exists()
    [call, answer] = fold(editor.updates)
    assert call["status"] == "failed"
    assert "The editor could not write" in tool_text(call) and "the buffer is read-only" in tool_text(call)
    assert answer == ("agent_message_chunk", "Could not.")
