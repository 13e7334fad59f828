"""The failures a newcomer meets, through the real ``heron`` command: a URL without a
scheme, conflicting flags, a missing prompt file, a server refusing the key, an OpenAI
model id on a compatible server, retries, stdin that never closes, rpc ids that JSON
cannot write, and the size of the json event stream."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_print_json_e2e import TIMEOUT, Project, heron_command, openai_args
from tests.support.http_server import LocalServer, Reply, json_reply
from tests.support.sse import openai_chunk, openai_reply, openai_sse

UNAUTHORIZED = {"error": {"message": "Invalid API key", "type": "invalid_request_error", "code": "invalid_api_key"}}


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    """A temp project and ``HERON_HOME``, with no key or HERON_ variable from this machine."""
    cwd = tmp_path / "project"
    cwd.mkdir()
    home = tmp_path / "heron-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    yield Project(cwd=cwd, home=home, env=env)


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_base_url_without_a_scheme_is_rejected_with_the_fix(project: Project) -> None:
    result = project.run("--base-url", "localhost:11434/v1", "--model", "m", "-p", "hi")
    assert result.code == 2 and result.out == ""
    assert "did you mean http://localhost:11434/v1?" in one_line(result.err)


def test_conflicting_flags_get_one_line_each(project: Project) -> None:
    both = project.run("-c", "--session", "abc", "-p", "hi")
    assert both.code == 2 and "-c/--continue and --session cannot be used together" in one_line(both.err)
    rpc = project.run("--mode", "rpc", "do the thing")
    assert rpc.code == 2 and "--mode rpc takes no task" in one_line(rpc.err)


def test_a_system_prompt_path_that_does_not_exist_is_an_error(project: Project, local_server: LocalServer) -> None:
    result = project.run(*openai_args(local_server), "--system-prompt", "prompts/system.md", "-p", "hi")
    assert result.code == 2 and "--system-prompt prompts/system.md: no such file" in one_line(result.err)
    assert local_server.requests == []
    # text is text, and an existing file is read
    (project.cwd / "sys.md").write_text("You are terse.")
    local_server.queue(openai_reply("ok"), openai_reply("ok"))
    assert project.run(*openai_args(local_server), "--system-prompt", "Be brief.", "-p", "hi").code == 0
    assert project.run(*openai_args(local_server), "--system-prompt", "sys.md", "-p", "hi").code == 0
    system = local_server.requests[1].json()["messages"][0]["content"]
    assert system.startswith("You are terse.")


def test_a_401_says_which_key_was_sent_and_how_to_give_one(project: Project, local_server: LocalServer) -> None:
    local_server.fallback = json_reply(401, UNAUTHORIZED)
    project.env["OPENAI_API_KEY"] = "sk-openai-secret"  # never sent to a server that is not OpenAI's
    result = project.run(*openai_args(local_server), "-p", "hi")
    assert result.code == 1
    assert local_server.requests[0].headers["authorization"] == "Bearer heron-no-key"
    assert "no key (heron sends the placeholder 'heron-no-key'" in result.err
    for way in ("--api-key", "HERON_API_KEY", "models.json", '"apiKey"'):
        assert way in result.err, way
    assert "Traceback" not in result.err

    project.env["HERON_API_KEY"] = "hk-local-secret"
    result = project.run(*openai_args(local_server), "-p", "hi")
    assert local_server.requests[-1].headers["authorization"] == "Bearer hk-local-secret"
    assert "the key from HERON_API_KEY" in result.err
    assert "hk-local-secret" not in result.err and "sk-openai-secret" not in result.err

    result = project.run(*openai_args(local_server), "--api-key", "cli-secret", "-p", "hi")
    assert local_server.requests[-1].headers["authorization"] == "Bearer cli-secret"
    assert "the key from --api-key" in result.err and "cli-secret" not in result.err


def test_an_openai_model_id_on_a_base_url_server_uses_chat_completions(
    project: Project, local_server: LocalServer
) -> None:
    local_server.queue(openai_reply("hi there"))
    result = project.run("--base-url", local_server.url + "/v1", "--model", "gpt-4o", "-p", "hi")
    assert result.code == 0, result.err
    assert [r.path for r in local_server.requests] == ["/v1/chat/completions"]
    # --api says otherwise
    project.run("--base-url", local_server.url + "/v1", "--model", "gpt-4o", "--api", "openai-responses", "-p", "hi")
    assert local_server.requests[-1].path == "/v1/responses"


def test_retries_are_shown_on_stderr_as_they_happen(project: Project, local_server: LocalServer) -> None:
    project.write_settings({"retry": {"baseDelayMs": 50, "maxDelayMs": 200}})
    busy = json_reply(503, {"error": {"message": "overloaded", "type": "server_error"}})
    for mode in ("print", "json"):
        local_server.queue(busy, busy, openai_reply("finally"))
        result = project.run(*openai_args(local_server), "--mode", mode, "-p", "hi")
        assert result.code == 0, result.err
        retries = [line for line in result.err.splitlines() if "retrying in" in line]
        assert len(retries) == 2, result.err
        assert retries[0].endswith("(1/3)…") and retries[1].endswith("(2/3)…")
        assert "retrying in 0.1 s" in retries[1]
        if mode == "print":
            assert result.out == "finally\n"
        else:  # stdout stays the event stream
            assert all(json.loads(line) for line in result.out.splitlines())


def test_a_task_does_not_wait_for_a_stdin_that_never_closes(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("answered"))
    proc = subprocess.Popen(
        [*heron_command(), *openai_args(local_server), "-p", "summarise"],
        cwd=project.cwd,
        env=project.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        started = time.monotonic()
        out, err = _wait_output(proc)
        assert proc.returncode == 0, err
        assert out == "answered\n"
        assert time.monotonic() - started < TIMEOUT
        assert local_server.requests[0].json()["messages"][-1]["content"] == "summarise"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _wait_output(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """stdout and stderr once heron exits, with its stdin left open (never written, never closed)."""
    assert proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + TIMEOUT
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is not None, "heron blocked on an open stdin"
    return proc.stdout.read(), proc.stderr.read()


def test_dash_reads_stdin_to_its_end(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("ok"), openai_reply("ok"))
    assert project.run(*openai_args(local_server), "-p", "explain", "-", stdin="line one\nline two\n").code == 0
    assert local_server.requests[0].json()["messages"][-1]["content"] == "explain\n\nline one\nline two"
    # without "-", data already waiting in the pipe is read too
    assert project.run(*openai_args(local_server), "-p", "explain", stdin="piped").code == 0
    assert local_server.requests[1].json()["messages"][-1]["content"] == "explain\n\npiped"


def test_rpc_refuses_ids_json_cannot_write(project: Project, local_server: LocalServer) -> None:
    lines = '{"type":"get_state","id":1e999}\n{"type":"get_state","id":NaN}\n{"type":"get_state","id":7}\n'
    result = project.run(*openai_args(local_server), "--mode", "rpc", "--no-session", stdin=lines)
    assert result.code == 0, result.err
    out = [json.loads(line) for line in result.out.splitlines()]  # every line is strict JSON
    assert "Infinity" not in result.out and "NaN" not in result.out
    assert [(o["id"], o["success"]) for o in out] == [(None, False), (None, False), (7, True)]
    assert "finite" in out[0]["error"]


def streamed_answer(size: int, piece: int = 10) -> Reply:
    text = ("word " * (size // 5 + 1))[:size]
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": text[i : i + piece]}) for i in range(0, size, piece)]
    chunks += [
        openai_chunk({}, finish="stop"),
        openai_chunk(usage={"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}),
    ]
    return Reply(body=openai_sse(chunks))


def test_json_output_grows_linearly_with_the_answer(project: Project, local_server: LocalServer) -> None:
    """30,000 characters in 3,000 deltas: each update carries deltas only (consecutive ones
    merged into one line; the whole message at message_end), so stdout stays near twice the
    answer's size, not its square."""
    local_server.queue(streamed_answer(30_000))
    result = project.run(*openai_args(local_server), "--mode", "json", "--no-session", "-p", "hi")
    assert result.code == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    updates = [e for e in events if e["type"] == "message_update"]
    assert len(updates) >= 3 and all("message" not in e for e in updates)
    deltas = "".join(e["event"]["delta"] for e in updates if e["event"]["type"] == "text_delta")
    end = next(e for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant")
    assert end["message"]["content"][0]["text"] == deltas and len(deltas) == 30_000
    assert len(result.out.encode()) < 2 * 30_000 + 5_000, len(result.out.encode())


def test_a_session_path_that_is_not_a_session_file_is_refused_and_left_alone(
    project: Project, local_server: LocalServer
) -> None:
    """``--session notes.jsonl`` naming the user's own file: heron would have rewritten it
    with a session header, its text gone; now it says so, sends nothing, and the file stays."""
    notes = project.cwd / "notes.jsonl"
    notes.write_text("deploy on fridays\nnever on mondays\n")
    result = project.run(*openai_args(local_server), "--session", str(notes), "-p", "hi")
    assert result.code == 2 and result.out == ""
    assert "not a session file" in one_line(result.err) and str(notes) in result.err
    assert notes.read_text() == "deploy on fridays\nnever on mondays\n"
    assert local_server.requests == []
