"""read: paging notices, long lines, large files, repeated reads, images, binary and bad input."""

from __future__ import annotations

import asyncio
import base64
import io
import os
import shlex
import shutil
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import heron.coding.tools.line_index as line_index_module
import heron.coding.tools.read as read_module
from heron.agent.tools import ToolError, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.types import ImageContent, TextContent
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.line_index import FastCount, build_line_index, line_start
from heron.coding.tools.params import ReadParams
from heron.coding.tools.read import ReadTool
from heron.context.tool_output.limits import ToolLimits
from heron.context.tool_output.truncate import LINE_CUT_MARKER, split_lines


def make_tool(tmp: Path, limits: ToolLimits | None = None, **kwargs: Any) -> ReadTool:
    env = ToolEnv(cwd=tmp, limits=limits or ToolLimits(), home=tmp / "home")
    return ReadTool(env, **kwargs)


async def read(tool: ReadTool, path: str, offset: int | None = None, limit: int | None = None) -> ToolResult:
    updates: list[ToolResult] = []
    params = ReadParams(path=path, offset=offset, limit=limit)
    return await tool.execute("call-1", params, AbortSignal(), updates.append)


def text_of(result: ToolResult) -> str:
    assert isinstance(result.content[0], TextContent)
    return result.content[0].text


def numbered(n: int, width: int = 0) -> str:
    return "".join(f"line {i}".ljust(width) + "\n" for i in range(1, n + 1))


# --- pages and notices --------------------------------------------------------------------


async def test_small_file_is_returned_whole_without_notice(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    result = await read(make_tool(tmp_path), "a.txt")
    assert text_of(result) == "alpha\nbeta"
    assert not result.is_error
    assert result.details["total_lines"] == 2 and result.details["truncation"] is None


async def test_line_limit_notice(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(numbered(5000))
    result = await read(make_tool(tmp_path), "a.txt")
    text = text_of(result)
    assert text.endswith("line 2000\n\n[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]")
    assert text.startswith("line 1\nline 2\n")
    assert result.details["truncation"]["truncated_by"] == "lines"
    assert result.details["next_offset"] == 2001


async def test_continuing_from_the_notice_offset(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(numbered(5000))
    tool = make_tool(tmp_path)
    second = text_of(await read(tool, "a.txt", offset=2001))
    assert second.startswith("line 2001\n")
    assert second.endswith("line 4000\n\n[Showing lines 2001-4000 of 5000. Use offset=4001 to continue.]")
    last = text_of(await read(tool, "a.txt", offset=4001))
    assert last.startswith("line 4001\n") and last.endswith("line 5000")  # the end: no notice


async def test_byte_limit_notice_names_the_limit(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(numbered(1000, width=99))  # 100 bytes a line: 512 lines fit in 51,200
    text = text_of(await read(make_tool(tmp_path), "a.txt"))
    assert text.endswith("\n\n[Showing lines 1-512 of 1000 (50.0KB limit). Use offset=513 to continue.]")
    assert len(text.split("\n\n[")[0].encode()) <= 51_200


async def test_byte_limit_with_small_limits(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("aaaa\nbbbb\ncccc\ndddd\n")
    tool = make_tool(tmp_path, ToolLimits(max_bytes=12))
    assert text_of(await read(tool, "a.txt", offset=2)) == (
        "bbbb\ncccc\n\n[Showing lines 2-3 of 4 (12B limit). Use offset=4 to continue.]"
    )


async def test_user_limit_says_how_many_lines_remain(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(numbered(100))
    result = await read(make_tool(tmp_path), "a.txt", offset=10, limit=5)
    assert text_of(result) == (
        "line 10\nline 11\nline 12\nline 13\nline 14\n\n[86 more lines in file. Use offset=15 to continue.]"
    )
    assert result.details["remaining_lines"] == 86


async def test_user_limit_reaching_the_end_has_no_notice(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(numbered(10))
    assert text_of(await read(make_tool(tmp_path), "a.txt", offset=8, limit=3)) == "line 8\nline 9\nline 10"


async def test_user_limit_above_the_line_cap_gets_the_showing_notice(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(numbered(50))
    tool = make_tool(tmp_path, ToolLimits(max_lines=10))
    text = text_of(await read(tool, "a.txt", limit=30))
    assert text.endswith("line 10\n\n[Showing lines 1-10 of 50. Use offset=11 to continue.]")


async def test_offset_beyond_the_end(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(numbered(10))
    with pytest.raises(ToolError) as info:
        await read(make_tool(tmp_path), "a.txt", offset=11)
    assert str(info.value) == "Offset 11 is beyond end of file (10 lines total)"


async def test_offset_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ReadParams(path="a", offset=0)
    with pytest.raises(ValueError):
        ReadParams(path="a", limit=0)
    with pytest.raises(ValueError):
        ReadParams.model_validate({"path": "a", "offest": 3})  # unknown arguments are errors


async def test_long_lines_are_cut_with_a_marker_and_counted(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("short\n" + "x" * 2500 + "\n" + "y" * 2001 + "\nend\n")
    result = await read(make_tool(tmp_path), "a.txt")
    assert text_of(result) == f"short\n{'x' * 2000}{LINE_CUT_MARKER}\n{'y' * 2000}{LINE_CUT_MARKER}\nend"
    assert result.details["lines_cut"] == 2


async def test_ten_megabyte_single_line(tmp_path: Path) -> None:
    (tmp_path / "one.txt").write_text("x" * 10_000_000)
    result = await read(make_tool(tmp_path), "one.txt")
    assert text_of(result) == (
        "[Line 1 of 1 is 9.5MB, over the 50.0KB limit; use bash to see part of it: sed -n '1p' one.txt | head -c 51200]"
    )
    assert not result.is_error
    assert result.details["truncation"]["first_line_exceeds_limit"] is True
    assert result.details["line_bytes"] == 10_000_000
    assert result.details["next_offset"] is None


async def test_a_long_line_in_the_middle(tmp_path: Path) -> None:
    (tmp_path / "my file.txt").write_text("a\nb\n" + "z" * 60_000 + "\nc\nd\n")
    tool = make_tool(tmp_path)
    before = text_of(await read(tool, "my file.txt"))
    assert before == "a\nb\n\n[Showing lines 1-2 of 5 (50.0KB limit). Use offset=3 to continue.]"
    at = text_of(await read(tool, "my file.txt", offset=3))
    assert at == (
        "[Line 3 of 5 is 58.6KB, over the 50.0KB limit; use offset=4 to skip it, or use bash to see part of it: "
        "sed -n '3p' 'my file.txt' | head -c 51200]"
    )
    assert text_of(await read(tool, "my file.txt", offset=4)) == "c\nd"
    assert (await read(tool, "my file.txt", offset=3, limit=1)).details["next_offset"] == 4


async def test_large_file_without_offset_gets_the_first_page_and_a_size_notice(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text(numbered(40_000, width=79))  # 3,200,000 bytes
    tool = make_tool(tmp_path)
    result = await read(tool, "big.log")
    text = text_of(result)
    assert text.startswith("line 1 ")
    assert text.endswith(
        "\n\n[File is 3.1MB (40000 lines). Showing lines 1-640; use offset=641 to continue, "
        "offset/limit to read any part, or grep to find what you need.]"
    )
    assert result.details["large_file"] is True
    # with an explicit range the ordinary notice is used
    paged = text_of(await read(tool, "big.log", offset=1, limit=3000))
    assert paged.endswith("[Showing lines 1-640 of 40000 (50.0KB limit). Use offset=641 to continue.]")


async def test_offset_near_the_end_of_a_big_file(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text(numbered(300_000))
    text = text_of(await read(make_tool(tmp_path), "big.log", offset=299_998))
    assert text == "line 299998\nline 299999\nline 300000"


async def test_reading_near_the_end_does_not_load_the_file(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    with path.open("w") as f:
        chunk = numbered(100_000)
        for _ in range(8):  # about 8 MB
            f.write(chunk)
    tool = make_tool(tmp_path)
    tracemalloc.start()
    try:
        text = text_of(await read(tool, "big.log", offset=799_999))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text == "line 99999\nline 100000"
    assert peak < 4 * 1024 * 1024  # a block buffer and a page, not the 8 MB file


# --- the line index --------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet=st.sampled_from(list("ab€ \r")), max_size=12), min_size=1, max_size=40),
    st.booleans(),
    st.integers(min_value=1, max_value=32),
    st.data(),
)
def test_line_start_matches_splitting(lines: list[str], trailing: bool, block: int, data: st.DataObject) -> None:
    raw = ("\n".join(lines) + ("\n" if trailing else "")).encode()
    f = io.BytesIO(raw)
    index = build_line_index(f, 0, len(raw), block)
    expected = split_lines(raw.decode()) if raw else []
    assert index.total_lines == len(expected)
    if not expected:
        return
    line = data.draw(st.integers(min_value=1, max_value=len(expected)))
    start = line_start(f, index, line)
    assert raw[start:].decode().startswith(expected[line - 1])
    assert start == len("\n".join(expected[: line - 1]).encode()) + (1 if line > 1 else 0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet=st.sampled_from(list("ab中😀 ")), max_size=15), min_size=1, max_size=30),
    st.booleans(),
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=1, max_value=6),
    st.integers(min_value=8, max_value=60),
)
def test_paging_through_a_file_yields_every_line_once(
    lines: list[str], trailing: bool, block: int, max_lines: int, max_bytes: int
) -> None:
    """Follow the notices from offset 1 to the end with tiny limits and tiny blocks."""
    content = "\n".join(lines) + ("\n" if trailing else "")
    if not content:
        return  # the empty file has its own test
    expected = split_lines(content)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "f.txt").write_bytes(content.encode())
        tool = make_tool(root, ToolLimits(max_lines=max_lines, max_bytes=max_bytes), block_bytes=block)
        seen: list[str] = []
        offset = 1
        while True:
            result = asyncio.run(read(tool, "f.txt", offset=offset))
            details = result.details
            assert details["total_lines"] == len(expected)
            if details["end_line"] < offset:  # one line over the byte limit
                assert len(expected[offset - 1].encode()) > max_bytes
                seen.append(expected[offset - 1])
                offset += 1
            else:
                body = text_of(result).split("\n\n[")[0] if details["next_offset"] else text_of(result)
                seen.extend(body.split("\n"))
                assert details["end_line"] - offset + 1 <= max_lines
                offset = details["end_line"] + 1
            if offset > len(expected):
                break
        assert seen == expected


async def test_the_line_index_is_reused_until_the_file_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.log"
    path.write_text(numbered(20_000))
    builds: list[int] = []
    real = read_module.build_line_index

    def counting(*args: Any, **kwargs: Any) -> Any:
        builds.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(read_module, "build_line_index", counting)
    tool = make_tool(tmp_path, block_bytes=4096)
    assert text_of(await read(tool, "big.log", offset=19_999)) == "line 19999\nline 20000"
    assert text_of(await read(tool, "big.log", offset=19_998, limit=1)).startswith("line 19998\n\n[2 more lines")
    assert len(builds) == 1
    with path.open("a") as f:
        f.write("line 20001\n")
    assert text_of(await read(tool, "big.log", offset=20_001)) == "line 20001"
    assert len(builds) == 2


async def test_parallel_reads_of_one_big_file(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text(numbered(50_000))
    tool = make_tool(tmp_path, block_bytes=4096)
    results = await asyncio.gather(*(read(tool, "big.log", offset=49_000 + k, limit=1) for k in range(8)))
    assert [text_of(r).split("\n")[0] for r in results] == [f"line {49_000 + k}" for k in range(8)]


async def test_abort_stops_the_scan(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(numbered(10))
    signal = AbortSignal()
    signal.abort()
    with pytest.raises(ToolError, match="aborted"):
        await make_tool(tmp_path).execute("c", ReadParams(path="a.txt"), signal, lambda _: None)


# --- counting big files with wc ------------------------------------------------------------
#
# The wc path is forced onto small files with tiny blocks (min_bytes=0), so that probes, scans
# from either end and the cache all run; its output must be exactly the Python scan's.

HAS_WC = shutil.which("wc") is not None
needs_wc = pytest.mark.skipif(not HAS_WC, reason="no wc on PATH")
TINY = 64  # block bytes
FAST = FastCount(min_bytes=0, python_scan_bytes=2 * TINY, speculate_bytes=2 * TINY)


def slow_tool(root: Path, limits: ToolLimits | None = None) -> ReadTool:
    return make_tool(root, limits, block_bytes=TINY, fast_count=None)


def fast_tool(root: Path, limits: ToolLimits | None = None, fast: FastCount = FAST) -> ReadTool:
    return make_tool(root, limits, block_bytes=TINY, fast_count=fast)


async def outcome(tool: ReadTool, path: str, offset: int | None = None, limit: int | None = None) -> tuple[Any, ...]:
    """Everything the model and the UI get from one read (or the error), never the stub."""
    tool.env.reads.reset()
    try:
        result = await read(tool, path, offset, limit)
    except ToolError as exc:
        return ("error", str(exc))
    return (text_of(result), result.details)


def spy_wc(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Byte offsets wc was started at."""
    starts: list[int] = []
    real = line_index_module._start_wc

    def spying(path: Path, st: os.stat_result, start: int) -> Any:
        starts.append(start)
        return real(path, st, start)

    monkeypatch.setattr(line_index_module, "_start_wc", spying)
    return starts


def spy_blocks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Blocks scanned in Python outside a full scan."""
    blocks: list[int] = []
    real = line_index_module.count_block

    def spying(f: Any, b: int, *args: Any) -> int:
        blocks.append(b)
        return real(f, b, *args)

    monkeypatch.setattr(line_index_module, "count_block", spying)
    return blocks


def fake_wc(tmp: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """Put only a fake ``wc`` on PATH."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    wc = bin_dir / "wc"
    wc.write_text("#!/bin/sh\n" + script + "\n")
    wc.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


CASES = {
    "trailing newline": numbered(3000),
    "no trailing newline": numbered(3000).rstrip("\n"),
    "crlf": numbered(3000).replace("\n", "\r\n"),
    "crlf without the last newline": numbered(3000).replace("\n", "\r\n")[:-2],
    "one line": "x" * 500,
    "blank lines": "\n\n\n" + numbered(50) + "\n\n",
    "long lines": "".join(f"{i} " + "y" * (i % 7 * 300) + "\n" for i in range(1, 400)),
}


@needs_wc
@pytest.mark.parametrize("name", list(CASES))
async def test_the_wc_path_reads_exactly_what_the_python_scan_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    content = CASES[name].encode()
    (tmp_path / "f.txt").write_bytes(content)
    lines = len(split_lines(CASES[name]))
    limits = ToolLimits(max_lines=40, max_bytes=2000)
    starts = spy_wc(monkeypatch)
    slow, fast = slow_tool(tmp_path, limits), fast_tool(tmp_path, limits)
    offsets = sorted({o for o in (1, 2, lines // 3, lines // 2, lines - 45, lines - 1, lines, lines + 1) if o >= 1})
    for offset in [None, *offsets]:
        for limit in (None, 1, 7, 100):
            assert await outcome(fast, "f.txt", offset, limit) == await outcome(slow, "f.txt", offset, limit)
            fresh = fast_tool(tmp_path, limits)  # the first read of the file, no cached index
            assert await outcome(fresh, "f.txt", offset, limit) == await outcome(slow, "f.txt", offset, limit)
    assert 0 in starts  # wc counted the file: no Python fallback


@needs_wc
async def test_the_wc_path_scans_only_near_the_requested_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "big.log").write_text(numbered(20_000, width=15))  # 16-byte lines: 4 to a 64-byte block
    size = (tmp_path / "big.log").stat().st_size
    starts, blocks = spy_wc(monkeypatch), spy_blocks(monkeypatch)
    monkeypatch.setattr(read_module, "build_line_index", None)  # a full scan would fail
    tool = fast_tool(tmp_path, fast=FastCount(min_bytes=0, python_scan_bytes=2 * TINY, speculate_bytes=0))

    assert text_of(await read(tool, "big.log", offset=19_999)).split() == ["line", "19999", "line", "20000"]
    assert starts == [0]
    assert 0 < len(blocks) <= 2 and min(blocks) > size // TINY - 3  # backward from the end

    starts.clear()
    blocks.clear()
    assert text_of(await read(tool, "big.log", offset=10_000, limit=1)).startswith("line 10000 ")
    assert len(starts) == 1 and size // 3 < starts[0] < size * 2 // 3  # one wc probe of the tail
    assert len(blocks) <= 4  # and a few blocks next to the probe

    starts.clear()
    blocks.clear()
    assert text_of(await read(tool, "big.log", offset=10_001, limit=1)).startswith("line 10001 ")
    assert starts == [] and len(blocks) <= 2  # the cached index knows the neighbourhood now


@needs_wc
async def test_reading_near_the_end_with_wc_does_not_load_the_file(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    with path.open("w") as f:
        chunk = numbered(100_000)
        for _ in range(8):  # about 8 MB
            f.write(chunk)
    # The Python side may scan at most 1 MB while wc counts, so even on a slow machine
    # (wc finishing late) it cannot end up scanning the whole 8 MB file itself.
    fast = FastCount(min_bytes=1024 * 1024, speculate_bytes=1024 * 1024, python_scan_bytes=1024 * 1024)
    tool = make_tool(tmp_path, fast_count=fast)
    tracemalloc.start()
    try:
        text = text_of(await read(tool, "big.log", offset=799_999))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text == "line 99999\nline 100000"
    assert peak < 4 * 1024 * 1024
    assert not tool._indexes[str(path)].complete  # the wc path, not a full scan


@pytest.mark.parametrize(
    "script",
    [
        "exit 1",  # wc fails
        "echo nonsense",  # unreadable output
        'echo "3 7"',  # counted another number of bytes than the file has
    ],
)
async def test_a_broken_wc_falls_back_to_the_python_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str
) -> None:
    (tmp_path / "f.txt").write_text(numbered(500).rstrip("\n"))
    expected = await outcome(slow_tool(tmp_path), "f.txt", 450, 20)
    fake_wc(tmp_path, monkeypatch, script)
    assert await outcome(fast_tool(tmp_path), "f.txt", 450, 20) == expected
    assert await outcome(fast_tool(tmp_path), "f.txt") == await outcome(slow_tool(tmp_path), "f.txt")


@needs_wc
async def test_a_log_growing_while_wc_counts_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "live.log"
    path.write_text(numbered(3000))
    expected = await outcome(slow_tool(tmp_path), "live.log", 2990, 3)
    real_wc = shutil.which("wc")
    # a wc that sees the file after more lines were appended to it
    fake_wc(tmp_path, monkeypatch, f'printf "more 1\\nmore 2\\n" >> {shlex.quote(str(path))}\nexec {real_wc} "$@"')
    assert await outcome(fast_tool(tmp_path), "live.log", 2990, 3) == expected
    assert expected[0].endswith("[8 more lines in file. Use offset=2993 to continue.]")
    assert path.read_text().endswith("line 3000\nmore 1\nmore 2\n")


async def test_without_wc_on_path_the_python_scan_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {name: f"{i}.txt" for i, name in enumerate(CASES)}
    for name, content in CASES.items():
        (tmp_path / files[name]).write_text(content)
    expected = {n: await outcome(slow_tool(tmp_path), files[n], 2, 5) for n in CASES}
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert shutil.which("wc") is None
    tool = fast_tool(tmp_path)
    assert {n: await outcome(tool, files[n], 2, 5) for n in CASES} == expected
    assert all(index.complete for index in tool._indexes.values())


async def test_abort_while_wc_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sleep = shutil.which("sleep")
    assert sleep is not None
    (tmp_path / "f.txt").write_text(numbered(100))
    fake_wc(tmp_path, monkeypatch, f"exec {sleep} 30")
    signal = AbortSignal()
    loop = asyncio.get_running_loop()
    loop.call_later(0.2, signal.abort)
    started = time.perf_counter()
    with pytest.raises(ToolError, match="aborted"):
        await fast_tool(tmp_path).execute("c", ReadParams(path="f.txt", offset=50), signal, lambda _: None)
    assert time.perf_counter() - started < 5  # wc was killed, not waited for


@needs_wc
async def test_parallel_first_reads_with_wc(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text(numbered(5_000))
    tool = fast_tool(tmp_path)
    offsets = [1, 700, 2_500, 2_501, 4_000, 4_999, 5_000, 3]
    results = await asyncio.gather(*(read(tool, "big.log", offset=o, limit=1) for o in offsets))
    assert [text_of(r).split("\n")[0] for r in results] == [f"line {o}" for o in offsets]


@needs_wc
@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.text(alphabet=st.sampled_from(list("ab€ \r")), max_size=30), min_size=1, max_size=60),
    st.booleans(),
    st.integers(min_value=1, max_value=24),
    st.integers(min_value=0, max_value=3),
    st.data(),
)
def test_wc_and_python_scans_agree(
    lines: list[str], trailing: bool, block: int, spec: int, data: st.DataObject
) -> None:
    content = "\n".join(lines) + ("\n" if trailing else "")
    if not content:
        return
    total = len(split_lines(content))
    fast = FastCount(min_bytes=0, python_scan_bytes=block * 2, speculate_bytes=block * spec, wc_speedup=4)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "f.txt").write_bytes(content.encode())
        limits = ToolLimits(max_lines=5, max_bytes=80)
        slow = make_tool(root, limits, block_bytes=block, fast_count=None)
        cached = make_tool(root, limits, block_bytes=block, fast_count=fast)
        for _ in range(4):
            offset = data.draw(st.integers(min_value=1, max_value=total + 1))
            limit = data.draw(st.none() | st.integers(min_value=1, max_value=8))
            expected = asyncio.run(outcome(slow, "f.txt", offset, limit))
            fresh = make_tool(root, limits, block_bytes=block, fast_count=fast)
            assert asyncio.run(outcome(fresh, "f.txt", offset, limit)) == expected
            assert asyncio.run(outcome(cached, "f.txt", offset, limit)) == expected


# --- repeated reads -------------------------------------------------------------------------


async def test_rereading_an_unchanged_range_returns_a_stub(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text(numbered(10))
    tool = make_tool(tmp_path)
    first = await read(tool, "a.txt")
    assert text_of(first).startswith("line 1\n")
    record = tool.env.reads.previous(path, None, None)
    assert record is not None and record.size == path.stat().st_size
    at = time.strftime("%H:%M:%S", time.localtime(record.at))
    second = await read(tool, "a.txt")
    assert text_of(second) == (
        f"[File unchanged since you last read it at {at}; its content is already in the conversation above.]"
    )
    assert second.details["kind"] == "unchanged"
    # another range is read normally
    assert text_of(await read(tool, "a.txt", offset=2, limit=1)).startswith("line 2\n")


async def test_a_changed_file_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("one\n")
    tool = make_tool(tmp_path)
    await read(tool, "a.txt")
    path.write_text("two\n")
    st_ = path.stat()
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns + 5_000_000_000))
    assert text_of(await read(tool, "a.txt")) == "two"


async def test_after_compaction_the_content_is_returned_again(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    tool = make_tool(tmp_path)
    await read(tool, "a.txt")
    tool.env.reads.reset()
    assert text_of(await read(tool, "a.txt")) == "one"


async def test_every_successful_read_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text(numbered(10))
    tool = make_tool(tmp_path)
    await read(tool, "@a.txt", offset=3, limit=2)
    last = tool.env.reads.last_read(path)
    assert last is not None
    assert (last.offset, last.limit, last.mtime_ns, last.size) == (3, 2, path.stat().st_mtime_ns, path.stat().st_size)
    with pytest.raises(ToolError):
        await read(tool, "a.txt", offset=50)
    assert tool.env.reads.previous(path, 50, None) is None


# --- encodings ---------------------------------------------------------------------------------


async def test_invalid_utf8_is_replaced_and_reported(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\nok\n")
    result = await read(make_tool(tmp_path), "latin.txt")
    assert text_of(result) == "caf\ufffd\nok\n\n[Invalid UTF-8: undecodable bytes in lines 1-2 are shown as U+FFFD.]"
    assert result.details["invalid_utf8"] is True


async def test_invalid_utf8_with_a_page_notice(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes(b"a\xff\nb\nc\n")
    tool = make_tool(tmp_path, ToolLimits(max_lines=2))
    assert text_of(await read(tool, "latin.txt")) == (
        "a\ufffd\nb\n\n[Invalid UTF-8: undecodable bytes in lines 1-2 are shown as U+FFFD.]\n"
        "[Showing lines 1-2 of 3. Use offset=3 to continue.]"
    )


async def test_bom_is_not_shown_and_crlf_lines_are_counted(tmp_path: Path) -> None:
    (tmp_path / "win.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    result = await read(make_tool(tmp_path), "win.txt")
    assert text_of(result) == "one\r\ntwo\r"
    assert result.details["total_lines"] == 2


async def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_bytes(b"")
    tool = make_tool(tmp_path)
    result = await read(tool, "empty.txt")
    assert text_of(result) == "(empty file)"
    assert not result.is_error
    with pytest.raises(ToolError) as info:
        await read(tool, "empty.txt", offset=2)
    assert str(info.value) == "Offset 2 is beyond end of file (0 lines total)"


async def test_binary_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "prog.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 40)
    with pytest.raises(ToolError) as info:
        await read(make_tool(tmp_path), "prog.bin")
    assert str(info.value) == (
        "prog.bin looks like a binary file (10.0KB), so it was not read. "
        "Inspect it with bash instead, e.g. `file prog.bin` or `xxd prog.bin | head -n 20`."
    )


async def test_undecodable_file_without_nul_is_refused(tmp_path: Path) -> None:
    (tmp_path / "noise.dat").write_bytes(bytes(range(128, 256)) * 8)
    with pytest.raises(ToolError) as info:
        await read(make_tool(tmp_path), "noise.dat")
    assert str(info.value).startswith("noise.dat looks like a binary file (1.0KB), so it was not read.")


# --- images ---------------------------------------------------------------------------------------


def image_bytes(fmt: str, size: tuple[int, int], mode: str = "RGB", noise: bool = False) -> bytes:
    if noise:
        img = Image.frombytes(mode, size, os.urandom(size[0] * size[1] * len(mode)))
    else:
        img = Image.new(mode, size, (10, 120, 200) if mode == "RGB" else (10, 120, 200, 128))
    out = io.BytesIO()
    img.save(out, fmt)
    return out.getvalue()


@pytest.mark.parametrize(
    ("fmt", "mime", "name"),
    [
        ("PNG", "image/png", "pic.png"),
        ("JPEG", "image/jpeg", "photo.txt"),
        ("GIF", "image/gif", "anim"),
        ("WEBP", "image/webp", "x.webp"),
    ],
)
async def test_images_are_detected_by_magic_bytes(tmp_path: Path, fmt: str, mime: str, name: str) -> None:
    data = image_bytes(fmt, (40, 30))
    (tmp_path / name).write_bytes(data)
    result = await read(make_tool(tmp_path), name)
    assert text_of(result) == f"Image {name}: {mime}, 40x30, {len(data)}B."
    image = result.content[1]
    assert isinstance(image, ImageContent)
    assert image.mime_type == mime
    assert base64.b64decode(image.data) == data  # small enough: sent untouched
    assert result.details["resized"] is False


async def test_large_image_is_downscaled_to_fit(tmp_path: Path) -> None:
    (tmp_path / "wide.png").write_bytes(image_bytes("PNG", (3000, 1000)))
    result = await read(make_tool(tmp_path), "wide.png")
    image = result.content[1]
    assert isinstance(image, ImageContent)
    with Image.open(io.BytesIO(base64.b64decode(image.data))) as img:
        assert img.size == (2000, 666)
    assert text_of(result).startswith("Image wide.png: image/png, 3000x1000, ")
    assert "(sent as image/png, 2000x666, " in text_of(result)
    assert result.details["resized"] is True


async def test_image_over_the_encoded_size_is_reencoded(tmp_path: Path) -> None:
    data = image_bytes("PNG", (400, 400), noise=True)  # noise: PNG cannot compress it
    (tmp_path / "noise.png").write_bytes(data)
    tool = make_tool(tmp_path, image_max_base64=100_000)
    result = await read(tool, "noise.png")
    image = result.content[1]
    assert isinstance(image, ImageContent)
    assert len(image.data) <= 100_000
    assert image.mime_type == "image/jpeg"
    assert len(data) * 4 // 3 > 100_000


async def test_transparent_image_stays_png_when_shrunk(tmp_path: Path) -> None:
    (tmp_path / "logo.png").write_bytes(image_bytes("PNG", (2500, 2500), mode="RGBA"))
    result = await read(make_tool(tmp_path), "logo.png")
    image = result.content[1]
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    with Image.open(io.BytesIO(base64.b64decode(image.data))) as img:
        assert img.size == (2000, 2000) and img.mode == "RGBA"


async def test_images_are_never_stubbed(tmp_path: Path) -> None:
    (tmp_path / "pic.png").write_bytes(image_bytes("PNG", (8, 8)))
    tool = make_tool(tmp_path)
    await read(tool, "pic.png")
    again = await read(tool, "pic.png")
    assert isinstance(again.content[1], ImageContent)
    assert tool.env.reads.last_read(tmp_path / "pic.png") is not None


async def test_an_oversized_image_file_is_not_loaded(tmp_path: Path) -> None:
    data = image_bytes("PNG", (64, 64), noise=True)
    (tmp_path / "huge.png").write_bytes(data)
    with pytest.raises(ToolError) as info:
        await read(make_tool(tmp_path, image_max_file_bytes=1024), "huge.png")
    assert str(info.value) == (
        f"huge.png is a image/png image of {len(data) / 1024:.1f}KB, too large to load (limit 1.0KB). "
        "Make a smaller copy with bash first."
    )


async def test_corrupt_image_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 10)
    with pytest.raises(ToolError, match=r"^The file looks like image/png but could not be decoded: "):
        await read(make_tool(tmp_path), "bad.png")


# --- bad paths --------------------------------------------------------------------------------------


async def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as info:
        await read(make_tool(tmp_path), "nope/missing.txt")
    assert str(info.value) == "File not found: nope/missing.txt"


async def test_directory(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    with pytest.raises(ToolError) as info:
        await read(make_tool(tmp_path), "src")
    assert str(info.value) == "src is a directory, not a file. List it with ls instead."


async def test_fifo_is_refused_instead_of_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ToolError) as info:
        await read(make_tool(tmp_path), "pipe")
    assert str(info.value) == "pipe is not a regular file (a device, socket or pipe), so it was not read."


async def test_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret.txt"
    path.write_text("x\n")
    if os.geteuid() == 0:  # root reads anything: simulate what a user would get

        def denied(*args: Any, **kwargs: Any) -> Any:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(read_module, "open", denied, raising=False)
    else:
        path.chmod(0)
    with pytest.raises(ToolError) as info:
        await read(make_tool(tmp_path), "secret.txt")
    assert str(info.value) == "Permission denied: cannot read secret.txt (its permissions do not allow it)."


async def test_absolute_path_outside_cwd_is_shown_absolute(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.txt").write_text("hi\n")
    work = tmp_path / "work"
    work.mkdir()
    result = await read(make_tool(work), str(outside / "x.txt"))
    assert text_of(result) == "hi"
    assert result.details["path"] == str(outside / "x.txt")


def test_definition_documents_the_arguments(tmp_path: Path) -> None:
    tool = make_tool(tmp_path)
    definition = tool.definition()
    assert definition.name == "read"
    assert set(definition.parameters["properties"]) == {"path", "offset", "limit"}
    assert definition.parameters["required"] == ["path"]
    assert "2000 lines or 50.0KB" in definition.description


def lock_directory(directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``directory`` impossible to enter: chmod 0 for a normal user; root is not
    stopped by modes, so for root the file system's answers are simulated."""
    if os.geteuid() != 0:
        directory.chmod(0)
        return
    real_stat, real_access = os.stat, os.access
    inside = str(directory) + os.sep

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if os.fspath(path).startswith(inside):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_stat(path, *args, **kwargs)

    def access(path: Any, mode: int, *args: Any, **kwargs: Any) -> bool:
        if os.fspath(path) == str(directory):
            return False
        return real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "access", access)


async def test_a_read_inside_an_unreadable_directory_says_which_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "notes.txt").write_text("secret\n")
    tool = make_tool(tmp_path)
    lock_directory(locked, monkeypatch)
    try:
        with pytest.raises(ToolError) as info:
            await read(tool, "locked/notes.txt")
    finally:
        monkeypatch.undo()
        locked.chmod(0o755)
    message = str(info.value)
    assert "Errno" not in message and "PermissionError" not in message
    assert message == (
        f"Permission denied: cannot read locked/notes.txt, because the directory {locked} cannot be entered "
        "(no search permission)."
    )
