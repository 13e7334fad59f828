"""Extensions in-process: the API's registration rules, the command registry, loading and
disabling, handler chaining with heron's own control, and transform_context checked
against the context rules - with the faux provider."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from heron.agent.messages import ExtensionMessage
from heron.agent.tools import FunctionTool, ToolResult
from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.ai.types import Context, TextContent, ToolResultMessage, UserMessage
from heron.coding.events import ContextWarningEvent
from heron.coding.extensions import ExtensionAPI, ExtensionCommand, ExtensionError
from heron.coding.extensions.commands import CommandRegistry
from heron.coding.extensions.loader import find_extensions
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.session.store import SessionStore


class Params(BaseModel):
    text: str


async def echo(call_id: str, params: Params, signal: Any, on_update: Any) -> ToolResult:
    return ToolResult.text(params.text)


def api(taken: set[str] | None = None) -> ExtensionAPI:
    return ExtensionAPI(
        "demo",
        "user",
        "/x/demo.py",
        cwd=Path("/x"),
        home=Path("/h"),
        taken_tools=lambda: set(taken or {"bash", "read"}),
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HERON_HOME", str(home))
    proj = tmp_path / "proj"
    proj.mkdir()
    return proj


def write_ext(where: Path, name: str, source: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


def session(project: Path, faux: FauxProvider, *, trusted: bool = False) -> CodingSession:
    s = CodingSession(
        cwd=project,
        model=faux.model(context_window=128_000, max_tokens=8_192),
        store=SessionStore.in_memory(project),
        settings=settings_from_dict({}),
        home=project.parent / "home",
    )
    s.extensions.load(trusted=trusted)
    return s


# --- the API --------------------------------------------------------------------------------


def test_a_tool_name_that_is_taken_is_refused() -> None:
    a = api()
    with pytest.raises(ExtensionError, match="'bash' is already taken"):
        a.add_tool(FunctionTool("bash", "mine", Params, echo))
    a.add_tool(FunctionTool("shout", "say it loud", Params, echo))
    with pytest.raises(ExtensionError, match="already taken"):
        a.add_tool(FunctionTool("shout", "again", Params, echo))
    with pytest.raises(ExtensionError, match="must be letters"):
        a.add_tool(FunctionTool("two words", "x", Params, echo))
    assert [t.name for t in a.registration.tools] == ["shout"]


def test_templates_and_commands_need_usable_names_and_bodies() -> None:
    a = api()
    with pytest.raises(ExtensionError, match="empty body"):
        a.add_template("t", "  ")
    with pytest.raises(ExtensionError, match="must be letters"):
        a.add_command("no way", lambda args: None)
    a.add_command("/ok", lambda args: None)
    assert a.registration.commands[0].name == "ok"


def test_command_registry_first_one_keeps_a_name() -> None:
    registry = CommandRegistry()
    first = ExtensionCommand("go", "first", lambda a: a, "one")
    assert registry.add([first]) == []
    problems = registry.add([ExtensionCommand("go", "second", lambda a: a, "two")])
    assert problems == ["command /go is already extension one's; not added"]
    found = registry.match("/go fast please")
    assert found is not None and found[0] is first and found[1] == "fast please"
    assert registry.match("/other") is None and registry.match("no slash") is None
    assert registry.names() == [("go", "first")]


# --- loading --------------------------------------------------------------------------------


def test_project_extensions_are_found_only_when_trusted(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    write_ext(home / "extensions", "mine", "def register(api): pass\n")
    write_ext(cwd / ".heron" / "extensions", "theirs", "def register(api): pass\n")
    write_ext(cwd / ".heron" / "extensions", "_private", "def register(api): pass\n")
    warnings: list[str] = []
    assert [c.name for c in find_extensions(cwd, home, trusted=False, warnings=warnings)] == ["mine"]
    assert "project extensions (theirs) load only in a trusted project" in warnings[0]
    assert [c.name for c in find_extensions(cwd, home, trusted=True, warnings=[])] == ["mine", "theirs"]


def test_two_files_with_one_name_do_not_replace_each_other(project: Path, faux: FauxProvider) -> None:
    home = project.parent / "home"
    write_ext(home / "extensions", "same", "def register(api): api.add_template('a', 'from the user')\n")
    write_ext(
        project / ".heron" / "extensions", "same", "def register(api): api.add_template('b', 'from the project')\n"
    )
    s = session(project, faux, trusted=True)
    assert s.templates.get("a") is not None and s.templates.get("b") is not None


def test_a_failing_register_leaves_nothing_behind(project: Path, faux: FauxProvider) -> None:
    home = project.parent / "home"
    write_ext(
        home / "extensions",
        "half",
        """
        from pydantic import BaseModel
        from heron.agent.tools import FunctionTool
        class P(BaseModel):
            x: int
        async def run(*a):
            raise AssertionError
        def register(api):
            api.add_tool(FunctionTool("half_tool", "d", P, run))
            api.add_command("half", lambda args: None)
            api.add_tool(FunctionTool("read", "clash", P, run))
    """,
    )
    write_ext(home / "extensions", "noreg", "x = 1\n")
    write_ext(home / "extensions", "asyncreg", "async def register(api): pass\n")
    s = CodingSession(cwd=project, model=faux.model(), store=SessionStore.in_memory(project), home=home)
    messages = s.extensions.load(trusted=False)
    assert any("extension half" in m and "'read' is already taken" in m for m in messages)
    assert any("extension noreg" in m and "no register(api) function" in m for m in messages)
    assert any("extension asyncreg" in m and "not async" in m for m in messages)
    assert "half_tool" not in [t.name for t in s.tools] and s.extensions.commands.get("half") is None


def test_a_template_file_wins_over_an_extension_template(project: Path, faux: FauxProvider) -> None:
    home = project.parent / "home"
    (home / "prompts").mkdir(parents=True)
    (home / "prompts" / "review.md").write_text("Review from the file: $@\n")
    write_ext(home / "extensions", "t", "def register(api): api.add_template('review', 'Review from ext: $@')\n")
    s = CodingSession(cwd=project, model=faux.model(), store=SessionStore.in_memory(project), home=home)
    messages = s.extensions.load(trusted=False)
    assert "the file's is kept" in messages[0]
    assert s.expand_input("/review x") == "Review from the file: x"


# --- running ------------------------------------------------------------------------------


async def test_a_disabled_extension_tool_answers_it_is_not_available(project: Path, faux: FauxProvider) -> None:
    home = project.parent / "home"
    write_ext(
        home / "extensions",
        "shaky",
        """
        from pydantic import BaseModel
        from heron.coding.extensions import ToolResult
        class P(BaseModel):
            text: str
        def register(api):
            @api.tool("shaky_echo", "echo", P)
            async def run(params):
                return ToolResult.text(params.text)
            @api.on("tool_execution_end")
            def boom(event):
                raise KeyError("listener broke")
    """,
    )
    s = session(project, faux)
    seen: list[Any] = []
    s.subscribe(seen.append)
    faux.queue(tool_call("shaky_echo", {"text": "one"}), tool_call("shaky_echo", {"text": "two"}), text("done"))
    await s.prompt("go")
    results = [m for m in s.messages if isinstance(m, ToolResultMessage)]
    assert results[0].content[0].text == "one"  # type: ignore[union-attr]
    assert "shaky_echo is not available" in results[1].content[0].text  # type: ignore[union-attr]
    assert "its 'tool_execution_end' event handler raised: KeyError" in results[1].content[0].text  # type: ignore[union-attr]
    warnings = [e for e in seen if isinstance(e, ContextWarningEvent) and e.kind == "extension"]
    assert len(warnings) == 1
    assert [t.name for t in s.agent.state.tools].count("shaky_echo") == 1  # the definition stays


async def test_after_tool_call_runs_before_key_redaction(project: Path, faux: FauxProvider) -> None:
    home = project.parent / "home"
    write_ext(
        home / "extensions",
        "leak",
        """
        from heron.coding.extensions import ToolResult
        def register(api):
            api.after_tool_call(lambda call, result: ToolResult.text("key: sk-secret-value-123"))
    """,
    )
    s = CodingSession(
        cwd=project, model=faux.model(), api_key="sk-secret-value-123", store=SessionStore.in_memory(project), home=home
    )
    s.extensions.load(trusted=False)
    faux.queue(tool_call("bash", {"command": "echo hi"}), text("done"))
    await s.prompt("go")
    result = next(m for m in s.messages if isinstance(m, ToolResultMessage))
    shown = result.content[0].text  # type: ignore[union-attr]
    assert "sk-secret-value-123" not in shown and "[redacted]" in shown


async def test_a_before_handler_can_rewrite_arguments(project: Path, faux: FauxProvider) -> None:
    home = project.parent / "home"
    write_ext(
        home / "extensions",
        "polite",
        """
        from heron.coding.extensions import BeforeToolCallResult
        def register(api):
            @api.before_tool_call
            async def rewrite(call):
                if call.tool_name == "bash":
                    return BeforeToolCallResult(arguments={**call.arguments, "command": "echo rewritten"})
    """,
    )
    s = session(project, faux)
    faux.queue(tool_call("bash", {"command": "echo original"}), text("done"))
    await s.prompt("go")
    result = next(m for m in s.messages if isinstance(m, ToolResultMessage))
    assert result.content[0].text.strip() == "rewritten"  # type: ignore[union-attr]


async def test_transform_results_are_checked_against_the_context_rules(project: Path, faux: FauxProvider) -> None:
    home = project.parent / "home"
    write_ext(
        home / "extensions",
        "a_orphan",
        """
        from heron.ai.types import TextContent, ToolResultMessage
        def register(api):
            @api.transform_context
            def orphan(messages):
                return [*messages, ToolResultMessage(tool_call_id="nope", tool_name="bash",
                                                     content=[TextContent(text="x")])]
    """,
    )
    write_ext(
        home / "extensions",
        "b_note",
        """
        from heron.agent.messages import ExtensionMessage
        def register(api):
            api.transform_context(lambda m: [*m, ExtensionMessage(custom_type="n", content="a note")])
    """,
    )
    write_ext(home / "extensions", "c_bad", "def register(api): api.transform_context(lambda m: 'not a list')\n")
    s = session(project, faux)
    seen: list[Any] = []
    s.subscribe(seen.append)
    faux.queue(text("ok"))
    await s.prompt("hello")
    sent: Context = faux.requests[-1]
    texts = [m.text() for m in sent.messages if isinstance(m, UserMessage)]
    assert texts == ["hello", "a note"]  # the orphan result was not used, the note was
    messages = [e.message for e in seen if isinstance(e, ContextWarningEvent)]
    assert any("a_orphan: its transform_context result was not used" in m and "tool-pairing" in m for m in messages)
    assert any("c_bad" in m and "returned str, not a list of messages" in m for m in messages)
    assert not any(isinstance(m, ExtensionMessage) for m in s.messages)  # the session is not changed


async def test_a_command_that_returns_nothing_sends_nothing(project: Path, faux: FauxProvider) -> None:
    home = project.parent / "home"
    write_ext(
        home / "extensions",
        "cmds",
        """
        calls = []
        def register(api):
            @api.command("mark", "remember a mark")
            async def mark(args):
                calls.append(args)
            api.add_command("boom", lambda args: 1 / 0)
    """,
    )
    s = session(project, faux)
    assert await s.prompt("/mark here") == []
    assert faux.requests == []
    assert await s.prompt("/boom") == []
    assert "its /boom command raised: ZeroDivisionError" in s.extensions.warnings[-1]
    assert await s.prompt("/mark again") == []
    assert "/mark is not available" in s.extensions.warnings[-1]  # one extension: all of it is off


def test_the_hook_feedback_message_is_a_user_message_to_the_model() -> None:
    from heron.agent.messages import convert_to_llm

    message = ExtensionMessage(custom_type="heron.hook_feedback", content="Stop hook feedback:\nx")
    converted = convert_to_llm([message])
    assert isinstance(converted[0], UserMessage)
    assert converted[0].content == [TextContent(text="Stop hook feedback:\nx")]
