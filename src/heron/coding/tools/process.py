"""Running a command in its own process group, and stopping all of it.

The command runs in its own session (process group), so a timeout or an abort can stop
everything it started, not just the shell. A command that leaves a background child
holding the pipe (``server &``) must not hang the agent: the protocol tells "the shell
exited" apart from "the pipe closed", so the caller can give the pipe a short grace
period and then kill the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal as signals
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from heron.ai.abort import AbortSignal
from heron.coding.tools.bash_output import OutputCollector
from heron.coding.tools.terminal import StreamSanitizer

Outcome = Literal["exit", "aborted", "timeout"]

_KNOWN_SHELLS = frozenset({"bash", "zsh", "sh"})


def resolve_shell(configured: str | None) -> str:
    """The shell to run commands with.

    The user's own ``$SHELL`` is preferred, so commands behave as they would in the
    user's terminal, but only when it is a shell whose syntax the model writes (fish or
    nushell would reject ordinary ``&&`` / ``$(...)`` scripts).
    """
    if configured:
        return configured
    user_shell = os.environ.get("SHELL", "")
    if Path(user_shell).name in _KNOWN_SHELLS and os.access(user_shell, os.X_OK):
        return user_shell
    if os.access("/bin/bash", os.X_OK):
        return "/bin/bash"
    return shutil.which("sh") or "/bin/sh"


class PipeProtocol(asyncio.SubprocessProtocol):
    """Feeds the pipe straight into the collector; tells apart "the shell exited" from
    "the pipe closed", which a background child can delay indefinitely."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sanitizer: StreamSanitizer, sink: OutputCollector) -> None:
        self.sanitizer = sanitizer
        self.sink = sink
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.output_inode: int | None = None  # the output pipe, to find who still holds it

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        pipe = getattr(transport, "get_pipe_transport", lambda fd: None)(1)
        handle: Any = pipe.get_extra_info("pipe") if pipe is not None else None
        if handle is not None:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                self.output_inode = os.fstat(handle.fileno()).st_ino

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if not self.sink.closed:
            self.sink.feed(self.sanitizer.feed(data.encode() if isinstance(data, str) else data))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.closed.done():
            self.closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


def group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process is left in the group.

    ``killpg(pgid, 0)`` alone also succeeds for zombies, and in containers whose init
    does not reap orphans the killed children stay zombies forever.
    """
    proc = Path("/proc")
    if proc.is_dir() and (proc / "self" / "stat").exists():
        try:
            entries = list(os.scandir(proc))
        except OSError:
            entries = []
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                stat = (proc / entry.name / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def kill_group(pgid: int, grace: float) -> None:
    """SIGTERM to the whole group, SIGKILL to whatever still lives after ``grace``."""
    if not signal_group(pgid, signals.SIGTERM):
        return
    loop = asyncio.get_running_loop()
    end = loop.time() + grace
    while loop.time() < end:
        await asyncio.sleep(0.05)
        if not group_alive(pgid):
            return
    signal_group(pgid, signals.SIGKILL)


async def wait_closed(protocol: PipeProtocol, timeout: float) -> bool:
    """Whether the output pipe closed within ``timeout`` seconds."""
    if not protocol.closed.done():
        await asyncio.wait({protocol.closed}, timeout=timeout)
    return protocol.closed.done()


@dataclass(frozen=True, slots=True)
class Ending:
    """How a supervised process ended; ``background_killed``: something it started was still
    running (holding the output pipe, or at all with ``reap``) and was killed."""

    outcome: Outcome
    background_killed: bool
    escaped: tuple[int, ...] = ()  # killed holders of the output that had left the group (setsid)
    left_running: tuple[int, ...] = ()  # holders of the output still alive after SIGKILL


@dataclass(frozen=True, slots=True)
class Supervision:
    """The waits of :func:`supervise`: the deadline (``None``: none), the SIGTERM -> SIGKILL
    delay, how long the pipe may stay open after the process exited, and how often progress
    is reported. ``reap``: after a normal exit, kill whatever of the group still runs even
    when it let go of the pipe (a program's detached children must not outlive it)."""

    timeout: float | None
    kill_grace: float
    pipe_grace: float
    update_interval: float
    reap: bool = False


async def supervise(
    protocol: PipeProtocol,
    pgid: int,
    sink: OutputCollector,
    signal: AbortSignal,
    waits: Supervision,
    on_progress: Callable[[], None],
) -> Ending:
    """Wait for the process to exit, the deadline or an abort, calling ``on_progress`` when
    new output arrived (at most every ``update_interval``); then make sure nothing it started
    holds the pipe. The one place bash and script stop a process group."""
    loop = asyncio.get_running_loop()
    abort_requested: asyncio.Future[None] = loop.create_future()

    def on_abort() -> None:
        def mark() -> None:
            if not abort_requested.done():
                abort_requested.set_result(None)

        loop.call_soon_threadsafe(mark)

    unsubscribe = signal.add_listener(on_abort)
    deadline = loop.time() + waits.timeout if waits.timeout is not None else None
    outcome: Outcome = "exit"
    last_update = 0.0
    try:
        while True:
            wait = waits.update_interval
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - loop.time()))
            await asyncio.wait({protocol.exited, abort_requested}, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            if protocol.exited.done():
                break
            if abort_requested.done():
                outcome = "aborted"
                break
            if deadline is not None and loop.time() >= deadline:
                outcome = "timeout"
                break
            now = loop.time()
            if sink.dirty and now - last_update >= waits.update_interval:
                last_update = now
                sink.dirty = False
                on_progress()
        return await _settle(protocol, pgid, outcome, waits)
    finally:
        unsubscribe()


async def _settle(protocol: PipeProtocol, pgid: int, outcome: Outcome, waits: Supervision) -> Ending:
    if outcome != "exit":
        grace = waits.kill_grace if outcome == "timeout" else min(waits.kill_grace, 1.0)
        await kill_group(pgid, grace)
        if await wait_closed(protocol, waits.pipe_grace):
            return Ending(outcome, False)
        escaped, left = await kill_holders(protocol.output_inode, waits.kill_grace)
        return Ending(outcome, bool(escaped), escaped, left)
    if not await wait_closed(protocol, waits.pipe_grace):
        # The process is gone but something it started still holds the pipe open.
        await kill_group(pgid, waits.kill_grace)
        if await wait_closed(protocol, waits.pipe_grace):
            return Ending(outcome, True)
        # still held: by a process that left the group (``setsid``), which killpg does not reach
        escaped, left = await kill_holders(protocol.output_inode, waits.kill_grace)
        await wait_closed(protocol, waits.pipe_grace)
        return Ending(outcome, True, escaped, left)
    if waits.reap and group_alive(pgid):
        await kill_group(pgid, waits.kill_grace)
        return Ending(outcome, True)
    return Ending(outcome, False)


def pipe_holders(inode: int | None) -> list[int]:
    """The processes (other than heron) with the pipe ``inode`` open, found by their fds."""
    if inode is None:
        return []
    target, me, found = f"pipe:[{inode}]", os.getpid(), []
    try:
        pids = [int(e.name) for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return []
    for pid in pids:
        if pid == me:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # gone, or another user's
        for fd in fds:
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    found.append(pid)
                    break
    return found


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat[stat.rfind(")") + 2 :].split()
    return bool(fields) and fields[0] not in ("Z", "X")


async def kill_holders(inode: int | None, grace: float) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """SIGKILL every process still holding the output pipe; returns (killed, still running
    after ``grace``), so a result says what really happened to them."""
    holders = pipe_holders(inode)
    for pid in holders:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signals.SIGKILL)
    loop = asyncio.get_running_loop()
    end = loop.time() + grace
    left = [pid for pid in holders if _running(pid)]
    while left and loop.time() < end:
        await asyncio.sleep(0.05)
        left = [pid for pid in left if _running(pid)]
    return tuple(pid for pid in holders if pid not in left), tuple(left)


def ending_lines(ending: Ending) -> list[str]:
    """What a result says about the processes a command left behind: killed, and which had
    left its process group, or still running (never "killed" for one that lives on)."""
    lines: list[str] = []
    if ending.background_killed:
        line = "Background processes still holding the output open were killed after the command exited"
        if ending.escaped:
            line += f" (including pid {', '.join(map(str, ending.escaped))}, which had left its process group)"
        lines.append(line + ".")
    if ending.left_running:
        pids = ", ".join(map(str, ending.left_running))
        lines.append(f"Left running: pid {pids} (it holds the command's output and could not be killed).")
    return lines
