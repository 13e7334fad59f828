"""Background compaction through the real ``heron`` command (issue 28): a process killed
mid-summary loses only that summary.

The same plan of turns (big reads in a 16k window) is driven twice against local
OpenAI-compatible servers: once by one ``heron --mode rpc`` process, and once by an rpc
process that is killed (``kill -9``) after the turn in which its background summary
started - while the server holds that summary request - then continued by ``heron -p
--continue``, one process per turn. The session's own requests must be byte-identical,
and the summary requests the same ones (the continued session asks for the summary again,
the same request). The child processes run with ``HERON_CHECK_CONTEXT=strict``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from tests.cli.audit_harness import (
    PlanServer,
    Rpc,
    Step,
    audit,
    make_project,
    normalised,
    read,
    run_print,
    serve,
    servers,
)
from tests.support.http_server import LocalServer
from tests.support.summaries import is_summary_body

__all__ = ["servers"]  # the fixture, from the harness

SMALL = {"id": "small", "contextWindow": 16_384, "maxTokens": 4_096}
LIMITS = {"small": 16_384}
PLAN: dict[int, list[Step]] = {n: [read(f"data/file{n % 4}.txt"), read("data/small.txt")] for n in range(9)}
# The compaction at the threshold (no pruning first, no step-boundary compaction), and the
# summary started well before it, so the turn that starts it ends before the compaction.
SETTINGS = {"compaction": {"backgroundAt": 0.6, "softThreshold": 1}, "pruning": {"enabled": False}}


def split(handler: PlanServer) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the session's own requests, the summary requests)."""
    own = [b for b in handler.bodies if not is_summary_body(b)]
    summaries = [b for b in handler.bodies if is_summary_body(b)]
    return own, summaries


def session_file(cwd: Path, home: Path) -> list[dict[str, Any]]:
    files = sorted((home / "sessions").rglob("*.jsonl"))
    assert len(files) == 1, files
    return [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]


def test_a_process_killed_mid_summary_then_continued_sends_what_one_process_sends(
    tmp_path: Path, servers: list[LocalServer]
) -> None:
    one, killed = PlanServer(PLAN, LIMITS), PlanServer(PLAN, LIMITS, hang_summary=True)
    cwd_one, env_one = make_project(tmp_path / "rpc1", serve(servers, one), [SMALL], SETTINGS)
    cwd_two, env_two = make_project(tmp_path / "kill", serve(servers, killed), [SMALL], SETTINGS)
    rpc = Rpc(cwd_one, env_one, "local/small")
    try:
        answers = [rpc.turn(one, n) for n in sorted(PLAN)]
    finally:
        rpc.close()
    assert answers == [f"done with turn {n}" for n in sorted(PLAN)]

    rpc = Rpc(cwd_two, env_two, "local/small")
    turn = 0
    try:
        while not killed.hung.is_set():
            assert turn < len(PLAN) - 2, "no background summary started early enough"
            assert rpc.turn(killed, turn) == f"done with turn {turn}"
            turn += 1
    finally:
        rpc.child.kill()  # kill -9, while the server holds the summary request
        rpc.child.wait(timeout=30)
    for n in range(turn, len(PLAN)):
        assert run_print(cwd_two, env_two, killed, n, "local/small", first=False) == f"done with turn {n}"

    assert one.rejected == killed.rejected == 0
    assert audit(one) == [] and audit(killed) == []
    own_one, summaries_one = split(one)
    own_two, summaries_two = split(killed)
    assert summaries_one, "the plan compacts"
    root_one, root_two = tmp_path / "rpc1", tmp_path / "kill"
    assert normalised(own_one, root_one) == normalised(own_two, root_two)
    # the held request and the one the next process sent again are the same request
    assert set(normalised(summaries_one, root_one)) == set(normalised(summaries_two, root_two))
    assert len(summaries_two) > len(summaries_one), "the killed summary was asked for again"
    lines = session_file(cwd_two, root_two / "home")
    compactions = [line for line in lines if line.get("type") == "compaction"]
    assert compactions, "the continued session compacted"
    records = [
        line["data"]
        for line in lines
        if line.get("type") == "custom" and line.get("customType") == "heron.ledger"
        if line["data"].get("kind") == "compaction" and line["data"].get("ref") == compactions[0]["id"]
    ]
    assert records and records[0]["detail"]["background"] in ("ready", "waited")


def test_each_summary_request_is_sent_once_by_a_process_per_turn(tmp_path: Path, servers: list[LocalServer]) -> None:
    """Issue 37: a ``heron -p --continue`` process whose turn started a background summary
    waits for it after its answer and keeps it in the session; the process that compacts
    splices it in. No summary request is sent twice, and the turns are the ones a single
    process sends."""
    one, per_turn = PlanServer(PLAN, LIMITS), PlanServer(PLAN, LIMITS)
    cwd_one, env_one = make_project(tmp_path / "rpc1", serve(servers, one), [SMALL], SETTINGS)
    cwd_two, env_two = make_project(tmp_path / "prnt", serve(servers, per_turn), [SMALL], SETTINGS)
    rpc = Rpc(cwd_one, env_one, "local/small")
    try:
        answers = [rpc.turn(one, n) for n in sorted(PLAN)]
    finally:
        rpc.close()
    assert answers == [f"done with turn {n}" for n in sorted(PLAN)]
    for n in sorted(PLAN):
        assert run_print(cwd_two, env_two, per_turn, n, "local/small", first=n == 0) == f"done with turn {n}"

    assert one.rejected == per_turn.rejected == 0
    assert audit(one) == [] and audit(per_turn) == []
    own_one, summaries_one = split(one)
    own_two, summaries_two = split(per_turn)
    root_one, root_two = tmp_path / "rpc1", tmp_path / "prnt"
    assert normalised(own_one, root_one) == normalised(own_two, root_two)
    assert summaries_two, "the plan compacts"
    sent = Counter(normalised(summaries_two, root_two))
    assert max(sent.values()) == 1, f"a summary request was sent {max(sent.values())} times"
    assert set(sent) == set(normalised(summaries_one, root_one))
    lines = session_file(cwd_two, root_two / "home")
    kept = [
        line["data"] for line in lines if line.get("type") == "custom" and line["data"].get("op") == "background_result"
    ]
    assert kept, "a process ended before the compaction and kept the summary"
