"""MCP the way users run it: config files, ``heron mcp list|get|add|remove``, and ``heron -p``
calling an MCP tool against a local OpenAI-format server (real subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from heron.coding.mcp.config import load_config
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

DOUBLE = str(Path(__file__).with_name("mcp_double.py"))
TIMEOUT = 120


@dataclass
class Env:
    cwd: Path
    home: Path
    env: dict[str, str]

    def heron(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "heron.cli.main", *args],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    cwd, home = tmp_path / "proj", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    environ["HERON_HOME"] = str(home)
    yield Env(cwd, home, environ)


# --- config -------------------------------------------------------------------------------


def test_config_formats_expansion_and_precedence(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TEST_TOKEN", "tok")
    (env.home / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "shared": {"command": "user-cmd"},
                    "api": {
                        "type": "http",
                        "url": "https://example.com/mcp",
                        "headers": {"Authorization": "Bearer ${MCP_TEST_TOKEN}"},
                    },
                }
            }
        )
    )
    (env.cwd / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "shared": {"command": "project-cmd"},
                    "local": {
                        "command": "srv",
                        "args": ["--x", "${MISSING:-fallback}"],
                        "env": {"A": "${MCP_TEST_TOKEN}"},
                    },
                }
            }
        )
    )
    config = load_config(env.cwd, env.home, trusted=True)
    by_name = {s.name: s for s in config.servers}
    assert by_name["shared"].command == "user-cmd" and by_name["shared"].scope == "user"
    assert by_name["api"].headers == {"Authorization": "Bearer tok"}
    assert by_name["local"].args == ("--x", "fallback") and by_name["local"].env == {"A": "tok"}
    assert config.warnings == []
    untrusted = load_config(env.cwd, env.home, trusted=False)
    assert {s.name for s in untrusted.servers} == {"shared", "api"} and untrusted.skipped_untrusted == ["local"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not valid JSON"),
        ("[1]", "must hold a JSON object"),
        ('{"mcpServers": []}', '"mcpServers" must be an object'),
    ],
)
def test_a_broken_file_is_a_warning(env: Env, content: str, expected: str) -> None:
    (env.cwd / ".mcp.json").write_text(content)
    (env.home / "mcp.json").write_text(json.dumps({"mcpServers": {"ok": {"command": "x"}}}))
    config = load_config(env.cwd, env.home, trusted=True)
    assert [s.name for s in config.servers] == ["ok"]
    assert len(config.warnings) == 1 and expected in config.warnings[0] and ".mcp.json" in config.warnings[0]


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"args": ["x"]}, 'needs a "command"'),
        ({"type": "http"}, 'needs a "url"'),
        ({"type": "http", "url": "ftp://x"}, "http(s) URL"),
        ({"type": "sse", "url": "http://x"}, '"sse" transport is not supported'),
        ({"type": "ws"}, 'unknown "type"'),
        ({"command": "x", "args": "a b"}, '"args" must be a list'),
        ({"command": "x", "env": {"A": 1}}, '"env" must be an object of strings'),
        ("npx server", "must be an object"),
    ],
)
def test_a_bad_entry_is_skipped_with_a_warning_naming_it(env: Env, entry: object, expected: str) -> None:
    (env.home / "mcp.json").write_text(json.dumps({"mcpServers": {"bad": entry, "good": {"command": "x"}}}))
    config = load_config(env.cwd, env.home, trusted=True)
    assert [s.name for s in config.servers] == ["good"]
    assert len(config.warnings) == 1 and "'bad'" in config.warnings[0] and expected in config.warnings[0]


def test_a_bad_server_name_is_skipped(env: Env) -> None:
    (env.home / "mcp.json").write_text(json.dumps({"mcpServers": {"my server": {"command": "x"}}}))
    config = load_config(env.cwd, env.home, trusted=True)
    assert config.servers == [] and "letters, digits" in config.warnings[0]


# --- heron mcp ----------------------------------------------------------------------------


def test_add_list_get_remove(env: Env) -> None:
    added = env.heron("mcp", "add", "dbl", sys.executable, "--", DOUBLE, "stdio")
    assert added.returncode == 0, added.stderr
    saved = json.loads((env.home / "mcp.json").read_text())
    assert saved == {"mcpServers": {"dbl": {"command": sys.executable, "args": [DOUBLE, "stdio"]}}}
    http = env.heron(
        "mcp", "add", "web", "http://127.0.0.1:9/mcp", "-H", "Authorization: Bearer x", "--scope", "project"
    )
    assert http.returncode == 0, http.stderr
    assert json.loads((env.cwd / ".mcp.json").read_text())["mcpServers"]["web"] == {
        "type": "http",
        "url": "http://127.0.0.1:9/mcp",
        "headers": {"Authorization": "Bearer x"},
    }

    listing = env.heron("mcp", "list")
    assert listing.returncode == 0, listing.stderr
    assert "dbl (user, stdio)" in listing.stdout and "status: connected" in listing.stdout
    assert "mcp__dbl__echo: Echo the text back" in listing.stdout
    assert "web (project, http)" in listing.stdout and "not trusted" in listing.stdout

    got = json.loads(env.heron("mcp", "get", "dbl", "--json").stdout)
    assert got["state"] == "connected"
    echo = next(t for t in got["tools"] if t["name"] == "echo")
    assert echo["input_schema"]["required"] == ["text"]
    trusted = json.loads(env.heron("mcp", "list", "--json", "--trust").stdout)
    web = next(row for row in trusted if row["name"] == "web")
    assert web["state"] == "failed" and web["error"]  # nothing listens on port 9

    missing = env.heron("mcp", "get", "nope")
    assert missing.returncode == 1 and "no MCP server named 'nope'" in missing.stderr
    assert env.heron("mcp", "remove", "dbl").returncode == 0
    assert json.loads((env.home / "mcp.json").read_text()) == {"mcpServers": {}}
    again = env.heron("mcp", "remove", "dbl")
    assert again.returncode == 1 and "--scope project" in again.stderr


def test_add_takes_options_after_the_command_as_documented(env: Env) -> None:
    # docs/mcp.md: heron mcp add NAME COMMAND [-e K=V]... [-- ARGS...]
    done = env.heron("mcp", "add", "dbl", sys.executable, "-e", "FOO=bar", "--", DOUBLE, "-x", "stdio")
    assert done.returncode == 0, done.stderr
    assert env.heron("mcp", "add", "first", "-e", "A=b", "--", "cmd", "one").returncode == 0
    assert env.heron("mcp", "add", "solo", "cmd", "--lazy").returncode == 0
    servers = json.loads((env.home / "mcp.json").read_text())["mcpServers"]
    assert servers["dbl"] == {"command": sys.executable, "args": [DOUBLE, "-x", "stdio"], "env": {"FOO": "bar"}}
    assert servers["first"] == {"command": "cmd", "args": ["one"], "env": {"A": "b"}}
    assert servers["solo"] == {"command": "cmd", "args": [], "lazy": True}


def test_add_writes_the_lazy_flag_only_when_given(env: Env) -> None:
    assert env.heron("mcp", "add", "slow", "cmd", "--lazy").returncode == 0
    assert env.heron("mcp", "add", "eager", "cmd", "--no-lazy").returncode == 0
    assert env.heron("mcp", "add", "plain", "cmd").returncode == 0
    servers = json.loads((env.home / "mcp.json").read_text())["mcpServers"]
    assert servers["slow"]["lazy"] is True and servers["eager"]["lazy"] is False
    assert "lazy" not in servers["plain"]
    assert [s.lazy for s in load_config(env.cwd, env.home, trusted=True).servers if s.name == "slow"] == [True]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["bad name", "cmd"], "letters, digits"),
        (["x", "cmd", "-e", "NOEQUALS"], "KEY=VALUE"),
        (["x", "http://h/mcp", "-H", "nocolon"], "'Name: value'"),
        (["x", "cmd", "-H", "A: b"], "--header is for http servers"),
    ],
)
def test_add_refuses_bad_input_and_writes_nothing(env: Env, args: list[str], expected: str) -> None:
    done = env.heron("mcp", "add", *args)
    assert done.returncode == 2 and expected in done.stderr
    assert not (env.home / "mcp.json").exists()


def test_a_broken_config_file_is_an_error_for_add(env: Env) -> None:
    (env.home / "mcp.json").write_text("{oops")
    done = env.heron("mcp", "add", "x", "cmd")
    assert done.returncode == 1 and "not valid JSON" in done.stderr
    assert (env.home / "mcp.json").read_text() == "{oops"  # nothing lost


# --- heron -p with an MCP tool ------------------------------------------------------------


def test_print_mode_calls_an_mcp_tool(env: Env) -> None:
    (env.cwd / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"dbl": {"command": sys.executable, "args": [DOUBLE, "stdio"]}}})
    )
    server = LocalServer()
    try:
        server.queue(
            openai_reply("", [("call_1", "mcp__dbl__echo", {"text": "from mcp", "times": 2})]),
            openai_reply("The tool said: from mcp from mcp"),
        )
        args = ["--base-url", server.url + "/v1", "--model", "test-model", "--no-session", "-p", "use the echo tool"]
        untrusted = env.heron(*args)
        assert "project MCP servers not started (dbl)" in untrusted.stderr
        first_tools = {t["function"]["name"] for t in server.requests[0].json()["tools"]}
        assert not any(name.startswith("mcp__") for name in first_tools)

        server.requests.clear()
        server.queue(
            openai_reply("", [("call_1", "mcp__dbl__echo", {"text": "from mcp", "times": 2})]),
            openai_reply("The tool said: from mcp from mcp"),
        )
        done = env.heron("--trust", *args)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "The tool said: from mcp from mcp"
        tools = {t["function"]["name"]: t["function"] for t in server.requests[0].json()["tools"]}
        assert tools["mcp__dbl__echo"]["parameters"]["required"] == ["text"]
        results = [m for m in server.requests[1].json()["messages"] if m["role"] == "tool"]
        assert results[0]["content"] == "from mcp from mcp"
    finally:
        server.close()


def test_bad_timeout_variables_are_named_and_the_defaults_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    from heron.coding.mcp.setup import timeouts_from_env

    monkeypatch.setenv("HERON_MCP_CONNECT_TIMEOUT", "soon")
    monkeypatch.setenv("HERON_MCP_CALL_TIMEOUT", "12.5")
    warnings: list[str] = []
    timeouts = timeouts_from_env(warnings)
    assert (timeouts.connect, timeouts.call) == (30.0, 12.5)
    assert warnings == ["HERON_MCP_CONNECT_TIMEOUT='soon' is not a positive number of seconds; using 30"]


def test_print_mode_does_not_hang_on_a_dead_server(env: Env) -> None:
    (env.home / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "stuck": {"command": sys.executable, "args": [DOUBLE, "hang"]},
                    "gone": {"command": "/nonexistent/mcp-server"},
                }
            }
        )
    )
    env.env["HERON_MCP_CONNECT_TIMEOUT"] = "2"
    server = LocalServer()
    try:
        server.queue(openai_reply("No MCP tools today."))
        done = env.heron("--base-url", server.url + "/v1", "--model", "test-model", "--no-session", "-p", "hi")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "No MCP tools today."
        assert "MCP server 'stuck' is not available: did not answer within 2 s" in done.stderr
        assert "MCP server 'gone' is not available: command not found" in done.stderr
    finally:
        server.close()


def test_permission_rules_and_remembered_trust_apply_to_mcp_tools(env: Env) -> None:
    (env.cwd / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"dbl": {"command": sys.executable, "args": [DOUBLE, "stdio"]}}})
    )
    (env.home / "settings.json").write_text(json.dumps({"permissions": {"deny": ["mcp__dbl__getenv"]}}))
    server = LocalServer()
    try:
        calls = [("c1", "mcp__dbl__echo", {"text": "allowed"}), ("c2", "mcp__dbl__getenv", {"name": "HOME"})]
        server.queue(openai_reply("", calls), openai_reply("ok"))
        args = ["--base-url", server.url + "/v1", "--model", "test-model", "--no-session", "-p", "go"]
        done = env.heron("--trust", *args)
        assert done.returncode == 0, done.stderr
        results = {
            m["tool_call_id"]: m["content"] for m in server.requests[1].json()["messages"] if m["role"] == "tool"
        }
        assert results["c1"] == "allowed"
        assert results["c2"].startswith("Permission denied: the mcp__dbl__getenv tool matches the deny rule")
        # --trust was remembered: the next run starts the project's servers without it
        server.requests.clear()
        server.queue(openai_reply("no tools needed"))
        again = env.heron(*args)
        assert again.returncode == 0 and "not trusted" not in again.stderr
        assert "mcp__dbl__echo" in {t["function"]["name"] for t in server.requests[0].json()["tools"]}
    finally:
        server.close()
