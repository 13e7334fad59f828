"""MCP edge cases found in the issue-17 audit: tool names that clean up to the same heron
name, and what a server with odd tool names looks like to the model."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from heron.ai.abort import AbortSignal
from heron.coding.mcp.config import ServerConfig, Timeouts
from heron.coding.mcp.manager import McpManager
from heron.coding.mcp.setup import mcp_tools
from heron.coding.mcp.tools import MAX_NAME, McpTool

ODD = textwrap.dedent('''
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
''')


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
