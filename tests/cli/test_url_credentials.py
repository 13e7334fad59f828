"""A password written into a URL (a base URL, a proxy) is a key like any other (issue 24):
never printed, never stored, whatever message carries the URL."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from heron.coding.secrets import SecretPolicy, known_secret_values, url_passwords

PASSWORD = "url-pass-0123456789"


def test_url_passwords_are_found_in_text() -> None:
    text = f"http://me:{PASSWORD}@proxy:3128 and https://host/path?x=1 and ftp://anon@host"
    assert url_passwords(text) == {PASSWORD}
    assert url_passwords(None) == set() and url_passwords("no url here: a:b@c") == set()


def test_known_values_take_url_passwords_from_the_environment_and_models_json(tmp_path: Path) -> None:
    (tmp_path / "models.json").write_text(
        json.dumps({"providers": {"p": {"baseUrl": "http://u:models-pass-999@h/v1"}}})
    )
    env = {"HTTPS_PROXY": f"http://me:{PASSWORD}@proxy:3128", "HOME": "/root"}
    values = known_secret_values(SecretPolicy.for_heron(tmp_path, [], []), tmp_path, env)
    assert {PASSWORD, "models-pass-999"} <= values


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_base_url_password_reaches_neither_stderr_nor_the_session(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    (home / "settings.json").write_text(json.dumps({"retry": {"maxRetries": 1, "baseDelayMs": 10}}))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    url = f"http://me:{PASSWORD}@127.0.0.1:{_closed_port()}/v1"
    done = subprocess.run(
        [sys.executable, "-m", "heron.cli.main", "--base-url", url, "--model", "m", "-p", "hello"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "127.0.0.1" in done.stderr and "[redacted]" in done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    stored = [p for p in home.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]
    assert stored == []
