"""The goal loop's state lives in the session: a process killed in the middle of the loop
leaves a session that ``heron -p --continue`` (no task) picks up where it stopped, and one
``heron --mode rpc`` process sends the requests that a ``heron -p`` process per prompt
sends - the ``goal`` tool offered exactly while the goal is active, in both.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from heron.ai.adapt import NO_RESULT_TEXT
from tests.cli.audit_harness import heron, make_project
from tests.cli.test_context_restarts import normalised
from tests.support.goal_model import FINAL, GoalModel
from tests.support.http_server import LocalServer

GOAL = "Run the three steps of the release checklist."
SECOND = "Tag the release."
MODEL = [{"id": "m", "contextWindow": 64_000, "maxTokens": 2_048}]
TIMEOUT = 120
# the prompts of one session: the loop runs to the goal; a prompt after it (no goal tool,
# no loop); a new goal (no request); the loop again; one more prompt after it
PROMPTS = ["start", "now sum it up", f"/goal {SECOND}", "go", "thanks"]


def run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*heron(), "--model", "local/m", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def kill_when(child: subprocess.Popen[bytes], ready: Any) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not ready():
        assert child.poll() is None, "heron exited before the kill point"
        assert time.monotonic() < deadline, "the kill point was never reached"
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)


def start(cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*heron(), "--model", "local/m", "-p", "--goal", GOAL, "start"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def session_lines(env: dict[str, str]) -> list[dict[str, Any]]:
    [path] = list((Path(env["HERON_HOME"]) / "sessions").rglob("*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_killed_while_waiting_for_an_answer_then_continue_resumes_and_completes(tmp_path: Path) -> None:
    script = GoalModel(hang_at=3)  # the first request after the second continuation is held
    server = LocalServer(script)
    try:
        cwd, env = make_project(tmp_path, server.url, MODEL)
        kill_when(start(cwd, env), lambda: bool(script.held))
        done = run(cwd, env, "-p", "--continue")
    finally:
        server.close()
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == FINAL
    assert f"heron: picking up the goal loop: {GOAL}" in done.stderr
    assert "goal loop ended (complete) after 3 automatic continuation(s)" in done.stderr
    [held] = script.held
    resumed = script.bodies[4]  # the four answered before the kill, then the held one again
    assert normalised([resumed], tmp_path) == normalised([held], tmp_path)
    assert len(script.bodies) == 8


def test_killed_while_a_tool_ran_then_continue_resumes_and_completes(tmp_path: Path) -> None:
    script = GoalModel(slow_at=2)  # step 2's command sleeps once it has created `started`
    server = LocalServer(script)
    try:
        cwd, env = make_project(tmp_path, server.url, MODEL)
        kill_when(start(cwd, env), (cwd / "started").exists)
        done = run(cwd, env, "-p", "--continue")
    finally:
        server.close()
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == FINAL
    after = script.bodies[3]["messages"]  # the first request of the resumed process
    assert after[-1] == {"role": "tool", "tool_call_id": "call_2", "content": NO_RESULT_TEXT}
    results = [e["message"] for e in session_lines(env) if e.get("message", {}).get("role") == "toolResult"]
    assert [r["toolCallId"] for r in results].count("call_2") == 1  # recorded once, as sent
    assert len(script.bodies) == 8


def test_blocked_stops_with_why_and_the_users_answer_takes_the_loop_up(tmp_path: Path) -> None:
    script = GoalModel(blocked_at=2)
    server = LocalServer(script)
    try:
        cwd, env = make_project(tmp_path, server.url, MODEL)
        blocked = run(cwd, env, "-p", "--goal", GOAL, "start")
        idle = run(cwd, env, "-p", "--continue")
        answered = run(cwd, env, "-p", "--continue", "the key is in .env now")
    finally:
        server.close()
    assert blocked.returncode == 5, blocked.stderr
    assert blocked.stdout == ""
    assert "heron: stopped: the goal is blocked: the deploy key is missing; put it in .env." in blocked.stderr
    assert "goal loop ended (blocked) after 1 automatic continuation(s)" in blocked.stderr
    assert idle.returncode == 2 and "the goal is blocked: the deploy key is missing" in idle.stderr
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.strip() == FINAL
    assert "goal loop ended (complete) after 2 automatic continuation(s)" in answered.stderr


def test_max_turns_and_the_goal_budget_stop_the_loop_with_their_own_reasons(tmp_path: Path) -> None:
    script = GoalModel(complete=False)
    server = LocalServer(script)
    try:
        cwd, env = make_project(tmp_path / "turns", server.url, MODEL)
        turns = run(cwd, env, "--mode", "json", "-p", "--goal", GOAL, "--max-turns", "5", "start")
        cwd, env = make_project(tmp_path / "budget", server.url, MODEL)
        budget = run(cwd, env, "--mode", "json", "-p", "--goal", GOAL, "--goal-budget", "1000", "start")
    finally:
        server.close()
    ends = [json.loads(r.stdout.splitlines()[-1]) for r in (turns, budget)]
    assert [r.returncode for r in (turns, budget)] == [4, 4]
    assert [e["error_kind"] for e in ends] == ["turn_limit", "goal_budget"]
    assert [e["goal"]["stop"] for e in ends] == ["max_turns", "goal_budget"]
    assert ends[0]["goal"]["steps"] == 2  # five model calls across the steps: the allowance is the run's
    assert ends[1]["goal"]["steps"] == 4  # 120 tokens per answer: the budget is spent after the ninth
    assert len(script.bodies) == 5 + 9


def drive_print(cwd: Path, env: dict[str, str]) -> None:
    for n, text in enumerate(PROMPTS):
        done = run(cwd, env, "-p", *(["--continue"] if n else ["--goal", GOAL]), text)
        assert done.returncode == 0, f"prompt {n}: {done.stderr[-2000:]}"


def drive_rpc(cwd: Path, env: dict[str, str]) -> list[Any]:
    """The prompts in one process; each run's ``goal`` report, in order."""
    child = subprocess.Popen(
        [*heron(), "--model", "local/m", "--mode", "rpc", "--goal", GOAL],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    reports: list[Any] = []
    try:
        for n, text in enumerate(PROMPTS):
            child.stdin.write(json.dumps({"id": n, "type": "prompt", "message": text}) + "\n")
            child.stdin.flush()
            for raw in child.stdout:
                event = json.loads(raw)
                if event.get("type") == "run_end" and event.get("id") == n:
                    assert event["error"] is None, f"prompt {n}: {event}"
                    reports.append(event["goal"] and (event["goal"]["stop"], event["goal"]["steps"]))
                    break
    finally:
        child.stdin.close()
        child.wait(timeout=60)
    return reports


def test_one_process_and_a_process_per_prompt_send_the_same_bytes(tmp_path: Path) -> None:
    one, many = GoalModel(), GoalModel()
    servers = [LocalServer(one), LocalServer(many)]
    try:
        cwd, env = make_project(tmp_path / "one", servers[0].url, MODEL)
        reports = drive_rpc(cwd, env)
        cwd, env = make_project(tmp_path / "many", servers[1].url, MODEL)
        drive_print(cwd, env)
    finally:
        for server in servers:
            server.close()
    assert normalised(one.bodies, tmp_path / "one") == normalised(many.bodies, tmp_path / "many")
    # the loop to the first goal (8 requests), the prompt after it, the second goal met at
    # once (its call and the answer after it), the prompt after that
    assert one.requests_with_goal_tool() == [True] * 8 + [False] + [True, True] + [False]
    assert one.bodies[8]["messages"][-1] == {"role": "user", "content": "now sum it up"}
    # a prompt after the goal was met is an ordinary run: no loop, nothing to report
    assert reports == [("complete", 3), None, None, ("complete", 0), None]
