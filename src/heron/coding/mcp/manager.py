"""All MCP servers of one heron process, on a background thread with its own event loop.

Why a thread: heron's modes each run their own event loop (and the session is built
before any of them starts), while an MCP connection must stay in the loop that opened
it. A dedicated loop keeps the servers alive across those loops, and a server that hangs
can only ever block its own calls, which are bounded by timeouts; the caller's loop
awaits a future and stays responsive (an abort cancels the call at once).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import mcp.types as types

from heron.coding.mcp.cache import CACHE_DIR
from heron.coding.mcp.config import ServerConfig
from heron.coding.mcp.connection import STOP_SECONDS, Connection, McpCallError, Timeouts

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ServerStatus:
    name: str
    scope: str
    transport: str
    state: str
    error: str
    tools: tuple[types.Tool, ...]
    restarts: int


class McpManager:
    """``start()`` connects every server in parallel and returns when all are up or failed;
    ``await call(...)`` works from any event loop; ``close()`` stops them all."""

    def __init__(
        self,
        servers: Sequence[ServerConfig],
        timeouts: Timeouts | None = None,
        cwd: str | None = None,
        log_dir: Path | None = None,
        auth_home: Path | None = None,
        open_url: Callable[[str], Awaitable[None]] | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.timeouts = timeouts or Timeouts()
        # auth_home is heron's home: tool lists are saved there for lazy starts unless told otherwise
        self.cache_dir = cache_dir or (auth_home / CACHE_DIR if auth_home is not None else None)
        self.connections = {
            s.name: Connection(
                s,
                self.timeouts,
                cwd,
                log_dir / f"{s.name}.log" if log_dir is not None else None,
                auth_home,
                open_url,
                self.cache_dir,
            )
            for s in servers
        }
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            self._thread = threading.Thread(target=serve, name="heron-mcp", daemon=True)
            self._thread.start()
            ready.wait()
            self._loop = loop
        return self._loop

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())

    def defer(self, name: str, tools: list[types.Tool]) -> None:
        """Mark a server lazy: ``start()`` leaves it alone, its first call starts it, and until
        then ``tools`` (its list from the last start) stand for its tools."""
        connection = self.connections[name]
        connection.state, connection.tools = "lazy", list(tools)

    def start(self) -> list[ServerStatus]:
        """Connect all servers not deferred (each within the connect timeout); never raises for a server."""
        pending = [c for c in self.connections.values() if c.state == "pending"]
        if pending:

            async def connect_all() -> None:
                await asyncio.gather(*(c.connect() for c in pending))

            # Each connect is bounded by its own timeout, and stopping a stuck one by STOP_SECONDS twice;
            # this outer bound only guards against a bug there leaving the caller waiting.
            try:
                self._submit(connect_all()).result(timeout=self.timeouts.connect + 3 * STOP_SECONDS)
            except concurrent.futures.TimeoutError:
                for c in pending:
                    if c.state == "pending":
                        c.state, c.error = "failed", "did not finish starting"
        return self.statuses()

    def statuses(self) -> list[ServerStatus]:
        return [
            ServerStatus(
                c.config.name, c.config.scope, c.config.transport, c.state, c.error, tuple(c.tools), c.restarts
            )
            for c in self.connections.values()
        ]

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """A tool call from the caller's loop; cancelling the awaiting task cancels the call."""
        connection = self.connections.get(server)
        if connection is None:
            raise McpCallError(f"no MCP server named {server!r}")
        future = self._submit(connection.call(tool, arguments))
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise

    def close(self) -> None:
        """Stop every server and the loop; bounded, safe to call twice."""
        loop, self._loop = self._loop, None
        if loop is None:
            return

        async def close_all() -> None:
            await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)

        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            asyncio.run_coroutine_threadsafe(close_all(), loop).result(timeout=3 * STOP_SECONDS)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=STOP_SECONDS)
