"""More of the goal loop through the real ``heron``: the Anthropic wire, an evaluator
model on the same server (``goal.evaluator``), an rpc ``prompt`` that steers a running
loop, and the interactive mode in a pseudo-terminal - Esc pauses the loop, a typed prompt
takes it up, and a session killed mid-loop is offered to be picked up on resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from heron.coding.goal_evaluator import SYSTEM_PROMPT
from heron.context.continuity.goal_loop import CONTINUATION_TEXT, EVALUATION_TYPE, VERDICT_TYPE
from tests.cli.test_interactive import dirs, environment, exit_with_ctrl_d, spawn
from tests.cli.test_print_json_e2e import Project, anthropic_provider, heron_command, openai_args, project
from tests.support.goal_model import FINAL, GoalModel, text_of
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_reply

__all__ = ["dirs", "project", "spawn"]

GOAL = "Run the three steps of the release checklist."


def test_the_loop_on_the_anthropic_wire(project: Project) -> None:
    script = GoalModel(wire="anthropic")
    server = LocalServer(script)
    try:
        project.write_models(anthropic_provider(server))
        result = project.run("--model", "local-claude/claude-local", "-p", "--goal", GOAL, "start")
    finally:
        server.close()
    assert result.code == 0, result.err
    assert result.out == FINAL + "\n"
    assert len(script.bodies) == 8 and script.requests_with_goal_tool() == [True] * 8
    sent = [text_of(m["content"]) for m in script.bodies[-1]["messages"] if m["role"] == "user"]
    assert sum(CONTINUATION_TEXT in t for t in sent) == 3


def test_an_evaluator_model_judges_each_step_and_its_reason_steers_the_next(project: Project) -> None:
    worker = GoalModel(complete=False)
    judged: list[dict[str, Any]] = []
    verdicts = iter([{"met": False, "reason": "step 2 has not run"}, {"met": True, "reason": "steps ran"}])

    def respond(request: Recorded) -> Reply:
        body = request.json()
        if body["model"] != "judge":
            return worker(request)
        judged.append(body)
        return openai_reply(json.dumps(next(verdicts)))

    server = LocalServer(respond)
    models = [{"id": "worker"}, {"id": "judge"}]
    try:
        project.write_models({"local": {"baseUrl": server.url + "/v1", "api": "openai-completions", "models": models}})
        project.write_settings({"goal": {"evaluator": "local/judge"}})
        result = project.run("--mode", "json", "-p", "--model", "local/worker", "--goal", GOAL, "start")
    finally:
        server.close()
    assert result.code == 0, result.err
    end = result.lines()[-1]
    assert end["goal"] == {"steps": 1, "max_turns": 20, "stop": "complete", "evidence": "steps ran"}
    assert len(judged) == 2 and len(worker.bodies) == 4
    assert judged[0]["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert f"<goal>\n{GOAL}\n</goal>" in judged[0]["messages"][1]["content"]
    assert "- bash echo step 1 -> step 1" in judged[0]["messages"][1]["content"]
    steered = text_of(worker.bodies[2]["messages"][-1]["content"])
    assert steered == CONTINUATION_TEXT + (
        "\n\n<goal-check>\nNot met yet, in the judgement of local/judge: step 2 has not run\n</goal-check>"
    )
    lines = project.session_lines()
    assert [e["data"]["reason"] for e in lines if e.get("customType") == EVALUATION_TYPE] == ["step 2 has not run"]
    assert [e["data"]["source"] for e in lines if e.get("customType") == VERDICT_TYPE] == ["evaluator"]


def test_an_rpc_prompt_steers_the_running_loop(project: Project) -> None:
    script = GoalModel(complete=False)
    arrived = threading.Event()

    def respond(request: Recorded) -> Reply:
        messages = request.json()["messages"]
        if messages[-1]["role"] == "user" and CONTINUATION_TEXT in text_of(messages[-1]["content"]):
            arrived.set()
            time.sleep(1.0)  # the first step of heron's own is under way while the user types
        return script(request)

    server = LocalServer(respond)
    child = subprocess.Popen(
        [*heron_command(), "--mode", "rpc", "--goal", GOAL, "--goal-turns", "1", *openai_args(server)],
        cwd=project.cwd,
        env=project.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    events: list[dict[str, Any]] = []

    def send(command: dict[str, Any]) -> None:
        assert child.stdin is not None
        child.stdin.write(json.dumps(command) + "\n")
        child.stdin.flush()

    try:
        send({"id": "p1", "type": "prompt", "message": "start"})
        assert arrived.wait(60)
        send({"id": "p2", "type": "prompt", "message": "also write the changelog"})
        for raw in child.stdout:
            events.append(json.loads(raw))
            if events[-1].get("type") == "run_end":
                break
    finally:
        child.stdin.close()
        child.wait(timeout=60)
        server.close()
    [queued] = [e for e in events if e.get("type") == "response" and e.get("id") == "p2"]
    assert queued["success"] and queued["data"]["disposition"] == "queued"
    end = events[-1]
    assert end["id"] == "p1" and end["error_kind"] == "goal_turns"
    assert end["goal"]["steps"] == 1  # one continuation after the user's words, as the cap allows
    users = [text_of(m["content"]) for m in script.bodies[-1]["messages"] if m["role"] == "user"]
    assert "also write the changelog" in users  # delivered inside the step under way


pexpect = pytest.importorskip("pexpect")
needs_pty = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")


@needs_pty
def test_esc_pauses_the_loop_and_a_prompt_takes_it_up(spawn: Any, local_server: LocalServer) -> None:
    script = GoalModel(complete=False, hang_at=2)  # heron's first step of its own waits for ever
    local_server.responder = script
    child = spawn("--goal", GOAL, "--goal-turns", "1")
    child.send("start\r")
    child.expect(r"continuation 1 of at most 1\)")
    deadline = time.monotonic() + 60
    while not script.held:
        assert time.monotonic() < deadline, "the continuation never reached the server"
        time.sleep(0.05)
    child.send("\x1b")
    child.expect(r"goal loop ended \(aborted\) after 1 automatic continuation")
    child.send("keep going\r")
    child.expect(r"goal loop ended \(goal_turns\) after 1 automatic continuation")
    last = script.bodies[-1]["messages"]
    users = [text_of(m["content"]) for m in last if m["role"] == "user"]
    assert users[-2:] == ["keep going", CONTINUATION_TEXT]  # the user's words, then one continuation
    exit_with_ctrl_d(child)


@needs_pty
def test_a_session_killed_mid_loop_is_offered_to_be_picked_up(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    home, cwd = dirs
    script = GoalModel(hang_at=3)
    local_server.responder = script
    argv = [sys.executable, "-m", "heron.cli.main", "--base-url", f"{local_server.url}/v1", "--model", "test-model"]
    process = subprocess.Popen(
        [*argv, "-p", "--goal", GOAL, "start"],
        cwd=cwd,
        env=environment(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not script.held:
        assert process.poll() is None and time.monotonic() < deadline, "the loop never reached the kill point"
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    child = spawn("--continue")
    child.expect("the goal loop stopped before the goal was met")
    child.expect("Enter picks it up")
    child.send("\r")
    child.expect(r"goal loop ended \(complete\) after 3 automatic continuation")
    assert len(script.bodies) == 8
    exit_with_ctrl_d(child)
