"""One MCP server's connection: start, list tools, call, restart once, stop.

Everything here runs on the manager's own event loop (:mod:`heron.coding.mcp.manager`).
The SDK's transports are anyio context managers that must be entered and left in the
same task, so each connection lives in one long-running task (``_run``) that holds them
open until it is told to stop; calls are sent from other tasks over the open session.

Every wait is bounded: connecting, each call, and stopping. A server that crashes (its
process exits, its HTTP endpoint goes away) is restarted once; a second crash leaves it
``failed`` with the reason, and calls to it fail at once with that reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, TextIO

import anyio
import mcp.types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from heron import __version__
from heron.coding.mcp.config import ServerConfig, Timeouts
from heron.session.private_files import append_private

log = logging.getLogger(__name__)
State = Literal["pending", "lazy", "connected", "failed", "stopped"]  # lazy: not started yet, tools cached
STOP_SECONDS = 5.0
__all__ = ["STOP_SECONDS", "Connection", "McpCallError", "Timeouts", "describe"]
MAX_RESTARTS = 1


class McpCallError(RuntimeError):
    """A call that did not produce a result: the message is for the model."""


class Connection:
    def __init__(
        self,
        config: ServerConfig,
        timeouts: Timeouts,
        cwd: str | None = None,
        log_path: Path | None = None,
        auth_home: Path | None = None,
        open_url: Callable[[str], Awaitable[None]] | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.config = config
        self.cache_dir = cache_dir  # where the tool list is saved after each start (for lazy servers)
        self.auth_home = auth_home  # where OAuth tokens are kept; None: no OAuth
        self.open_url = open_url
        self.log_path = log_path  # a stdio server's stderr goes here (not onto heron's terminal)
        self._log_start = 0
        self.timeouts = timeouts
        self.cwd = cwd
        self.state: State = "pending"
        self.error = ""
        self.tools: list[types.Tool] = []
        self.server_name = ""
        self.restarts = 0
        self.dropped = False  # the connection went away after it was up: worth one restart
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def connect(self) -> None:
        """Start the server and list its tools, within the connect timeout; failures set
        ``state`` to failed with the reason instead of raising."""
        self._stop = asyncio.Event()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run(ready, self._stop), name=f"mcp-{self.config.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.timeouts.connect)
        except TimeoutError:
            await self._halt()
            self._fail(f"did not answer within {self.timeouts.connect:g} s of starting")
        except Exception as exc:  # noqa: BLE001 - every start failure becomes a status
            await self._halt()
            self._fail(describe(exc))
        else:
            self.state = "connected"
            self.error = ""
            if self.cache_dir is not None:
                from heron.coding.mcp.cache import save_tools

                save_tools(self.cache_dir, self.config, self.tools)

    @property
    def connected(self) -> bool:
        return self.state == "connected"

    def _fail(self, reason: str) -> None:
        self.state = "failed"
        self.error = reason + self._log_hint()
        self._session = None

    async def _run(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                errlog = sys.stderr
                if self.log_path is not None and self.config.transport == "stdio":
                    fd = append_private(self.log_path)  # 0600: a server may log what it was sent
                    errlog = stack.enter_context(os.fdopen(fd, "a", encoding="utf-8", errors="replace"))
                    self._log_start = errlog.tell()  # the hint reads only what this start wrote
                read, write = await stack.enter_async_context(self._transport(errlog))
                session = await stack.enter_async_context(
                    ClientSession(read, write, client_info=types.Implementation(name="heron", version=__version__))
                )
                result = await session.initialize()
                self.server_name = result.server_info.name if result.server_info else ""
                self.tools = await self._list_tools(session)
                self._session = session
                if not ready.done():
                    ready.set_result(None)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc) if isinstance(exc, Exception) else ready.cancel()
            elif not stop.is_set() and self.state == "connected":
                self._fail(f"the connection ended: {describe(exc)}")
                self.dropped = True
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._session = None

    def _log_hint(self) -> str:
        """The last line the server wrote to its log, which usually says why it stopped."""
        if self.log_path is None or self.config.transport != "stdio":
            return ""
        try:
            with self.log_path.open("rb") as f:
                f.seek(max(self._log_start, f.seek(0, 2) - 2000))
                lines = [ln for ln in f.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        last = lines[-1].strip()[:200] if lines else ""
        return f" (log: {self.log_path}{': ' + last if last else ''})"

    @contextlib.asynccontextmanager
    async def _transport(self, errlog: TextIO) -> AsyncIterator[Any]:
        cfg = self.config
        if cfg.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(command=cfg.command, args=list(cfg.args), env=cfg.env or None, cwd=self.cwd)
            async with stdio_client(params, errlog=errlog) as streams:
                yield streams
            return
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async with contextlib.AsyncExitStack() as stack:
            auth = None
            has_token = any(k.lower() == "authorization" for k in cfg.headers)
            if self.auth_home is not None and not has_token:  # a 401 then starts the OAuth flow
                from heron.coding.mcp.oauth import LoopbackCallback, oauth_provider

                callback = LoopbackCallback()
                stack.push_async_callback(callback.close)
                auth = await oauth_provider(cfg, self.auth_home, callback, self.open_url)
            client = httpx2.AsyncClient(headers=cfg.headers, timeout=httpx2.Timeout(30.0, read=300.0), auth=auth)
            await stack.enter_async_context(client)
            yield await stack.enter_async_context(streamable_http_client(cfg.url, http_client=client))

    async def _list_tools(self, session: ClientSession) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(100):  # a server that pages forever must not hang the start
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float | None = None) -> types.CallToolResult:
        """One ``tools/call``; :class:`McpCallError` when there is no result to give."""
        session = await self._usable_session()
        limit = timeout if timeout is not None else self.timeouts.call
        try:
            result = await asyncio.wait_for(session.call_tool(tool, arguments), limit)
        except TimeoutError:
            raise McpCallError(f"MCP server {self.config.name!r} did not answer {tool} within {limit:g} s") from None
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                raise McpCallError(await self._crashed(describe(exc))) from exc
            raise McpCallError(f"MCP server {self.config.name!r} refused {tool}: {exc.message}") from exc
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as exc:
            raise McpCallError(await self._crashed(describe(exc))) from exc
        except Exception as exc:  # e.g. a result that breaks the tool's own output schema
            raise McpCallError(f"MCP server {self.config.name!r}: {tool} failed: {describe(exc)}") from exc
        if not isinstance(result, types.CallToolResult):
            raise McpCallError(f"MCP server {self.config.name!r} sent an unexpected result for {tool}")
        return result

    async def _usable_session(self) -> ClientSession:
        async with self._lock:
            if self.state == "connected" and self._session is not None:
                return self._session
            if self.state == "lazy":  # the first call to a lazy server starts it (within the connect timeout)
                await self.connect()
                if not self.connected:
                    log.warning("MCP server %r could not be started at first use: %s", self.config.name, self.error)
                    raise McpCallError(
                        f"MCP server {self.config.name!r} could not be started at first use: {self.error}"
                    )
                if self._session is not None:
                    return self._session
            if self.state == "connected":  # the connection task ended on its own
                self._fail("the connection ended")
                self.dropped = True
            if self.state == "failed" and self.dropped and self.restarts < MAX_RESTARTS:
                await self._restart()
            if self.state != "connected" or self._session is None:
                raise McpCallError(f"MCP server {self.config.name!r} is not available: {self.error or self.state}")
            return self._session

    async def _crashed(self, reason: str) -> str:
        """The message for a call whose server went away; restarts it once for later calls."""
        async with self._lock:
            name = self.config.name
            if self.restarts >= MAX_RESTARTS:
                await self._halt()
                self._fail(f"crashed again after a restart ({reason})")
                return f"MCP server {name!r} crashed again after a restart and is now off: {reason}"
            await self._restart()
            if self.state == "connected":
                return (
                    f"MCP server {name!r} crashed during the call ({reason}); it was restarted. "
                    "The call may or may not have taken effect: check before retrying."
                )
            return f"MCP server {name!r} crashed ({reason}) and could not be restarted: {self.error}"

    async def _restart(self) -> None:
        self.restarts += 1
        self.dropped = False
        await self._halt()
        self.state = "pending"
        await self.connect()

    async def _halt(self) -> None:
        """Stop the connection task, within :data:`STOP_SECONDS` (then it is cancelled)."""
        task, self._task = self._task, None
        if self._stop is not None:
            self._stop.set()
        if task is None or task.done():
            return
        # A server that never finished starting cannot be asked to stop: cancel at once.
        done = set() if self._session is None else (await asyncio.wait({task}, timeout=STOP_SECONDS))[0]
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=STOP_SECONDS)

    async def close(self) -> None:
        await self._halt()
        self.state = "stopped"
        self._session = None


def describe(exc: BaseException) -> str:
    """A one-line reason; exception groups from the transports are unwrapped to their causes."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(e) for e in exc.exceptions)
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
