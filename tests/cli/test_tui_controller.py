"""The interactive controller without a terminal: prompts, steering, abort, shell
commands and every slash command, against the faux provider and a recording console."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from heron.agent.messages import BashExecutionMessage, convert_to_llm
from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.types import Context, UserMessage
from heron.cli.tui.commands import COMMANDS
from heron.cli.tui.controller import Controller, bash_message
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.session.entries import CompactionEntry, MessageEntry, ModelChangeEntry
from heron.session.store import SessionStore
from tests.cli.tui_helpers import make_app, output, recording_console, submit


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    (path / "notes.txt").write_text("alpha\nbeta\n")
    return path


def controller_for(project: Path, home: Path, faux: FauxProvider, **kwargs: object) -> Controller:
    app = make_app(project, home, faux, **kwargs)  # type: ignore[arg-type]
    return Controller(app, recording_console())


def user_texts(context: Context) -> list[str]:
    return [m.text() for m in context.messages if isinstance(m, UserMessage)]


async def wait_until(condition: object, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():  # type: ignore[operator]
        if loop.time() > end:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


# --- prompts, steering, abort ------------------------------------------------------------


async def test_a_prompt_runs_and_prints_the_answer_and_the_footer(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    faux.queue(text("The answer is **42**."))
    c = controller_for(project, home, faux)
    out = await submit(c, "what is it?")
    assert "The answer is 42." in out
    assert "faux-1 (off) · ↑" in out or "faux-1 · ↑" in out
    assert "ctx " in out and "% of 128k" in out
    assert c.job is None and c.renderer.totals.output > 0


async def test_enter_while_running_steers(project: Path, home: Path, faux: FauxProvider) -> None:
    faux.queue(tool_call("bash", {"command": "sleep 0.4"}), text("done with both"))
    c = controller_for(project, home, faux)
    await c.submit("start")
    await wait_until(lambda: c.renderer.activity.startswith("bash"))
    await c.submit("also check the README")
    assert "steering queued: also check the README" in output(c.console)
    await c.wait()
    assert "also check the README" in user_texts(faux.requests[-1])
    assert "done with both" in output(c.console)


async def test_interrupt_aborts_the_run_and_returns_undelivered_steering(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    faux.chunk_delay = 0.05
    faux.queue(text("word " * 400))
    c = controller_for(project, home, faux)
    assert c.interrupt() is False  # nothing runs: the front end clears the input instead
    await c.submit("write a lot")
    await wait_until(lambda: c.renderer.activity == "writing")
    await c.submit("and then stop")
    assert c.interrupt() is True
    assert c.interrupt() is False  # a second Ctrl+C while aborting: clear the input
    await c.wait()
    out = output(c.console)
    assert "aborted" in out
    assert "back in the input" in out
    assert c.take_prefill() == "and then stop"
    faux.chunk_delay = 0.0
    faux.queue(text("fine"))
    assert "fine" in await submit(c, "continue")


async def test_commands_that_change_the_session_wait_for_the_run(project: Path, home: Path, faux: FauxProvider) -> None:
    faux.queue(tool_call("bash", {"command": "sleep 0.3"}), text("ok"))
    c = controller_for(project, home, faux)
    await c.submit("go")
    await c.submit("/new")
    await c.submit("/context")
    out = output(c.console)
    assert "busy (run)" in out
    assert "system prompt" in out  # read-only commands work while it runs
    await c.wait()
    await c.submit("/quit")
    assert c.quit_requested


# --- shell commands ---------------------------------------------------------------------


async def test_bang_runs_a_command_into_the_context_and_double_bang_only_shows_it(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    c = controller_for(project, home, faux)
    out = await submit(c, "!cat notes.txt; echo kept")
    assert "alpha" in out and "kept" in out and "(added to the context)" in out
    out = await submit(c, "!!echo secret-value; exit 4")
    assert "secret-value" in out and "exit code 4" in out and "(not added to the context)" in out
    shells = [m for m in c.session.messages if isinstance(m, BashExecutionMessage)]
    assert [(m.command, m.exclude_from_context, m.exit_code) for m in shells] == [
        ("cat notes.txt; echo kept", False, 0),
        ("echo secret-value; exit 4", True, 4),
    ]
    assert shells[0].output == "alpha\nbeta\nkept"
    stored = [e.message for e in c.session.store.entries() if isinstance(e, MessageEntry)]
    assert [m.command for m in stored if isinstance(m, BashExecutionMessage)] == [m.command for m in shells]
    seen = "\n".join(m.text() for m in convert_to_llm(c.session.messages) if isinstance(m, UserMessage))
    assert "kept" in seen and "secret-value" not in seen
    faux.queue(text("noted"))
    await submit(c, "what did you see?")
    request = "\n".join(user_texts(faux.requests[-1]))
    assert "Ran `cat notes.txt; echo kept`" in request and "secret-value" not in request


def test_bash_message_splits_the_tool_notices_off_the_output() -> None:
    from heron.agent.tools import ToolResult

    result = ToolResult.text(
        "tail line\n\n[Showing lines 10-11 of 11. Full output: /tmp/b.log]\n\nCommand exited with code 1",
        details={"exit_code": 1, "truncation": {"truncated": True}, "full_output_path": "/tmp/b.log"},
        is_error=True,
    )
    message = bash_message("make", result, keep=True)
    assert (message.output, message.exit_code, message.truncated, message.full_output_path) == (
        "tail line",
        1,
        True,
        "/tmp/b.log",
    )
    quiet = bash_message("true", ToolResult.text("(no output)", details={"exit_code": 0}), keep=False)
    assert (quiet.output, quiet.exit_code, quiet.exclude_from_context) == ("", 0, True)


async def test_a_bare_bang_explains_itself(project: Path, home: Path, faux: FauxProvider) -> None:
    c = controller_for(project, home, faux)
    assert "usage: !command" in await submit(c, "!")


# --- model and thinking --------------------------------------------------------------------


async def test_model_lists_and_switches(project: Path, home: Path, faux: FauxProvider) -> None:
    (home / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "local": {
                        "baseUrl": "http://127.0.0.1:9/v1",
                        "api": "openai-chat",
                        "models": [{"id": "coder-7b", "contextWindow": 32768}],
                    }
                }
            }
        )
    )
    c = controller_for(project, home, faux)
    out = await submit(c, "/model")
    assert "* faux/faux-1" in out and "local/coder-7b" in out
    out = await submit(c, "/model local/coder-7b")
    assert "model: local/coder-7b (window 33k)" in out
    assert c.session.model.ref == "local/coder-7b"
    assert any(isinstance(e, ModelChangeEntry) and e.model_id == "coder-7b" for e in c.session.store.entries())
    out = await submit(c, "/model nope/nothing")
    assert "unknown model" in out
    assert c.session.model.ref == "local/coder-7b"


async def test_thinking_shows_and_sets_the_level(project: Path, home: Path, faux: FauxProvider) -> None:
    c = controller_for(project, home, faux)
    assert "thinking: off" in await submit(c, "/thinking")
    assert "thinking: high" in await submit(c, "/thinking high")
    assert c.session.thinking_level == "high"
    assert "unknown thinking level" in await submit(c, "/thinking loud")


# --- context, compaction -----------------------------------------------------------------------


def summarising(faux: FauxProvider, summary: str = "## Goal\nKeep notes.") -> None:
    def reply(context: Context) -> FauxReply:
        if is_summary_request(context):
            return text(summary)
        return text("plain answer " * 20)

    faux.set_fallback(reply)


async def test_context_and_compact(project: Path, home: Path, faux: FauxProvider) -> None:
    summarising(faux)
    c = controller_for(project, home, faux, settings={"compaction": {"keepRecentTokens": 10}})
    for prompt in ("first question", "second question", "third question"):
        await submit(c, prompt)
    out = await submit(c, "/context")
    assert "system prompt" in out and "messages: assistant" in out and "128,000" in out
    assert "ledger" in out.lower()
    out = await submit(c, "/compact keep the notes")
    assert "compacting the context (requested" in out
    assert "compacted: ~" in out
    assert any(isinstance(e, CompactionEntry) for e in c.session.store.entries())
    out = await submit(c, "/context")
    assert re.search(r"^\s+compaction\b", out, re.MULTILINE)  # the ledger lists the compaction


async def test_compact_with_nothing_to_compact_says_so(project: Path, home: Path, faux: FauxProvider) -> None:
    c = controller_for(project, home, faux)
    assert "nothing compacted" in await submit(c, "/compact")


async def test_compact_on_a_short_session_says_why_nothing_was_compacted(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    faux.queue(text("a short answer"))
    c = controller_for(project, home, faux)
    await submit(c, "hello")
    out = " ".join((await submit(c, "/compact")).split())
    assert "nothing compacted: the conversation (~" in out
    assert "fits in the recent part compaction keeps as it is (~20k tokens: compaction.keepRecentTokens" in out


# --- tree, fork, new, resume, session, name ------------------------------------------------------


async def test_tree_shows_entries_and_moves_with_the_message_to_edit(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    faux.queue(text("one"), text("two"))
    c = controller_for(project, home, faux)
    await submit(c, "first prompt")
    await submit(c, "second prompt")
    out = await submit(c, "/tree")
    assert "[0]" in out and "user: first prompt" in out and "<- leaf" in out
    store = c.session.store
    second = next(
        i
        for i, e in enumerate(store.entries())
        if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage) and e.message.text() == "second prompt"
    )
    out = await submit(c, f"/tree {second}")
    assert "just before entry" in out
    assert c.take_prefill() == "second prompt"
    assert [m.text() for m in c.session.messages if isinstance(m, UserMessage)] == ["first prompt"]
    faux.queue(text("other"))
    await submit(c, "a different second prompt")
    assert len(c.session.store.tree().children.get(store.ids()[second - 1], [])) == 2
    assert "no entry 999" in await submit(c, "/tree 999")
    assert "not an entry number" in await submit(c, "/tree x")


async def test_tree_with_summary_summarises_the_branch_left(project: Path, home: Path, faux: FauxProvider) -> None:
    summarising(faux, "Tried things on the old branch.")
    c = controller_for(project, home, faux)
    await submit(c, "first")
    await submit(c, "second")
    out = await submit(c, "/tree 1 --summary")
    assert "summarised into the context" in out
    assert any(getattr(m, "role", "") == "branchSummary" for m in c.session.messages)


async def test_fork_new_and_resume(project: Path, home: Path, faux: FauxProvider) -> None:
    faux.queue(text("answer one"), text("answer two"))
    c = controller_for(project, home, faux)
    await submit(c, "original prompt")
    first_path = c.session.store.path
    assert first_path is not None and first_path.exists()
    out = await submit(c, "/fork")
    forked = c.session.store
    assert "forked:" in out and forked.path != first_path
    assert forked.header.parent_session == str(first_path)
    assert len(c.session.messages) == 2
    out = await submit(c, "/new")
    assert "new session" in out and c.session.messages == []
    await submit(c, "in the new one")
    out = await submit(c, "/resume")
    assert "original prompt" in out and "in the new one" in out
    out = await submit(c, f"/resume {first_path.stem.split('_', 1)[1][:8]}")
    assert "resumed:" in out and "earlier in this session (1 turn)" in out
    assert "original prompt" in out and "answer one" in out
    assert c.session.store.path == first_path
    assert "that is the current session" in await submit(c, f"/resume {c.session.store.session_id[:8]}")
    assert "no session" in await submit(c, "/resume ffffffffffff")


async def test_fork_at_a_user_message_puts_it_back_in_the_input(project: Path, home: Path, faux: FauxProvider) -> None:
    faux.queue(text("a1"), text("a2"))
    c = controller_for(project, home, faux)
    await submit(c, "q1")
    await submit(c, "q2")
    entries = c.session.store.entries()
    q2 = next(
        i
        for i, e in enumerate(entries)
        if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage) and e.message.text() == "q2"
    )
    await submit(c, f"/fork {q2}")
    assert c.take_prefill() == "q2"
    assert [m.text() for m in c.session.messages if isinstance(m, UserMessage)] == ["q1"]


async def test_session_and_name(project: Path, home: Path, faux: FauxProvider) -> None:
    faux.queue(text("hi"))
    c = controller_for(project, home, faux)
    await submit(c, "hello")
    assert "has no name" in await submit(c, "/name")
    assert "session named 'bug hunt'" in await submit(c, "/name bug hunt")
    assert c.session.store.name == "bug hunt"
    out = await submit(c, "/session")
    assert "bug hunt" in out and c.session.store.session_id in out and str(c.session.store.path) in out
    assert "assistant 1" in out and "user 1" in out


# --- export, help, errors ------------------------------------------------------------------------


async def test_export_writes_escaped_html(project: Path, home: Path, faux: FauxProvider) -> None:
    faux.queue(text("Use <b>tags</b> & `code`"))
    c = controller_for(project, home, faux)
    await submit(c, "<script>alert(1)</script>")
    out = await submit(c, "/export")
    path = project / f"heron-session-{c.session.store.session_id[:8]}.html"
    assert str(path) in out and path.exists()
    html = path.read_text()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;tags&lt;/b&gt; &amp;" in html
    assert path.stat().st_mode & 0o777 == 0o600  # the whole conversation: private like the session
    out = await submit(c, "/export out/session.html")
    assert "out: no such directory" in out and not (project / "out").exists()
    (project / "out").mkdir()
    await submit(c, "/export out/session.html")
    assert (project / "out" / "session.html").stat().st_mode & 0o777 == 0o600


async def test_help_unknown_commands_skills_and_templates(project: Path, home: Path, faux: FauxProvider) -> None:
    prompts = project / ".heron" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "review.md").write_text("---\ndescription: review a file\n---\nReview $1 carefully.")
    c = controller_for(project, home, faux)
    out = await submit(c, "/help")
    assert "/compact [focus]" in out and "templates: /review" in out
    assert "unknown command /frobnicate" in await submit(c, "/frobnicate now")
    assert "unknown skill" in await submit(c, "/skill:nothing here")
    faux.queue(text("reviewed"))
    assert "reviewed" in await submit(c, "/review app.py")
    assert user_texts(faux.requests[-1])[-1] == "Review app.py carefully."


async def test_every_built_in_command_has_one_handler(project: Path, home: Path, faux: FauxProvider) -> None:
    """The commands are served by handler objects the controller holds (session, control,
    model commands): each name /help lists reaches exactly one of them, none is left out."""
    c = controller_for(project, home, faux)
    assert set(c._handlers) == set(COMMANDS)
    parts = [c.sessions.commands(), c.control.commands(), c.models.commands()]
    names = [name for part in parts for name in part]
    assert len(names) == len(set(names)), "a command served by two handlers"
    # one command of each handler object, through submit
    assert "name" in await submit(c, "/session")
    assert "mode: default" in await submit(c, "/mode")
    assert "thinking: " in await submit(c, "/thinking")


async def test_in_memory_sessions_work_too(project: Path, home: Path, faux: FauxProvider) -> None:
    faux.queue(text("hi"))
    c = controller_for(project, home, faux, in_memory=True)
    await submit(c, "hello")
    assert "(in memory, not saved)" in await submit(c, "/session")
    assert "forked: in memory" in await submit(c, "/fork")
    assert not list((home / "sessions").glob("**/*.jsonl")) if (home / "sessions").exists() else True
    assert isinstance(c.session.store, SessionStore)


# --- extension commands ------------------------------------------------------------------


async def test_an_extension_command_runs_from_the_input_line_and_is_listed(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    (home / "extensions").mkdir(exist_ok=True)
    (home / "extensions" / "review.py").write_text(
        "def register(api):\n"
        "    @api.command('review', 'review the staged changes')\n"
        "    def review(args):\n"
        "        return f'Review the staged diff, focusing on {args}'\n"
    )
    faux.queue(text("Looks fine."))
    c = controller_for(project, home, faux)
    assert c.session.extensions.load(trusted=False) == []
    out = await submit(c, "/review error handling")
    assert "unknown command" not in out and "Looks fine." in out
    assert user_texts(faux.requests[-1])[-1] == "Review the staged diff, focusing on error handling"
    await c.submit("/help")
    assert "extension commands: /review" in output(c.console)


async def test_new_session_drops_the_tools_the_old_sessions_tool_search_loaded(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    import copy

    from heron.coding.mcp.setup import SessionMcp

    class Search:  # the part of ToolSearch the session switch uses
        def __init__(self) -> None:
            self.loaded: set[str] = {"mcp__srv__found"}
            self.restored: list[list[list[str]]] = []
            self.activate: object = None

        def restore(self, searched: list[list[str]]) -> None:
            self.restored.append(searched)

    c = controller_for(project, home, faux)
    base = list(c.session.agent.state.tools)
    found = copy.copy(base[0])
    found.name = "mcp__srv__found"
    c.session.agent.set_tools([*base, found])
    search = Search()
    c.app.mcp = SessionMcp(manager=None, tools=[], search=search)  # type: ignore[arg-type]
    await submit(c, "/new")
    assert [t.name for t in c.session.agent.state.tools] == [t.name for t in base]
    assert search.loaded == set() and search.restored == [[]]  # the new session's searches: none yet


async def test_context_reset_window_forgets_a_learnt_window(project: Path, home: Path, faux: FauxProvider) -> None:
    from heron.context.records.decisions import LearnedWindow, window_data

    faux.queue(text("hello"))
    c = controller_for(project, home, faux)
    await submit(c, "hi")
    assert "nothing to reset" in await submit(c, "/context reset-window")
    policy = c.session.policy
    policy.recorder.record(window_data(LearnedWindow(policy.sizes.model_key, 4_096, 9_000, "error text")))
    assert policy.sizes.window == 4_096
    out = await submit(c, "/context reset-window")
    assert "forgot the learnt window of 4,096 tokens" in out and policy.sizes.window == 128_000
    assert "usage: /context" in await submit(c, "/context bogus")


async def test_memory_lists_the_memory_changes(project: Path, home: Path, faux: FauxProvider) -> None:
    memory = project / "memory"
    faux.queue(tool_call("write", {"path": str(memory / "build.md"), "content": "make build\n"}), text("Noted."))
    c = controller_for(project, home, faux, settings={"memory": {"directory": str(memory)}})
    assert "none recorded yet" in await submit(c, "/memory")
    await submit(c, "remember the build")
    out = await submit(c, "/memory")
    assert "tool call" in out and "build.md" in out and c.session.store.session_id[:8] in out
