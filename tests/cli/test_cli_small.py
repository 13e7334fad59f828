"""Small things a new user meets first on the command line: a mistyped flag gets a
suggestion, output cut short by ``head`` ends quietly, bare ``heron sessions`` lists,
``heron mcp add NAME COMMAND -m mod`` needs no ``--``. The real command, a new process each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from heron.cli.mcp_cmd import add_argv
from heron.coding.tool_names import DEFAULT_TOOLS, tools_help
from tests.cli.test_interactive import answer
from tests.support.http_server import LocalServer


def heron(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERON_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "heron.cli.main", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=60
    )


def test_a_mistyped_flag_gets_the_closest_ones(tmp_path: Path) -> None:
    done = heron("--modle", "x", "-p", "hi", home=tmp_path, cwd=tmp_path)
    assert done.returncode == 2
    assert "unrecognized arguments: --modle" in done.stderr
    assert "did you mean --mode or --model?" in done.stderr
    assert "did you mean" not in heron("--zzzzqqq", home=tmp_path, cwd=tmp_path).stderr  # nothing close


def test_output_cut_short_by_its_reader_ends_quietly(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERON_HOME"] = str(tmp_path)
    child = subprocess.Popen(
        [sys.executable, "-m", "heron.cli.main", "--setup-help"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.read(10)  # what `| head -c 10` reads, then closes
    child.stdout.close()
    errors = child.stderr.read().decode()
    assert child.wait(timeout=60) == 0
    assert "Traceback" not in errors and "BrokenPipeError" not in errors


def test_bare_sessions_lists(tmp_path: Path) -> None:
    done = heron("sessions", home=tmp_path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "no sessions"


def test_mcp_add_takes_the_commands_options_without_a_double_dash(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    done = heron("mcp", "add", "fs", "python3", "-m", "mod", home=home, cwd=project)
    assert done.returncode == 0, done.stderr
    server = json.loads((home / "mcp.json").read_text())["mcpServers"]["fs"]
    assert server == {"command": "python3", "args": ["-m", "mod"]}
    done = heron("mcp", "add", "web", "npx", "-y", "pkg", "-e", "K=V", "--scope", "project", home=home, cwd=project)
    assert done.returncode == 0, done.stderr
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["web"]
    assert server["args"] == ["-y", "pkg"] and server["env"] == {"K": "V"}


def test_add_argv_puts_the_double_dash_where_it_belongs() -> None:
    assert add_argv(["fs", "python3", "-m", "mod"]) == ["fs", "python3", "--", "-m", "mod"]
    assert add_argv(["fs", "python3", "--", "-m"]) == ["fs", "python3", "--", "-m"]
    assert add_argv(["-s", "project", "fs", "cmd", "--lazy", "-e", "A=1", "-x", "y"]) == [
        "-s", "project", "--lazy", "-e", "A=1", "fs", "cmd", "--", "-x", "y"
    ]  # fmt: skip
    assert add_argv(["api", "https://h/mcp", "--transport", "http"]) == ["--transport", "http", "api", "https://h/mcp"]


def test_the_default_tools_are_stated_once_and_are_what_requests_carry(
    tmp_path: Path, local_server: LocalServer
) -> None:
    stated = tools_help()
    docs = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    assert stated in docs
    shown = heron("--help", home=tmp_path, cwd=tmp_path).stdout
    assert stated in " ".join(shown.split()).replace(", ", ",")
    local_server.queue(answer("ok"))
    done = heron(
        "--base-url", f"{local_server.url}/v1", "--model", "test-model", "-p", "hi", home=tmp_path, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    sent = [tool["function"]["name"] for tool in local_server.requests[-1].json()["tools"]]
    assert sent == list(DEFAULT_TOOLS)
