"""Keys out of ``/proc/<heron>/environ`` and ``/proc/<heron>/cmdline`` (issue 24).

A bash child knows heron's pid (``$PPID``) and can read those two files; they show the
process's original memory, not ``os.environ``. The real command is started with a key in
its environment, another with ``--api-key`` and a password in a URL; while the scripted
server holds its answer, the test reads the two files as a child would, then lets the run
finish and checks that the key still reached the server and that a bash child reading
``/proc/$PPID/environ`` through base64 got nothing to decode.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from heron.cli.proc_scrub import secret_spans_in_argv, secret_spans_in_environ
from tests.coding.test_small_window import call_reply, text_reply
from tests.support.http_server import LocalServer, Recorded, Reply

ENV_KEY = "sk-env-secret-0123456789abcdef"
CLI_KEY = "sk-cli-secret-fedcba9876543210"
URL_PASSWORD = "url-pass-5555-6666"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")


def _masked(block: bytes, spans: list[tuple[int, int]]) -> bytes:
    out = bytearray(block)
    for start, end in spans:
        out[start:end] = b"x" * (end - start)
    return bytes(out)


def test_the_spans_are_the_credential_values_only() -> None:
    environ = b"HOME=/root\0OPENAI_API_KEY=sk-abc12345\0PROXY=http://u:pw123456@host:8080\0EMPTY_TOKEN=\0"
    masked = _masked(environ, secret_spans_in_environ(environ))
    assert masked == b"HOME=/root\0OPENAI_API_KEY=xxxxxxxxxxx\0PROXY=http://u:xxxxxxxx@host:8080\0EMPTY_TOKEN=\0"
    argv = b"python\0-m\0heron.cli.main\0--api-key\0sk-one-23456\0--api-key=sk-two-3456\0-p\0--api-key\0"
    assert _masked(argv, secret_spans_in_argv(argv)) == (
        b"python\0-m\0heron.cli.main\0--api-key\0xxxxxxxxxxxx\0--api-key=xxxxxxxxxxx\0-p\0--api-key\0"
    )


class _Held:
    """Answers the first request with a bash call once the test has looked at /proc; then text."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.auth: list[str] = []
        self.bodies: list[dict[str, object]] = []

    def __call__(self, request: Recorded) -> Reply:
        self.auth.append(request.headers.get("Authorization", request.headers.get("authorization", "")))
        self.bodies.append(request.json())
        if len(self.bodies) == 1:
            self.arrived.set()
            self.release.wait(60)
            command = "tr '\\0' '\\n' < /proc/$PPID/environ | base64; tr '\\0' ' ' < /proc/$PPID/cmdline | base64"
            return call_reply("call_1", "bash", {"command": command}, 100)
        return text_reply("done", 100)


def test_proc_environ_and_cmdline_of_heron_hold_no_key(tmp_path: Path) -> None:
    held = _Held()
    server = LocalServer(responder=held)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env.update(HERON_HOME=str(home), OPENAI_API_KEY=ENV_KEY, HTTPS_PROXY_URL=f"http://me:{URL_PASSWORD}@proxy")
    argv = [sys.executable, "-m", "heron.cli.main", "--base-url", f"{server.url}/v1", "--model", "test-model"]
    argv += ["--api-key", CLI_KEY, "--sandbox", "off", "-p", "look around"]  # the sandbox would hide heron's /proc
    child = subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    try:
        assert held.arrived.wait(60), "heron never sent its request"
        environ = Path(f"/proc/{child.pid}/environ").read_bytes()
        cmdline = Path(f"/proc/{child.pid}/cmdline").read_bytes()
        held.release.set()
        _out, err = child.communicate(timeout=120)
    finally:
        held.release.set()
        server.close()
        if child.poll() is None:
            child.kill()
    for secret in (ENV_KEY, CLI_KEY, URL_PASSWORD):
        assert secret.encode() not in environ + cmdline
    assert b"OPENAI_API_KEY=" in environ and b"--api-key" in cmdline  # masked in place, not removed
    assert child.returncode == 0, err.decode()
    assert held.auth[0] == f"Bearer {CLI_KEY}"  # the key still works after the block was masked
    result = json.dumps(held.bodies[-1])
    decoded = b"".join(base64.b64decode(line) for line in _base64_lines(result))
    for secret in (ENV_KEY, CLI_KEY, URL_PASSWORD):
        assert secret.encode() not in decoded
    assert b"OPENAI_API_KEY=" in decoded  # the child did read heron's environment


def _base64_lines(request_body: str) -> list[str]:
    """The bash result's base64 lines, out of the follow-up request the server received."""
    body = json.loads(request_body)
    results = [m for m in body["messages"] if m.get("role") == "tool"]
    text = results[-1]["content"] if isinstance(results[-1]["content"], str) else results[-1]["content"][0]["text"]
    return [line for line in text.splitlines() if line and not line.startswith("[")]


class _Survey(_Held):
    """Asks, once, for every process's environment and command line a command can see."""

    def __call__(self, request: Recorded) -> Reply:
        self.bodies.append(request.json())
        if len(self.bodies) == 1:
            command = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; tr '\\0' ' ' < $p/environ; done | base64"
            return call_reply("call_1", "bash", {"command": command}, 100)
        return text_reply("done", 100)


def test_in_the_sandbox_no_process_of_heron_is_there_to_read(tmp_path: Path) -> None:
    survey = _Survey()
    server = LocalServer(responder=survey)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env.update(HERON_HOME=str(home), OPENAI_API_KEY=ENV_KEY)
    argv = [sys.executable, "-m", "heron.cli.main", "--base-url", f"{server.url}/v1", "--model", "test-model"]
    try:
        done = subprocess.run(
            [*argv, "--api-key", CLI_KEY, "-p", "look around"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    finally:
        server.close()
    assert done.returncode == 0, done.stderr.decode()
    seen = b"".join(base64.b64decode(line) for line in _base64_lines(json.dumps(survey.bodies[-1])))
    assert b"bwrap" in seen  # the survey ran, in the sandbox
    assert b"heron.cli.main" not in seen
    for secret in (ENV_KEY, CLI_KEY):
        assert secret.encode() not in seen
