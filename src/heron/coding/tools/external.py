"""rg and fd as child processes: stdout read in chunks, stopped on abort or when enough."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal as signal_module
from collections.abc import AsyncIterator, Callable

from heron.agent.tools import ToolError
from heron.ai.abort import AbortSignal


class ExternalProcess:
    """An rg or fd run whose stdout is read in chunks; stopped on abort or when enough.

    stderr is collected in the background so a chatty program cannot fill its pipe and
    stall. Stopping is a SIGKILL (the programs only read files) sent with ``os.kill``:
    ``Process.kill()`` first polls the child, which can reap it behind asyncio's child
    watcher (a logged "Unknown child process" and a bogus exit code). A process whose
    output has ended is simply waited for.
    """

    def __init__(self, args: list[str], cwd: str, signal: AbortSignal) -> None:
        self.args = args
        self.cwd = cwd
        self.signal = signal
        self.proc: asyncio.subprocess.Process | None = None
        self._stderr: asyncio.Task[bytes] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._eof = False

    async def __aenter__(self) -> ExternalProcess:
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.args,
                cwd=self.cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise ToolError(f"Could not run {self.args[0]}: {exc.strerror or exc}") from None
        assert self.proc.stderr is not None
        self._stderr = asyncio.create_task(self.proc.stderr.read())
        self._unsubscribe = self.signal.add_listener(self.kill)
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal_module.SIGKILL)

    async def read(self, size: int = 1 << 16) -> bytes:
        assert self.proc is not None and self.proc.stdout is not None
        chunk = await self.proc.stdout.read(size)
        self._eof = self._eof or not chunk
        return chunk

    async def finish(self) -> tuple[int, str]:
        """Exit code and stderr text; the process is killed if its output had not ended."""
        assert self.proc is not None and self._stderr is not None
        if not self._eof:
            self.kill()
        code = await self.proc.wait()
        err = await self._stderr
        return code, err.decode("utf-8", "replace")

    async def __aexit__(self, *exc: object) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self.proc is not None:
            if exc[0] is not None:
                self.kill()
            await self.finish()


async def read_records(process: ExternalProcess, separator: bytes) -> AsyncIterator[bytes]:
    """The ``separator``-terminated records (one byte separator) of the process's stdout.

    A bytearray keeps a single 10 MB JSON line (a minified file) linear to assemble.
    """
    buf = bytearray()
    while True:
        chunk = await process.read()
        if not chunk:
            if buf:
                yield bytes(buf)
            return
        start = len(buf)
        buf += chunk
        if buf.find(separator, start) < 0:
            continue
        last = buf.rfind(separator)
        records = bytes(buf[:last]).split(separator)
        del buf[: last + 1]
        for record in records:
            yield record
