"""The interactive screen never shows a key: an answer that repeats the key in use is
printed redacted, as print and json modes print it (issue 24)."""

from __future__ import annotations

import io
import secrets
import sys
from pathlib import Path

import pytest

from tests.support.http_server import LocalServer


def test_a_key_the_model_repeats_is_redacted_on_screen(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    from tests.cli.test_interactive import TIMEOUT, answer, environment, exit_with_ctrl_d

    home, cwd = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    cwd.mkdir()
    key = "sk-screen-" + secrets.token_hex(16)
    server = LocalServer()
    screen = io.StringIO()
    try:
        server.queue(answer(f"Your key is {key} - keep it safe."))
        argv = ["-m", "heron.cli.main", "--base-url", f"{server.url}/v1", "--model", "test-model", "--api-key", key]
        child = pexpect.spawn(
            sys.executable,
            argv,
            cwd=str(cwd),
            env=environment(home),
            encoding="utf-8",
            timeout=TIMEOUT,
            dimensions=(40, 120),
        )
        child.logfile_read = screen
        child.expect("Ctrl\\+D exits")
        child.send("what is my key?\r")
        child.expect("keep it safe")
        exit_with_ctrl_d(child)
    finally:
        server.close()
    assert "[redacted]" in screen.getvalue()
    assert key not in screen.getvalue()
