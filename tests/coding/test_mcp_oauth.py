"""The parts of MCP OAuth heron supplies: the token file, the loopback callback, the config.
(The whole flow runs against the official conformance suite's authorization servers in .ci/run.)"""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

import httpx
import pytest
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from heron.coding.mcp.config import parse_server
from heron.coding.mcp.oauth import FileTokenStorage, LoopbackCallback


async def test_tokens_and_client_are_kept_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp-auth" / "srv.json"
    storage = FileTokenStorage(path, "http://127.0.0.1:5000/callback")
    assert await storage.get_tokens() is None and await storage.get_client_info() is None
    await storage.set_tokens(OAuthToken(access_token="at", token_type="Bearer", refresh_token="rt"))
    client = OAuthClientInformationFull(client_id="cid", redirect_uris=["http://127.0.0.1:5000/callback"])  # type: ignore[list-item]
    await storage.set_client_info(client)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = FileTokenStorage(path, "http://127.0.0.1:5000/callback")
    tokens = await again.get_tokens()
    assert tokens is not None and tokens.access_token == "at" and tokens.refresh_token == "rt"
    info = await again.get_client_info()
    assert info is not None and info.client_id == "cid"
    # registered for another callback port: registered again rather than sent a bad redirect
    assert await FileTokenStorage(path, "http://127.0.0.1:6000/callback").get_client_info() is None


async def test_a_broken_token_file_means_no_tokens(tmp_path: Path) -> None:
    path = tmp_path / "srv.json"
    path.write_text("{oops")
    assert await FileTokenStorage(path).get_tokens() is None


async def test_loopback_callback_receives_the_code() -> None:
    callback = LoopbackCallback()
    try:
        url = await callback.start()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/callback")
        async with httpx.AsyncClient() as client:
            reply = await client.get(url, params={"code": "abc", "state": "xyz"})
        assert reply.status_code == 200
        result = await asyncio.wait_for(callback.wait(), 5)
        assert (result.code, result.state) == ("abc", "xyz")
    finally:
        await callback.close()


async def test_loopback_callback_reports_a_refusal() -> None:
    callback = LoopbackCallback()
    try:
        url = await callback.start()
        async with httpx.AsyncClient() as client:
            reply = await client.get(url, params={"error": "access_denied", "error_description": "user said no"})
        assert reply.status_code == 400
        with pytest.raises(RuntimeError, match="user said no"):
            await asyncio.wait_for(callback.wait(), 5)
    finally:
        await callback.close()


def test_oauth_client_in_config() -> None:
    entry = {"type": "http", "url": "https://x/mcp", "oauth": {"clientId": "id1", "clientSecret": "s"}}
    server = parse_server("x", entry, "user", Path("f"))
    assert (server.oauth_client_id, server.oauth_client_secret) == ("id1", "s")
    assert json.loads(json.dumps(server.to_json())) == entry
    with pytest.raises(ValueError, match="clientId and clientSecret, not scope"):
        parse_server("x", {"url": "https://x/mcp", "oauth": {"scope": "a"}}, "user", Path("f"))
