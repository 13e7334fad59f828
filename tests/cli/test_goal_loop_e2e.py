"""The goal loop through the real ``heron`` command, against a scripted model that needs
three steps (a ``bash`` call and an answer each) and then calls ``goal`` with ``complete``
(:class:`tests.support.goal_model.GoalModel`): one ``heron -p --goal TEXT "start"`` runs
every step and stops after the answer that follows the completion, in print, json, rpc
and ACP mode, each reporting the loop's steps and its stop reason. The requests are
checked as the model receives them: the continuation is the same bytes every time, and
the ``goal`` tool is offered while the goal is active.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from heron.cli.modes.print_mode import LIMIT_EXIT
from heron.context.continuity.goal_loop import CONTINUATION_TEXT, CONTINUATION_TYPE, VERDICT_TYPE, turns_stop_text
from tests.cli.test_acp_e2e import Editor, fold, heron_acp, new_session, prompt
from tests.cli.test_print_json_e2e import Project, heron_command, openai_args, project
from tests.support.goal_model import EVIDENCE, FINAL, GoalModel, text_of
from tests.support.http_server import LocalServer

__all__ = ["project"]

GOAL = "Run the three steps of the release checklist."
COMPLETE = {"steps": 3, "max_turns": 20, "stop": "complete", "evidence": EVIDENCE}


@pytest.fixture
def model() -> Iterator[tuple[GoalModel, LocalServer]]:
    script = GoalModel()
    server = LocalServer(script)
    yield script, server
    server.close()


def continuations(body: dict[str, Any]) -> list[str]:
    return [text_of(m["content"]) for m in body["messages"] if CONTINUATION_TEXT in text_of(m.get("content"))]


def check_requests(script: GoalModel) -> None:
    """Eight requests: two per step (the call, then the answer), the goal tool in each, the
    continuations the same bytes, one more in each step's first request."""
    assert len(script.bodies) == 8
    assert script.requests_with_goal_tool() == [True] * 8
    assert [len(continuations(b)) for b in script.bodies] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert {c for b in script.bodies for c in continuations(b)} == {CONTINUATION_TEXT}
    last = script.bodies[-1]["messages"]
    assert last[1]["role"] == "user" and f"<goal>\n{GOAL}\n</goal>" in last[1]["content"]
    assert last[-1]["role"] == "tool" and "Recorded: the goal is met" in last[-1]["content"]


def test_print_runs_every_step_and_stops_after_the_answer_that_follows_completion(
    project: Project, model: tuple[GoalModel, LocalServer]
) -> None:
    script, server = model
    result = project.run("-p", "--goal", GOAL, "start", *openai_args(server))
    assert result.code == 0, result.err
    assert result.out == FINAL + "\n"
    assert f"heron: goal loop ended (complete) after 3 automatic continuation(s): {EVIDENCE}" in result.err
    check_requests(script)
    lines = project.session_lines()
    verdicts = [line["data"] for line in lines if line.get("customType") == VERDICT_TYPE]
    assert verdicts == [{"status": "complete", "evidence": EVIDENCE, "source": "tool"}]
    sent = [line["message"] for line in lines if line.get("message", {}).get("customType") == CONTINUATION_TYPE]
    assert [m["content"] for m in sent] == [CONTINUATION_TEXT] * 3  # recorded in the session


def test_json_reports_each_step_and_the_stop(project: Project, model: tuple[GoalModel, LocalServer]) -> None:
    script, server = model
    result = project.run("--mode", "json", "-p", "--goal", GOAL, "start", *openai_args(server))
    assert result.code == 0, result.err
    events = result.lines()
    loop = [e for e in events if e.get("type") == "goal_loop"]
    assert [(e["state"], e["steps"]) for e in loop] == [("step", 1), ("step", 2), ("step", 3), ("end", 3)]
    assert loop[-1]["stop"] == "complete"
    end = events[-1]
    assert end["type"] == "run_end" and end["stop_reason"] == "stop" and end["goal"] == COMPLETE
    check_requests(script)


def test_rpc_reports_the_steps_and_the_stop_in_run_end(project: Project, model: tuple[GoalModel, LocalServer]) -> None:
    script, server = model
    child = subprocess.Popen(
        [*heron_command(), "--mode", "rpc", "--goal", GOAL, *openai_args(server)],
        cwd=project.cwd,
        env=project.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    events: list[dict[str, Any]] = []
    try:
        child.stdin.write(json.dumps({"id": "p1", "type": "prompt", "message": "start"}) + "\n")
        child.stdin.flush()
        for raw in child.stdout:
            events.append(json.loads(raw))
            if events[-1].get("type") == "run_end":
                break
    finally:
        child.stdin.close()
        child.wait(timeout=60)
    end = events[-1]
    assert end["id"] == "p1" and end["stop_reason"] == "stop" and end["error"] is None
    assert end["goal"] == COMPLETE
    assert [e["steps"] for e in events if e.get("type") == "goal_loop"] == [1, 2, 3, 3]
    check_requests(script)


def test_acp_reports_the_steps_and_ends_the_turn(project: Project, model: tuple[GoalModel, LocalServer]) -> None:
    script, server = model
    editor = Editor()

    async def run() -> Any:
        async with heron_acp(project, server, editor) as conn:
            sid = await new_session(conn, project)
            await prompt(conn, sid, f"/goal {GOAL}")
            return await prompt(conn, sid, "start")

    response = asyncio.run(run())
    assert response.stop_reason == "end_turn"
    assert response.field_meta == {"heron": {"goal": COMPLETE}}
    messages = [u[1] for u in fold(editor.updates) if isinstance(u, tuple) and u[0] == "agent_message_chunk"]
    said = "".join(messages)
    for n in (1, 2, 3):
        assert f"[goal loop: going on by itself (continuation {n} of at most 20)]" in said
    ended = f"[goal loop ended (complete) after 3 automatic continuation(s): {EVIDENCE}]"
    assert said.rstrip().endswith(FINAL + "\n\n" + ended)  # the line naming the stop comes last
    check_requests(script)


def test_a_model_that_never_completes_stops_at_goal_turns(project: Project) -> None:
    script = GoalModel(complete=False)
    server = LocalServer(script)
    try:
        result = project.run("-p", "--goal", GOAL, "--goal-turns", "3", "start", *openai_args(server))
        first = len(script.bodies)
        listed = project.run("--mode", "json", "-p", "--continue", *openai_args(server))
    finally:
        server.close()
    assert result.code == LIMIT_EXIT
    assert result.out == ""
    assert f"heron: {turns_stop_text(3)}" in result.err
    assert "heron: goal loop ended (goal_turns) after 3 automatic continuation(s)" in result.err
    assert first == 8  # the prompt's step and three continuations, two requests each
    stops = [line["message"] for line in project.session_lines() if line.get("message", {}).get("errorKind")]
    assert [(m["errorKind"], m["stopReason"]) for m in stops] == [("goal_turns", "error")] * 2  # one per run
    # at the cap (the default 20 is not given: --goal-turns is per process) the loop goes on
    # from where it stopped: --continue without a task picks it up
    assert listed.code == LIMIT_EXIT, listed.err
    assert "picking up the goal loop" in listed.err
    end = listed.lines()[-1]
    assert end["error_kind"] == "goal_turns" and end["goal"]["steps"] == 20
    assert len(script.bodies) == first + 2 * 17


def test_continue_without_a_task_at_the_cap_says_why(project: Project) -> None:
    script = GoalModel(complete=False)
    server = LocalServer(script)
    try:
        project.run("-p", "--goal", GOAL, "--goal-turns", "1", "start", *openai_args(server))
        again = project.run("-p", "--continue", "--goal-turns", "1", *openai_args(server))
    finally:
        server.close()
    assert again.code == 2
    assert "the goal loop stopped at its limit of 1 continuations (raise it with --goal-turns N)" in again.err
    assert len(script.bodies) == 4


@pytest.mark.parametrize("value", ["-1", "many"])
def test_a_bad_goal_turns_is_a_usage_error(project: Project, value: str) -> None:
    result = project.run("-p", "--goal", GOAL, "--goal-turns", value, "start", "--base-url", "http://127.0.0.1:9/v1")
    assert result.code == 2
    assert "--goal-turns" in result.err
    assert project.session_files() == []


def test_a_goal_set_without_a_prompt_has_no_loop_to_pick_up(project: Project) -> None:
    script = GoalModel()
    server = LocalServer(script)
    try:
        set_first = project.run("-p", f"/goal {GOAL}", *openai_args(server))
        again = project.run("-p", "--continue", *openai_args(server))
    finally:
        server.close()
    assert set_first.code == 0, set_first.err
    assert again.code == 2 and "the goal loop starts with the next prompt" in again.err
    assert script.bodies == []
