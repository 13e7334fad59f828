"""write never loses another process's change: a file changed on disk since the model last
read or wrote it is not overwritten (unless ``overwrite: true``), and the error says what
the write would have removed. New files and files nobody else touched write as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from heron.agent.tools import ToolError, ToolResult
from heron.ai.abort import AbortSignal
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.params import ReadParams, WriteParams
from heron.coding.tools.read import ReadTool
from heron.coding.tools.stale_write import change_summary
from heron.coding.tools.write import WriteTool


def make_env(tmp: Path) -> ToolEnv:
    return ToolEnv(cwd=tmp, home=tmp / "home")


async def write(tool: WriteTool, path: str, content: str, overwrite: bool = False) -> ToolResult:
    params = WriteParams(path=path, content=content, overwrite=overwrite)
    return await tool.execute("w", params, AbortSignal(), lambda _: None)


async def read(tool: ReadTool, path: str) -> ToolResult:
    return await tool.execute("r", ReadParams(path=path), AbortSignal(), lambda _: None)


def touch_later(path: Path, text: str) -> None:
    """Another process writes ``text``; the mtime moves on even on a coarse clock."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))


async def test_a_change_since_the_read_is_refused_and_survives(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    path = tmp_path / "notes.txt"
    path.write_text("one\ntwo\n")
    await read(ReadTool(env), "notes.txt")
    touch_later(path, "one\ntwo\nthe other process's line\n")
    with pytest.raises(ToolError) as info:
        await write(WriteTool(env), "notes.txt", "one\ntwo\nmine\n")
    message = str(info.value)
    assert message.startswith("notes.txt has changed on disk since you last read or wrote it, so it was not")
    assert "would remove 1 line(s) the file has now and add 1.\n- the other process's line\n" in message
    assert "overwrite: true" in message
    assert path.read_text() == "one\ntwo\nthe other process's line\n"
    # the explicit way through
    result = await write(WriteTool(env), "notes.txt", "one\ntwo\nmine\n", overwrite=True)
    assert not result.is_error
    assert path.read_text() == "one\ntwo\nmine\n"


async def test_a_change_since_the_models_own_write_is_refused(tmp_path: Path) -> None:
    """The model created the file (never read it); someone changed it; a second write
    would drop that change."""
    env = make_env(tmp_path)
    tool = WriteTool(env)
    await write(tool, "new.txt", "first\n")
    path = tmp_path / "new.txt"
    touch_later(path, "first\nadded by the user\n")
    with pytest.raises(ToolError, match="added by the user"):
        await write(tool, "new.txt", "second\n")
    assert path.read_text() == "first\nadded by the user\n"


async def test_unchanged_files_and_new_files_write_as_before(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    tool = WriteTool(env)
    path = tmp_path / "a.txt"
    path.write_text("old\n")
    await read(ReadTool(env), "a.txt")
    await write(tool, "a.txt", "new\n")
    await write(tool, "a.txt", "newer\n")  # its own write is the version it knows
    assert path.read_text() == "newer\n"
    # a file the model never read has no version to compare: written as before
    (tmp_path / "b.txt").write_text("unknown\n")
    await write(tool, "b.txt", "replaced\n")
    assert (tmp_path / "b.txt").read_text() == "replaced\n"
    # a file deleted since the read is simply created again
    path.unlink()
    await write(tool, "a.txt", "back\n")
    assert path.read_text() == "back\n"


async def test_the_same_content_already_there_is_not_an_error(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    path = tmp_path / "a.txt"
    path.write_text("x\n")
    await read(ReadTool(env), "a.txt")
    touch_later(path, "y\n")
    result = await write(WriteTool(env), "a.txt", "y\n")
    assert not result.is_error


def test_the_summary_is_short() -> None:
    current = "".join(f"line {i}\n" for i in range(20)).encode()
    text = change_summary(current, b"line 0\n", len(current))
    assert text.startswith("writing your content would remove 19 line(s) the file has now and add 0.")
    assert text.count("\n- ") == 6 and text.endswith("- … and 14 more")
    assert change_summary(None, b"abc", 5_000_000) == (
        "it is now 5,000,000 bytes (too large to compare); your content is 3 bytes."
    )


def test_the_definition_offers_overwrite(tmp_path: Path) -> None:
    definition = WriteTool(make_env(tmp_path)).definition()
    assert definition.parameters["properties"]["overwrite"]["type"] == "boolean"
    assert "overwrite" not in definition.parameters["required"]
    assert "changed on disk" in definition.description
