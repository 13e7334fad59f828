"""Resuming, in a terminal, a session whose last prompt was never answered (issue 31).

``heron -p`` is killed while the local server holds its request; ``heron --continue`` in a
pseudo-terminal then shows the prompt and offers to send it again (Enter) or edit it (e).
Same harness as tests/cli/test_interactive.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_interactive import answer, dirs, environment, exit_with_ctrl_d, footer, spawn, user_texts
from tests.support.http_server import LocalServer, Reply

pexpect = pytest.importorskip("pexpect")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

__all__ = ["dirs", "spawn"]

PROMPT = "Explain how herons hunt fish in shallow water."


def killed_before_the_answer(local_server: LocalServer, dirs: tuple[Path, Path]) -> None:
    """``heron -p PROMPT`` against a server that holds the request; SIGKILL once it arrived."""
    home, project = dirs
    local_server.queue(Reply(body=b"", delay=120.0))
    argv = [sys.executable, "-m", "heron.cli.main", "--base-url", f"{local_server.url}/v1", "--model", "test-model"]
    process = subprocess.Popen(
        [*argv, "-p", PROMPT],
        cwd=project,
        env=environment(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not local_server.requests:
        assert process.poll() is None and time.monotonic() < deadline, "the request never arrived"
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    (session,) = (home / "sessions").glob("*/*.jsonl")
    assert PROMPT in session.read_text()


def test_enter_sends_the_unanswered_prompt_again(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    killed_before_the_answer(local_server, dirs)
    local_server.queue(answer("Herons stand still and strike fast."))
    child = spawn("--continue")
    child.expect("never answered")
    child.expect("Explain how herons hunt fish")
    child.expect("Enter sends it again")
    child.send("\r")
    child.expect("Herons stand still and strike fast.")
    footer(child)
    assert user_texts(local_server.requests[-1]) == [PROMPT]  # once
    assert local_server.requests[-1].body == local_server.requests[0].body  # what the killed process sent
    exit_with_ctrl_d(child)


def test_e_puts_the_prompt_in_the_input_line_to_edit(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    killed_before_the_answer(local_server, dirs)
    local_server.queue(answer("In short: patience."))
    child = spawn("--continue")
    child.expect("Enter sends it again")
    child.send("e\r")
    child.expect("edit it and press Enter")
    child.expect("shallow water")  # back in the input line
    child.send(" In one line.\r")
    child.expect("In short: patience.")
    footer(child)
    assert user_texts(local_server.requests[-1]) == [PROMPT + " In one line."]  # replaced, not added
    exit_with_ctrl_d(child)


def test_n_leaves_it_and_the_next_prompt_tells_the_model(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    from heron.coding.unanswered import NOTE_TEXT

    killed_before_the_answer(local_server, dirs)
    local_server.queue(answer("Something else, then."))
    child = spawn("--continue")
    child.expect("Enter sends it again")
    child.send("n\r")
    child.expect("left as it is")
    child.send("Tell me about egrets instead.\r")
    child.expect("Something else, then.")
    footer(child)
    assert user_texts(local_server.requests[-1]) == [PROMPT, NOTE_TEXT, "Tell me about egrets instead."]
    exit_with_ctrl_d(child)
