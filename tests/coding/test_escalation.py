"""One command outside the sandbox, asked for by the model (``outside_sandbox``) and
approved through the permission flow (docs/permissions.md, "Running one command outside
the sandbox"): the decision alone, then the real ``heron -p`` (no one to ask: denied with
a way to allow it; ``--allow 'Unsandboxed(...)'`` pre-approves) and the real rpc mode
(``permission_request`` answered by the client)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from heron.ai.abort import AbortSignal
from heron.cli.modes.run_end import answer_at
from heron.coding.permissions.rules import parse_rule
from heron.coding.sandbox import Sandbox, SandboxPolicy
from heron.coding.sandbox.escalation import escalation_decision
from heron.coding.tools.bash import BashTool
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.params import BashParams
from tests.cli import test_interactive as tui
from tests.cli.test_acp_e2e import Editor, heron_acp, new_session, prompt
from tests.cli.test_interactive import answer as interactive_answer
from tests.cli.test_interactive import exit_with_ctrl_d
from tests.cli.test_interactive import footer as interactive_footer
from tests.cli.test_interactive_control import tool_call as interactive_call
from tests.cli.test_print_json_e2e import Project, openai_args, openai_tool_results, project
from tests.cli.test_rpc_mode import Client, turn
from tests.support.http_server import LocalServer
from tests.support.sandbox_fixtures import outside, sandbox_ready
from tests.support.sse import openai_reply

__all__ = ["outside", "project", "sandbox_ready"]
dirs = tui.dirs  # the interactive mode's fixtures
spawn = tui.spawn


def rules(*texts: str, behavior: str = "allow") -> list:  # type: ignore[type-arg]
    return [parse_rule(t, behavior, "test") for t in texts]  # type: ignore[arg-type]


def test_it_asks_with_the_reason_and_a_rule_that_would_allow_it() -> None:
    decision = escalation_decision([], "default", "npm install left-pad", "needs the registry")
    assert decision.behavior == "ask" and decision.reason == "escalation"
    assert "reason given: needs the registry" in decision.message
    assert decision.suggestion == "Unsandboxed(npm install:*)"
    compound = escalation_decision([], "default", "cd x && curl -O http://h/f", None)
    assert compound.suggestion == "Unsandboxed(cd x && curl -O http://h/f)" and "no reason given" in compound.message
    unreadable = escalation_decision([], "accept-edits", "echo 'unclosed", None)
    assert unreadable.behavior == "ask" and unreadable.suggestion == "Unsandboxed(echo 'unclosed)"


def test_allow_and_deny_rules_and_bypass_settle_it() -> None:
    allow = rules("Unsandboxed(npm install:*)")
    assert escalation_decision(allow, "default", "npm install x", None).behavior == "allow"
    # a compound line needs every command allowed
    assert escalation_decision(allow, "default", "npm install x && curl h", None).behavior == "ask"
    # a Bash allow rule is about running in the sandbox, not outside it
    assert escalation_decision(rules("Bash(npm:*)", "Bash"), "default", "npm install x", None).behavior == "ask"
    assert escalation_decision(rules("Unsandboxed"), "default", "anything at all", None).behavior == "allow"
    deny = rules("unsandboxed", behavior="deny")
    denied = escalation_decision(deny + allow, "bypass", "npm install x", None)
    assert denied.behavior == "deny" and 'deny rule "unsandboxed"' in denied.message
    assert escalation_decision([], "bypass", "curl h", None).behavior == "allow"


def call(target: Path, **extra: object) -> tuple[str, str, dict[str, object]]:
    return ("c1", "bash", {"command": f"touch {target}", **extra})


def test_print_mode_denies_it_with_the_way_to_allow_it(
    project: Project, local_server: LocalServer, outside: Path, sandbox_ready: None
) -> None:
    target = outside / "made"
    why = {"outside_sandbox": True, "justification": "the user asked for a file in /var/tmp"}
    local_server.queue(openai_reply("", [call(target, **why)]), openai_reply("done"))
    result = project.run(*openai_args(local_server), "-p", "go")
    assert result.code == 0, result.err
    seen = openai_tool_results(local_server.requests[-1])["c1"]
    assert "asks to run outside the sandbox" in seen and "the user asked for a file" in seen
    # `touch` writes outside the project, which `Unsandboxed(touch:*)` does not cover: the
    # way to allow it names the line (docs/permissions.md, "What a command rule covers")
    exact = f"Unsandboxed(touch {target})"
    assert f"--allow '{exact}'" in seen and not target.exists()
    local_server.queue(openai_reply("", [call(target, **why)]), openai_reply("done"))
    result = project.run(*openai_args(local_server), "--allow", "Unsandboxed(touch:*)", "-p", "go")
    assert result.code == 0, result.err
    assert not target.exists() and "asks to run outside" in openai_tool_results(local_server.requests[-1])["c1"]

    # pre-approved by an allow rule naming it: it runs outside, and says so
    local_server.queue(openai_reply("", [call(target, **why)]), openai_reply("done"))
    result = project.run(*openai_args(local_server), "--allow", exact, "-p", "go")
    assert result.code == 0, result.err
    assert target.exists()
    sessions = [p.read_text().replace(" ", "") for p in (project.home / "sessions").rglob("*.jsonl")]
    assert any('"escalated":true' in text for text in sessions)

    # without asking, the same command stays in the sandbox and fails at its edge
    other = outside / "other"
    local_server.queue(openai_reply("", [call(other)]), openai_reply("done"))
    result = project.run(*openai_args(local_server), "--allow", "Unsandboxed(touch:*)", "-p", "go")
    assert result.code == 0, result.err
    seen = openai_tool_results(local_server.requests[-1])["c1"]
    assert not other.exists() and "outside_sandbox" in seen  # the edge's hint names the way


def test_bad_values_are_a_clear_error(project: Project, local_server: LocalServer, outside: Path) -> None:
    local_server.queue(openai_reply("", [call(outside / "x", outside_sandbox="yes please")]), openai_reply("done"))
    result = project.run(*openai_args(local_server), "-p", "go")
    assert result.code == 0, result.err
    seen = openai_tool_results(local_server.requests[-1])["c1"]
    assert "outside_sandbox" in seen and not (outside / "x").exists()


def test_rpc_asks_the_client_and_allow_always_saves_the_rule(
    local_server: LocalServer, tmp_path: Path, outside: Path, sandbox_ready: None
) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    target = outside / "via-rpc"
    local_server.queue(
        turn("", [("call_1", "bash", {"command": f"touch {target}", "outside_sandbox": True})]), turn("Made it.")
    )
    client = Client(local_server, work, home, "--trust")
    try:
        client.call({"type": "prompt", "message": "go"})
        asked = client.until(lambda o: o["type"] == "permission_request")
        assert "asks to run outside the sandbox" in asked["message"]
        assert asked["suggestion"] == f"Unsandboxed(touch {target})" and not target.exists()
        client.send({"type": "permission_response", "id": asked["id"], "decision": "allow_always"})
        assert answer_at(client.seen, client.until(lambda o: o["type"] == "run_end")) == "Made it."
        assert target.exists()
        saved = json.loads((work / ".heron" / "settings.local.json").read_text())
        assert f"Unsandboxed(touch {target})" in saved["permissions"]["allow"]
    finally:
        client.kill()
    assert os.path.exists(target)


@pytest.mark.parametrize("answer", ["allow_once", "reject"])
def test_acp_asks_the_editor(
    project: Project, local_server: LocalServer, outside: Path, sandbox_ready: None, answer: str
) -> None:
    target = outside / "via-acp"
    why = {"outside_sandbox": True, "justification": "write the report where the user wants it"}
    local_server.queue(openai_reply("", [call(target, **why)]), openai_reply("Finished."))
    editor = Editor(answer)

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            return await prompt(conn, sid, "go")

    assert asyncio.run(run()).stop_reason == "end_turn"
    [asked] = editor.permissions
    assert asked["toolCall"]["toolCallId"] == "c1"
    assert target.exists() is (answer == "allow_once")


def test_interactive_asks_on_the_input_line(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path], outside: Path, sandbox_ready: None
) -> None:
    target = outside / "via-tui"
    arguments = {"command": f"touch {target}", "outside_sandbox": True, "justification": "the user wants it there"}
    local_server.queue(interactive_call("bash", arguments), interactive_answer("Made it."))
    child = spawn()
    child.send("make the file\r")
    child.expect("permission needed")
    child.expect("asks to run outside the sandbox")
    child.expect("the user wants it there")
    child.expect("y allow once")
    assert not target.exists()
    child.send("1\r")
    child.expect("Made it.")
    interactive_footer(child)
    exit_with_ctrl_d(child)
    assert target.exists()


def test_without_an_approval_the_command_stays_in_the_sandbox(
    tmp_path: Path, outside: Path, sandbox_ready: None
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    env = ToolEnv(cwd=project, home=tmp_path / "home")
    env.confine = Sandbox(lambda: SandboxPolicy(project=project, home=tmp_path / "home")).confine
    params = BashParams(command=f"touch {outside}/x", outside_sandbox=True, timeout=20)
    result = asyncio.run(BashTool(env).execute("c9", params, AbortSignal(), lambda _: None))
    text = result.content[0].text  # type: ignore[union-attr]
    assert "nothing approved this call" in text and not (outside / "x").exists()
    assert (result.details or {}).get("sandboxed") is True
