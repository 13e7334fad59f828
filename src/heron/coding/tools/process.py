"""Running a command in its own process group, and stopping all of it.

The command runs in its own session (process group), so a timeout or an abort can stop
everything it started, not just the shell. A command that leaves a background child
holding the pipe (``server &``) must not hang the agent: the protocol tells "the shell
exited" apart from "the pipe closed", so the caller can give the pipe a short grace
period and then kill the group.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal as signals
from pathlib import Path

from heron.coding.tools.bash_output import OutputCollector
from heron.coding.tools.terminal import StreamSanitizer

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
