"""A 5 MB ``write`` argument, through the real ``heron`` command (docs/context.md,
"Oversized tool-call arguments").

A scripted model answers the first prompt with one ``write`` call whose ``content`` is
5 MB. Every request after it used to carry the 5 MB (1.3 M tokens): the turn itself, the
next ``--continue`` and ``/compact`` all ended in ``ContextFull`` and sent nothing. Now
requests show the call shortened, with a note saying where the whole is; the file and
the session keep all of it. One ``heron --mode rpc`` process and one process per turn
(``-p``, ``--continue``, ``heron compact``) send the same requests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.coding.test_small_window import call_reply, count_tokens, text_reply
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.summaries import is_summary_body

BIG = 5 << 20
LINE = "generated content line, long enough to look like a real file ........\n"
CONTENT = (LINE * (BIG // len(LINE) + 1))[:BIG]
TIMEOUT = 300
NOTES = tuple(f"notes {n}: " + " ".join(f"word{n}x{i:04d}" for i in range(400)) for n in range(3))  # ~1,000 tokens
PROMPTS = ("write the big file", *NOTES, "/compact", "and after the compaction?")


def heron() -> list[str]:
    return [os.environ.get("HERON_TEST_PYTHON", __import__("sys").executable), "-m", "heron.cli.main"]


class Model:
    """Replies keyed on the conversation, so both drives get the same ones."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: Recorded) -> Reply:
        body = request.json()
        self.bodies.append(body)
        prompt, _ = count_tokens(body)
        if is_summary_body(body):
            return text_reply("## Goal\nWrite a big file.\n## Progress\n- big.txt written", prompt)
        last = body["messages"][-1]
        if last["role"] == "tool":
            return text_reply("I wrote big.txt.", prompt)
        content = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
        if content == PROMPTS[0]:
            return call_reply("call_big", "write", {"path": "big.txt", "content": CONTENT}, prompt)
        return text_reply(f"answer to: {content[:40]}", prompt)


def make_place(root: Path, server: LocalServer) -> tuple[Path, dict[str, str]]:
    cwd, home = root / "proj", root / "home"
    cwd.mkdir(parents=True)
    home.mkdir()
    models = {
        "providers": {
            "local": {
                "baseUrl": server.url + "/v1",
                "api": "openai-completions",
                "apiKey": "sk-local",
                "models": [{"id": "m", "contextWindow": 32_768, "maxTokens": 4_096}],
            }
        }
    }
    (home / "models.json").write_text(json.dumps(models))
    settings = {"memory": {"directory": str(home / "memory")}, "compaction": {"keepRecentTokens": 1_500}}
    (home / "settings.json").write_text(json.dumps(settings))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env.update(HERON_HOME=str(home), HERON_CHECK_CONTEXT="strict")
    return cwd, env


def drive_print(cwd: Path, env: dict[str, str]) -> list[str]:
    out = []
    for n, prompt in enumerate(PROMPTS):
        if prompt == "/compact":
            args = [*heron(), "compact", "--model", "local/m"]
        else:
            args = [*heron(), "--model", "local/m", "-p", prompt, *(["--continue"] if n else [])]
        done = subprocess.run(
            args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT
        )
        assert done.returncode == 0, f"{prompt}: {done.stderr[-2000:]}"
        out.append(done.stdout.strip())
    return out


def drive_rpc(cwd: Path, env: dict[str, str]) -> list[str]:
    lines = [
        {"id": n, "type": "compact"} if prompt == "/compact" else {"id": n, "type": "prompt", "message": prompt}
        for n, prompt in enumerate(PROMPTS)
    ]
    child = subprocess.Popen(
        [*heron(), "--model", "local/m", "--mode", "rpc"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    answers: list[str] = []
    try:
        for line in lines:
            child.stdin.write(json.dumps(line) + "\n")
            child.stdin.flush()
            for raw in child.stdout:
                event = json.loads(raw)
                if event.get("type") == "response" and event.get("command") == "compact":
                    assert event.get("success"), json.dumps(event)[:3000]
                    answers.append("compacted")
                    break
                if event.get("type") == "run_end" and event.get("id") == line["id"]:
                    assert event.get("error") is None, event
                    answers.append("answered")
                    break
    finally:
        child.stdin.close()
        child.wait(timeout=TIMEOUT)
    return answers


def normalised(bodies: list[dict[str, Any]], root: Path) -> list[str]:
    out = []
    for body in bodies:
        text = json.dumps(body, sort_keys=True).replace(str(root), "ROOT")
        text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "SESSION", text)
        out.append(re.sub(r"\b\d\d:\d\d:\d\d\b", "HH:MM:SS", text))
    return out


@pytest.fixture
def servers() -> Iterator[list[LocalServer]]:
    made: list[LocalServer] = []
    yield made
    for server in made:
        server.close()


def test_a_5_mb_write_argument_leaves_the_session_usable(tmp_path: Path, servers: list[LocalServer]) -> None:
    one, many = Model(), Model()
    servers += [LocalServer(responder=one), LocalServer(responder=many)]
    cwd_one, env_one = make_place(tmp_path / "rpc1", servers[0])
    cwd_many, env_many = make_place(tmp_path / "prnt", servers[1])
    assert drive_rpc(cwd_one, env_one) == ["answered"] * 4 + ["compacted", "answered"]
    answers = drive_print(cwd_many, env_many)
    assert answers[:2] == ["I wrote big.txt.", f"answer to: {NOTES[0][:40]}"]
    assert answers[4].startswith("Compacted: ~") and answers[5] == f"answer to: {PROMPTS[5]}"

    for cwd, model in ((cwd_one, one), (cwd_many, many)):
        assert (cwd / "big.txt").read_text() == CONTENT  # the write itself happened
        # every request after the call fits the window, and shows the call shortened
        after = [b for b in model.bodies[1:]]
        assert after and all(sum(count_tokens(b)) <= 32_768 for b in after)
        sent = json.dumps(after[0])
        assert "more characters of this argument are not shown" in sent and "big.txt" in sent
        # nothing lost: the session file holds the call whole
        (session,) = (cwd.parent / "home" / "sessions").rglob("*.jsonl")
        calls = [
            block
            for entry in map(json.loads, session.read_text().splitlines())
            if entry["type"] == "message" and entry["message"]["role"] == "assistant"
            for block in entry["message"]["content"]
            if block["type"] == "toolCall"
        ]
        assert [c["arguments"]["content"] == CONTENT for c in calls] == [True]
    assert any(is_summary_body(b) for b in many.bodies), "heron compact sent its summary request"
    # the same requests from one process and from a process per turn
    rpc_bodies, print_bodies = normalised(one.bodies, tmp_path / "rpc1"), normalised(many.bodies, tmp_path / "prnt")
    assert rpc_bodies == print_bodies
