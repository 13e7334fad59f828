"""A password written into a URL (a base URL, a proxy) is a key like any other (issue 24):
never printed, never stored, whatever message carries the URL."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from heron.coding.secrets import SecretPolicy, known_secret_values, url_passwords
from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.sse import openai_reply

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
    assert "127.0.0.1" in done.stderr  # the server named without its credentials
    assert PASSWORD not in done.stdout + done.stderr
    stored = [p for p in home.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]
    assert stored == []


# --- issue 37: no credential in any file, --continue authenticates, every file private ---------

USER = "me"


def _basic(password: str) -> str:
    return "Basic " + base64.b64encode(f"{USER}:{password}".encode()).decode()


def _window_server() -> LocalServer:
    """A server that answers the window probe (so heron caches its answer) and chats only
    with the right Basic credentials."""

    def respond(request: Recorded) -> Reply:
        if request.path == "/v1/models":
            return json_reply(200, {"data": [{"id": "m", "meta": {"n_ctx_train": 32768}}]})
        if request.path.endswith("/chat/completions"):
            if request.headers.get("authorization") != _basic(PASSWORD):
                return json_reply(401, {"error": {"message": "bad credentials"}})
            return openai_reply("answered")
        return json_reply(404, {"error": {"message": "Not Found"}})

    return LocalServer(respond, answers_probes=True)


def _place(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    return home, project, env


def _heron(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "heron.cli.main", *args],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _chats(server: LocalServer) -> list[Recorded]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def _assert_private(home: Path) -> None:
    """Folders 0700, files readable by their owner only, the home itself included."""
    wide = []
    for path in [home, *home.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode & 0o777
        if (path.is_dir() and mode != 0o700) or (path.is_file() and mode & 0o177):
            wide.append(f"{oct(mode)} {path.relative_to(home)}")
    assert wide == [], "\n".join(wide)


def _assert_no_credential(home: Path) -> None:
    stored = [p for p in home.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]
    assert [p for p in stored if p != home / "models.json"] == []  # models.json: the user's own
    redacted = [p for p in home.rglob("*.json*") if p.is_file() and b"[redacted]@" in p.read_bytes()]
    assert redacted == []


def test_a_url_password_is_in_no_file_and_continue_asks_for_it_again(tmp_path: Path) -> None:
    home, project, env = _place(tmp_path)
    server = _window_server()
    try:
        url = f"http://{USER}:{PASSWORD}@127.0.0.1:{server.port}/v1"
        first = _heron(project, env, "--base-url", url, "--model", "m", "--sandbox", "off", "-p", "hello")
        assert first.returncode == 0, first.stderr
        assert first.stdout.strip() == "answered"
        assert [r.headers["authorization"] for r in _chats(server)] == [_basic(PASSWORD)]
        cache = json.loads((home / "cache" / "server-windows.json").read_text())
        assert list(cache) == [f"http://127.0.0.1:{server.port}/v1 m"]  # keyed without credentials
        _assert_no_credential(home)
        _assert_private(home)

        # resumed without the flag: the password is nowhere, so heron asks for it and sends nothing
        again = _heron(project, env, "--continue", "-p", "again")
        assert again.returncode == 3, again.stderr
        assert "needs the password" in again.stderr and f"--base-url http://{USER}:PASSWORD@127.0.0.1" in again.stderr
        assert len(_chats(server)) == 1

        # given again, it authenticates; the session records the same server (no new entry)
        given = _heron(project, env, "--continue", "--base-url", url, "--model", "m", "-p", "again")
        assert given.returncode == 0, given.stderr
        assert [r.headers["authorization"] for r in _chats(server)] == [_basic(PASSWORD)] * 2
        (session,) = (home / "sessions").glob("*/*.jsonl")
        servers = [
            e for e in map(json.loads, session.read_text().splitlines()) if e.get("customType") == "heron.server"
        ]
        assert [e["data"] for e in servers] == [
            {
                "provider": servers[0]["data"]["provider"],
                "model": "m",
                "api": "openai-chat",
                "baseUrl": f"http://{USER}@127.0.0.1:{server.port}/v1",
                "urlPassword": True,
            }
        ]
        _assert_no_credential(home)
        _assert_private(home)
    finally:
        server.close()


def test_continue_takes_the_password_from_models_json(tmp_path: Path) -> None:
    home, project, env = _place(tmp_path)
    server = _window_server()
    try:
        home.mkdir()
        url = f"http://{USER}:{PASSWORD}@127.0.0.1:{server.port}/v1"
        models = {"providers": {"lab": {"baseUrl": url, "api": "openai-chat", "models": [{"id": "m"}]}}}
        (home / "models.json").write_text(json.dumps(models))
        first = _heron(project, env, "--model", "lab/m", "-p", "hello")
        assert first.returncode == 0, first.stderr
        again = _heron(project, env, "--continue", "-p", "again")
        assert again.returncode == 0, again.stderr
        assert [r.headers["authorization"] for r in _chats(server)] == [_basic(PASSWORD)] * 2
        _assert_no_credential(home)
    finally:
        server.close()


def test_an_older_session_with_a_redacted_password_is_not_sent_as_credentials(tmp_path: Path) -> None:
    """A file written before: ``me:[redacted]@`` in the recorded URL. Resuming it asks for
    the password instead of sending ``[redacted]``."""
    home, project, env = _place(tmp_path)
    server = _window_server()
    try:
        url = f"http://{USER}:{PASSWORD}@127.0.0.1:{server.port}/v1"
        assert _heron(project, env, "--base-url", url, "--model", "m", "-p", "hello").returncode == 0
        (session,) = (home / "sessions").glob("*/*.jsonl")
        older = session.read_text().replace(f"{USER}@127.0.0.1", f"{USER}:[redacted]@127.0.0.1")
        older = older.replace(',"urlPassword":true', "")
        session.write_text(older)
        again = _heron(project, env, "--continue", "-p", "again")
        assert again.returncode == 3 and "needs the password" in again.stderr, again.stderr
        assert len(_chats(server)) == 1
    finally:
        server.close()


def test_cache_keys_and_recorded_urls_drop_credentials() -> None:
    from heron.ai.providers.http import without_password, without_userinfo
    from heron.coding.session_server import RecordedServer

    assert without_password("http://me:pw@h:1/v1") == ("http://me@h:1/v1", True)
    assert without_password("http://me@h/v1") == ("http://me@h/v1", False)
    assert without_password("http://:pw@h/v1") == ("http://h/v1", True)
    assert without_password("http://h/v1") == ("http://h/v1", False)
    assert without_userinfo("https://me:p@ss@h/v1") == "https://h/v1"
    old = RecordedServer.from_json(
        {"provider": "p", "model": "m", "api": "openai-chat", "baseUrl": "http://me:[redacted]@h/v1"}
    )
    assert old == RecordedServer("p", "m", "openai-chat", "http://me@h/v1", True)
