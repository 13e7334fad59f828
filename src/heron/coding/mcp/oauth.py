"""OAuth for HTTP MCP servers: the SDK's flow, heron's token file and loopback callback.

A server that answers 401 starts the SDK's authorization-code flow (discovery, dynamic
registration, PKCE). heron supplies the parts that depend on where it runs: tokens and
the registered client kept per server in ``$HERON_HOME/mcp-auth/<server>.json`` (0600),
a one-shot HTTP listener on 127.0.0.1 that receives the redirect, and a way to open the
authorization page (by default: print the URL and try the system browser). The whole
flow is bounded by the connect timeout like any other start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import webbrowser
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from heron import __version__
from heron.coding.mcp.config import ServerConfig
from heron.session.private_files import write_private_text

OpenUrl = Callable[[str], Awaitable[None]]
_PAGE = b"<html><body>heron: authorized. You can close this window.</body></html>"


class FileTokenStorage:
    """The SDK's ``TokenStorage`` over one private JSON file."""

    def __init__(self, path: Path, redirect: str = "", preset: OAuthClientInformationFull | None = None) -> None:
        self.path = path
        self.redirect = redirect  # a client registered for another callback port is registered again
        self.preset = preset  # a client configured by the user: used as is, never registered

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: dict[str, Any]) -> None:
        data = self._read()
        data[key] = value
        write_private_text(self.path, json.dumps(data))

    async def get_tokens(self) -> OAuthToken | None:
        value = self._read().get("tokens")
        return OAuthToken.model_validate(value) if isinstance(value, dict) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.preset is not None:
            return self.preset
        value = self._read().get("client")
        if not isinstance(value, dict):
            return None
        info = OAuthClientInformationFull.model_validate(value)
        uris = [str(u) for u in info.redirect_uris or []]
        return info if not self.redirect or self.redirect in uris else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._write("client", client_info.model_dump(mode="json", exclude_none=True))


class LoopbackCallback:
    """A listener on 127.0.0.1 for the one redirect that carries the authorization code."""

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None
        self.port = 0

    async def start(self) -> str:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{self.port}/callback"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            parts = line.split(" ")
            query = parse_qs(urlsplit(parts[1]).query) if len(parts) >= 2 else {}
            code = query.get("code", [""])[0]
            status = b"200 OK" if code else b"400 Bad Request"
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n" + _PAGE)
            await writer.drain()
            if self._result is not None and not self._result.done():
                if code:
                    self._result.set_result(
                        AuthorizationCodeResult(
                            code=code, state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
                        )
                    )
                else:
                    error = query.get("error_description", query.get("error", ["no code in the redirect"]))[0]
                    self._result.set_exception(RuntimeError(f"authorization refused: {error}"))
        writer.close()

    async def wait(self) -> AuthorizationCodeResult:
        assert self._result is not None, "start() first"
        return await self._result

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)


async def open_in_browser(url: str) -> None:
    print(f"heron: open this URL to authorize the MCP server:\n  {url}", file=sys.stderr)
    with contextlib.suppress(Exception):
        await asyncio.to_thread(webbrowser.open, url)


async def oauth_provider(
    config: ServerConfig, home: Path, callback: LoopbackCallback, open_url: OpenUrl | None = None
) -> OAuthClientProvider:
    """The SDK's OAuth provider for one server; ``callback`` must be closed by the caller."""
    redirect = await callback.start()
    preset = None
    if config.oauth_client_id:
        preset = OAuthClientInformationFull(
            client_id=config.oauth_client_id,
            client_secret=config.oauth_client_secret or None,
            redirect_uris=[redirect],  # type: ignore[list-item]
            token_endpoint_auth_method="client_secret_basic" if config.oauth_client_secret else "none",
        )
    metadata = OAuthClientMetadata(
        client_name=f"heron {__version__}",
        redirect_uris=[redirect],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_post",
    )
    storage = FileTokenStorage(home / "mcp-auth" / f"{config.name}.json", redirect, preset)
    return OAuthClientProvider(
        server_url=config.url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=open_url or open_in_browser,
        callback_handler=callback.wait,
    )
