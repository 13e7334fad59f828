"""No key in any file, stream or log heron writes, through the real ``heron`` command.

The key heron is started with (``HERON_API_KEY`` for a ``--base-url`` server) is put
everywhere a careless harness would let it leak: a project file the model ``cat``s and
reads (large enough to be spilled to disk), the user's prompt, the model's own text, a
server error body that echoes it, an extension that logs it at debug level. Then the
whole ``HERON_HOME`` (sessions, spill files), stdout, stderr and an HTML export are
searched for it: zero hits. A ``--continue`` run must send the same history bytes the
live process sent.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from heron.cli.tui.export import write_export
from heron.session.store import SessionStore
from tests.cli.test_print_json_e2e import TIMEOUT, Project, Result, heron_command, openai_args, project
from tests.support.http_server import LocalServer, json_reply
from tests.support.sse import openai_reply

__all__ = ["project"]  # the fixture, imported for the tests below


@pytest.fixture
def key(project: Project) -> str:
    value = "sk-e2e-" + secrets.token_hex(16)
    project.env["HERON_API_KEY"] = value
    project.env["HERON_LOG"] = "debug"
    return value


def hits(root: Path, key: str) -> list[Path]:
    """Every file under ``root`` holding ``key`` (raw or JSON-escaped is the same here).

    The checkpoint repository is left out on purpose: it keeps the project's own files
    byte for byte (``secrets.txt`` included, as git objects) so that a rewind restores
    them; it is a copy of the project, not something heron learned (docs/permissions.md)."""
    checkpoints = root / "checkpoints"
    return [
        p for p in root.rglob("*") if p.is_file() and checkpoints not in p.parents and key.encode() in p.read_bytes()
    ]


def assert_nowhere(project: Project, result: Result, key: str) -> None:
    assert key not in result.out
    assert key not in result.err
    assert hits(project.home, key) == []
    assert hits(project.cwd, key) == [project.cwd / "secrets.txt"]  # only where the user put it


def write_logging_extension(project: Project) -> None:
    """A user extension that logs the key (and a traceback quoting it) at debug level."""
    folder = project.home / "extensions"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "chatty.py").write_text(
        "import logging, os\n"
        "log = logging.getLogger('heron.ext.chatty')\n"
        "def register(api):\n"
        "    key = os.environ['HERON_API_KEY']\n"
        "    log.debug('the key is %s', key)\n"
        "    log.warning('warning about %s', key)\n"
        "    try:\n"
        "        raise RuntimeError('failed with ' + key)\n"
        "    except RuntimeError:\n"
        "        log.debug('a traceback', exc_info=True)\n"
    )


def test_print_mode_keeps_the_key_out_of_files_streams_logs_and_exports(
    project: Project, local_server: LocalServer, key: str, tmp_path: Path
) -> None:
    # 3000 lines with the key in each: more than a result may hold, so it is spilled
    (project.cwd / "secrets.txt").write_text("".join(f"line {i} token={key} padding padding\n" for i in range(3000)))
    write_logging_extension(project)
    project.write_settings({"toolLimits": {"turnChars": 5000}})  # the read result is spilled too (turn budget)
    local_server.queue(
        openai_reply(f"I can see {key} in the prompt.", [("c1", "bash", {"command": "cat secrets.txt"})]),
        openai_reply("", [("c2", "read", {"path": "secrets.txt"})]),
        openai_reply(f"done; the key was {key}"),
    )
    result = project.run(*openai_args(local_server), "-p", f"the key is {key}, look at secrets.txt")
    assert result.code == 0, result.err
    assert result.out == "done; the key was [redacted]\n"
    # the extension's log lines reached stderr, redacted
    assert "the key is [redacted]" in result.err and "failed with [redacted]" in result.err
    assert_nowhere(project, result, key)
    # heron still authenticated with the key; the model was never sent it
    assert all(r.headers.get("authorization") == f"Bearer {key}" for r in local_server.requests)
    assert all(key.encode() not in r.body for r in local_server.requests)
    spills = [p for p in (project.home / "tool-output").rglob("*") if p.is_file()]
    assert {"bash-c1.log", "c2.txt"} <= {p.name for p in spills}, spills  # both outputs were spilled
    assert all(b"token=[redacted] padding" in p.read_bytes() for p in spills)
    session = project.session_files()[0]
    assert b"[redacted]" in session.read_bytes()
    # the HTML export derives from the session file
    with SessionStore.open(session, read_only=True) as store:
        exported = write_export(store, tmp_path / "export.html")
    assert key not in exported.read_text() and "[redacted]" in exported.read_text()

    # a resumed process sends the history exactly as the live one did
    live = local_server.requests[-1].json()["messages"]
    local_server.queue(openai_reply("again"))
    again = project.run(*openai_args(local_server), "--continue", "-p", "once more")
    assert again.code == 0, again.err
    resumed = local_server.requests[-1].json()["messages"]
    assert resumed[1 : len(live)] == live[1:]  # the system prompt may name another date
    assert resumed[len(live) :] == [
        {"role": "assistant", "content": "done; the key was [redacted]"},
        {"role": "user", "content": "once more"},
    ]
    assert_nowhere(project, again, key)


def test_json_mode_error_body_echoing_the_key(project: Project, local_server: LocalServer, key: str) -> None:
    (project.cwd / "secrets.txt").write_text(key)
    local_server.fallback = json_reply(
        401, {"error": {"message": f"Incorrect API key provided: {key}", "type": "invalid_request_error"}}
    )
    result = project.run(*openai_args(local_server), "--mode", "json", "-p", "hello")
    assert result.code == 1
    assert "Incorrect API key provided: [redacted]" in result.err
    assert any("[redacted]" in line for line in result.out.splitlines())
    assert_nowhere(project, result, key)
    error = [line for line in project.session_lines() if line["type"] == "message"][-1]["message"]
    assert error["errorMessage"].endswith("Incorrect API key provided: [redacted]")


def test_rpc_mode_prompt_and_error_keep_the_key_out(project: Project, local_server: LocalServer, key: str) -> None:
    (project.cwd / "secrets.txt").write_text(key)
    local_server.queue(openai_reply(f"echo {key}"))
    local_server.fallback = json_reply(401, {"error": {"message": f"bad key {key}"}})
    commands = [{"type": "prompt", "message": f"first {key}"}]
    done = subprocess.run(
        [*heron_command(), *openai_args(local_server), "--mode", "rpc"],
        cwd=project.cwd,
        env=project.env,
        input="".join(json.dumps(c) + "\n" for c in commands),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    result = Result(done.returncode, done.stdout, done.stderr)
    assert "echo [redacted]" in result.out and "first [redacted]" in result.out
    assert_nowhere(project, result, key)
    # and a second process whose only request fails with the key in the body
    commands = [{"type": "prompt", "message": "second"}]
    done = subprocess.run(
        [*heron_command(), *openai_args(local_server), "--mode", "rpc", "--continue"],
        cwd=project.cwd,
        env=project.env,
        input="".join(json.dumps(c) + "\n" for c in commands),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    result = Result(done.returncode, done.stdout, done.stderr)
    assert "bad key [redacted]" in result.out
    assert_nowhere(project, result, key)


def test_a_bad_heron_log_level_is_a_warning(project: Project, local_server: LocalServer, key: str) -> None:
    project.env["HERON_LOG"] = "chatty"
    local_server.queue(openai_reply("fine"))
    result = project.run(*openai_args(local_server), "-p", "hello")
    assert result.code == 0, result.err
    assert "HERON_LOG=chatty: not a log level" in result.err


def test_interactive_history_and_session_hold_no_key(tmp_path: Path) -> None:
    """The input line's history file (``$HERON_HOME/history``) is written redacted too."""
    pexpect = pytest.importorskip("pexpect")
    from tests.cli.test_interactive import TIMEOUT as TUI_TIMEOUT
    from tests.cli.test_interactive import answer, environment, exit_with_ctrl_d

    home, cwd = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    cwd.mkdir()
    key = "sk-tui-" + secrets.token_hex(16)
    server = LocalServer()
    try:
        server.queue(answer("Noted."))
        argv = ["-m", "heron.cli.main", "--base-url", f"{server.url}/v1", "--model", "test-model", "--api-key", key]
        child = pexpect.spawn(
            sys.executable,
            argv,
            cwd=str(cwd),
            env=environment(home),
            encoding="utf-8",
            timeout=TUI_TIMEOUT,
            dimensions=(40, 100),
        )
        child.expect("Ctrl\\+D exits")
        child.send(f"remember {key}\r")
        child.expect("Noted.")
        exit_with_ctrl_d(child)
        assert "remember [redacted]" in (home / "history").read_text()
        assert hits(home, key) == []
        assert server.requests and all(key.encode() not in r.body for r in server.requests)
        assert server.requests[0].headers.get("authorization") == f"Bearer {key}"
    finally:
        server.close()
