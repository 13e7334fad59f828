"""read through the editor (``fs/read_text_file``): a text file's content comes from the
client's buffer, unsaved changes included, and is paged, cut, numbered and de-duplicated
exactly as the same content on disk would be; images, binary files and directories come
from disk; a client that does not hold the file leaves the disk read (and its errors).

The first tests drive the read tool with a client double; the last one the real
``heron --mode acp`` process through the SDK's client."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import ReadTextFileResponse

from heron.agent.tools import ToolError, ToolResult
from heron.ai.abort import AbortSignal
from heron.coding.tools.edit import EditTool
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.line_index import FastCount
from heron.coding.tools.params import EditParams, ReadParams
from heron.coding.tools.read import ReadTool
from heron.coding.tools.read_source import content_stamp, is_content_stamp
from heron.context.tool_output.limits import ToolLimits
from tests.cli.test_acp_e2e import fold, heron_acp, new_session, prompt, tool_text
from tests.cli.test_acp_fs import FS, EditorWithBuffers
from tests.cli.test_print_json_e2e import GREET, Project, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


class Buffers:
    """A client holding some files' text; ``fail`` makes every read an error."""

    def __init__(self, held: dict[Path, str], fail: bool = False) -> None:
        self.held = held
        self.fail = fail
        self.asked: list[Path] = []

    async def read_text(self, path: Path) -> str | None:
        self.asked.append(path)
        if self.fail:
            return None  # what EditorFiles gives for a client error
        return self.held.get(path)

    async def write_text(self, path: Path, text: str) -> None:
        self.held[path] = text


def env_for(tmp: Path, client: Buffers | None, limits: ToolLimits | None = None) -> ToolEnv:
    return ToolEnv(cwd=tmp, limits=limits or ToolLimits(), home=tmp / "home", client_files=client)


async def read(tool: ReadTool, path: str, offset: int | None = None, limit: int | None = None) -> ToolResult:
    return await tool.execute(
        "call-1", ReadParams(path=path, offset=offset, limit=limit), AbortSignal(), lambda _: None
    )


def comparable(result: ToolResult) -> tuple[list[Any], dict[str, Any]]:
    details = dict(result.details) if isinstance(result.details, dict) else {}
    details.pop("mtime_ns", None)
    return [repr(c) for c in result.content], details


BIG = "".join(f"line {i} " + "x" * (i % 50) + "\n" for i in range(1, 3001))
CASES = [
    ("small", 'print("unsaved")\n', None, None),
    ("offset and limit", BIG, 10, 5),
    ("cut by the line cap", BIG, None, None),
    ("cut by the byte cap", "y" * 900 + "\n" + "z" * 900 + "\n" + "w\n", None, None),
    ("a line over the byte cap", "q" * 5000 + "\nshort\n", None, None),
    ("long lines cut", "a" * 300 + "\nb\n", None, None),
    ("byte order mark, no final newline", "\ufeffbom first\nsecond", None, None),
    ("limit past the end", "one\ntwo\n", 2, 10),
    ("empty", "", None, None),
]


@pytest.mark.parametrize(("content", "offset", "limit"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_buffer_text_reads_exactly_like_the_same_text_on_disk(
    tmp_path: Path, content: str, offset: int | None, limit: int | None
) -> None:
    limits = ToolLimits(max_lines=200, max_bytes=1500, line_chars=100)
    disk = tmp_path / "disk.txt"
    disk.write_text(content)
    edited = tmp_path / "edited.txt"
    edited.write_text("what is saved differs\n" * 7)
    client = Buffers({edited: content})
    from_disk = await read(ReadTool(env_for(tmp_path, None, limits), block_bytes=4096), "disk.txt", offset, limit)
    tool = ReadTool(env_for(tmp_path, client, limits), block_bytes=4096)
    from_editor = await read(tool, "edited.txt", offset, limit)
    texts, details = comparable(from_editor)
    disk_texts, disk_details = comparable(from_disk)
    assert [t.replace("edited.txt", "disk.txt") for t in texts] == disk_texts
    assert {**details, "path": "disk.txt"} == disk_details
    assert client.asked == [edited]
    if isinstance(from_editor.details, dict) and "mtime_ns" in from_editor.details:
        assert from_editor.details["mtime_ns"] == content_stamp(content.encode())


async def test_a_big_buffer_is_counted_in_memory_not_by_wc_on_the_disk_file(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    buffer = "".join(f"buffer line {i}\n" for i in range(1, 20_001))
    path.write_text(buffer[:-1].replace("\n", " ") + "\n")  # as big, but wc on it would say one line
    fast = FastCount(min_bytes=0, python_scan_bytes=1024, speculate_bytes=0)
    tool = ReadTool(env_for(tmp_path, Buffers({path: buffer})), block_bytes=4096, fast_count=fast)
    result = await read(tool, "big.txt", offset=19_999)
    assert result.content[0].text == "buffer line 19999\nbuffer line 20000"
    assert isinstance(result.details, dict) and result.details["total_lines"] == 20_000


async def test_offset_beyond_the_buffer_is_the_disk_error(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("".join(f"{i}\n" for i in range(50)))  # the disk has 50 lines
    tool = ReadTool(env_for(tmp_path, Buffers({tmp_path / "a.txt": "one\ntwo\n"})))
    with pytest.raises(ToolError) as info:
        await read(tool, "a.txt", offset=5)
    assert str(info.value) == "Offset 5 is beyond end of file (2 lines total)"


async def test_a_repeated_read_is_unchanged_only_while_the_buffer_is(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("saved\n")
    client = Buffers({path: "typing...\n"})
    tool = ReadTool(env_for(tmp_path, client))
    first = await read(tool, "a.txt")
    assert first.content[0].text == "typing..."
    again = await read(tool, "a.txt")
    assert isinstance(again.details, dict) and again.details["kind"] == "unchanged"
    assert again.details["mtime_ns"] == content_stamp(b"typing...\n")
    client.held[path] = "typing more\n"  # same disk file, new buffer text
    changed = await read(tool, "a.txt")
    assert changed.content[0].text == "typing more"


async def test_images_binary_files_and_directories_come_from_disk(tmp_path: Path) -> None:
    (tmp_path / "dot.png").write_bytes(PNG)
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2" * 100)
    (tmp_path / "dir").mkdir()
    client = Buffers({tmp_path / "dot.png": "nonsense", tmp_path / "blob.bin": "nonsense"})
    tool = ReadTool(env_for(tmp_path, client))
    image = await read(tool, "dot.png")
    assert isinstance(image.details, dict) and image.details["kind"] == "image"
    with pytest.raises(ToolError, match="looks like a binary file"):
        await read(tool, "blob.bin")
    with pytest.raises(ToolError, match="is a directory"):
        await read(tool, "dir")
    assert client.asked == []


async def test_a_client_that_fails_or_does_not_hold_the_file_leaves_the_disk(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("on disk\n")
    for client in (Buffers({}), Buffers({}, fail=True)):
        result = await read(ReadTool(env_for(tmp_path, client)), "a.txt")
        assert result.content[0].text == "on disk"
        assert isinstance(result.details, dict) and not is_content_stamp(result.details["mtime_ns"])
    with pytest.raises(ToolError) as info:  # missing on disk: the disk's error, the client is not asked
        await read(ReadTool(env_for(tmp_path, client)), "missing.txt")
    assert "missing.txt" in str(info.value)
    assert client.asked == [tmp_path / "a.txt"]


async def test_edit_after_reading_the_buffer_is_checked_against_the_buffer(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("saved text\n")
    client = Buffers({path: "buffer text\n"})
    env = env_for(tmp_path, client)
    await read(ReadTool(env), "a.txt")
    edit = EditTool(env)
    params = EditParams(path="a.txt", old_text="buffer", new_text="edited")
    await edit.execute("e1", params, AbortSignal(), lambda _: None)  # not "changed on disk"
    assert client.held[path] == "edited text\n"
    again = EditParams(path="a.txt", old_text="edited", new_text="twice")
    await edit.execute("e2", again, AbortSignal(), lambda _: None)  # its own edit is no change behind its back
    assert client.held[path] == "twice text\n"
    client.held[path] = "the user typed: twice text\n"
    with pytest.raises(ToolError, match="has changed since you last read it"):
        await edit.execute(
            "e3", EditParams(path="a.txt", old_text="twice", new_text="x"), AbortSignal(), lambda _: None
        )
    assert path.read_text() == "saved text\n"


def test_the_model_sees_the_editors_unsaved_buffer(project: Project, local_server: LocalServer) -> None:
    greet = str(project.cwd / "greet.py")
    unsaved = 'print("hello, unsaved buffer")\n'
    reads = [("call_read", "read", {"path": "greet.py"}), ("call_gone", "read", {"path": "gone.py"})]
    local_server.queue(openai_reply("", reads), openai_reply("Read."))
    editor = EditorWithBuffers({greet: unsaved}, save=set())  # a file it does not hold: not found

    async def run() -> None:
        async with heron_acp(project, local_server, editor, capabilities=FS) as conn:
            sid = await new_session(conn, project)
            await prompt(conn, sid, "read greet.py")

    asyncio.run(run())
    body = local_server.requests[1].json()
    results = {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}
    text = json.dumps(results["call_read"])
    assert "hello, unsaved buffer" in text and "hello, world" not in text  # the buffer, not the disk
    assert "gone.py" in json.dumps(results["call_gone"])  # missing: the disk read's error
    assert (project.cwd / "greet.py").read_text() == GREET
    assert editor.calls == [("read", greet)]  # a file missing on disk is not asked for
    calls = {c["toolCallId"]: c for c in fold(editor.updates) if isinstance(c, dict)}
    assert calls["call_read"]["status"] == "completed" and "unsaved buffer" in tool_text(calls["call_read"])
    assert calls["call_gone"]["status"] == "failed"


async def test_an_editor_error_falls_back_to_disk_through_editor_files(tmp_path: Path) -> None:
    from heron.cli.acp.client_fs import EditorFiles

    class Conn:
        async def read_text_file(self, **kwargs: Any) -> ReadTextFileResponse:
            raise RequestError.resource_not_found(kwargs["path"])

    (tmp_path / "a.txt").write_text("disk\n")
    env = env_for(tmp_path, None)
    env.client_files = EditorFiles(Conn(), "s1", can_read=True)
    result = await read(ReadTool(env), "a.txt")
    assert result.content[0].text == "disk"
