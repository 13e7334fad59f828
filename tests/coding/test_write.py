"""write: creates directories, replaces atomically, keeps the mode, reports UTF-8 bytes."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

import heron.coding.tools.write as write_module
from heron.agent.tools import ToolError, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.types import TextContent
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.params import ReadParams, WriteParams
from heron.coding.tools.read import ReadTool
from heron.coding.tools.write import WriteTool


def make_env(tmp: Path) -> ToolEnv:
    return ToolEnv(cwd=tmp, home=tmp / "home")


async def write(tool: WriteTool, path: str, content: str) -> ToolResult:
    updates: list[ToolResult] = []
    return await tool.execute("call-1", WriteParams(path=path, content=content), AbortSignal(), updates.append)


def text_of(result: ToolResult) -> str:
    assert isinstance(result.content[0], TextContent)
    return result.content[0].text


def leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


async def test_creates_the_file_and_its_parent_directories(tmp_path: Path) -> None:
    result = await write(WriteTool(make_env(tmp_path)), "sub/dir/a.txt", "hello")
    assert text_of(result) == "Wrote 5 bytes to sub/dir/a.txt"
    assert (tmp_path / "sub/dir/a.txt").read_text() == "hello"
    assert result.details == {"path": "sub/dir/a.txt", "bytes": 5, "created": True}
    assert not result.is_error


async def test_reports_utf8_bytes_not_characters(tmp_path: Path) -> None:
    result = await write(WriteTool(make_env(tmp_path)), "u.txt", "café ✓\n")
    assert text_of(result) == "Wrote 10 bytes to u.txt"
    assert (tmp_path / "u.txt").read_bytes() == "café ✓\n".encode()


async def test_replaces_an_existing_file_and_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("echo old\n")
    path.chmod(0o751)
    result = await write(WriteTool(make_env(tmp_path)), "run.sh", "echo new\n")
    assert text_of(result) == "Wrote 9 bytes to run.sh"
    assert path.read_text() == "echo new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert result.details["created"] is False
    assert leftovers(tmp_path) == []


async def test_new_file_mode_follows_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        await write(WriteTool(make_env(tmp_path)), "new.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640


async def test_a_failed_replace_leaves_the_original_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.txt"
    path.write_text("original\n")

    def failing_replace(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write_module.os, "replace", failing_replace)
    with pytest.raises(ToolError) as info:
        await write(WriteTool(make_env(tmp_path)), "a.txt", "new content\n")
    assert str(info.value) == "Cannot write a.txt: No space left on device"
    assert path.read_text() == "original\n"
    assert leftovers(tmp_path) == []


async def test_the_write_goes_through_a_temp_file_in_the_same_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, str]] = []
    real = os.replace

    def spying(src: Any, dst: Any) -> None:
        seen.append((str(src), str(dst)))
        real(src, dst)

    monkeypatch.setattr(write_module.os, "replace", spying)
    await write(WriteTool(make_env(tmp_path)), "d/a.txt", "x")
    [(src, dst)] = seen
    assert Path(src).parent == Path(dst).parent == tmp_path / "d"
    assert Path(src).name.startswith(".a.txt.") and src.endswith(".tmp")


async def test_a_symlink_is_followed_not_replaced(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("old\n")
    (tmp_path / "link.txt").symlink_to(target)
    await write(WriteTool(make_env(tmp_path)), "link.txt", "new\n")
    assert (tmp_path / "link.txt").is_symlink()
    assert target.read_text() == "new\n"


async def test_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    with pytest.raises(ToolError) as info:
        await write(WriteTool(make_env(tmp_path)), "src", "x")
    assert str(info.value) == "src is a directory, not a file. Give the path of a file to write."


async def test_a_parent_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(ToolError) as info:
        await write(WriteTool(make_env(tmp_path)), "a.txt/b.txt", "x")
    assert str(info.value) == "Cannot write a.txt/b.txt: part of its directory path is a file."
    with pytest.raises(ToolError) as info:
        await write(WriteTool(make_env(tmp_path)), "a.txt/c/d.txt", "x")
    assert str(info.value) == "Cannot write a.txt/c/d.txt: part of its directory path is a file."


async def test_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(*args: Any, **kwargs: Any) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(write_module.os, "open", denied)
    with pytest.raises(ToolError) as info:
        await write(WriteTool(make_env(tmp_path)), "a.txt", "x")
    expected = f"Permission denied: cannot write a.txt, because its directory {tmp_path} is not writable."
    assert str(info.value) == expected


async def test_content_that_is_not_unicode_text_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as info:
        await write(WriteTool(make_env(tmp_path)), "a.txt", "ok \ud800 bad")
    assert str(info.value) == (
        "The content cannot be written as UTF-8 (an invalid character at position 3); nothing was written."
    )
    assert not (tmp_path / "a.txt").exists()


async def test_empty_content_writes_an_empty_file(tmp_path: Path) -> None:
    result = await write(WriteTool(make_env(tmp_path)), "empty.txt", "")
    assert text_of(result) == "Wrote 0 bytes to empty.txt"
    assert (tmp_path / "empty.txt").read_bytes() == b""


async def test_write_after_read_is_noted_so_the_next_read_is_fresh(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    reader, writer = ReadTool(env), WriteTool(env)
    path = tmp_path / "a.txt"
    path.write_text("one\n")
    await reader.execute("r1", ReadParams(path="a.txt"), AbortSignal(), lambda _: None)
    await write(writer, "a.txt", "two, longer\n")
    last = env.reads.last_read(path)
    assert last is not None
    assert (last.mtime_ns, last.size) == (path.stat().st_mtime_ns, 12)
    assert env.reads.previous(path, None, None) is None  # no stub: the model must see the new text
    again = await reader.execute("r2", ReadParams(path="a.txt"), AbortSignal(), lambda _: None)
    assert text_of(again) == "two, longer"


def test_concurrency_key_is_the_resolved_path(tmp_path: Path) -> None:
    tool = WriteTool(make_env(tmp_path))
    key = tool.concurrency_key(WriteParams(path="a.txt", content=""))
    assert key == str(tmp_path / "a.txt")
    assert tool.concurrency_key(WriteParams(path="@./sub/../a.txt", content="x")) == key


def test_definition(tmp_path: Path) -> None:
    definition = WriteTool(make_env(tmp_path)).definition()
    assert definition.name == "write"
    assert set(definition.parameters["properties"]) == {"path", "content", "overwrite"}
    assert sorted(definition.parameters["required"]) == ["content", "path"]


# --- read-only files and hard links ------------------------------------------------------


async def test_a_read_only_file_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "locked.txt"
    path.write_text("keep me\n")
    path.chmod(0o444)
    with pytest.raises(ToolError) as info:
        await write(WriteTool(make_env(tmp_path)), "locked.txt", "changed\n")
    assert str(info.value) == (
        "locked.txt is read-only (mode 0444), so it was not changed. "
        "If it should change, make it writable first (e.g. chmod u+w with bash)."
    )
    assert path.read_text() == "keep me\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert leftovers(tmp_path) == []


async def test_a_hard_linked_file_is_written_through_so_every_name_sees_it(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("old content that is longer\n")
    other = tmp_path / "b.txt"
    os.link(path, other)
    inode = path.stat().st_ino
    result = await write(WriteTool(make_env(tmp_path)), "a.txt", "new\n")
    assert text_of(result) == (
        "Wrote 4 bytes to a.txt (in place: the file has other hard links, which see the new content too)"
    )
    assert result.details["hard_link"] is True
    assert path.stat().st_ino == inode and path.stat().st_nlink == 2
    assert other.read_text() == "new\n"
    assert leftovers(tmp_path) == []


async def test_a_normal_file_is_still_replaced_atomically(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("old\n")
    inode = path.stat().st_ino
    result = await write(WriteTool(make_env(tmp_path)), "a.txt", "new\n")
    assert "hard_link" not in result.details
    assert path.read_text() == "new\n"
    assert path.stat().st_ino != inode  # a new file renamed into place
