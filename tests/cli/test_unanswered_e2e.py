"""A process killed before the first answer keeps the session (issue 31), end to end.

Each mode runs the real ``heron`` against a local server that accepts the request and
never answers; once the request has arrived the process gets SIGKILL. The session file
must then hold the header and the prompt, ``heron -p --continue`` must send that prompt
again as a normal turn (the request the dead process sent, byte for byte), and a new
prompt instead must reach the model after the unanswered one and a note saying it was
never answered.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from heron.coding.unanswered import NOTE_TEXT, UNANSWERED_TYPE
from tests.cli.test_print_json_e2e import Project, heron_command, openai_args, project
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_reply

__all__ = ["project"]

PROMPT = "Write a long essay about herons.\nA second line, so the whole prompt is checked."
HANG = 120.0  # the server holds the request this long: it never answers while heron lives
WAIT = 60.0


def hang(server: LocalServer) -> None:
    server.queue(Reply(body=b"", delay=HANG))


def start(project: Project, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*heron_command(), *args],
        cwd=project.cwd,
        env=project.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def kill_after_the_request(process: subprocess.Popen[bytes], server: LocalServer, count: int = 1) -> None:
    deadline = time.monotonic() + WAIT
    while len(server.requests) < count:
        assert process.poll() is None, f"heron exited ({process.returncode}) before sending its request"
        assert time.monotonic() < deadline, "the request never arrived"
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=WAIT)
    if process.stdin is not None:
        process.stdin.close()


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def roles(entries: list[dict[str, Any]]) -> list[str]:
    return [e["message"]["role"] for e in entries if e["type"] == "message"]


def user_texts(request: Recorded) -> list[str]:
    out = []
    for message in request.json()["messages"]:
        if message["role"] == "user":
            content = message["content"]
            out.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return out


def the_prompt_survived(project: Project) -> Path:
    (path,) = project.session_files()
    entries = lines_of(path)
    assert entries[0]["type"] == "session" and entries[0]["version"] == 3
    assert roles(entries[1:]) == ["user"]  # the prompt, and no answer
    (prompt,) = [e for e in entries if e["type"] == "message"]
    assert prompt["message"]["content"] == [{"type": "text", "text": PROMPT}]
    return path


def send_again_with_continue(project: Project, server: LocalServer) -> None:
    """``heron -p --continue``: the unanswered prompt is sent again - exactly the request
    the killed process sent - and answered; the session continues normally after it."""
    killed_request = server.requests[-1]
    server.queue(openai_reply("Herons are patient hunters."))
    result = project.run("-p", "--continue", *openai_args(server))
    assert result.code == 0, result.err
    assert result.out == "Herons are patient hunters.\n"
    assert "sending the unanswered prompt again: Write a long essay about herons." in result.err
    resent = server.requests[-1]
    assert user_texts(resent) == [PROMPT]  # once: never two copies in a row
    assert resent.body == killed_request.body
    (path,) = project.session_files()
    entries = lines_of(path)
    prompts = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "user"]
    first, again = prompts
    assert first["parentId"] == again["parentId"]  # the re-send is a sibling: it continues from the parent
    answer = entries[-1]
    assert answer["message"]["role"] == "assistant" and answer["parentId"] == again["id"]
    # a later turn in a new process: a plain continuation, the old copy off the path
    server.queue(openai_reply("Grey herons nest in colonies."))
    result = project.run("-p", "--continue", "Where do they nest?", *openai_args(server))
    assert result.code == 0, result.err
    assert user_texts(server.requests[-1]) == [PROMPT, "Where do they nest?"]


def test_print_mode_killed_before_the_first_answer(project: Project, local_server: LocalServer) -> None:
    hang(local_server)
    kill_after_the_request(start(project, "-p", PROMPT, *openai_args(local_server)), local_server)
    the_prompt_survived(project)
    send_again_with_continue(project, local_server)


def test_json_mode_killed_before_the_first_answer(project: Project, local_server: LocalServer) -> None:
    hang(local_server)
    kill_after_the_request(start(project, "--mode", "json", "-p", PROMPT, *openai_args(local_server)), local_server)
    the_prompt_survived(project)
    send_again_with_continue(project, local_server)


def test_rpc_mode_killed_before_the_first_answer(project: Project, local_server: LocalServer) -> None:
    hang(local_server)
    process = start(project, "--mode", "rpc", *openai_args(local_server))
    assert process.stdin is not None
    process.stdin.write(json.dumps({"id": "p1", "type": "prompt", "message": PROMPT}).encode() + b"\n")
    process.stdin.flush()
    kill_after_the_request(process, local_server)
    the_prompt_survived(project)
    send_again_with_continue(project, local_server)


def test_acp_mode_killed_before_the_first_answer(project: Project, local_server: LocalServer) -> None:
    hang(local_server)
    process = subprocess.Popen(
        [*heron_command(), "--mode", "acp", *openai_args(local_server)],
        cwd=project.cwd,
        env=project.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None

    def call(ident: int, method: str, params: dict[str, Any], *, wait: bool = True) -> dict[str, Any]:
        assert process.stdin is not None and process.stdout is not None
        message = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        while wait:
            reply: dict[str, Any] = json.loads(process.stdout.readline())
            if reply.get("id") == ident:
                return reply
        return {}

    call(1, "initialize", {"protocolVersion": 1})
    session_id = call(2, "session/new", {"cwd": str(project.cwd), "mcpServers": []})["result"]["sessionId"]
    call(3, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": PROMPT}]}, wait=False)
    kill_after_the_request(process, local_server)
    process.stdout.close()
    path = the_prompt_survived(project)
    assert lines_of(path)[0]["id"] == session_id
    send_again_with_continue(project, local_server)


def test_a_new_prompt_after_an_unanswered_one_tells_the_model(project: Project, local_server: LocalServer) -> None:
    """``-p --continue "<new prompt>"``: the unanswered prompt stays, a note says it was
    never answered (once, in its place), then the new prompt; a ledger record names it."""
    hang(local_server)
    kill_after_the_request(start(project, "-p", PROMPT, *openai_args(local_server)), local_server)
    path = the_prompt_survived(project)
    unanswered_id = next(e["id"] for e in lines_of(path) if e["type"] == "message")
    local_server.queue(openai_reply("Short, then."), openai_reply("Still short."))
    result = project.run("-p", "--continue", "Keep it short instead.", *openai_args(local_server))
    assert result.code == 0, result.err
    assert user_texts(local_server.requests[-1]) == [PROMPT, NOTE_TEXT, "Keep it short instead."]
    entries = lines_of(path)
    notes = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "custom"]
    assert [n["message"]["customType"] for n in notes] == [UNANSWERED_TYPE]
    assert notes[0]["parentId"] == unanswered_id
    ledger = [e["data"] for e in entries if e["type"] == "custom" and e["data"].get("kind") == "unanswered"]
    assert [record["ref"] for record in ledger] == [unanswered_id]
    # the next process sees the note once, where it was, and adds none
    result = project.run("-p", "--continue", "And one more thing.", *openai_args(local_server))
    assert result.code == 0, result.err
    assert user_texts(local_server.requests[-1]) == [
        PROMPT,
        NOTE_TEXT,
        "Keep it short instead.",
        "And one more thing.",
    ]


def test_continue_without_a_task_on_an_answered_session_is_a_usage_error(
    project: Project, local_server: LocalServer
) -> None:
    local_server.queue(openai_reply("Answered."))
    assert project.run("-p", "hello", *openai_args(local_server)).code == 0
    result = project.run("-p", "--continue", *openai_args(local_server))
    assert result.code == 2
    assert "no task given" in result.err and "none to send again" in result.err
    assert len(local_server.requests) == 1
