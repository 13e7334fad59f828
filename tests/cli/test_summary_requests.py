"""Summary requests take the same request path as every other request (issue 22).

Through the real ``heron`` command, against a local OpenAI-compatible server: a summary
request that never answers ends the compaction with a clear error within the configured
``timeouts.firstByteMs`` (not the default minute, not forever), for a manual ``compact``
(rpc) and for an automatic compaction at the threshold (``heron -p``), and the session
stays usable - the next request is sent, well formed (``audit_harness.audit``), and
answered. A summary request the server fails with a 500 is retried per ``retry.*``.
The child processes run with ``HERON_CHECK_CONTEXT=strict``: a summary request that broke
a context rule would fail the compaction.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.audit_harness import (
    TIMEOUT,
    PlanServer,
    Rpc,
    Step,
    audit,
    bash_100k,
    heron,
    make_project,
    prompt,
    read,
)
from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.summaries import is_summary_body

# Served as a hosted server is (a local one waits as long as its prompt needs, and a
# request it may still be reading is not sent again: tests/cli/test_local_reading_e2e.py).
MODEL = {"id": "m", "contextWindow": 32_768, "maxTokens": 4_096, "compat": {"localServer": False}}
FIRST_BYTE_MS = 2_000
SETTINGS: dict[str, Any] = {
    "timeouts": {"firstByteMs": FIRST_BYTE_MS},
    "retry": {"maxRetries": 1, "baseDelayMs": 100, "maxDelayMs": 200},
    # the foreground summary request is what these tests time (the background one's fallback
    # to it: tests/coding/test_background_compaction.py)
    "compaction": {"keepRecentTokens": 2_000, "background": False},
}
# Two attempts of 2 s and a 0.1 s pause: the compaction fails in about 4 s. The bound
# leaves room for a loaded machine; the default first-byte timeout alone is 60 s. (1 s is
# allowed too, but on a loaded test machine the ordinary replies then time out as well.)
DEADLINE_S = 15.0
PLANS: dict[int, list[Step]] = {
    0: [read("data/file0.txt")],
    1: [read("data/file1.txt")],
    2: [read("data/file2.txt")],
}
# About 5,000 tokens per step (32k window: reads and bash output capped at ~19 KB): the
# view passes the 24,576-token threshold at the last step of turn 1 and still fits the
# window, so the request goes out when the compaction fails.
AUTOMATIC: dict[int, list[Step]] = {
    0: [read("data/file0.txt"), read("data/file1.txt")],
    1: [read("data/file2.txt"), read("data/file3.txt"), bash_100k("turn 1")],
    2: [],
}


class SummaryServer(PlanServer):
    """The plan server, with every summary request answered by ``mode``: ``hang`` (the
    server accepts it and never answers), ``fail_once`` (a 500, then a summary)."""

    def __init__(self, mode: str, plans: dict[int, list[Step]]) -> None:
        super().__init__(plans, {"m": 1_000_000})
        self.mode = mode
        self.summaries: list[Recorded] = []
        self.summary_times: list[float] = []
        self.summary_lock = threading.Lock()

    def __call__(self, request: Recorded) -> Reply:
        if not is_summary_body(request.json()):
            return super().__call__(request)
        with self.summary_lock:
            self.summaries.append(request)
            self.summary_times.append(time.monotonic())
            count = len(self.summaries)
        if self.mode == "hang":
            return Reply(body=b"", delay=30)
        if self.mode == "fail_once" and count == 1:
            return json_reply(500, {"error": {"message": "upstream failed", "type": "server_error"}})
        return self.text("## Goal\nFollow the plan.\n\n## Progress\n- earlier turns done", 100)


@pytest.fixture
def served() -> Iterator[list[LocalServer]]:
    made: list[LocalServer] = []
    yield made
    for server in made:
        server.close()


def start(
    made: list[LocalServer], tmp_path: Path, mode: str, plans: dict[int, list[Step]] = PLANS, **settings: Any
) -> tuple[SummaryServer, Path, dict[str, str]]:
    handler = SummaryServer(mode, plans)
    server = LocalServer(responder=handler)
    made.append(server)
    cwd, env = make_project(tmp_path, server.url, [MODEL], {**SETTINGS, **settings})
    return handler, cwd, env


def compact(rpc: Rpc) -> tuple[dict[str, Any], float]:
    """The rpc ``compact`` response, and how long it took."""
    ident = f"c{rpc.ids + 1}"
    began = time.monotonic()
    events = rpc.command({"type": "compact"}, lambda e: e.get("type") == "response" and e.get("id") == ident)
    return events[-1], time.monotonic() - began


def test_a_manual_compaction_whose_summary_never_answers_fails_within_the_timeout(
    tmp_path: Path, served: list[LocalServer]
) -> None:
    server, cwd, env = start(served, tmp_path, "hang")
    rpc = Rpc(cwd, env, "local/m")
    try:
        rpc.turn(server, 0)
        rpc.turn(server, 1)
        response, took = compact(rpc)
        assert response["success"] is False
        assert response["error"].startswith("compaction failed: the summary request failed: Request timed out")
        assert "timeouts.firstByteMs" in response["error"]
        assert took < DEADLINE_S, f"the compaction took {took:.1f} s"
        # each summary request (the history and the split turn's prefix, sent together) is
        # sent twice: the first attempt and the one retry of retry.maxRetries
        assert sorted(Counter(r.body for r in server.summaries).values()) in ([2], [2, 2])
        # The summary request carried the session's options: its key, its own output cap.
        summary = server.summaries[0]
        assert summary.headers["authorization"] == "Bearer sk-local"
        assert summary.json()["max_completion_tokens"] <= MODEL["maxTokens"]
        # The session goes on: the next turn is sent, well formed, and answered.
        answer = rpc.turn(server, 2)
        assert answer == "done with turn 2"
    finally:
        rpc.close()
    assert server.turns[-1] == 2 and server.accepted[-1]
    assert audit(server) == []
    assert not any(json.loads(line).get("type") == "compaction" for line in session_lines(cwd, env))


def test_an_automatic_compaction_whose_summary_never_answers_fails_within_the_timeout(
    tmp_path: Path, served: list[LocalServer]
) -> None:
    # without pruning (which would otherwise get there first), a compaction is due
    server, cwd, env = start(served, tmp_path, "hang", AUTOMATIC, pruning={"enabled": False})
    first = run_turn(cwd, env, server, 0, first=True)
    assert first.returncode == 0, first.stderr[-3000:]
    assert not server.summaries  # the first turn fits
    began = time.monotonic()
    done = run_turn(cwd, env, server, 1, first=False)
    took = time.monotonic() - began
    assert server.summaries, "no automatic compaction was attempted"
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "done with turn 1"
    assert "heron: warning: context: the automatic compaction failed: the summary request failed: " in done.stderr
    assert "timeouts.firstByteMs" in done.stderr
    assert sorted(Counter(r.body for r in server.summaries).values()) in ([2], [2, 2])  # one compaction, one retry
    assert took < DEADLINE_S * 2, f"the turn took {took:.1f} s"
    # The next process goes on from there: its request is well formed and answered.
    after = run_turn(cwd, env, server, 2, first=False)
    assert after.returncode == 0, after.stderr[-3000:]
    assert after.stdout.strip() == "done with turn 2"
    assert audit(server) == []
    assert all(server.accepted)


def test_a_summary_request_is_retried_per_the_retry_settings(tmp_path: Path, served: list[LocalServer]) -> None:
    server, cwd, env = start(served, tmp_path, "fail_once")
    rpc = Rpc(cwd, env, "local/m")
    try:
        rpc.turn(server, 0)
        rpc.turn(server, 1)
        ident = f"c{rpc.ids + 1}"
        events = rpc.command({"type": "compact"}, lambda e: e.get("type") == "response" and e.get("id") == ident)
        response = events[-1]
        assert response["success"] is True, response
        # the 500 (to whichever came first), then the retry that answered
        assert len(server.summaries) == 1 + len({r.body for r in server.summaries})
        retries = [e for e in events if e.get("type") in ("auto_retry_start", "auto_retry_end")]
        assert [e["type"] for e in retries] == ["auto_retry_start", "auto_retry_end"], retries
        assert retries[1]["success"] is True
        assert rpc.turn(server, 2) == "done with turn 2"
    finally:
        rpc.close()
    assert audit(server) == []


def test_a_summary_request_is_not_retried_when_retries_are_off(tmp_path: Path, served: list[LocalServer]) -> None:
    server, cwd, env = start(served, tmp_path, "fail_once", retry={"enabled": False})
    rpc = Rpc(cwd, env, "local/m")
    try:
        rpc.turn(server, 0)
        rpc.turn(server, 1)
        response, _ = compact(rpc)
        assert response["success"] is False and "upstream failed" in response["error"]
        assert len(server.summaries) == len({r.body for r in server.summaries})  # none sent twice
    finally:
        rpc.close()


def run_turn(
    cwd: Path, env: dict[str, str], server: PlanServer, n: int, *, first: bool
) -> subprocess.CompletedProcess[str]:
    server.turn = n
    args = [*heron(), "--model", "local/m", "-p", prompt(n), *([] if first else ["--continue"])]
    return subprocess.run(
        args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT
    )


def session_lines(cwd: Path, env: dict[str, str]) -> list[str]:
    sessions = Path(env["HERON_HOME"]) / "sessions"
    files = sorted(sessions.rglob("*.jsonl"))
    assert files, f"no session under {sessions}"
    return files[-1].read_text().splitlines()
