"""Black-box audit of the context view (issue 10) through the real ``heron`` command.

Each scenario drives ``heron -p`` / ``-p --continue`` (a new process per turn) or one
``heron --mode rpc`` process against a local OpenAI-compatible server that rejects requests
over its limit, and then checks what the model received (``audit_harness.audit``). The
mechanisms are combined: long reads and bash output (pruning and compaction), re-reads of
pruned files, a task list, a model switch to a smaller window, a crash mid-turn, a server that
enforces less than the configured window, and one that reports no usage.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.cli.audit_harness import (
    PRUNED,
    TODOS,
    UNCHANGED,
    AnthropicPlanServer,
    PlanServer,
    Rpc,
    Step,
    audit,
    bash_100k,
    make_project,
    normalised,
    read,
    run_print,
    run_print_killed,
    serve,
    servers,
    text_of,
)
from tests.cli.audit_harness import (
    heron as heron_cmd,
)
from tests.cli.audit_harness import (
    prompt as prompt_of,
)
from tests.support.http_server import LocalServer, Reply
from tests.support.sandbox_fixtures import bubblewrap, no_bwrap
from tests.support.summaries import is_summary_body, is_summary_text

__all__ = ["bubblewrap", "no_bwrap", "servers"]  # fixtures, from the harness and the sandbox's

SMALL = {"id": "small", "contextWindow": 16_384, "maxTokens": 4_096}
BIG = {"id": "big", "contextWindow": 32_768, "maxTokens": 4_096}
LIMITS = {"small": 16_384, "big": 32_768}

MIXED: dict[int, list[Step]] = {
    0: [read("data/file0.txt")],
    1: [bash_100k("turn 1")],
    2: [read("data/small.txt"), read("data/small.txt")],
    3: [TODOS, read("data/file1.txt")],
    4: [bash_100k("turn 4"), read("data/small.txt")],
    5: [read("data/file0.txt")],
    6: [read("data/small.txt", offset=1, limit=20), read("data/small.txt", offset=1, limit=20)],
    7: [bash_100k("turn 7a"), bash_100k("turn 7b")],
    8: [read("data/file2.txt"), read("data/small.txt")],
    9: [read("data/file0.txt"), read("data/file0.txt")],
    10: [read("data/small.txt")],
    11: [("bash", {"command": "echo appended >> data/small.txt"}), read("data/small.txt")],
    12: [read("data/file3.txt"), read("data/file3.txt")],
    13: [read("data/small.txt"), read("data/file1.txt")],
}


def session_bodies(handler: PlanServer) -> list[dict[str, Any]]:
    return [b for b in handler.bodies if not is_summary_body(b)]


def session_raw(handler: PlanServer) -> list[dict[str, Any]]:
    """The session's own requests as sent (not the summary requests)."""
    return [raw for raw, body in zip(handler.raw, handler.bodies, strict=True) if not is_summary_body(body)]


def dump_on_difference(first: list[str], second: list[str]) -> None:
    """Write both sequences for a diff when they differ (AUDIT_DUMP=dir)."""
    target = os.environ.get("AUDIT_DUMP")
    if target and first != second:
        Path(target, "first.json").write_text(json.dumps(first))
        Path(target, "second.json").write_text(json.dumps(second))


def drive_both(
    tmp_path: Path,
    servers: list[LocalServer],
    one: PlanServer,
    many: PlanServer,
    plans: dict[int, list[Step]],
    api: str = "openai-completions",
    path: str | None = None,
) -> None:
    """The same plan as one long-lived ``heron --mode rpc`` (``one``) and as a ``heron -p``
    per turn (``many``): both get every turn's answer. ``path``: the ``PATH`` both run with
    (one without bubblewrap: a machine where the sandbox cannot run)."""
    cwd_one, env_one = make_project(tmp_path / "rpc1", serve(servers, one), [SMALL], api=api)
    cwd_many, env_many = make_project(tmp_path / "prnt", serve(servers, many), [SMALL], api=api)
    for env in (env_one, env_many):
        env["PATH"] = path or env["PATH"]
    rpc = Rpc(cwd_one, env_one, "local/small")
    try:
        rpc_answers = [rpc.turn(one, n) for n in sorted(plans)]
    finally:
        rpc.close()
    print_answers = [run_print(cwd_many, env_many, many, n, "local/small", first=n == 0) for n in sorted(plans)]
    assert rpc_answers == print_answers == [f"done with turn {n}" for n in sorted(plans)]


def test_mixed_plan_rpc_and_print_send_the_same_bytes(
    tmp_path: Path, servers: list[LocalServer], bubblewrap: str | None
) -> None:
    one, many = PlanServer(MIXED, LIMITS), PlanServer(MIXED, LIMITS)
    drive_both(tmp_path, servers, one, many, MIXED, path=bubblewrap)
    assert one.rejected == many.rejected == 0
    assert audit(one) == [] and audit(many) == []
    sent = [str(b) for b in one.bodies]
    assert any(PRUNED in b for b in sent), "the scenario prunes"
    assert any(UNCHANGED in b for b in sent), "and de-duplicates a re-read"
    rpc_bodies = normalised(session_bodies(one), tmp_path / "rpc1")
    print_bodies = normalised(session_bodies(many), tmp_path / "prnt")
    assert rpc_bodies == print_bodies


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_a_crash_while_a_tool_runs_then_continue(tmp_path: Path, servers: list[LocalServer], api: str) -> None:
    """kill -9 while bash runs: the session holds a call without a result. The next process
    sends that call with a result (an error saying it did not finish), and the rules hold."""
    marker = tmp_path / "bash-started"
    plans = {n: [read(f"data/file{n % 4}.txt"), bash_100k(f"turn {n}")] for n in range(7)}
    plans[3] = [read("data/file3.txt"), ("bash", {"command": f"touch {marker}; sleep 60"})]
    handler = (PlanServer if api == "openai-completions" else AnthropicPlanServer)(plans, LIMITS)
    # compacting at the turn boundary before turn 4 would summarise the call this test looks for
    hard_only = {"compaction": {"softThreshold": 1}}
    cwd, env = make_project(tmp_path, serve(servers, handler), [SMALL], hard_only, api=api)
    for n in sorted(plans):
        if n == 3:
            run_print_killed(cwd, env, handler, n, "local/small", started=marker)
            continue
        assert run_print(cwd, env, handler, n, "local/small", first=n == 0) == f"done with turn {n}"
    assert handler.rejected == 0
    assert audit(handler) == []
    # the session's own requests of turn 4 (a background summary request may come first)
    rows = zip(handler.bodies, handler.turns, strict=True)
    after = [b for b, t in rows if t == 4 and not is_summary_body(b)]
    results = [m for m in after[0]["messages"] if m.get("tool_call_id") == "call_3_1"]
    assert len(results) == 1 and "did not finish" in text_of(results[0])


SWITCH: dict[int, list[Step]] = {
    n: [read(f"data/file{n % 4}.txt"), bash_100k(f"turn {n}"), read("data/small.txt")] for n in range(10)
}


@pytest.mark.parametrize("report_usage", [True, False], ids=["usage", "zero-usage"])
def test_switch_to_a_smaller_window_rpc_and_print_send_the_same_bytes(
    tmp_path: Path, servers: list[LocalServer], report_usage: bool
) -> None:
    """Five turns on a 32k model, then ``--model`` a 16k one (``set_model`` in rpc): the
    first request on the small model already fits it, and both drives send the same bytes."""
    one = PlanServer(SWITCH, LIMITS, report_usage=report_usage)
    many = PlanServer(SWITCH, LIMITS, report_usage=report_usage)
    cwd_one, env_one = make_project(tmp_path / "rpc1", serve(servers, one), [SMALL, BIG])
    cwd_many, env_many = make_project(tmp_path / "prnt", serve(servers, many), [SMALL, BIG])
    rpc = Rpc(cwd_one, env_one, "local/big")
    try:
        for n in sorted(SWITCH):
            if n == 5:
                rpc.set_model("local/small")
            assert rpc.turn(one, n) == f"done with turn {n}"
    finally:
        rpc.close()
    for n in sorted(SWITCH):
        model = "local/big" if n < 5 else "local/small"
        assert run_print(cwd_many, env_many, many, n, model, first=n == 0) == f"done with turn {n}"
    assert one.rejected == many.rejected == 0
    assert audit(one) == [] and audit(many) == []
    assert {b["model"] for b in one.bodies} == {"big", "small"}
    rpc_bodies = normalised(session_bodies(one), tmp_path / "rpc1")
    print_bodies = normalised(session_bodies(many), tmp_path / "prnt")
    dump_on_difference(rpc_bodies, print_bodies)
    assert rpc_bodies == print_bodies


def test_anthropic_wire_mixed_plan_rpc_and_print_send_the_same_bytes(
    tmp_path: Path, servers: list[LocalServer]
) -> None:
    """The mixed plan behind Anthropic's Messages API, whose server states a limit (12,000)
    below the configured window: one rejection at most per drive, then the rules hold."""
    limits = {"small": 12_000}
    one, many = AnthropicPlanServer(MIXED, limits), AnthropicPlanServer(MIXED, limits)
    api = "anthropic-messages"
    drive_both(tmp_path, servers, one, many, MIXED, api)
    assert one.rejected <= 1 and many.rejected <= 1
    assert audit(one) == [] and audit(many) == []
    first, second = normalised(session_raw(one), tmp_path / "rpc1"), normalised(session_raw(many), tmp_path / "prnt")
    dump_on_difference(first, second)
    assert first == second


def _age_session_header(path: Path, iso: str) -> None:
    """Make the session look as if it started on another day (its header's timestamp)."""
    lines = path.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["timestamp"] = iso
    path.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))


def test_switching_sessions_in_rpc_sends_what_a_new_process_on_that_session_sends(
    tmp_path: Path, servers: list[LocalServer]
) -> None:
    """An older session B (its own start date, a learnt limit) and a new session A: one rpc
    process works in A, then ``switch_session`` to B for two turns; a new ``heron -p --session B``
    per turn must send the same requests for B (date, tool limits, memory: B's, not A's)."""
    plans = {n: [read(f"data/file{n % 4}.txt"), bash_100k(f"turn {n}")] for n in range(8)}
    handler = PlanServer(plans, {"small": 12_000})
    cwd, env = make_project(tmp_path, serve(servers, handler), [SMALL])
    for n in range(3):  # session B: learns the 12,000 limit
        run_print(cwd, env, handler, n, "local/small", first=n == 0)
    sessions = sorted(Path(env["HERON_HOME"]).rglob("*.jsonl"))
    assert len(sessions) == 1
    b_path = sessions[0]
    _age_session_header(b_path, "2020-01-02T10:00:00.000Z")
    copy = tmp_path / "b-copy.jsonl"
    copy.write_bytes(b_path.read_bytes())
    # the rpc drive: a new session A for turns 3-4, then B for turns 5-6
    rpc = Rpc(cwd, env, "local/small")
    try:
        rpc.turn(handler, 3)
        rpc.turn(handler, 4)
        ident = f"c{rpc.ids + 1}"
        events = rpc.command(
            {"type": "switch_session", "sessionPath": str(b_path)},
            lambda e: e.get("type") == "response" and e.get("id") == ident,
        )
        assert events[-1].get("success"), events[-1]
        start = len(handler.bodies)
        rpc.turn(handler, 5)
        rpc.turn(handler, 6)
    finally:
        rpc.close()
    in_rpc, rpc_start = handler.bodies[start:], start
    # the same two turns on B's copy, a new process each
    b_path.write_bytes(copy.read_bytes())
    for spilled in Path(env["HERON_HOME"], "tool-output").rglob("*call_[56]_*"):
        spilled.unlink()  # the first drive's spill files would make the second's names unique
    handler.served.pop(5), handler.served.pop(6)
    start = len(handler.bodies)
    for n in (5, 6):
        handler.turn = n
        done = __import__("subprocess").run(
            [*heron_cmd(), "--model", "local/small", "-p", prompt_of(n), "--session", str(b_path)],
            cwd=cwd,
            env=env,
            stdin=__import__("subprocess").DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    fresh = handler.bodies[start:]
    assert audit(handler, 0, start) == [] and audit(handler, rpc_start, start) == [] and audit(handler, start) == []
    first = normalised([b for b in in_rpc if not is_summary_body(b)], tmp_path)
    second = normalised([b for b in fresh if not is_summary_body(b)], tmp_path)
    dump_on_difference(first, second)
    assert first == second


class StatesTheWindow(PlanServer):
    """Enforces 12,000 but its error names the configured 16,384 (with its own count)."""

    def reject(self, limit: int, total: int) -> Reply:
        return super().reject(SMALL["contextWindow"], total)


def test_a_server_stating_its_full_window_but_enforcing_less_costs_one_rejection(
    tmp_path: Path, servers: list[LocalServer]
) -> None:
    plans = {n: [read(f"data/file{n % 4}.txt"), bash_100k(f"turn {n}"), read("data/small.txt")] for n in range(8)}
    handler = StatesTheWindow(plans, {"small": 12_000})
    cwd, env = make_project(tmp_path, serve(servers, handler), [SMALL])
    for n in sorted(plans):
        assert run_print(cwd, env, handler, n, "local/small", first=n == 0) == f"done with turn {n}"
    assert handler.rejected <= 1
    assert audit(handler) == []


def test_a_turn_that_ends_on_a_server_error_then_more_turns_rpc_and_print_send_the_same_bytes(
    tmp_path: Path, servers: list[LocalServer]
) -> None:
    """Turn 3's second step fails with 500 until the retries run out: the turn ends on an
    error reply; the next turns go on, and a long-lived and a per-turn drive agree."""
    plans = {n: [read(f"data/file{n % 4}.txt"), bash_100k(f"turn {n}"), read("data/small.txt")] for n in range(7)}
    settings = {"retry": {"maxRetries": 1, "baseDelayMs": 1, "maxDelayMs": 5}}
    one, many = PlanServer(plans, LIMITS), PlanServer(plans, LIMITS)
    one.failing = many.failing = {(3, 1)}
    cwd_one, env_one = make_project(tmp_path / "rpc1", serve(servers, one), [SMALL], settings)
    cwd_many, env_many = make_project(tmp_path / "prnt", serve(servers, many), [SMALL], settings)
    rpc = Rpc(cwd_one, env_one, "local/small")
    try:
        for n in sorted(plans):
            if n == 3:
                one.turn, wanted = 3, f"c{rpc.ids + 1}"
                events = rpc.command(
                    {"type": "prompt", "message": prompt_of(3)},
                    lambda e, wanted=wanted: e.get("type") == "run_end" and e.get("id") == wanted,
                )
                assert events[-1].get("error"), "the turn ends on the server error"
                continue
            assert rpc.turn(one, n) == f"done with turn {n}"
    finally:
        rpc.close()
    for n in sorted(plans):
        many.turn = n
        args = [*heron_cmd(), "--model", "local/small", "-p", prompt_of(n), *(["--continue"] if n else [])]
        done = __import__("subprocess").run(
            args,
            cwd=cwd_many,
            env=env_many,
            stdin=__import__("subprocess").DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (done.returncode == 0) == (n != 3), done.stderr[-2000:]
    assert one.rejected == many.rejected == 0
    assert audit(one) == [] and audit(many) == []
    first = normalised(session_bodies(one), tmp_path / "rpc1")
    second = normalised(session_bodies(many), tmp_path / "prnt")
    dump_on_difference(first, second)
    assert first == second


PARALLEL: dict[int, list[Step]] = {
    0: [read("data/file0.txt")],
    1: [bash_100k("turn 1")],
    2: [[read("data/file1.txt"), read("data/file2.txt"), bash_100k("turn 2"), read("data/file3.txt")]],
    3: [[read("data/file1.txt"), read("data/small.txt"), read("data/small.txt")]],
    4: [read("data/file2.txt")],
    5: [[bash_100k(f"turn 5 {tag}") for tag in "abcde"]],
    6: [[read("data/file0.txt"), read("data/small.txt")]],
}


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_several_calls_per_reply_rpc_and_print_send_the_same_bytes(
    tmp_path: Path, servers: list[LocalServer], api: str, bubblewrap: str | None
) -> None:
    """Replies with up to five calls (four results of ~15% of the window each at once, which
    pruning may not touch: a compaction keeps the running turn's prompt), on both wires;
    with bubblewrap and without it."""
    kind = PlanServer if api == "openai-completions" else AnthropicPlanServer
    one, many = kind(PARALLEL, LIMITS), kind(PARALLEL, LIMITS)
    drive_both(tmp_path, servers, one, many, PARALLEL, api, path=bubblewrap)
    assert one.rejected == many.rejected == 0
    assert audit(one) == [] and audit(many) == []
    assert any(UNCHANGED in str(b) for b in one.bodies), "a re-read from an earlier reply is de-duplicated"
    first, second = normalised(session_raw(one), tmp_path / "rpc1"), normalised(session_raw(many), tmp_path / "prnt")
    dump_on_difference(first, second)
    assert first == second


def test_everything_at_once_one_process_per_turn(tmp_path: Path, servers: list[LocalServer]) -> None:
    """Big reads, bash output, re-reads of pruned files, a task list, a turn of six big
    results (split-turn compaction), a switch to a smaller model whose server enforces less
    than its configured window and reports no usage, and a kill -9 while a tool runs - one
    process per turn. The rules hold in every request; each model's limit costs at most one
    rejection."""
    marker = tmp_path / "bash-started"
    plans: dict[int, list[Step]] = {
        0: [read("data/file0.txt"), TODOS],
        1: [bash_100k("turn 1"), read("data/small.txt")],
        2: [read("data/file1.txt"), read("data/file0.txt")],
        3: [bash_100k(f"turn 3 {i}") for i in range(6)],
        4: [read("data/file0.txt"), read("data/small.txt")],
        5: [read("data/file2.txt"), ("bash", {"command": f"touch {marker}; sleep 60"})],
        6: [read("data/file2.txt"), read("data/small.txt"), TODOS],
        7: [[read("data/file3.txt"), bash_100k("turn 7")], read("data/file3.txt")],
        8: [read("data/file1.txt"), read("data/small.txt")],
        9: [read("data/file0.txt")],
    }
    handler = PlanServer(plans, {"big": 32_768, "small": 12_000}, report_usage=False)
    cwd, env = make_project(tmp_path, serve(servers, handler), [SMALL, BIG])
    rejected_big = 0
    for n in sorted(plans):
        model = "local/big" if n < 4 else "local/small"
        if n == 4:
            rejected_big = handler.rejected
        if n == 5:
            run_print_killed(cwd, env, handler, n, model, started=marker)
            continue
        assert run_print(cwd, env, handler, n, model, first=n == 0) == f"done with turn {n}"
    assert rejected_big == 0 and handler.rejected <= 1
    assert audit(handler) == []
    sent = [json.dumps(b) for b in handler.bodies]
    assert any(PRUNED in b for b in sent) and any(is_summary_text(b) for b in sent)
    assert any(UNCHANGED in b for b in sent)
