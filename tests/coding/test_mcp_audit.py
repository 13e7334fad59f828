"""MCP edge cases found in the issue-17 audit: tool names that clean up to the same heron
name, and what a server with odd tool names looks like to the model."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from heron.ai.abort import AbortSignal
from heron.coding.mcp.config import ServerConfig, Timeouts
from heron.coding.mcp.manager import McpManager
from heron.coding.mcp.setup import mcp_tools
from heron.coding.mcp.tools import MAX_NAME, McpTool

ODD = textwrap.dedent("""
    from mcp.server.mcpserver import MCPServer
    s = MCPServer("odd")

    @s.tool(name="get.weather", description="dotted")
    def a() -> str:
        return "dotted"

    @s.tool(name="get_weather", description="underscored")
    def b() -> str:
        return "underscored"

    @s.tool(name="get/weather", description="slashed")
    def c() -> str:
        return "slashed"

    @s.tool(name="météo", description="unicode")
    def d() -> str:
        return "nuageux"

    s.run()
""")


@pytest.fixture
def odd(tmp_path: Path) -> McpManager:
    script = tmp_path / "odd_server.py"
    script.write_text(ODD)
    config = ServerConfig("odd", "stdio", "user", Path("test"), command=sys.executable, args=(str(script),), env={})
    manager = McpManager([config], Timeouts(connect=30, call=20))
    manager.start()
    return manager


async def test_tools_whose_names_clean_up_alike_all_stay_callable(odd: McpManager) -> None:
    try:
        tools, search = mcp_tools(odd, 128_000)
        assert search is None
        by_remote = {t.remote_name: t for t in tools if isinstance(t, McpTool)}
        assert set(by_remote) == {"get.weather", "get_weather", "get/weather", "météo"}  # none dropped
        names = [t.name for t in tools]
        assert len(set(names)) == len(names) and all(len(n) <= MAX_NAME for n in names)
        assert by_remote["get.weather"].name == "mcp__odd__get_weather"  # the first keeps the plain name
        assert by_remote["get.weather"].definition().name == "mcp__odd__get_weather"
        for remote, expected in (("get_weather", "underscored"), ("get/weather", "slashed"), ("météo", "nuageux")):
            tool = by_remote[remote]
            assert tool.definition().name == tool.name
            result = await tool.execute("c", tool.parameters.model_validate({}), AbortSignal(), lambda _: None)
            assert result.content[0].text == expected  # type: ignore[union-attr]
    finally:
        odd.close()


def test_an_unset_variable_is_named_not_silently_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json
    import subprocess

    from heron.coding.mcp.config import load_config

    monkeypatch.delenv("AUDIT_MCP_TOKEN", raising=False)
    monkeypatch.setenv("AUDIT_MCP_HOST", "127.0.0.1")
    home, cwd = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    cwd.mkdir()
    (home / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "api": {
                        "type": "http",
                        "url": "http://${AUDIT_MCP_HOST}:9/mcp",
                        "headers": {"Authorization": "Bearer ${AUDIT_MCP_TOKEN}", "X-Other": "${AUDIT_MCP_TOKEN}"},
                    },
                    "fine": {"command": "srv", "args": ["${AUDIT_MCP_MISSING:-fallback}"]},
                }
            }
        )
    )
    config = load_config(cwd, home, trusted=True)
    api = next(s for s in config.servers if s.name == "api")
    assert api.url == "http://127.0.0.1:9/mcp" and api.headers["Authorization"] == "Bearer "
    assert config.warnings == [
        f"{home / 'mcp.json'}: server 'api': ${{AUDIT_MCP_TOKEN}} not set in the environment; "
        "expanded to an empty string"
    ]  # once, and not for the one with a default
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    listing = subprocess.run(
        [sys.executable, "-m", "heron.cli.main", "mcp", "list"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "${AUDIT_MCP_TOKEN} not set" in listing.stderr
