"""Esc is instant and final: the real program in a pseudo-terminal (and under tmux with
its default settings), ten tries each in one heron process, against a local
OpenAI-compatible server that streams a ``bash`` call's arguments slowly. Esc, pressed at
any moment before the arguments are complete, shows "aborted" within 100 ms (600 ms
through tmux, whose own escape-time is 500 ms), and the call never runs: its marker file
is never created.

These tests measure time; the limits leave the machine's load a wide margin over the
~20 ms the key and the abort take.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli import test_interactive as base
from tests.cli.test_interactive import _chunk, _usage, environment, exit_with_ctrl_d, footer
from tests.support.http_server import LocalServer, Reply

pexpect = pytest.importorskip("pexpect")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

dirs = base.dirs
spawn = base.spawn

TRIES = 10
PIECES = 16  # the arguments arrive in this many SSE events
PIECE_DELAY = 0.06  # seconds between two events: ~1 s of streaming arguments
PTY_LIMIT = 0.100
TMUX_LIMIT = 0.600


def slow_tool_call(
    command: str, call_id: str, tool: str = "bash", args: dict[str, Any] | None = None, delay: float = PIECE_DELAY
) -> Reply:
    """A ``bash`` call (or ``tool`` with ``args``) whose JSON arguments stream in
    :data:`PIECES` events, one write each (every event padded to the same length, so the
    server's fixed-size writes are events)."""
    arguments = json.dumps(args if args is not None else {"command": command})
    step = -(-len(arguments) // PIECES)
    head = {"index": 0, "id": call_id, "type": "function", "function": {"name": tool, "arguments": ""}}
    chunks = [_chunk({"role": "assistant", "content": ""}), _chunk({"tool_calls": [head]})]
    for start in range(0, len(arguments), step):
        piece = {"index": 0, "function": {"arguments": arguments[start : start + step]}}
        chunks.append(_chunk({"tool_calls": [piece]}))
    chunks += [_chunk(finish="tool_calls"), _usage(1_500, 20)]
    lines = [f"data: {json.dumps(c)}" for c in chunks] + ["data: [DONE]"]
    width = max(len(line) for line in lines)
    body = "".join(line.ljust(width) + "\n\n" for line in lines)
    return Reply(body=body, chunk_size=width + 2, chunk_delay=delay)


def wait_for_requests(server: LocalServer, count: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while len(server.requests) < count:
        assert time.monotonic() < deadline, f"the request {count} never came"
        time.sleep(0.005)


def test_esc_aborts_at_once_and_a_call_streamed_after_it_never_runs(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    _, project = dirs
    child = spawn()
    rng = random.Random(26)
    took: list[float] = []
    cut_off: list[str] = []
    for attempt in range(TRIES):
        marker = project / f"marker{attempt}"
        local_server.queue(slow_tool_call(f"touch {marker}", f"call_{attempt}"))
        child.send(f"make marker {attempt}\r")
        wait_for_requests(local_server, attempt + 1)
        # anywhere from the first byte to shortly before the arguments are complete
        time.sleep(rng.uniform(0, PIECES * PIECE_DELAY * 0.75))
        child.delaybeforesend = None  # pexpect sleeps 50 ms before each send by default
        started = time.monotonic()
        child.send("\x1b")
        child.expect("aborted")
        took.append(time.monotonic() - started)
        child.delaybeforesend = 0.05  # typing right after the prompt shows needs it
        child.expect(" · (not run: bash|nothing received yet)")  # what was cut off
        cut_off.append(child.match.group(1))
        footer(child)
    time.sleep(1.5)  # a call let through would have run by now
    assert not list(project.glob("marker*")), "a call streamed after Esc ran"
    assert len(local_server.requests) == TRIES  # nothing was sent after an abort
    print("Esc -> aborted (ms):", [round(t * 1000) for t in took], cut_off)
    assert "not run: bash" in cut_off  # some Esc came while the call was streaming
    assert max(took) <= PTY_LIMIT, took
    exit_with_ctrl_d(child)


def test_ctrl_c_twice_exits(spawn: Any) -> None:
    child = spawn()
    child.expect("›")  # noqa: RUF001 - the input line is open (before, Ctrl+C is a signal)
    child.send("\x03")
    child.expect("Ctrl\\+C again exits")
    child.send("\x03")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


# --- tmux ---------------------------------------------------------------------------------


class Tmux:
    """A tmux server of the test's own (``-L``), started with no configuration file (its
    defaults: escape-time 500 ms), running heron in one window."""

    def __init__(self, socket: str, env: dict[str, str]) -> None:
        self.socket = socket
        self.env = env

    def __call__(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=20, env=self.env
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "heron")

    def wait(self, text: str, count: int = 1, timeout: float = 45) -> str:
        """Until ``text`` is on the screen ``count`` times; the screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if screen.count(text) >= count:
                return screen
            assert time.monotonic() < deadline, f"{text!r} never appeared {count} times:\n{screen}"
            time.sleep(0.005)


def start_tmux(server: LocalServer, home: Path, project: Path, name: str, size: tuple[int, int] = (120, 40)) -> Tmux:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (.ci/run installs it)")
    env = environment(home)
    env.pop("PROMPT_TOOLKIT_NO_CPR")  # tmux answers cursor-position queries: the real status bar
    env.pop("COLUMNS")
    env.pop("LINES")
    tmux = Tmux(f"heron-test-{name}", env)
    argv = [sys.executable, "-m", "heron.cli.main", "--base-url", f"{server.url}/v1", "--model", "test-model"]
    width, height = size
    tmux("-f", "/dev/null", "new-session", "-d", "-s", "heron", "-x", str(width), "-y", str(height),
         "-c", str(project), *argv)  # fmt: skip
    return tmux


def stop_tmux(tmux: Tmux) -> None:
    subprocess.run(["tmux", "-L", tmux.socket, "kill-server"], capture_output=True, timeout=20)


def attach(tmux: Tmux, size: tuple[int, int] = (120, 40)) -> Any:
    """A tmux client in a pseudo-terminal: keys typed into it reach heron the way a user's
    do, through tmux's input parser and its escape-time (send-keys would skip both)."""
    env = dict(tmux.env, TERM="xterm")
    width, height = size
    client = pexpect.spawn(
        "tmux", ["-L", tmux.socket, "attach", "-t", "heron"], env=env, encoding="utf-8", dimensions=(height, width)
    )
    client.timeout = 45
    return client


def test_esc_through_tmux_with_its_default_escape_time(
    local_server: LocalServer, dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    home, project = dirs
    tmux = start_tmux(local_server, home, project, tmp_path.name)
    try:
        tmux.wait("Ctrl+D exits")
        client = attach(tmux)
        escape_time = tmux("show-options", "-s", "-v", "escape-time").strip()
        took = []
        rng = random.Random(600)
        for attempt in range(TRIES):  # one heron, ten tries
            marker = project / f"marker{attempt}"
            local_server.queue(slow_tool_call(f"touch {marker}", f"call_{attempt}"))
            client.send(f"make marker {attempt}\r")
            wait_for_requests(local_server, attempt + 1)
            # tmux holds the Esc 500 ms: pressed this early, it reaches heron before the end
            time.sleep(rng.uniform(0, PIECES * PIECE_DELAY * 0.75 - 0.55))
            client.expect([pexpect.TIMEOUT], timeout=0.05)  # drop what was drawn so far: "aborted" must be new
            client.delaybeforesend = None
            started = time.monotonic()
            client.send("\x1b")
            client.expect("aborted")  # what tmux draws in the user's terminal
            took.append(time.monotonic() - started)
            client.delaybeforesend = 0.05
            deadline = time.monotonic() + 30
            while "─ test-model" not in (screen := tmux.screen()).rsplit(f"make marker {attempt}", 1)[-1]:
                assert time.monotonic() < deadline, f"no footer after try {attempt}:\n{screen}"
                time.sleep(0.02)  # until this try's footer: the input line is open again
            (tmp_path / f"screen-abort-{attempt}.txt").write_text(screen)
        time.sleep(1.5)
        assert not list(project.glob("marker*"))
        assert len(local_server.requests) == TRIES
        assert "aborted · not run: bash touch" in screen  # Esc came while the call was being written
        print(f"tmux (escape-time {escape_time} ms): Esc -> aborted (ms):", [round(t * 1000) for t in took])
        assert max(took) <= TMUX_LIMIT, took
        client.terminate(force=True)
    finally:
        stop_tmux(tmux)
