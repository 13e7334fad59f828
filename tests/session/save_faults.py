"""Running the real ``heron -p`` while its session cannot be saved.

The scripted run: the model asks for ``steps`` bash calls, one per turn (each appends a
line to ``ran.txt`` in the project, so the test can count the tools that really ran), then
answers. That is ``2 * steps + 2`` messages: the prompt, ``steps`` assistant/toolResult
pairs and the answer.

Faults, each the way a user meets it:

- a read-only sessions folder or a session file heron may not write: real permissions.
  Root ignores permission bits, so when the tests run as root heron runs under
  ``setpriv`` without the capabilities that override them (``dac_override``,
  ``dac_read_search``);
- a full disk: ``sitecustomize.py`` on ``PYTHONPATH`` wraps ``os.write`` in the heron
  process: once the session files have taken ``HERON_TEST_DISK_BYTES`` bytes, a write
  stores what still fits and the next one fails with ``ENOSPC``, as a full file system does;
- a newer session version: a session file whose header says version 99.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_reply

TIMEOUT = 120
MODEL = "test-model"
ANSWER = "All steps done."

SITECUSTOMIZE = """
import errno, os

_budget = int(os.environ["HERON_TEST_DISK_BYTES"])
_real_write = os.write


def _is_session_file(fd):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False
    return "/sessions/" in target


def _write(fd, data):
    global _budget
    if not _is_session_file(fd):
        return _real_write(fd, data)
    if _budget <= 0:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    part = bytes(data[:_budget])
    written = _real_write(fd, part)
    _budget -= written
    return written


os.write = _write
"""


def heron_command() -> list[str]:
    script = Path(sys.executable).with_name("heron")
    return [str(script)] if script.exists() else [sys.executable, "-m", "heron.cli.main"]


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    tools_ran: int
    requests: int


@dataclass
class Sandbox:
    """A project folder and a private ``HERON_HOME``, usable by an unprivileged user."""

    root: Path
    cwd: Path
    home: Path
    env: dict[str, str]
    unprivileged: list[str]  # the command prefix that makes permission bits count

    @property
    def sessions(self) -> Path:
        return self.home / "sessions"

    def session_files(self) -> list[Path]:
        return sorted(self.sessions.glob("*/*.jsonl"))

    def run(self, steps: int, *args: str, extra_env: dict[str, str] | None = None) -> Outcome:
        """Run ``heron -p`` against a server that asks for ``steps`` tool turns (counted
        from the request's last user message), then answers; count what happened."""
        server = LocalServer(responder=lambda request: _script(request, steps))
        env = dict(self.env, **(extra_env or {}))
        try:
            done = subprocess.run(
                [
                    *self.unprivileged,
                    *heron_command(),
                    "--base-url",
                    server.url + "/v1",
                    "--model",
                    MODEL,
                    *args,
                    "-p",
                    f"Run the {steps} steps.",
                ],
                cwd=self.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
        finally:
            server.close()
        ran = self.cwd / "ran.txt"
        tools = len(ran.read_text().splitlines()) if ran.exists() else 0
        if ran.exists():
            ran.unlink()
        return Outcome(done.returncode, done.stdout, done.stderr, tools, len(server.requests))

    def disk_full_env(self, budget: int) -> dict[str, str]:
        shim = self.root / "shim"
        shim.mkdir(exist_ok=True)
        (shim / "sitecustomize.py").write_text(SITECUSTOMIZE)
        path = os.environ.get("PYTHONPATH")
        return {"PYTHONPATH": str(shim) + (os.pathsep + path if path else ""), "HERON_TEST_DISK_BYTES": str(budget)}


def _script(request: Recorded, steps: int) -> Reply:
    messages = request.json().get("messages", [])
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
    done = sum(1 for m in messages[last_user:] if m.get("role") == "tool")
    if done >= steps:
        return openai_reply(ANSWER)
    n = done + 1
    return openai_reply(f"step {n}", [(f"call_{n}", "bash", {"command": f"echo {n} >> ran.txt"})])


def unprivileged_prefix() -> list[str] | None:
    """How to run a command so that file permissions apply to it; None when that is not
    possible here (root without ``setpriv``)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--"] if setpriv else None


@contextmanager
def sandbox() -> Iterator[Sandbox]:
    root = Path(tempfile.mkdtemp(prefix="heron-save-"))
    try:
        cwd = root / "project"
        home = root / "home"
        cwd.mkdir()
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
        env["HERON_HOME"] = str(home)
        yield Sandbox(root=root, cwd=cwd, home=home, env=env, unprivileged=unprivileged_prefix() or [])
    finally:
        for path in [root, *root.rglob("*")]:  # read-only folders and files made by a test
            if not path.is_symlink():
                path.chmod(0o700 if path.is_dir() else 0o600)
        shutil.rmtree(root, ignore_errors=True)


def message_lines(path: Path) -> list[dict[str, Any]]:
    """The message entries of a session file (a torn last line is not one)."""
    out = []
    for line in path.read_bytes().splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if data.get("type") == "message":
            out.append(data)
    return out


def torn_lines(path: Path) -> int:
    """Lines of a session file that are not JSON (a write cut short)."""
    count = 0
    for line in path.read_bytes().splitlines():
        try:
            json.loads(line)
        except ValueError:
            count += 1
    return count
