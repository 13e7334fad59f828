"""stdin and stdout of the rpc mode: LF-framed input lines read in a thread, and JSON lines
written in one write per event-loop step."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from heron.cli.modes.rpc_protocol import encode_line
from heron.coding.secrets import REDACTOR


class Output:
    """stdout as JSON lines. When the reader has gone (broken pipe), further output is
    dropped and ``on_close`` stops the server.

    Lines written on the event loop are flushed together when the loop next gets control
    (one ``write`` for what one step produced - a prompt's response and its run's first
    events - instead of one system call per line, each waking the reader); lines written
    off the loop are flushed at once, after any still waiting. Order is kept either way;
    :meth:`flush` at the end writes what is left."""

    def __init__(self, stream: BinaryIO, on_close: Callable[[], None]) -> None:
        self.stream = stream
        self.on_close = on_close
        self.closed = False
        self._lines: list[bytes] = []
        self._lock = threading.Lock()

    def write(self, data: dict[str, Any]) -> None:
        if self.closed:
            return
        line = REDACTOR.data(encode_line(data))  # no key on stdout (docs/permissions.md)
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            self._lines.append(line)
            first = len(self._lines) == 1
        if loop is None:
            self.flush()
        elif first:
            loop.call_soon(self.flush)

    def flush(self) -> None:
        with self._lock:
            data, self._lines = b"".join(self._lines), []
            if not data or self.closed:
                return
            try:
                self.stream.write(data)
                self.stream.flush()
            except (OSError, ValueError):
                self.closed = True
                # Point fd 1 at /dev/null so the interpreter's last flush at exit stays quiet.
                with contextlib.suppress(OSError, ValueError):
                    devnull = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(devnull, self.stream.fileno())
                    os.close(devnull)
        if self.closed:
            self.on_close()


def split_lines(buffer: bytearray, chunk: bytes) -> list[bytes]:
    """Add ``chunk`` to ``buffer`` and take out the complete lines, each with its LF. The
    only separator is the byte ``\\n``: never U+2028 and friends, never a lone CR."""
    buffer += chunk
    if b"\n" not in chunk:  # a long line arriving in pieces is not rescanned
        return []
    *lines, rest = bytes(buffer).split(b"\n")
    buffer[:] = rest
    return [line + b"\n" for line in lines]


def read_lines(fd: int, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[bytes | None]) -> None:
    """In a thread: stdin may be a pipe, a file or a terminal, and a blocking read works on
    all of them (asyncio's pipe transports do not take files). ``os.read`` on the raw fd,
    not ``sys.stdin``, so an exit while this thread waits never trips over the buffered
    reader's lock; and no length limit on a line (a prompt may carry images). A last line
    without its LF still counts at EOF."""
    buffer = bytearray()
    try:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except InterruptedError:
                continue
            if not chunk:
                break
            for line in split_lines(buffer, chunk):
                loop.call_soon_threadsafe(queue.put_nowait, line)
        if buffer:
            loop.call_soon_threadsafe(queue.put_nowait, bytes(buffer))
    except (OSError, RuntimeError):  # stdin unreadable, or the loop is gone
        pass
    finally:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            loop.call_soon_threadsafe(queue.put_nowait, None)
