"""The client the official MCP conformance suite drives: ``python -m heron.coding.mcp.conformance_client URL``.

The suite starts a test server per scenario, runs this command with the server's URL as
the last argument and the scenario's name in ``MCP_CONFORMANCE_SCENARIO``, and checks
what arrived on the wire. Everything goes through heron's own MCP layer (the manager,
its connections, and the ``mcp__`` tools the model would call), so a pass means a
session's MCP tools work against that server. Exit code 0 when the scenario's steps ran,
1 when one failed (the reason on stderr).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from heron.agent.tools import ToolResult
from heron.ai.abort import AbortSignal
from heron.coding.mcp.config import ServerConfig
from heron.coding.mcp.connection import Timeouts
from heron.coding.mcp.manager import McpManager
from heron.coding.mcp.tools import McpArguments, McpTool

# Arguments for the tools the suite's servers publish; other tools are called with {}.
KNOWN_ARGUMENTS: dict[str, dict[str, Any]] = {"add_numbers": {"a": 5, "b": 3}}


async def call_all(tools: list[McpTool]) -> list[ToolResult]:
    results = []
    for tool in tools:
        params = McpArguments.model_validate(KNOWN_ARGUMENTS.get(tool.remote_name, {}))
        results.append(await tool.execute(f"conformance-{tool.remote_name}", params, AbortSignal(), lambda _: None))
    return results


async def follow_in_place_of_a_browser(url: str) -> None:
    """The suite's authorization servers approve at once and redirect to heron's loopback
    callback: fetching the page with redirects followed is what a user's browser would do."""
    import httpx2

    async with httpx2.AsyncClient(follow_redirects=True, timeout=10.0) as client:
        await client.get(url)


def run(url: str, scenario: str) -> int:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")  # pre-registered client, if any
    server = ServerConfig(
        "conformance",
        "http",
        "user",
        Path("(conformance)"),
        url=url,
        oauth_client_id=str(context.get("client_id", "")),
        oauth_client_secret=str(context.get("client_secret", "")),
    )
    with tempfile.TemporaryDirectory(prefix="heron-mcp-auth-") as auth_home:
        return _run(server, scenario, Path(auth_home))


def _run(server: ServerConfig, scenario: str, auth_home: Path) -> int:
    manager = McpManager(
        [server], Timeouts(connect=20.0, call=20.0), auth_home=auth_home, open_url=follow_in_place_of_a_browser
    )
    try:
        (status,) = manager.start()
        if status.state != "connected":
            print(f"heron conformance client: {status.error}", file=sys.stderr)
            return 1
        print(f"connected; tools: {[t.name for t in status.tools]}")
        if scenario == "initialize":
            return 0
        tools = [McpTool(manager, server.name, t) for t in status.tools]
        results = asyncio.run(call_all(tools))
        failed = 0
        for tool, result in zip(tools, results, strict=True):
            text = " ".join(getattr(block, "text", "[image]") for block in result.content)
            print(f"{tool.name}: {'error: ' if result.is_error else ''}{text}")
            failed += result.is_error
        return 1 if failed else 0
    finally:
        manager.close()


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m heron.coding.mcp.conformance_client SERVER_URL", file=sys.stderr)
        return 2
    return run(args[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", ""))


if __name__ == "__main__":
    raise SystemExit(main())
