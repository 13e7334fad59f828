"""Extensions and the Stop/SubagentStop hooks through the real entry point: ``heron -p``
subprocesses against a local OpenAI-format server that scripts the model; the
assertions look at what the server received (tools, tool results, messages), stderr,
the hooks' stdin and the session file."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from tests.cli.test_control_e2e import bash, run_calls
from tests.cli.test_print_json_e2e import Project, openai_args, openai_tool_results, project
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_reply

__all__ = ["project"]  # the fixture


def user_extension(project: Project, name: str, source: str) -> Path:
    directory = project.home / "extensions"
    directory.mkdir(exist_ok=True)
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


WORD_COUNT = """
    from pydantic import BaseModel
    from heron.coding.extensions import ToolResult

    class Params(BaseModel):
        text: str

    def register(api):
        @api.tool("word_count", "Count the words of a text", Params)
        async def count(params):
            return ToolResult.text(f"{len(params.text.split())} words")
"""

NO_RM = """
    def register(api):
        @api.before_tool_call
        def guard(call):
            if call.tool_name == "bash" and "touch" in call.arguments["command"]:
                return api.block("no touching files in this repository")
            return None
"""


def tool_names(request: Recorded) -> list[str]:
    return [t["function"]["name"] for t in request.json().get("tools", [])]


def test_an_extension_tool_is_offered_and_called(project: Project, local_server: LocalServer) -> None:
    user_extension(project, "words", WORD_COUNT)
    results = run_calls(project, local_server, [("wc", "word_count", {"text": "one two three"})])
    assert results["wc"] == "3 words"
    assert "word_count" in tool_names(local_server.requests[0])
    assert "word_count" in local_server.requests[0].json()["messages"][0]["content"]  # listed in the system prompt


def test_before_tool_call_blocks_a_bash_call_with_its_reason(project: Project, local_server: LocalServer) -> None:
    user_extension(project, "guard", NO_RM)
    results = run_calls(project, local_server, [bash("t", "touch made-it"), bash("e", "echo still-here")])
    assert "Blocked by extension guard: no touching files in this repository" in results["t"]
    assert not (project.cwd / "made-it").exists()
    assert results["e"].strip() == "still-here"


def test_transform_context_adds_a_note_the_request_carries(project: Project, local_server: LocalServer) -> None:
    user_extension(
        project,
        "note",
        """
        from heron.agent.messages import ExtensionMessage

        def register(api):
            @api.transform_context
            def add_note(messages):
                return [*messages, ExtensionMessage(custom_type="note", content="NOTE: the CI is red today")]
    """,
    )
    local_server.queue(openai_reply("ok"))
    result = project.run(*openai_args(local_server), "-p", "hello")
    assert result.code == 0, result.err
    sent = local_server.requests[0].json()["messages"]
    assert sent[-1]["role"] == "user" and "NOTE: the CI is red today" in json.dumps(sent[-1])
    assert any(m["role"] == "user" and "hello" in json.dumps(m) for m in sent[:-1])
    # Only the request carries it: the session file has the prompt and the answer, not the note.
    assert "CI is red" not in project.session_files()[0].read_text()


def test_a_transform_that_breaks_the_context_rules_is_not_used(project: Project, local_server: LocalServer) -> None:
    user_extension(
        project,
        "dropper",
        """
        def register(api):
            api.transform_context(lambda messages: [])
    """,
    )
    local_server.queue(openai_reply("ok"))
    result = project.run(*openai_args(local_server), "-p", "keep me")
    assert result.code == 0, result.err
    assert "keep me" in json.dumps(local_server.requests[0].json()["messages"])
    assert "extension dropper: its transform_context result was not used" in result.err
    assert "turn-prompt-present" in result.err


def test_a_raising_extension_is_disabled_and_the_others_work(project: Project, local_server: LocalServer) -> None:
    broken = user_extension(project, "broken", "raise RuntimeError('boom at import')\n")
    user_extension(
        project,
        "flaky",
        """
        def register(api):
            @api.before_tool_call
            def explode(call):
                raise ValueError("handler broke")
    """,
    )
    user_extension(project, "words", WORD_COUNT)
    local_server.queue(
        openai_reply("", [bash("b", "echo hi")]),
        openai_reply("", [("w", "word_count", {"text": "a b"})]),
        openai_reply("", [bash("c", "echo again")]),
        openai_reply("done"),
    )
    result = project.run(*openai_args(local_server), "-p", "go")
    assert result.code == 0, result.err
    assert f"heron: warning: extension broken ({broken}) disabled: RuntimeError: boom at import" in result.err
    assert "disabled: its before_tool_call handler raised: ValueError: handler broke" in result.err
    assert result.err.count("extension flaky") == 1  # disabled once: its handler did not run again
    tools = {
        m["tool_call_id"]: m["content"] for m in local_server.requests[-1].json()["messages"] if m["role"] == "tool"
    }
    assert tools["b"].strip() == "hi" and tools["w"] == "2 words" and tools["c"].strip() == "again"


def test_project_extensions_need_trust(project: Project, local_server: LocalServer) -> None:
    directory = project.cwd / ".heron" / "extensions"
    directory.mkdir(parents=True)
    (directory / "proj.py").write_text(textwrap.dedent(WORD_COUNT))
    local_server.queue(openai_reply("ok"))
    result = project.run(*openai_args(local_server), "-p", "hi")
    assert result.code == 0, result.err
    assert "project extensions (proj) load only in a trusted project" in result.err
    assert "word_count" not in tool_names(local_server.requests[0])
    local_server.queue(openai_reply("ok"))
    result = project.run(*openai_args(local_server), "--trust", "-p", "hi")
    assert result.code == 0 and "word_count" in tool_names(local_server.requests[-1])


def test_an_entry_point_extension_loads(project: Project, local_server: LocalServer, tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "heron_shout-0.1.dist-info").mkdir(parents=True)
    (site / "heron_shout-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: heron-shout\nVersion: 0.1\n"
    )
    (site / "heron_shout-0.1.dist-info" / "entry_points.txt").write_text("[heron.extensions]\nshout = heron_shout\n")
    (site / "heron_shout.py").write_text(
        textwrap.dedent("""
        from heron.coding.extensions import ToolResult

        def register(api):
            @api.after_tool_call
            def louder(call, result):
                if call.tool_name == "bash":
                    return ToolResult.text(result.content[0].text.upper())
                return None
    """)
    )
    project.env["PYTHONPATH"] = str(site)
    results = run_calls(project, local_server, [bash("b", "echo quiet")])
    assert results["b"].strip() == "QUIET"


def test_an_extension_command_becomes_the_prompt(project: Project, local_server: LocalServer) -> None:
    user_extension(
        project,
        "greeter",
        """
        def register(api):
            @api.command("greet", "greet someone")
            def greet(args):
                return f"Write a one-line greeting for {args}."
            api.add_template("shorter", "Make this shorter: $@")
    """,
    )
    local_server.queue(openai_reply("Hello, Ada!"))
    result = project.run(*openai_args(local_server), "-p", "/greet Ada")
    assert result.code == 0 and result.out == "Hello, Ada!\n", result.err
    assert "Write a one-line greeting for Ada." in json.dumps(local_server.requests[0].json()["messages"][-1])
    local_server.queue(openai_reply("ok"))
    project.run(*openai_args(local_server), "-p", "/shorter a long text")
    assert "Make this shorter: a long text" in json.dumps(local_server.requests[-1].json()["messages"][-1])


# --- Stop and SubagentStop hooks that continue the run ------------------------------------------


STOP_ONCE = """import json, sys
data = json.load(sys.stdin)
with open("stop-inputs.jsonl", "a") as f:
    f.write(json.dumps(data) + "\\n")
if not data["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "you forgot to run the tests"}))
"""


def stop_hook(project: Project, event: str, script: str, **extra: Any) -> None:
    path = project.home / f"{event}.py"
    path.write_text(script)
    project.write_settings(
        {"hooks": {event: [{"hooks": [{"type": "command", "command": f"python3 {path}"}]}], **extra}}
    )


def inputs(project: Project) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (project.cwd / "stop-inputs.jsonl").read_text().splitlines()]


def test_a_stop_hook_continues_the_run_once_then_lets_it_stop(project: Project, local_server: LocalServer) -> None:
    stop_hook(project, "Stop", STOP_ONCE)
    local_server.queue(openai_reply("all done"), openai_reply("tests pass, done"))
    result = project.run(*openai_args(local_server), "-p", "fix it")
    assert result.code == 0, result.err
    assert result.out.endswith("tests pass, done\n")
    assert len(local_server.requests) == 2
    last = local_server.requests[1].json()["messages"][-1]
    assert last["role"] == "user" and "Stop hook feedback:\\nyou forgot to run the tests" in json.dumps(last)
    seen = inputs(project)
    assert [s["stop_hook_active"] for s in seen] == [False, True]
    assert seen[0]["hook_event_name"] == "Stop" and seen[0]["last_assistant_message"] == "all done"
    assert seen[0]["transcript_path"] == str(project.session_files()[0])
    lines = project.session_lines()
    feedback = [r["message"] for r in lines if r.get("type") == "message" and r["message"]["role"] == "custom"]
    assert len(feedback) == 1  # in the session, marked as the hook's
    assert feedback[0]["customType"] == "heron.hook_feedback"
    assert feedback[0]["content"] == "Stop hook feedback:\nyou forgot to run the tests"


def test_stop_continuations_are_capped(project: Project, local_server: LocalServer) -> None:
    stop_hook(
        project,
        "Stop",
        "import sys; sys.stdin.read(); print('still not done', file=sys.stderr); sys.exit(2)\n",
        maxContinuations=2,
    )
    local_server.queue(openai_reply("one"), openai_reply("two"), openai_reply("three"), openai_reply("four"))
    result = project.run(*openai_args(local_server), "-p", "go")
    assert result.code == 0, result.err
    assert len(local_server.requests) == 3  # the prompt and two continuations
    records = [
        r["data"]
        for r in project.session_lines()
        if r.get("customType") == "heron.ledger" and r["data"]["kind"] == "hook"
    ]
    assert [r["detail"]["continued"] for r in records] == [True, True, False]
    assert "not done: the cap is reached" in records[-1]["recover"]


def child_or_parent(request: Recorded) -> Reply:
    messages = request.json()["messages"]
    text = json.dumps(messages)
    if "count the files" in json.dumps(next(m for m in messages if m["role"] == "user")):  # the child
        return openai_reply("there are 2 files" if "SubagentStop hook feedback" in text else "many files")
    if '"role": "tool"' in text:
        return openai_reply("the child said so")
    return openai_reply("", [("t1", "task", {"description": "count the project files", "prompt": "count the files"})])


def test_subagent_stop_fires_with_the_payload_and_can_continue_the_child(project: Project) -> None:
    stop_hook(project, "SubagentStop", STOP_ONCE)
    server = LocalServer(child_or_parent)
    try:
        result = project.run(*openai_args(server), "-p", "delegate")
    finally:
        server.close()
    assert result.code == 0, result.err
    assert result.out == "the child said so\n"
    seen = inputs(project)
    assert [s["stop_hook_active"] for s in seen] == [False, True]
    first = seen[0]
    parent_file = project.session_files()
    assert first["hook_event_name"] == "SubagentStop" and first["agent_type"] == "general-purpose"
    assert first["last_assistant_message"] == "many files"
    assert first["transcript_path"] in [str(p) for p in parent_file]
    assert first["agent_transcript_path"] != first["transcript_path"] and first["agent_id"] != first["session_id"]
    assert first["agent_id"] in first["agent_transcript_path"]
    tool = [m for m in server.requests[-1].json()["messages"] if m["role"] == "tool"]
    assert "there are 2 files" in tool[0]["content"]  # the answer after the continuation


def test_json_mode_has_the_disabling_as_a_context_warning_event(project: Project, local_server: LocalServer) -> None:
    user_extension(
        project,
        "flaky",
        """
        def register(api):
            @api.after_tool_call
            def explode(call, result):
                raise ValueError("after broke")
    """,
    )
    local_server.queue(openai_reply("", [bash("b", "echo hi")]), openai_reply("done"))
    result = project.run(*openai_args(local_server), "--mode", "json", "-p", "go")
    assert result.code == 0, result.err
    warnings = [e for e in result.lines() if e.get("type") == "context_warning"]
    assert len(warnings) == 1 and warnings[0]["kind"] == "extension"
    assert "extension flaky" in warnings[0]["message"] and "ValueError: after broke" in warnings[0]["message"]
    assert openai_tool_results(local_server.requests[-1])["b"].strip() == "hi"
