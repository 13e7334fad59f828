"""heron's JSON output is always valid UTF-8 (docs/rpc.md, "Framing").

A file or directory name with a byte that is not UTF-8 reaches Python as a lone
surrogate (``os.fsdecode``). ``--mode json`` wrote that byte raw when the project
directory had such a name (its first line, the session header, was not UTF-8); rpc wrote
an escaped lone surrogate, which strict JSON readers refuse; ACP's SDK did the same.
json mode, rpc and ACP now share one encoder (``heron.cli.events_json.encode_line``): such
a character is written as U+FFFD, as the session file holds it. Each case runs the real
command; the session stays intact and resumable.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from heron.cli.acp.output import clean_lines
from heron.cli.events_json import encode_line
from tests.cli.test_acp_errors import Raw, request
from tests.cli.test_print_json_e2e import TIMEOUT, Project, heron_command, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]

ODD = b"caf\xff"  # a Latin-1 byte: not UTF-8


def _surrogates(value: object) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, list):
        return any(_surrogates(v) for v in value)
    if isinstance(value, dict):
        return any(_surrogates(k) or _surrogates(v) for k, v in value.items())
    return False


def valid_output(data: bytes) -> list[dict[str, object]]:
    """Every line: UTF-8, JSON, and no lone surrogate once read (a strict reader refuses
    one; a pair is read as its character)."""
    text = data.decode("utf-8")  # raises on an invalid byte
    out = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert not _surrogates(out), text[:500]
    return out


def test_the_encoder_writes_a_lone_surrogate_as_a_replacement_character() -> None:
    line = encode_line({"text": "half \ud800 pair, byte \udcff, emoji \ud83d\ude00", "\udcfe": 1})
    assert valid_output(line) == [{"text": "half \ufffd pair, byte \ufffd, emoji \U0001f600", "\ufffd": 1}]
    # ACP's lines come from its SDK (ASCII escapes): only those holding a lone surrogate change
    sdk = json.dumps({"a": "x\udcffy"}).encode() + b"\n" + json.dumps({"b": "\U0001f600 \u2028"}).encode() + b"\n"
    first, second = clean_lines(sdk).splitlines()
    assert json.loads(first) == {"a": "x\ufffdy"} and json.loads(second) == {"b": "\U0001f600 \u2028"}
    assert b"\\u2028" in second


def make_project(tmp_path: Path) -> tuple[bytes, dict[str, str]]:
    cwd = os.fsencode(tmp_path) + b"/proj-" + ODD
    os.makedirs(cwd)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    return cwd, env


def test_json_mode_in_a_directory_whose_name_is_not_utf8(tmp_path: Path, local_server: LocalServer) -> None:
    cwd, env = make_project(tmp_path)
    local_server.queue(openai_reply("first"), openai_reply("second"))
    base = [*heron_command(), "--base-url", local_server.url + "/v1", "--model", "m", "--mode", "json"]
    done = subprocess.run([*base, "-p", "hi"], cwd=cwd, env=env, capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    events = valid_output(done.stdout)
    assert events[0]["type"] == "session" and str(events[0]["cwd"]).endswith("/proj-caf\ufffd")
    assert events[-1]["type"] == "run_end" and events[-1]["error"] is None
    # nothing lost: the session goes on in a new process
    done = subprocess.run([*base, "-c", "-p", "again"], cwd=cwd, env=env, capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert valid_output(done.stdout)[-1]["error"] is None
    messages = local_server.requests[-1].json()["messages"]
    assert [m["content"] for m in messages if m["role"] == "assistant"] == ["first"]


def test_rpc_with_a_session_file_whose_name_is_not_utf8(tmp_path: Path, local_server: LocalServer) -> None:
    cwd, env = make_project(tmp_path)
    local_server.queue(openai_reply("first"), openai_reply("fine"))
    args = [*heron_command(), "--base-url", local_server.url + "/v1", "--model", "m"]
    assert subprocess.run([*args, "-p", "hi"], cwd=cwd, env=env, capture_output=True, timeout=TIMEOUT).returncode == 0
    (made,) = (tmp_path / "home" / "sessions").rglob("*.jsonl")
    session = os.fsencode(made.parent) + b"/s-" + ODD + b".jsonl"
    os.rename(made, session)
    args.append("--mode=rpc")
    lines = b'{"id":1,"type":"prompt","message":"hi"}\n{"id":2,"type":"get_state"}\n'
    done = subprocess.run(
        [*args, b"--session", session], cwd=cwd, env=env, input=lines, capture_output=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    out = valid_output(done.stdout)
    (state,) = [o for o in out if o.get("command") == "get_state"]
    assert str(state["data"]["sessionFile"]).endswith("/s-caf\ufffd.jsonl")  # type: ignore[index]
    assert os.path.exists(session)  # the file keeps its real name, and holds the answer
    assert b'"fine"' in Path(os.fsdecode(session)).read_bytes()


class RawBytes(Raw):
    """:class:`Raw`, keeping every line as the bytes it came as."""

    def next(self) -> dict[str, object]:
        line = self.lines.get(timeout=TIMEOUT)
        self.bytes.append(line)
        message: dict[str, object] = json.loads(line)
        self.log.append(message)
        return message

    def __init__(self, project: Project, *flags: str) -> None:
        self.bytes: list[bytes] = []
        super().__init__(project, *flags)


def test_acp_answers_about_a_directory_whose_name_is_not_utf8(project: Project, local_server: LocalServer) -> None:
    raw = RawBytes(project, "--base-url", local_server.url + "/v1", "--model", "m")
    missing = os.fsdecode(os.fsencode(project.cwd) + b"/gone-" + ODD)  # as a client's json.dumps sends it
    try:
        assert "result" in raw.send(request(1, "initialize", {"protocolVersion": 1}))
        reply = raw.send(request(2, "session/new", {"cwd": missing, "mcpServers": []}))
        assert "error" in reply and "gone-caf\ufffd" in json.dumps(reply, ensure_ascii=False)
        reply = raw.send(request(3, "session/new", {"cwd": str(project.cwd), "mcpServers": []}))
        assert "sessionId" in reply["result"]  # type: ignore[operator]
    finally:
        code, err = raw.close()
    assert code == 0, err
    valid_output(b"".join(raw.bytes))  # the SDK's error reply went through heron's encoder
