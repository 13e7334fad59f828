"""Lazy MCP servers (``mcp.startup: "lazy"`` or ``"lazy": true`` in the entry) through the
real entry point: no server process until the first call (the server script writes a
marker file when it starts), the model still sees the tools (from the list saved at the
last start), the call works, and a server that cannot start at first use is a tool error
that does not hang the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from heron.coding.mcp.cache import CACHE_DIR, load_tools
from heron.coding.mcp.config import load_config
from heron.coding.mcp.setup import start_session_servers
from heron.coding.settings import load_settings
from tests.coding.test_mcp_cli import Env as CliEnv
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

DOUBLE = str(Path(__file__).with_name("mcp_double.py"))


@dataclass
class Env(CliEnv):  # heron() runs the real command in cwd with env
    marker: Path
    script: Path

    def starts(self) -> int:
        return len(self.marker.read_text().splitlines()) if self.marker.exists() else 0

    def servers(self, **entries: dict[str, object]) -> None:
        (self.home / "mcp.json").write_text(json.dumps({"mcpServers": entries}))

    def entry(self, **extra: object) -> dict[str, object]:
        return {"command": "/bin/sh", "args": [str(self.script)], **extra}


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    cwd, home = tmp_path / "proj", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    environ["HERON_HOME"] = str(home)
    marker, script = tmp_path / "started", tmp_path / "server.sh"
    script.write_text(f"""#!/bin/sh
if [ -f {tmp_path}/dead ]; then echo "broken on purpose" >&2; exit 1; fi
if [ -f {tmp_path}/hang ]; then exec {sys.executable} {DOUBLE} hang; fi
echo started >> {marker}
exec {sys.executable} {DOUBLE} stdio
""")
    yield Env(cwd, home, environ, marker, script)


@pytest.fixture
def model() -> Iterator[LocalServer]:
    server = LocalServer()
    yield server
    server.close()


def ask(env: Env, model: LocalServer, *replies: bytes) -> subprocess.CompletedProcess[str]:
    model.requests.clear()
    model.queue(*replies)
    return env.heron("--base-url", model.url + "/v1", "--model", "test-model", "--no-session", "-p", "go")


def echo_call() -> bytes:
    return openai_reply("", [("call_1", "mcp__lz__echo", {"text": "hi", "times": 2})])


def tool_results(model: LocalServer) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in model.requests[-1].json()["messages"] if m["role"] == "tool"}


def test_a_lazy_server_starts_at_its_first_call(env: Env, model: LocalServer) -> None:
    (env.home / "settings.json").write_text(json.dumps({"mcp": {"startup": "lazy"}}))
    env.servers(lz=env.entry())
    # Never started with this entry: no saved tool list, so it starts with the session once.
    first = ask(env, model, openai_reply("ok"))
    assert first.returncode == 0, first.stderr
    assert env.starts() == 1
    assert list((env.home / CACHE_DIR).iterdir())
    # heron mcp list still starts and lists it.
    listed = env.heron("mcp", "list")
    assert listed.returncode == 0 and "mcp__lz__echo" in listed.stdout and env.starts() == 2
    env.marker.unlink()

    # Now lazy: the model sees the tools, no process was started.
    idle = ask(env, model, openai_reply("nothing to do"))
    assert idle.returncode == 0, idle.stderr
    tools = {t["function"]["name"]: t["function"] for t in model.requests[0].json()["tools"]}
    assert tools["mcp__lz__echo"]["parameters"]["required"] == ["text"]
    assert env.starts() == 0

    # The first call starts it and works.
    done = ask(env, model, echo_call(), openai_reply("said it"))
    assert done.returncode == 0, done.stderr
    assert tool_results(model)["call_1"] == "hi hi"
    assert env.starts() == 1


def test_a_lazy_server_that_cannot_start_at_first_use_is_a_tool_error(env: Env, model: LocalServer) -> None:
    env.servers(lz=env.entry(lazy=True))
    assert ask(env, model, openai_reply("ok")).returncode == 0  # learns the tools
    env.marker.unlink()
    (env.marker.parent / "dead").touch()
    dead = ask(env, model, echo_call(), openai_reply("it is down"))
    assert dead.returncode == 0, dead.stderr
    assert dead.stdout.strip() == "it is down"
    result = tool_results(model)["call_1"]
    assert "MCP server 'lz' could not be started at first use" in result and "broken on purpose" in result
    assert "could not be started at first use" in dead.stderr  # reported to the user too

    (env.marker.parent / "dead").unlink()
    (env.marker.parent / "hang").touch()
    env.env["HERON_MCP_CONNECT_TIMEOUT"] = "2"
    began = time.monotonic()
    hung = ask(env, model, echo_call(), openai_reply("it hangs"))
    assert hung.returncode == 0, hung.stderr
    assert "did not answer within 2 s" in tool_results(model)["call_1"]
    assert time.monotonic() - began < 60
    assert env.starts() == 0


def test_the_entry_flag_wins_over_the_setting(env: Env) -> None:
    """``"lazy": false`` starts with the session even under ``mcp.startup: "lazy"``; ``"lazy":
    true`` waits under the default "eager"."""
    env.servers(eager=env.entry(lazy=False), lz=env.entry(lazy=True))
    for startup in ("eager", "lazy"):  # the first start saves both lists
        mcp = start_session_servers(env.cwd, env.home, trusted=True, window=200_000, startup="eager")
        mcp.close()
        env.marker.unlink()
        mcp = start_session_servers(env.cwd, env.home, trusted=True, window=200_000, startup=startup)
        try:
            states = {s.name: s.state for s in mcp.statuses()}
            assert states == {"eager": "connected", "lz": "lazy"}
            assert {t.name for t in mcp.tools} >= {"mcp__eager__echo", "mcp__lz__echo"}
            assert env.starts() == 1
        finally:
            mcp.close()


def test_an_edited_entry_does_not_reuse_the_old_tool_list(env: Env) -> None:
    env.servers(lz=env.entry(lazy=True))
    start_session_servers(env.cwd, env.home, trusted=True, window=200_000).close()
    config = load_config(env.cwd, env.home, trusted=True).servers[0]
    assert load_tools(env.home / CACHE_DIR, config) is not None
    env.servers(lz=env.entry(lazy=True, env={"EXTRA": "1"}))
    edited = load_config(env.cwd, env.home, trusted=True).servers[0]
    assert load_tools(env.home / CACHE_DIR, edited) is None


def test_bad_lazy_values_are_named(env: Env) -> None:
    (env.home / "settings.json").write_text(json.dumps({"mcp": {"startup": "sometimes"}}))
    settings = load_settings(env.cwd, env.home)
    assert settings.mcp_startup == "eager"
    assert any("mcp.startup" in w and '"eager" or "lazy"' in w for w in settings.warnings)
    env.servers(bad=env.entry(lazy="yes"), good=env.entry())
    config = load_config(env.cwd, env.home, trusted=True)
    assert [s.name for s in config.servers] == ["good"]
    assert any("'bad'" in w and '"lazy" must be true or false' in w for w in config.warnings)
