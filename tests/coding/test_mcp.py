"""heron's MCP client against real MCP servers (the SDK's own server in tests/coding/mcp_double.py):
stdio and streamable HTTP, results through the session's budgets, crashes, hangs, tool_search."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.ai.types import Context, ImageContent, ToolResultMessage
from heron.coding.mcp.config import ServerConfig
from heron.coding.mcp.connection import Timeouts
from heron.coding.mcp.manager import McpManager
from heron.coding.mcp.search import ToolSearch
from heron.coding.mcp.setup import mcp_tools, start_session_servers
from heron.coding.mcp.tools import McpTool, tool_name
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.session.store import SessionStore

DOUBLE = str(Path(__file__).with_name("mcp_double.py"))


def stdio(name: str, *args: str, env: dict[str, str] | None = None) -> ServerConfig:
    return ServerConfig(
        name, "stdio", "user", Path("test"), command=sys.executable, args=(DOUBLE, *args), env=env or {}
    )


@pytest.fixture
def manager() -> Iterator[McpManager]:
    m = McpManager([stdio("d", "stdio", env={"DOUBLE_TOKEN": "s3cret"})], Timeouts(connect=30, call=20))
    m.start()
    yield m
    m.close()


def tools_of(m: McpManager) -> dict[str, McpTool]:
    tools, _ = mcp_tools(m, 200_000)
    return {t.name: t for t in tools if isinstance(t, McpTool)}


def test_stdio_server_tools_are_named_and_carry_their_schemas(manager: McpManager) -> None:
    (status,) = manager.statuses()
    assert status.state == "connected" and status.error == ""
    tools = tools_of(manager)
    assert "mcp__d__echo" in tools and "mcp__d__crash" in tools
    definition = tools["mcp__d__echo"].definition()
    assert definition.description == "Echo the text back, with its length"
    assert definition.parameters["properties"]["text"]["type"] == "string"
    assert definition.parameters["required"] == ["text"]


def test_tool_names_stay_within_provider_rules() -> None:
    assert tool_name("srv", "get.file contents") == "mcp__srv__get_file_contents"
    long = tool_name("server", "x" * 100)
    assert len(long) == 64 and long.startswith("mcp__server__xxx")
    assert tool_name("server", "x" * 100) != tool_name("server", "x" * 99 + "y")


async def test_call_text_structured_image_and_error(manager: McpManager) -> None:
    tools = tools_of(manager)
    result = await run(tools["mcp__d__echo"], {"text": "hi", "times": 2})
    assert not result.is_error and result.content[0].text == "hi hi"  # type: ignore[union-attr]
    weather = await run(tools["mcp__d__weather"], {"city": "Oslo"})
    assert json.loads(weather.content[0].text) == {"city": "Oslo", "celsius": 21.5}  # type: ignore[union-attr]
    picture = await run(tools["mcp__d__picture"], {})
    assert isinstance(picture.content[0], ImageContent) and picture.content[0].mime_type == "image/png"
    failed = await run(tools["mcp__d__fail"], {"reason": "bad input"})
    assert failed.is_error and failed.content[0].text  # type: ignore[union-attr]
    env = await run(tools["mcp__d__getenv"], {"name": "DOUBLE_TOKEN"})
    assert env.content[0].text == "s3cret"  # type: ignore[union-attr]


async def test_arguments_are_checked_against_the_schema_before_the_call(manager: McpManager) -> None:
    from heron.agent.tools import ToolError

    with pytest.raises(ToolError) as info:
        await run(tools_of(manager)["mcp__d__echo"], {"times": "two"})
    message = str(info.value)
    assert "'text' is a required property" in message and "times" in message


async def test_a_slow_call_times_out_and_the_server_stays_usable() -> None:
    m = McpManager([stdio("d", "stdio")], Timeouts(connect=30, call=1.0))
    try:
        m.start()
        tools = tools_of(m)
        started = time.monotonic()
        result = await run(tools["mcp__d__sleep"], {"seconds": 30})
        assert result.is_error and "did not answer" in result.content[0].text  # type: ignore[union-attr]
        assert time.monotonic() - started < 10
        again = await run(tools["mcp__d__echo"], {"text": "still here"})
        assert again.content[0].text == "still here"  # type: ignore[union-attr]
    finally:
        m.close()


async def test_a_crashing_server_is_restarted_once_then_reported() -> None:
    m = McpManager([stdio("d", "stdio")], Timeouts(connect=30, call=20))
    try:
        m.start()
        tools = tools_of(m)
        first = await run(tools["mcp__d__crash"], {})
        assert first.is_error and "it was restarted" in first.content[0].text  # type: ignore[union-attr]
        ok = await run(tools["mcp__d__echo"], {"text": "back"})
        assert ok.content[0].text == "back"  # type: ignore[union-attr]
        second = await run(tools["mcp__d__crash"], {})
        assert second.is_error and "crashed again" in second.content[0].text  # type: ignore[union-attr]
        started = time.monotonic()
        dead = await run(tools["mcp__d__echo"], {"text": "x"})
        assert dead.is_error and "is not available" in dead.content[0].text  # type: ignore[union-attr]
        assert time.monotonic() - started < 1  # a dead server answers at once
        (status,) = m.statuses()
        assert status.state == "failed" and status.restarts == 1
    finally:
        m.close()


def test_a_hanging_or_missing_server_fails_its_start_within_the_timeout(tmp_path: Path) -> None:
    m = McpManager(
        [
            stdio("hang", "hang"),
            stdio("ok", "stdio"),
            ServerConfig("gone", "stdio", "user", Path("t"), command=str(tmp_path / "no-such-command")),
        ],
        Timeouts(connect=3, call=5),
        log_dir=tmp_path / "logs",
    )
    started = time.monotonic()
    try:
        by_name = {s.name: s for s in m.start()}
        assert time.monotonic() - started < 15
        assert by_name["hang"].state == "failed" and "did not answer within 3 s" in by_name["hang"].error
        assert by_name["gone"].state == "failed" and "no-such-command" in by_name["gone"].error
        assert by_name["ok"].state == "connected"
    finally:
        m.close()


@pytest.fixture
def http_server() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, DOUBLE, "http", str(port)], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=10)


async def test_streamable_http_server(http_server: str) -> None:
    m = McpManager(
        [ServerConfig("web", "http", "user", Path("t"), url=http_server, headers={"X-Test": "1"})],
        Timeouts(connect=30, call=20),
    )
    try:
        (status,) = m.start()
        assert status.state == "connected", status.error
        result = await run(tools_of(m)["mcp__web__echo"], {"text": "over http"})
        assert result.content[0].text == "over http"  # type: ignore[union-attr]
    finally:
        m.close()


def test_an_http_server_that_is_not_there_fails_its_start() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = McpManager(
        [ServerConfig("web", "http", "user", Path("t"), url=f"http://127.0.0.1:{port}/mcp")],
        Timeouts(connect=10, call=5),
    )
    try:
        (status,) = m.start()
        assert status.state == "failed" and status.error
    finally:
        m.close()


# --- through a session: budgets, tool_search --------------------------------------------


def coding_session(project: Path, faux: FauxProvider, tools: list[object], window: int) -> CodingSession:
    model = faux.model(context_window=window, max_tokens=4096)
    return CodingSession(
        cwd=project, model=model, store=SessionStore.create(project), settings=settings_from_dict({}), extra_tools=tools
    )  # type: ignore[arg-type]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    proj.mkdir()
    return proj


async def test_a_big_result_is_spilled_like_a_builtin_tools(
    manager: McpManager, project: Path, faux: FauxProvider
) -> None:
    seen: list[Context] = []
    script = [tool_call("mcp__d__big", {"lines": 20_000}, call_id="c1"), text("done")]

    def reply(context: Context) -> object:
        seen.append(context)
        return script.pop(0)

    faux.set_fallback(reply)  # type: ignore[arg-type]
    session = coding_session(project, faux, list(tools_of(manager).values()), 128_000)
    await session.prompt("make it big")
    results = [m for m in seen[-1].messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 1
    sent = results[0].text()
    assert len(sent) < 20_000 and "Output too large for the context" in sent
    spill = Path(results[0].details["budget_spill"]["spill_path"])
    assert spill.read_text(encoding="utf-8").count("of the big output") == 20_000


async def test_tool_search_loads_definitions_on_demand(project: Path, faux: FauxProvider) -> None:
    m = McpManager([stdio("w", "many", "60")], Timeouts(connect=30, call=20))
    try:
        m.start()
        tools, search = mcp_tools(m, 32_000)  # 60 long descriptions are more than 10% of 32k tokens
        assert search is not None and [t.name for t in tools] == ["tool_search"]
        assert "mcp__w__widget_7" in search.description
        seen: list[Context] = []
        script = [
            tool_call("tool_search", {"query": "select:mcp__w__widget_7"}, call_id="s1"),
            tool_call("mcp__w__widget_7", {"query": "spin"}, call_id="c1"),
            text("done"),
        ]

        def reply(context: Context) -> object:
            seen.append(context)
            return script.pop(0)

        faux.set_fallback(reply)  # type: ignore[arg-type]
        session = coding_session(project, faux, tools, 32_000)
        from heron.coding.mcp.setup import SessionMcp

        SessionMcp(m, tools, search=search).bind(session.agent)
        await session.prompt("use widget 7")
        names = [[t.name for t in c.tools or []] for c in seen]
        assert "mcp__w__widget_7" not in names[0] and "mcp__w__widget_0" not in names[0]
        assert "mcp__w__widget_7" in names[1] and "mcp__w__widget_0" not in names[1]
        results = [msg.text() for msg in seen[-1].messages if isinstance(msg, ToolResultMessage)]
        assert "now callable" in results[0] and '"input_schema"' in results[0]
        assert results[1] == "tool 7: spin"
    finally:
        m.close()


def test_tool_search_ranks_by_name_then_description() -> None:
    class Fake:
        def __init__(self, name: str, description: str) -> None:
            self.name, self.description, self.schema = name, description, {}

    search = ToolSearch(
        [
            Fake("mcp__gh__create_issue", "Create an issue"),  # type: ignore[list-item]
            Fake("mcp__gh__list_prs", "List pull requests, issues excluded"),
        ]
    )
    assert [t.name for t in search.find("issue", 5)] == ["mcp__gh__create_issue", "mcp__gh__list_prs"]
    assert search.find("zebra", 5) == [] and search.find("   ", 5) == []
    assert [t.name for t in search.find("select:mcp__gh__list_prs,nope", 5)] == ["mcp__gh__list_prs"]


def test_project_servers_wait_for_trust(tmp_path: Path) -> None:
    cwd, home = tmp_path / "proj", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    entry = {"command": sys.executable, "args": [DOUBLE, "stdio"]}
    (cwd / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": entry}}))
    untrusted = start_session_servers(cwd, home, trusted=False, window=200_000)
    try:
        assert untrusted.tools == [] and any("not trusted" in w and "proj" in w for w in untrusted.warnings)
    finally:
        untrusted.close()
    trusted = start_session_servers(cwd, home, trusted=True, window=200_000)
    try:
        assert "mcp__proj__echo" in [t.name for t in trusted.tools]
    finally:
        trusted.close()


async def run(tool: McpTool, arguments: dict[str, object]):  # type: ignore[no-untyped-def]
    from heron.ai.abort import AbortSignal

    return await tool.execute("call", tool.parameters.model_validate(arguments), AbortSignal(), lambda _: None)


async def test_an_abort_cancels_a_running_call_at_once(manager: McpManager) -> None:
    from heron.ai.abort import AbortSignal

    tool = tools_of(manager)["mcp__d__sleep"]
    signal = AbortSignal()
    asyncio.get_running_loop().call_later(0.5, signal.abort)
    started = time.monotonic()
    result = await tool.execute("c", tool.parameters.model_validate({"seconds": 30}), signal, lambda _: None)
    assert result.is_error and "aborted" in result.content[0].text  # type: ignore[union-attr]
    assert time.monotonic() - started < 5


def test_a_server_that_exits_at_start_is_reported_with_its_last_log_line(tmp_path: Path) -> None:
    script = "import sys; sys.stderr.write('boom: TOKEN is not set\\n'); sys.exit(1)"
    config = ServerConfig("bad", "stdio", "user", Path("t"), command=sys.executable, args=("-c", script))
    for _ in range(2):  # the second start's reason must not come from the first start's log lines
        m = McpManager([config], Timeouts(connect=20, call=5), log_dir=tmp_path / "logs")
        try:
            (status,) = m.start()
        finally:
            m.close()
        assert status.state == "failed"
        assert status.error.endswith(f"(log: {tmp_path / 'logs' / 'bad.log'}: boom: TOKEN is not set)")
    assert (tmp_path / "logs" / "bad.log").read_text().count("boom") == 2
