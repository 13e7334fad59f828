"""The context view across processes, through the real ``heron`` command.

A 16,384-token model behind a local OpenAI-compatible server that counts every request
(characters / 4 of the system prompt, messages and tool schemas, plus the requested
output) and rejects anything over its limit. Twelve turns that read 120 KB files or print
100 KB from bash are driven twice: by one ``heron --mode rpc`` process, and by one
``heron -p`` process per turn (``--continue`` from the second turn on). Every turn must
finish, no request may be rejected, the context invariants hold in every request (the
child processes run with ``HERON_CHECK_CONTEXT=strict``: a violation fails the turn), and
the two ways must send the same requests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.context.compaction.summary.summary_text import SHARED_SUMMARY_MARK, SUMMARISER_SYSTEM_PROMPT
from heron.context.window.budget_notice import NOTICE_PREFIX
from tests.coding.test_small_window import BASH_BYTES, FILE_BYTES, call_reply, count_tokens, text_reply
from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.sandbox_fixtures import bubblewrap, no_bwrap
from tests.support.summaries import is_summary_body, is_summary_text

__all__ = ["bubblewrap", "no_bwrap"]  # fixtures

WINDOW = 16_384
TURNS = 12
TIMEOUT = 120
SUMMARY_MARK = SUMMARISER_SYSTEM_PROMPT[:60]


def heron() -> list[str]:
    return [os.environ.get("HERON_TEST_PYTHON", __import__("sys").executable), "-m", "heron.cli.main"]


class Server:
    """Scripted replies keyed on the conversation (so both drives get the same ones)."""

    def __init__(self, limit: int = WINDOW, *, report_usage: bool = True, stated: bool = True) -> None:
        self.limit = limit
        self.report_usage = report_usage
        self.stated = stated
        self.lock = threading.Lock()
        self.bodies: list[dict[str, Any]] = []
        self.rejected = 0

    def __call__(self, request: Recorded) -> Reply:
        body = request.json()
        prompt, completion = count_tokens(body)
        messages = body["messages"]
        with self.lock:
            self.bodies.append(body)
            if prompt + completion > self.limit:
                self.rejected += 1
                text = (
                    (
                        f"This model's maximum context length is {self.limit} tokens. However, you requested "
                        f"{prompt + completion} tokens."
                    )
                    if self.stated
                    else "context length exceeded"
                )
                return json_reply(
                    400,
                    {"error": {"message": text, "type": "invalid_request_error", "code": "context_length_exceeded"}},
                )
        used = prompt if self.report_usage else 0
        if is_summary_body(body):
            return text_reply("## Goal\nWork through the turns.\n\n## Progress\n- earlier turns done", used)
        last = messages[-1]
        if last["role"] == "tool":
            return text_reply("Noted; that output is what I needed.", used)
        content = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
        if content.startswith("[heron: the conversation is about to be compacted"):  # the memory flush
            return text_reply("Nothing worth saving.", used)
        number = int(re.match(r"turn (\d+)", content).group(1))  # type: ignore[union-attr]
        call_id = f"call_{number}"
        if number % 2 == 0:
            return call_reply(call_id, "read", {"path": f"data/file{number % 4}.txt"}, used)
        line = f"output line %05d of turn {number:02d} {'.' * 20}\\n"
        command = f"for i in $(seq 1 {BASH_BYTES // 50}); do printf '{line}' $i; done"
        return call_reply(call_id, "bash", {"command": command}, used)


def make_project(root: Path, server: LocalServer) -> tuple[Path, dict[str, str]]:
    cwd = root / "proj"
    (cwd / "data").mkdir(parents=True)
    for n in range(4):
        line = f"file {n}: a line of ordinary source text, long enough to look real ...\n"
        text = "".join(f"{i:06d} {line}" for i in range(FILE_BYTES // (len(line) + 7) + 1))
        (cwd / "data" / f"file{n}.txt").write_text(text[:FILE_BYTES])
    home = root / "home"
    home.mkdir()
    models = {
        "providers": {
            "local": {
                "baseUrl": server.url + "/v1",
                "api": "openai-completions",
                "apiKey": "sk-local",
                "models": [{"id": "small", "contextWindow": WINDOW, "maxTokens": 4_096}],
            }
        }
    }
    (home / "models.json").write_text(json.dumps(models))
    # the memory directory is named in the system prompt: keep it under the compared root
    # results up to 15% of the window (the default is 7.5%): the scenario was sized for it
    settings = {"memory": {"directory": str(home / "memory")}, "toolLimits": {"windowShare": 0.15}}
    (home / "settings.json").write_text(json.dumps(settings))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env.update(HERON_HOME=str(home), HERON_CHECK_CONTEXT="strict")
    return cwd, env


def prompt(n: int) -> str:
    return f"turn {n}: " + ("read the data file" if n % 2 == 0 else "print 100 KB of output with bash")


def drive_print(
    cwd: Path, env: dict[str, str], turns: int = TURNS, pauses: dict[int, float] | None = None
) -> list[str]:
    answers = []
    for n in range(turns):
        time.sleep((pauses or {}).get(n, 0.0))  # the user away before this turn
        args = [*heron(), "--model", "local/small", "-p", prompt(n), *(["--continue"] if n else [])]
        done = subprocess.run(
            args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT
        )
        assert done.returncode == 0, f"turn {n}: {done.stderr[-2000:]}"
        answers.append(done.stdout.strip())
    return answers


def drive_rpc(cwd: Path, env: dict[str, str], turns: int = TURNS, pauses: dict[int, float] | None = None) -> list[str]:
    child = subprocess.Popen(
        [*heron(), "--model", "local/small", "--mode", "rpc"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    answers = []
    try:
        for n in range(turns):
            time.sleep((pauses or {}).get(n, 0.0))
            child.stdin.write(json.dumps({"id": n, "type": "prompt", "message": prompt(n)}) + "\n")
            child.stdin.flush()
            for raw in child.stdout:
                event = json.loads(raw)
                if event.get("type") == "run_end" and event.get("id") == n:
                    assert event.get("error") is None, f"turn {n}: {event}"
                    break
                if event.get("type") == "message_end" and event["message"].get("role") == "assistant":
                    last = event["message"]
            answers.append("".join(b.get("text", "") for b in last["content"] if b.get("type") == "text"))
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    return answers


def normalised(bodies: list[dict[str, Any]], root: Path) -> list[str]:
    out = []
    for body in bodies:
        text = json.dumps(body, sort_keys=True).replace(str(root), "ROOT")
        text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "SESSION", text)
        out.append(re.sub(r"\b\d\d:\d\d:\d\d\b", "HH:MM:SS", text))
    return out


@pytest.fixture
def servers() -> Iterator[tuple[list[LocalServer], list[Server]]]:
    made: list[LocalServer] = []
    handlers: list[Server] = []
    yield made, handlers
    for server in made:
        server.close()


def start(servers: tuple[list[LocalServer], list[Server]], handler: Server) -> LocalServer:
    server = LocalServer(responder=handler)
    servers[0].append(server)
    servers[1].append(handler)
    return server


def test_rpc_and_continue_per_turn_send_the_same_requests(tmp_path: Path, servers: Any, bubblewrap: str | None) -> None:
    """With bubblewrap and without it (``bubblewrap``: a PATH without it): then the bash
    results carry the "sandbox unavailable" note, once per session in both drives."""
    one, many = Server(), Server()
    cwd_one, env_one = make_project(tmp_path / "rpc1", start(servers, one))
    cwd_many, env_many = make_project(tmp_path / "prnt", start(servers, many))
    for env in (env_one, env_many):
        env["PATH"] = bubblewrap or env["PATH"]
    turns = TURNS
    rpc_answers = drive_rpc(cwd_one, env_one, turns)
    print_answers = drive_print(cwd_many, env_many, turns)
    assert rpc_answers == print_answers == ["Noted; that output is what I needed."] * turns
    assert one.rejected == many.rejected == 0
    for body in one.bodies:
        prompt_tokens, completion = count_tokens(body)
        assert prompt_tokens + completion <= WINDOW
    assert any("[Pruned from the context" in json.dumps(b) for b in one.bodies), "and prune"
    assert any(NOTICE_PREFIX in json.dumps(b) for b in one.bodies), "and tell the model its budget"
    assert any(SHARED_SUMMARY_MARK in json.dumps(b) for b in one.bodies), "with shared summary requests"
    # the two drives ran in folders of the same length; only those and the session ids differ.
    # A compaction's two summary requests (history, turn prefix) run concurrently: compare
    # the session's own requests in order, the summary requests as a set - and each of them
    # once: a ``-p`` process waits for the background summary it started and keeps it in the
    # session for the process that compacts.
    rpc_bodies, print_bodies = normalised(one.bodies, tmp_path / "rpc1"), normalised(many.bodies, tmp_path / "prnt")
    assert [b for b in rpc_bodies if not is_summary_text(b)] == [b for b in print_bodies if not is_summary_text(b)]
    assert {b for b in rpc_bodies if is_summary_text(b)} == {b for b in print_bodies if is_summary_text(b)}
    summaries = [b for b in print_bodies if is_summary_text(b)]
    assert len(summaries) == len(set(summaries)), "a summary request was sent twice"


COLD_TTL = 10  # seconds: above a ``-p`` process's start-up on a loaded machine
COLD_PAUSES = {2: 20.0, 4: 20.0}  # the user away longer than the cache lives before these turns


def test_a_step_taken_because_the_cache_went_cold_is_the_same_in_every_process(tmp_path: Path, servers: Any) -> None:
    """``pruning.cacheTtlSeconds``: after a pause longer than the cache lives, a step is
    taken below the high-water mark; one rpc process and a process per turn, with the
    same pauses, send the same requests, and the step is recorded as a cold one."""
    one, many = Server(), Server()
    drives = []
    for name, handler in (("rpc1", one), ("prnt", many)):
        cwd, env = make_project(tmp_path / name, start(servers, handler))
        settings = json.loads((Path(env["HERON_HOME"]) / "settings.json").read_text())
        settings["pruning"] = {"cacheTtlSeconds": COLD_TTL}
        (Path(env["HERON_HOME"]) / "settings.json").write_text(json.dumps(settings))
        drives.append((cwd, env))
    # The two runs sleep through the same pauses side by side (their servers are separate).
    rpc_run = threading.Thread(target=drive_rpc, args=(*drives[0], 6, COLD_PAUSES))
    rpc_run.start()
    drive_print(*drives[1], 6, COLD_PAUSES)
    rpc_run.join(timeout=TIMEOUT * 6)
    assert not rpc_run.is_alive()
    assert one.rejected == many.rejected == 0
    rpc_bodies, print_bodies = normalised(one.bodies, tmp_path / "rpc1"), normalised(many.bodies, tmp_path / "prnt")
    assert [b for b in rpc_bodies if not is_summary_text(b)] == [b for b in print_bodies if not is_summary_text(b)]
    for _cwd, env in drives:
        records = [
            entry["data"]
            for path in Path(env["HERON_HOME"]).rglob("*.jsonl")
            for entry in map(json.loads, path.read_text().splitlines())
            if entry.get("customType") == "heron.ledger" and entry["data"].get("kind") == "prune"
        ]
        cold = [r for r in records if "cacheCold" in r.get("detail", {})]
        assert cold and all(r["detail"]["cacheCold"]["ttlSeconds"] == COLD_TTL for r in cold)
        assert all(r["detail"]["cacheCold"]["idleSeconds"] >= COLD_TTL for r in cold)
    # ``coldKeepTurns`` 1: the request after a pause carries no result whole that the model
    # has answered from - the previous turn's too (a warm step spares the last three messages)
    after_pause = [b for b in one.bodies if _last_prompt(b).startswith(tuple(f"turn {n}:" for n in COLD_PAUSES))]
    stepped = [b for b in after_pause if "[Pruned from the context" in json.dumps(b)]
    assert stepped
    for body in stepped:
        results = [m for m in body["messages"] if m.get("role") == "tool"]
        assert results and all(len(json.dumps(m.get("content"))) < 1_000 for m in results)


def _last_prompt(body: dict[str, Any]) -> str:
    """The text of a request's last message when it is the user's prompt, else ""."""
    last = body["messages"][-1]
    if last.get("role") != "user":
        return ""
    content = last.get("content")
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])


@pytest.mark.parametrize("stated", [True, False], ids=["limit-in-error", "bare-error"])
def test_a_server_enforcing_less_than_the_window_costs_one_rejection(
    tmp_path: Path, servers: Any, stated: bool
) -> None:
    handler = Server(limit=12_000, stated=stated)
    cwd, env = make_project(tmp_path, start(servers, handler))
    answers = drive_print(cwd, env)
    assert answers == ["Noted; that output is what I needed."] * TURNS
    assert handler.rejected <= 1


def test_a_provider_reporting_no_usage_still_compacts_before_overflow(tmp_path: Path, servers: Any) -> None:
    handler = Server(report_usage=False)
    cwd, env = make_project(tmp_path, start(servers, handler))
    answers = drive_print(cwd, env)
    assert answers == ["Noted; that output is what I needed."] * TURNS
    assert handler.rejected == 0
    # with nothing reported, heron's own estimates drove pruning before the limit
    assert any("[Pruned from the context" in json.dumps(b) for b in handler.bodies)
