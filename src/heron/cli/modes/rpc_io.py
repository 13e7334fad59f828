"""stdin and stdout of the rpc mode: LF-framed input lines read in a thread, and JSON lines
written and flushed one by one."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from typing import Any, BinaryIO

from heron.cli.modes.rpc_protocol import encode_line
from heron.coding.secrets import REDACTOR


class Output:
    """stdout as JSON lines, flushed one by one. When the reader has gone (broken pipe),
    further output is dropped and ``on_close`` stops the server."""

    def __init__(self, stream: BinaryIO, on_close: Callable[[], None]) -> None:
        self.stream = stream
        self.on_close = on_close
        self.closed = False

    def write(self, data: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            self.stream.write(REDACTOR.data(encode_line(data)))  # no key on stdout (docs/permissions.md)
            self.stream.flush()
        except (OSError, ValueError):
            self.closed = True
            # Point fd 1 at /dev/null so the interpreter's last flush at exit stays quiet.
            with contextlib.suppress(OSError, ValueError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self.stream.fileno())
                os.close(devnull)
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
