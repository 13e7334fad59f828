"""The interactive permission prompt, questions and the trust check without a terminal:
the controller against the faux provider and a recording console (as in
test_tui_controller.py), the line-by-line mode through the real program with a pipe
on stdin, and what makes a project need trust."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from heron.agent.messages import convert_to_llm
from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.ai.types import Context, ToolResultMessage
from heron.cli.tui.controller import Controller
from heron.cli.tui.permission_prompt import parse_answer
from heron.cli.tui.trust_question import ask_trust, trust_reasons
from heron.coding.permissions.trust import remember_trust
from tests.cli.test_interactive import TIMEOUT, answer, bash_call, environment
from tests.cli.test_interactive_control import tool_results
from tests.cli.tui_helpers import make_app, output, recording_console
from tests.support.http_server import LocalServer


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


def controller_with_ask_rule(project: Path, home: Path, faux: FauxProvider, rule: str) -> Controller:
    (home / "settings.json").write_text(json.dumps({"permissions": {"ask": [rule]}}))
    return Controller(make_app(project, home, faux), recording_console())


async def until_asked(c: Controller, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while c.question is None:
        if loop.time() > end:
            raise AssertionError(f"no question was asked:\n{output(c.console)}")
        await asyncio.sleep(0.01)


def last_tool_result(context: Context) -> str:
    results = [m for m in convert_to_llm(context.messages) if isinstance(m, ToolResultMessage)]
    return "".join(getattr(b, "text", "") for b in results[-1].content)


async def test_esc_at_the_question_denies_and_the_run_goes_on(project: Path, home: Path, faux: FauxProvider) -> None:
    faux.queue(tool_call("bash", {"command": "touch made.txt"}), text("carried on"))
    c = controller_with_ask_rule(project, home, faux, "Bash(touch:*)")
    await c.submit("make it")
    await until_asked(c)
    assert "permission needed: bash touch made.txt" in output(c.console)
    assert c.status().startswith("answer above")
    assert c.interrupt()  # what Esc and Ctrl+C do: the question is declined, the run is not aborted
    await c.wait()
    assert "carried on" in output(c.console)
    assert "declined" in last_tool_result(faux.requests[-1])
    assert not (project / "made.txt").exists()


async def test_an_unclear_answer_is_asked_again_and_always_on_an_ask_rule_lasts_the_session(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    faux.queue(
        tool_call("bash", {"command": "touch made.txt"}),
        text("ran"),
        tool_call("bash", {"command": "touch again.txt"}),
        text("ran again"),
    )
    c = controller_with_ask_rule(project, home, faux, "Bash(touch:*)")
    await c.submit("make it")
    await until_asked(c)
    assert "a allow for the rest of this session (the ask rule stays in" in output(c.console)
    await c.submit("maybe")
    await until_asked(c)
    assert "answer y (allow once), a (allow always) or n (deny" in output(c.console)
    await c.submit("2")
    await c.wait()
    assert (project / "made.txt").exists()
    asked = output(c.console).count("permission needed:")
    await c.submit("make another")
    await c.wait()
    assert (project / "again.txt").exists()
    assert output(c.console).count("permission needed:") == asked  # not asked again in this session
    assert not (project / ".heron" / "settings.local.json").exists()


async def test_one_key_answers_the_question_and_other_keys_do_not(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    faux.queue(tool_call("bash", {"command": "touch made.txt"}), text("ran"))
    c = controller_with_ask_rule(project, home, faux, "Bash(touch:*)")
    assert not c.answer_key("y")  # no question waits
    await c.submit("make it")
    await until_asked(c)
    assert not c.answer_key("x")  # not one of its keys: typed as text by the front end
    assert c.answer_key("y")
    await c.wait()
    assert (project / "made.txt").exists()
    assert "allow? y/a/n › y" in output(c.console)  # noqa: RUF001 - shown as if typed


async def test_a_deny_reason_on_the_same_line_reaches_the_model(project: Path, home: Path, faux: FauxProvider) -> None:
    faux.queue(tool_call("bash", {"command": "touch made.txt"}), text("ok"))
    c = controller_with_ask_rule(project, home, faux, "Bash(touch:*)")
    await c.submit("make it")
    await until_asked(c)
    await c.submit("n not in this directory")
    await c.wait()
    assert "The user denied this call: not in this directory" in last_tool_result(faux.requests[-1])


def test_answers_are_read_by_their_first_word() -> None:
    assert parse_answer(" 1 ") == ("allow_once", "")
    assert parse_answer("always") == ("allow_always", "")
    assert parse_answer("3 use make instead") == ("deny", "use make instead")
    assert parse_answer("whatever") == (None, "")


def test_the_line_mode_answers_a_question_with_the_next_line(local_server: LocalServer, tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (home / "settings.json").write_text(json.dumps({"permissions": {"ask": ["Bash(touch:*)"]}}))
    local_server.queue(bash_call("touch piped.txt"), answer("Piped and denied."))
    done = subprocess.run(
        [sys.executable, "-m", "heron.cli.main", "--base-url", f"{local_server.url}/v1", "--model", "test-model"],
        input="make the file\n3\nnot from a script\n/quit\n",
        capture_output=True,
        text=True,
        cwd=project,
        env=environment(home, "dumb"),
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert "permission needed" in done.stdout and "Piped and denied." in done.stdout
    assert "The user denied this call: not from a script" in tool_results(local_server.requests[-1])[-1]
    assert not (project / "piped.txt").exists()


# --- what needs trust -----------------------------------------------------------------------


def test_what_in_a_project_needs_trust(project: Path, home: Path) -> None:
    assert trust_reasons(project, home) == []
    heron_dir = project / ".heron"
    heron_dir.mkdir()
    (heron_dir / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"], "ask": ["Read"]}}))
    assert trust_reasons(project, home) == []  # rules that only restrict need no trust
    (heron_dir / "settings.json").write_text(
        json.dumps(
            {
                "permissions": {"allow": ["Bash(make:*)"], "defaultMode": "bypassPermissions"},
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]},
                "env": {"passThrough": ["TOKEN"]},
            }
        )
    )
    (heron_dir / "extensions").mkdir()
    (heron_dir / "extensions" / "tool.py").write_text("def register(api):\n    pass\n")
    (heron_dir / "extensions" / "_helper.py").write_text("")  # not loaded by itself: not listed
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"files": {"command": "true"}}}))
    reasons = trust_reasons(project, home)
    assert reasons == [
        "hooks in .heron/settings.json",
        "allow rules in .heron/settings.json",
        "defaultMode bypassPermissions in .heron/settings.json",
        "env.passThrough in .heron/settings.json",
        "Python extensions in .heron/extensions/ (tool.py)",
        "MCP servers in .mcp.json (files)",
    ]


def test_the_trust_question_remembers_yes_only(project: Path, home: Path) -> None:
    (project / ".heron").mkdir()
    (project / ".heron" / "settings.local.json").write_text(json.dumps({"permissions": {"allow": ["Bash"]}}))
    said: list[str] = []
    assert ask_trust(project, home, read=lambda _: "no", write=said.append) is False
    assert not (home / "trusted-projects.json").exists()
    assert any("allow rules in .heron/settings.local.json" in line for line in said)

    def interrupted(_: str) -> str:
        raise KeyboardInterrupt

    assert ask_trust(project, home, read=interrupted, write=said.append) is False
    assert ask_trust(project, home, read=lambda _: "Y", write=said.append) is True
    assert ask_trust(project, home, read=lambda _: "unused", write=said.append) is None  # trusted now
    remember_trust(project, home)  # idempotent
    assert json.loads((home / "trusted-projects.json").read_text())["projects"] == [str(project.resolve())]
