"""Input heron cannot take as it is, through the real command against a local server: a
byte that is not UTF-8 in the command line or on stdin, a lone surrogate in an rpc
prompt; and what the user is told beside the answer: the key hint of a refused request
in json and rpc mode, the runtime's context warnings in print, json and rpc mode."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.cli.modes.run_end import answer_at
from tests.cli.test_print_json_e2e import TIMEOUT, heron_command
from tests.support.http_server import LocalServer, json_reply
from tests.support.sse import openai_reply

UNAUTHORIZED = {"error": {"message": "Invalid API key", "type": "invalid_request_error", "code": "invalid_api_key"}}
TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 4096 tokens. However, you requested "
        "9000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


@pytest.fixture
def where(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    cwd = tmp_path / "project"
    cwd.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    yield cwd, env


def heron(
    server: LocalServer, where: tuple[Path, dict[str, str]], *args: str | bytes, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    cwd, env = where
    argv: list[str | bytes] = [*heron_command(), "--base-url", server.url + "/v1", "--model", "test-model", *args]
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=TIMEOUT,
    )


def sent_user_text(server: LocalServer, index: int = -1) -> str:
    messages = server.requests[index].json()["messages"]
    content = [m for m in messages if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def session_file(where: tuple[Path, dict[str, str]]) -> Path:
    (path,) = Path(where[1]["HERON_HOME"]).glob("sessions/*/*.jsonl")
    return path


def test_a_byte_that_is_not_utf8_in_the_command_line_becomes_a_replacement_character(
    local_server: LocalServer, where: tuple[Path, dict[str, str]]
) -> None:
    local_server.queue(openai_reply("got it"), openai_reply("still fine"))
    done = heron(local_server, where, b"-p", b"caf\xff au lait")  # $'\xff' in a shell
    assert done.returncode == 0, done.stderr.decode()
    assert b"UnicodeEncodeError" not in done.stderr and done.stdout.decode().strip() == "got it"
    assert sent_user_text(local_server) == "caf\ufffd au lait"
    path = session_file(where)
    path.read_bytes().decode("utf-8")  # valid UTF-8 all through
    # and the session goes on: --continue sends the cleaned text again
    done = heron(local_server, where, "-c", "-p", "and now?")
    assert done.returncode == 0, done.stderr.decode()
    users = [m for m in local_server.requests[-1].json()["messages"] if m["role"] == "user"]
    assert "caf\ufffd au lait" in json.dumps(users, ensure_ascii=False)


def test_stdin_that_is_not_utf8_is_read_with_replacement(
    local_server: LocalServer, where: tuple[Path, dict[str, str]]
) -> None:
    local_server.queue(openai_reply("read it"))
    done = heron(local_server, where, "-p", "summarise:", "-", stdin=b"bytes \xfe\xff here\n")
    assert done.returncode == 0, done.stderr.decode()
    assert sent_user_text(local_server) == "summarise:\n\nbytes \ufffd\ufffd here"


def rpc(server: LocalServer, where: tuple[Path, dict[str, str]], *lines: dict[str, Any]) -> list[dict[str, Any]]:
    """Send the commands, close stdin, and return every output line (the runs finish first)."""
    stdin = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    done = heron(server, where, "--mode", "rpc", stdin=stdin)
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_an_rpc_prompt_with_a_lone_surrogate_is_sent_and_saved_cleaned(
    local_server: LocalServer, where: tuple[Path, dict[str, str]]
) -> None:
    local_server.queue(openai_reply("fine"))
    # json.dumps writes the lone surrogate as the escape \ud800, as a client would
    out = rpc(local_server, where, {"id": 1, "type": "prompt", "message": "half a pair: \ud800 end"})
    (end,) = [o for o in out if o["type"] == "run_end"]
    assert end["error"] is None and answer_at(out, end) == "fine"
    assert sent_user_text(local_server) == "half a pair: \ufffd end"
    assert "\ufffd" in session_file(where).read_bytes().decode("utf-8")


def test_a_refused_key_is_explained_in_rpc_run_end_and_on_json_modes_stderr(
    local_server: LocalServer, where: tuple[Path, dict[str, str]]
) -> None:
    local_server.fallback = json_reply(401, UNAUTHORIZED)
    out = rpc(local_server, where, {"id": "a", "type": "prompt", "message": "hi"})
    (end,) = [o for o in out if o["type"] == "run_end"]
    assert end["stop_reason"] == "error"
    assert "Invalid API key" in end["error"]
    assert "heron sent no key" in end["error"] and "HERON_API_KEY" in end["error"] and "--api-key" in end["error"]

    done = heron(local_server, where, "--mode", "json", "-p", "hi")
    assert done.returncode == 1
    err = done.stderr.decode()
    assert "Invalid API key" in err and "HERON_API_KEY" in err and "--api-key" in err


def test_context_warnings_in_print_json_and_rpc_mode(
    local_server: LocalServer, where: tuple[Path, dict[str, str]]
) -> None:
    # a server that refuses the request as too long, stating its window: heron learns it
    local_server.queue(json_reply(400, TOO_LONG), openai_reply("short answer"))
    done = heron(local_server, where, "-p", "hello")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "short answer"
    warnings = [line for line in done.stderr.decode().splitlines() if line.startswith("heron: warning: context:")]
    assert len(warnings) == 1 and "-token window" in warnings[0], done.stderr.decode()

    local_server.queue(json_reply(400, TOO_LONG), openai_reply("short answer"))
    done = heron(local_server, where, "--mode", "json", "-p", "hello")
    events = [json.loads(line) for line in done.stdout.splitlines()]
    (warning,) = [e for e in events if e.get("type") == "context_warning"]
    assert warning["kind"] == "window_learned" and "window" in warning["message"]

    local_server.queue(json_reply(400, TOO_LONG), openai_reply("short answer"))
    out = rpc(local_server, where, {"id": 7, "type": "prompt", "message": "hello"})
    (warning,) = [o for o in out if o.get("type") == "context_warning"]
    assert warning["kind"] == "window_learned"
