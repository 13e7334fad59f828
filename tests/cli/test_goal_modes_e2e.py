"""``/goal`` typed as a prompt in the modes without a terminal: ACP (the editor gets the
reply as the agent's message, the goal leads the next request) and rpc (the reply is the
run's answer in ``run_end``, a ``goal`` event carries the goal)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

from heron.cli.modes.run_end import run_answers
from tests.cli.test_acp_e2e import Editor, fold, heron_acp, new_session, prompt
from tests.cli.test_print_json_e2e import Project, heron_command, openai_args, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]

GOAL = "Keep greet.py printing hello, in every language asked for."
LOOP_OFF = {"goal": {"maxTurns": 0}}  # about /goal's answers: no step after the answer (test_goal_loop_e2e)


def test_acp_goal_command_answers_in_the_editor_and_leads_the_next_request(
    project: Project, local_server: LocalServer
) -> None:
    project.write_settings(LOOP_OFF)
    local_server.queue(openai_reply("Working on it."))
    editor = Editor()

    async def run() -> list[Any]:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            set_reply = await prompt(conn, sid, f"/goal {GOAL}")
            shown = await prompt(conn, sid, "/goal")
            answer = await prompt(conn, sid, "go on")
            return [set_reply.stop_reason, shown.stop_reason, answer.stop_reason]

    assert asyncio.run(run()) == ["end_turn", "end_turn", "end_turn"]
    folded = fold(editor.updates)
    assert folded[0] == ("agent_message_chunk", f"Goal set.\n\n{GOAL}")
    assert folded[1] == ("agent_message_chunk", GOAL)
    assert folded[2] == ("agent_message_chunk", "Working on it.")
    [request] = local_server.requests
    messages = request.json()["messages"]
    assert messages[1]["role"] == "user" and f"<goal>\n{GOAL}\n</goal>" in messages[1]["content"]
    assert messages[-1]["content"] == "go on"


def test_acp_bad_goal_input_is_an_error_for_the_editor(project: Project, local_server: LocalServer) -> None:
    editor = Editor()

    async def run() -> str:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            try:
                await prompt(conn, sid, "/goal --budget nope ship it")
            except Exception as exc:  # noqa: BLE001 - the JSON-RPC error the editor gets
                return str(exc) + json.dumps(getattr(exc, "data", None))
            return "no error"

    said = asyncio.run(run())
    assert "invalid token budget 'nope'" in said
    assert local_server.requests == []


def test_rpc_goal_command_is_the_runs_answer(project: Project, local_server: LocalServer) -> None:
    project.write_settings(LOOP_OFF)
    local_server.queue(openai_reply("On it."))
    child = subprocess.Popen(
        [*heron_command(), "--mode", "rpc", *openai_args(local_server)],
        cwd=project.cwd,
        env=project.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    ends: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    goals: list[dict[str, Any]] = []
    try:
        for n, text in enumerate([f"/goal --budget 50k {GOAL}", "/goal", "hello"]):
            child.stdin.write(json.dumps({"id": n, "type": "prompt", "message": text}) + "\n")
            child.stdin.flush()
            for raw in child.stdout:
                event = json.loads(raw)
                events.append(event)
                if event.get("type") == "goal":
                    goals.append(event)
                if event.get("type") == "run_end" and event.get("id") == n:
                    ends.append(event)
                    break
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    assert [e.get("error") for e in ends] == [None, None, None]
    answers = run_answers(events)
    assert answers[0] is not None and answers[0].startswith("Goal set.")
    assert "budget: 0 of 50,000 tokens spent" in answers[0]
    assert answers[1] is not None and answers[1].startswith(GOAL)
    assert answers[2] == "On it."
    assert [e["answer_chars"] for e in ends] == [len(a or "") for a in answers]
    assert goals[0]["goal"] == GOAL and goals[0]["budget"] == 50_000
    [request] = local_server.requests
    head = request.json()["messages"][1]["content"]
    assert f"<goal>\n{GOAL}\n</goal>" in head and "Token budget for this goal: 50,000 tokens; 50,000 left" in head
