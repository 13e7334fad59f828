"""The bash tool: process handling, endings, output cleaning, tail + spill file, bad input."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import stat
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from heron.agent.tools import ToolError, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.types import TextContent
from heron.coding.tools.bash import BashTool
from heron.coding.tools.bash_output import OutputCollector
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.params import BashParams
from heron.coding.tools.process import resolve_shell
from heron.coding.tools.terminal import StreamSanitizer
from heron.context.tool_output.limits import ToolLimits

BACKGROUND_NOTE = "Background processes still holding the output open were killed after the command exited."


# --- helpers -----------------------------------------------------------------------


@pytest.fixture
def env(tmp_path: Path) -> ToolEnv:
    work = tmp_path / "work"
    work.mkdir()
    return ToolEnv(cwd=work, home=tmp_path / "home", session_id="sess-1")


async def run(
    tool: BashTool,
    command: str,
    timeout: float | None = None,
    *,
    call_id: str = "call-1",
    signal: AbortSignal | None = None,
    updates: list[ToolResult] | None = None,
) -> ToolResult:
    sink: list[ToolResult] = updates if updates is not None else []
    return await tool.execute(
        call_id, BashParams(command=command, timeout=timeout), signal or AbortSignal(), sink.append
    )


def text_of(result: ToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def split_notice(text: str) -> tuple[str, str]:
    body, _, notice = text.rpartition("\n\n")
    return body, notice


def process_gone(pid: int, wait: float = 3.0) -> bool:
    """Dead or a zombie (this container's init does not reap orphans)."""
    end = time.monotonic() + wait
    while True:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):  # reaped, possibly while being read
            return True
        if stat[stat.rfind(")") + 2 :].split()[0] in ("Z", "X"):
            return True
        if time.monotonic() > end:
            return False
        time.sleep(0.05)


def kill_quietly(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, 9)


def clean_bytes(chunks: list[bytes]) -> str:
    """Run chunks through the sanitizer and the collector, return the committed output."""
    sanitizer = StreamSanitizer()
    collector = OutputCollector(2_000, 1 << 30, lambda: Path("/nonexistent/never-used"))
    for chunk in chunks:
        collector.feed(sanitizer.feed(chunk))
    collector.feed(sanitizer.finish())
    collector.finish()
    return collector.tail_text()


# --- parameters, shell --------------------------------------------------------------


def test_definition_documents_command_and_timeout(env: ToolEnv) -> None:
    tool = BashTool(env)
    definition = tool.definition()
    assert definition.name == "bash"
    props = definition.parameters["properties"]
    assert set(props) == {"command", "timeout", "outside_sandbox", "justification"}
    assert definition.parameters["required"] == ["command"]
    assert "description" in props["command"] and "description" in props["timeout"]
    assert "last 2000 lines or 50.0KB" in definition.description
    with pytest.raises(ValidationError):
        BashParams(command="true", timeout=0)
    with pytest.raises(ValidationError):
        BashParams.model_validate({"command": "true", "timeout": -1})
    with pytest.raises(ValidationError):
        BashParams.model_validate({"command": "true", "timout": 5})


def test_description_follows_limits(tmp_path: Path) -> None:
    tool = BashTool(ToolEnv(cwd=tmp_path, limits=ToolLimits(max_lines=300, max_bytes=8192)))
    assert "last 300 lines or 8.0KB" in tool.description


def test_resolve_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_shell("/custom/shell") == "/custom/shell"
    monkeypatch.setenv("SHELL", "/bin/sh")
    assert resolve_shell(None) == "/bin/sh"
    monkeypatch.setenv("SHELL", "/usr/bin/fish")
    assert resolve_shell(None) == "/bin/bash"
    monkeypatch.setenv("SHELL", "/nonexistent/bash")
    assert resolve_shell(None) == "/bin/bash"
    monkeypatch.delenv("SHELL")
    assert resolve_shell(None) == "/bin/bash"


async def test_env_shell_is_used(env: ToolEnv) -> None:
    env.shell = "/bin/sh"
    result = await run(BashTool(env), "echo $0")
    assert text_of(result) == "/bin/sh"


async def test_unstartable_shell_is_a_clear_error(env: ToolEnv) -> None:
    env.shell = "/nonexistent/shell"
    with pytest.raises(ToolError, match=r"^Could not start /nonexistent/shell: "):
        await run(BashTool(env), "true")


# --- process setup ------------------------------------------------------------------


async def test_runs_in_cwd(env: ToolEnv) -> None:
    result = await run(BashTool(env), "pwd")
    assert Path(text_of(result)).resolve() == env.cwd.resolve()


async def test_runs_in_its_own_session(env: ToolEnv) -> None:
    code = "import os; print(os.getpgid(0) == os.getsid(0), os.getsid(0))"
    result = await run(BashTool(env), f"{sys.executable} -c '{code}'")
    same_group, sid = text_of(result).split()
    assert same_group == "True"
    assert int(sid) != os.getsid(0)


async def test_stdin_is_dev_null(env: ToolEnv) -> None:
    start = time.monotonic()
    result = await run(BashTool(env), 'cat; read -r x; echo "read=$?"', timeout=5)
    assert text_of(result) == "read=1"
    assert time.monotonic() - start < 2


async def test_stdout_and_stderr_are_merged_in_order(env: ToolEnv) -> None:
    result = await run(BashTool(env), "echo out; echo err >&2; echo out2")
    assert text_of(result) == "out\nerr\nout2"
    assert result.is_error is False


# --- endings --------------------------------------------------------------------------


async def test_empty_output(env: ToolEnv) -> None:
    result = await run(BashTool(env), "true")
    assert text_of(result) == "(no output)"
    assert result.is_error is False
    assert result.details == {
        "exit_code": 0,
        "truncation": None,
        "full_output_path": None,
        "timed_out": False,
        "aborted": False,
    }


async def test_non_zero_exit(env: ToolEnv) -> None:
    result = await run(BashTool(env), "echo hi; exit 3")
    assert text_of(result) == "hi\n\nCommand exited with code 3"
    assert result.is_error is True
    assert result.details["exit_code"] == 3


async def test_non_zero_exit_without_output(env: ToolEnv) -> None:
    result = await run(BashTool(env), "false")
    assert text_of(result) == "(no output)\n\nCommand exited with code 1"


async def test_command_not_found(env: ToolEnv) -> None:
    result = await run(BashTool(env), "heron_no_such_command_xyz --flag")
    text = text_of(result)
    assert "heron_no_such_command_xyz: command not found" in text
    assert text.endswith("\n\nCommand exited with code 127")
    assert result.is_error is True
    assert result.details["exit_code"] == 127


async def test_shell_killed_by_signal(env: ToolEnv) -> None:
    result = await run(BashTool(env), "echo before; kill -TERM $$")
    assert text_of(result) == "before\n\nCommand terminated by signal SIGTERM"
    assert result.is_error is True
    assert result.details["exit_code"] == -15


async def test_timeout_kills_the_whole_tree(env: ToolEnv) -> None:
    start = time.monotonic()
    result = await run(BashTool(env), "sleep 30 & echo $!; sleep 30", timeout=0.5)
    elapsed = time.monotonic() - start
    pid_line, ending = text_of(result).split("\n\n")
    assert ending == "Command timed out after 0.5 seconds"
    assert result.is_error is True
    assert result.details["timed_out"] is True
    assert result.details["exit_code"] is None
    assert 0.5 <= elapsed < 3
    assert process_gone(int(pid_line))


async def test_timeout_without_output(env: ToolEnv) -> None:
    result = await run(BashTool(env), "sleep 30", timeout=0.3)
    assert text_of(result) == "(no output)\n\nCommand timed out after 0.3 seconds"


async def test_timeout_escalates_to_sigkill(env: ToolEnv) -> None:
    """A group that ignores SIGTERM still dies, after the kill grace period."""
    tool = BashTool(env, kill_grace=0.3)
    start = time.monotonic()
    result = await run(tool, "trap '' TERM; echo $$; sleep 30; echo survived", timeout=1)
    elapsed = time.monotonic() - start
    pid_line, ending = text_of(result).split("\n\n")
    assert ending == "Command timed out after 1 seconds"
    assert "survived" not in text_of(result)
    assert 1.3 <= elapsed < 3
    assert process_gone(int(pid_line))


async def test_abort_mid_run(env: ToolEnv) -> None:
    signal = AbortSignal()

    async def abort_later() -> None:
        await asyncio.sleep(0.2)
        signal.abort()

    start = time.monotonic()
    aborter = asyncio.create_task(abort_later())
    result = await run(BashTool(env), "echo start; sleep 30 & echo $!; sleep 30", signal=signal)
    await aborter
    elapsed = time.monotonic() - start
    assert text_of(result).endswith("\n\nCommand aborted")
    body = text_of(result).removesuffix("\n\nCommand aborted")
    first, pid = body.split("\n")
    assert first == "start"
    assert result.is_error is True
    assert result.details["aborted"] is True
    assert result.details["timed_out"] is False
    assert elapsed < 2
    assert process_gone(int(pid))


async def test_abort_before_start_runs_nothing(env: ToolEnv) -> None:
    signal = AbortSignal()
    signal.abort()
    result = await run(BashTool(env), "touch ran", signal=signal)
    assert text_of(result) == "Command aborted"
    assert result.is_error is True
    assert not (env.cwd / "ran").exists()


async def test_cancelled_task_kills_the_tree(env: ToolEnv) -> None:
    pidfile = env.cwd / "pids"
    task = asyncio.create_task(run(BashTool(env), "echo $$ > pids; sleep 30 & echo $! >> pids; wait"))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 2
    assert all(process_gone(pid) for pid in pids)


@pytest.mark.parametrize(
    "command",
    [
        "echo start; sleep 100 & echo $!",
        "echo start; (sleep 100; echo late) & echo $!",
    ],
)
async def test_background_child_holding_stdout_does_not_hang(env: ToolEnv, command: str) -> None:
    start = time.monotonic()
    result = await run(BashTool(env), command)
    elapsed = time.monotonic() - start
    body, note = text_of(result).split("\n\n")
    first, pid = body.split("\n")
    assert first == "start"
    assert note == BACKGROUND_NOTE
    assert "late" not in text_of(result)
    assert result.is_error is False
    assert result.details["exit_code"] == 0
    assert result.details["background_killed"] is True
    assert elapsed < 2
    assert process_gone(int(pid))


async def test_background_child_with_redirected_output_is_left_alone(env: ToolEnv) -> None:
    start = time.monotonic()
    result = await run(BashTool(env, pipe_grace=5), "sleep 30 >/dev/null 2>&1 & echo $!")
    elapsed = time.monotonic() - start
    pid = int(text_of(result))
    try:
        assert elapsed < 2  # the pipe closed with the shell: no grace period was waited
        assert "background_killed" not in result.details
        assert not process_gone(pid, wait=0)
    finally:
        kill_quietly(pid)


async def test_nonexistent_cwd(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    tool = BashTool(ToolEnv(cwd=missing, home=tmp_path / "home"))
    with pytest.raises(ToolError) as info:
        await run(tool, "echo hi")
    assert str(info.value) == f"Working directory does not exist: {missing}"


async def test_cwd_is_a_file(tmp_path: Path) -> None:
    file = tmp_path / "f.txt"
    file.write_text("x")
    tool = BashTool(ToolEnv(cwd=file, home=tmp_path / "home"))
    with pytest.raises(ToolError) as info:
        await run(tool, "echo hi")
    assert str(info.value) == f"Working directory is not a directory: {file}"


# --- cleaning ---------------------------------------------------------------------------


async def test_invalid_utf8_is_replaced(env: ToolEnv) -> None:
    result = await run(BashTool(env), r"printf 'a\377b\303(c\n\303'")
    assert text_of(result) == "a\ufffdb\ufffd(c\n\ufffd"


async def test_ansi_colour_output_is_stripped(env: ToolEnv) -> None:
    command = (
        r"printf '\033[1;31mred\033[0m \033[38;5;208mbold\033[m "
        r"\033]0;window title\007\033]8;;https://example.com\033\\link\033]8;;\033\\ "
        r"\033(B\033[?25l\033=\033[2Jdone\033[?25h\n'"
    )
    result = await run(BashTool(env), command)
    assert text_of(result) == "red bold link done"


async def test_carriage_return_redraws_keep_the_final_state(env: ToolEnv) -> None:
    command = r"printf 'progress 10%%\rprogress 55%%\rprogress 100%%\ndone\r\n50%%\r\033[K100%%\nend\r'"
    result = await run(BashTool(env), command)
    assert text_of(result) == "progress 100%\ndone\n100%\nend"


async def test_control_characters_are_removed(env: ToolEnv) -> None:
    result = await run(BashTool(env), r"printf 'a\007b\000c\td\nN\bNA\bAME\n'")
    assert text_of(result) == "abc\td\nNAME"


def test_sanitizer_handles_any_split() -> None:
    """Escapes, multi-byte characters and CRLF split across reads give the same text."""
    data = (
        "héllo \x1b[1;31mwörld\x1b[0m\r\n"
        "\x1b]8;;http://x\x1b\\link\x1b]8;;\x07 ✓\n"
        "10%\r20%\r\x1b[K100%\n"
        "\x1b(Bend\x1b[?25h \u0085c1\n"
        "\u009b1;31m8-bit csi\u009b0m \u009d0;title\u009c!\n"
    ).encode() + b"bad \xff\xfe tail\r"
    expected = clean_bytes([data])
    assert expected == "héllo wörld\nlink ✓\n100%\nend c1\n8-bit csi !\nbad \ufffd\ufffd tail"
    for cut in range(1, len(data)):
        assert clean_bytes([data[:cut], data[cut:]]) == expected, cut
    rng = random.Random(5)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(data)), 6))
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        assert clean_bytes(chunks) == expected
    assert clean_bytes([bytes([b]) for b in data]) == expected


def test_unterminated_escape_at_the_end_is_dropped() -> None:
    assert clean_bytes([b"text\x1b[3"]) == "text"
    assert clean_bytes([b"text\x1b]0;never ends"]) == "text"


def test_carriage_return_across_reads() -> None:
    assert clean_bytes([b"abc\r", b"\n"]) == "abc\n"
    assert clean_bytes([b"abc\r", b"xyz\n"]) == "xyz\n"
    assert clean_bytes([b"ab", b"c\rx", b"yz\r", b"\r\n"]) == "xyz\n"


def test_many_redrawn_lines_in_one_read() -> None:
    data = b"keep\na\rb\nc\r\rd\ne\r\nf\rg\r\n\r\r\nplain\nh\ri\r"
    expected = "keep\nb\nd\ne\ng\n\nplain\ni"
    assert clean_bytes([data]) == expected
    for cut in range(1, len(data)):
        assert clean_bytes([data[:cut], data[cut:]]) == expected, cut


# --- truncation and the spill file -----------------------------------------------------


async def test_short_output_is_not_spilled(env: ToolEnv) -> None:
    result = await run(BashTool(env), "seq 1 2000")
    assert text_of(result) == "\n".join(str(i) for i in range(1, 2001))
    assert result.details["truncation"] is None
    assert result.details["full_output_path"] is None
    assert not env.spill_dir().exists()


async def test_over_the_limit_only_by_the_final_newline(env: ToolEnv) -> None:
    result = await run(BashTool(env), "head -c 51200 /dev/zero | tr '\\0' x; echo")
    assert text_of(result) == "x" * 51_200
    assert result.details["truncation"] is None
    assert result.details["full_output_path"] is None
    assert list(env.spill_dir().iterdir()) == []


async def test_line_limit_spills_and_numbers_the_full_output(env: ToolEnv) -> None:
    result = await run(BashTool(env), "seq 1 6000")
    path = env.spill_dir() / "bash-call-1.log"
    body, notice = split_notice(text_of(result))
    assert notice == f"[Showing lines 4001-6000 of 6000. Full output: {path}]"
    assert body == "\n".join(str(i) for i in range(4001, 6001))
    assert path.read_text() == "".join(f"{i}\n" for i in range(1, 6001))
    assert result.is_error is False
    assert result.details["full_output_path"] == str(path)
    truncation = result.details["truncation"]
    assert truncation["truncated_by"] == "lines"
    assert truncation["total_lines"] == 6000
    assert truncation["output_lines"] == 2000
    assert "content" not in truncation


async def test_byte_limit_notice(env: ToolEnv) -> None:
    script = "import sys\nfor i in range(1, 3001): sys.stdout.write('%04d' % i + 'x' * 96 + '\\n')"
    (env.cwd / "gen.py").write_text(script)
    result = await run(BashTool(env), f"{sys.executable} gen.py")
    path = env.spill_dir() / "bash-call-1.log"
    body, notice = split_notice(text_of(result))
    assert notice == f"[Showing lines 2495-3000 of 3000 (50.0KB limit). Full output: {path}]"
    assert body.split("\n")[0].startswith("2495x")
    assert len(body.encode()) <= 51_200
    assert path.stat().st_size == 3000 * 101
    spilled = path.read_text().split("\n")
    assert "\n".join(spilled[2494:3000]) == body  # the notice's line numbers are the file's


async def test_huge_last_line_notice(env: ToolEnv) -> None:
    result = await run(BashTool(env), "seq 1 3; head -c 3355443 /dev/zero | tr '\\0' x")
    path = env.spill_dir() / "bash-call-1.log"
    body, notice = split_notice(text_of(result))
    assert notice == f"[Showing last 50.0KB of line 4 (line is 3.2MB). Full output: {path}]"
    assert body == "x" * 51_200
    assert path.stat().st_size == 6 + 3_355_443
    assert result.details["truncation"]["last_line_partial"] is True


async def test_exit_code_comes_after_the_notice(env: ToolEnv) -> None:
    result = await run(BashTool(env), "seq 1 3000; exit 2")
    path = env.spill_dir() / "bash-call-1.log"
    assert text_of(result).endswith(
        f"\n2999\n3000\n\n[Showing lines 1001-3000 of 3000. Full output: {path}]\n\nCommand exited with code 2"
    )
    assert result.is_error is True


async def test_spill_file_holds_cleaned_text(env: ToolEnv) -> None:
    command = r"for i in $(seq 1 3000); do printf '\033[32m%d\033[0m\r\n' $i; done"
    result = await run(BashTool(env), command)
    path = env.spill_dir() / "bash-call-1.log"
    _, notice = split_notice(text_of(result))
    assert notice == f"[Showing lines 1001-3000 of 3000. Full output: {path}]"
    assert path.read_text() == "".join(f"{i}\n" for i in range(1, 3001))


async def test_rolling_tail_keeps_line_numbers_exact(tmp_path: Path) -> None:
    """With small limits the tail is trimmed many times; numbers still match the file."""
    work = tmp_path / "w"
    work.mkdir()
    env = ToolEnv(cwd=work, home=tmp_path / "home", limits=ToolLimits(max_lines=50, max_bytes=2000))
    result = await run(BashTool(env), "seq 1 100000")
    path = env.spill_dir() / "bash-call-1.log"
    body, notice = split_notice(text_of(result))
    assert notice == f"[Showing lines 99951-100000 of 100000. Full output: {path}]"
    assert body == "\n".join(str(i) for i in range(99951, 100001))
    lines = path.read_text().split("\n")
    assert lines[99950:100000] == body.split("\n")


async def test_spill_file_name_from_call_id(env: ToolEnv) -> None:
    result = await run(BashTool(env), "seq 1 3000", call_id="call_1|item/2")
    path = env.home / "tool-output" / "sess-1" / "bash-call_1_item_2.log"
    assert result.details["full_output_path"] == str(path)
    assert path.exists()
    again = await run(BashTool(env), "seq 1 3000", call_id="call_1|item/2")
    other = Path(again.details["full_output_path"])
    assert other != path and other.name.startswith("bash-call_1_item_2-") and other.exists()


async def test_spill_failure_is_reported(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    blocker = tmp_path / "home"
    blocker.write_text("a file where the spill directory should go")
    env = ToolEnv(cwd=work, home=blocker)
    result = await run(BashTool(env), "seq 1 6000")
    _, notice = split_notice(text_of(result))
    assert notice.startswith("[Showing lines 4001-6000 of 6000. Full output could not be saved: ")
    assert result.details["full_output_path"] is None
    assert "spill_error" in result.details


async def test_200mb_output_is_bounded(env: ToolEnv) -> None:
    start = time.monotonic()
    result = await run(BashTool(env), "yes | head -c 200000000")
    elapsed = time.monotonic() - start
    path = env.spill_dir() / "bash-call-1.log"
    body, notice = split_notice(text_of(result))
    assert notice.startswith(f"[Showing lines 99998001-100000000 of 100000000. Full output: {path} (capped at 100.0MB")
    assert body == "\n".join(["y"] * 2000)
    # the full-output file is capped at spill.maxBytes (100 MB): first half, marker, tail
    size = path.stat().st_size
    assert 75 * 2**20 < size <= 100 * 2**20 + 200
    assert result.details["spill_omitted_bytes"] == 200_000_000 - size + len(_marker_line(path))
    truncation: dict[str, Any] = result.details["truncation"]
    assert truncation["total_bytes"] == 200_000_000
    assert truncation["total_lines"] == 100_000_000
    assert elapsed < 10
    assert list(env.spill_dir().iterdir()) == [path]  # no segment files left behind
    path.unlink()


def _marker_line(path: Path) -> bytes:
    with path.open("rb") as f:
        f.seek(50 * 2**20)
        chunk = f.read(400)
    start = chunk.index(b"\n[... ")
    return chunk[start : chunk.index(b"...]\n", start) + 5]


async def test_a_capped_full_output_keeps_head_and_tail_and_says_so(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    env = ToolEnv(cwd=work, home=tmp_path / "home", session_id="s", spill_max_bytes=40_000)
    result = await run(BashTool(env), "seq 1 100000")  # 588,895 bytes
    path = env.spill_dir() / "bash-call-1.log"
    data = path.read_bytes()
    assert len(data) <= 40_000 + 200
    head, marker, tail = data.partition(b"\n[... ")
    assert head.startswith(b"1\n2\n3\n")
    assert tail.endswith(b"99999\n100000\n")
    assert b"left out here: this file is capped at 40,000 bytes" in marker + tail
    omitted = result.details["spill_omitted_bytes"]
    assert omitted > 500_000
    _, notice = split_notice(text_of(result))
    assert "(capped at 39.1KB: it keeps the first and the last part;" in notice
    assert list(env.spill_dir().iterdir()) == [path]


async def test_full_output_files_are_private(env: ToolEnv) -> None:
    await run(BashTool(env), "seq 1 6000")
    path = env.spill_dir() / "bash-call-1.log"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(env.spill_dir().stat().st_mode) == 0o700
    assert stat.S_IMODE(env.spill_dir().parent.stat().st_mode) == 0o700


# --- streaming ---------------------------------------------------------------------------


async def test_partial_output_is_streamed_and_throttled(env: ToolEnv) -> None:
    updates: list[ToolResult] = []
    stamps: list[float] = []

    def on_update(partial: ToolResult) -> None:
        stamps.append(time.monotonic())
        updates.append(partial)

    tool = BashTool(env)
    result = await tool.execute(
        "call-1",
        BashParams(command="for i in 1 2 3 4 5; do echo line$i; sleep 0.15; done; yes | head -c 300000"),
        AbortSignal(),
        on_update,
    )
    assert len(updates) >= 3
    assert "line1" in text_of(updates[0])
    assert all(b - a >= 0.09 for a, b in itertools.pairwise(stamps))
    assert all(len(text_of(u).encode()) <= env.limits.max_bytes for u in updates)
    assert all(u.details["partial"] is True for u in updates)
    assert text_of(result).endswith("Full output: " + str(env.spill_dir() / "bash-call-1.log") + "]")


# --- the default and maximum timeout (bash.defaultTimeoutMs / bash.maxTimeoutMs) ----------


def test_a_command_without_a_timeout_gets_the_default(tmp_path: Path) -> None:
    env = ToolEnv(cwd=tmp_path, bash_default_timeout=0.5)
    result = asyncio.run(
        BashTool(env, kill_grace=0.2).execute("t", BashParams(command="sleep 30"), AbortSignal(), lambda _: None)
    )
    assert text_of(result).endswith("Command timed out after 0.5 seconds")


def test_a_longer_timeout_than_the_maximum_is_capped(tmp_path: Path) -> None:
    env = ToolEnv(cwd=tmp_path, bash_max_timeout=0.5)
    params = BashParams(command="sleep 30", timeout=10_000)
    result = asyncio.run(BashTool(env, kill_grace=0.2).execute("t", params, AbortSignal(), lambda _: None))
    assert text_of(result).endswith(
        "Command timed out after 0.5 seconds (the longest allowed: bash.maxTimeoutMs in the settings)"
    )


def test_bash_children_lose_credential_variables_even_without_a_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-should-not-leak")
    monkeypatch.setenv("PLAIN_VARIABLE", "plain")
    result = asyncio.run(
        BashTool(ToolEnv(cwd=tmp_path)).execute("t", BashParams(command="env"), AbortSignal(), lambda _: None)
    )
    assert "PLAIN_VARIABLE=plain" in text_of(result) and "tok-should-not-leak" not in text_of(result)
