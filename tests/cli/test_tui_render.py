"""The renderer: streamed markdown cut into blocks, tool call lines and result previews
(notices always shown), the footer, and a whole run rendered into a recording console."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from heron.agent.events import MessageEndEvent, ToolExecutionEndEvent, ToolExecutionStartEvent
from heron.agent.messages import BashExecutionMessage
from heron.agent.tools import ToolResult
from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.types import AssistantMessage, StopReason, TextContent, ThinkingContent, ToolCall, ToolResultMessage
from heron.cli.tui.call_text import describe_call, result_preview
from heron.cli.tui.footer import Totals, footer_text, format_tokens
from heron.cli.tui.render import BlockSplitter, Renderer
from heron.coding.events import CompactionEndEvent, CompactionStartEvent, RetryEndEvent, RetryStartEvent
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.session.store import SessionStore
from tests.cli.tui_helpers import output, recording_console
from tests.support.tools import BUILTIN

# --- BlockSplitter ------------------------------------------------------------------------


def split(text: str, step: int = 1) -> list[str]:
    splitter = BlockSplitter()
    blocks = []
    for i in range(0, len(text), step):
        blocks += splitter.feed(text[i : i + step])
    blocks += splitter.finish()
    return [b.text for b in blocks]


@pytest.mark.parametrize("step", [1, 3, 1000])
def test_paragraphs_come_out_as_they_complete(step: int) -> None:
    doc = "First paragraph\nstill first.\n\nSecond **bold**.\n\n\n# Heading\n\nlast"
    assert split(doc, step) == ["First paragraph\nstill first.", "Second **bold**.", "# Heading", "last"]


def test_a_block_is_released_only_when_the_next_line_shows_it_ended() -> None:
    splitter = BlockSplitter()
    assert splitter.feed("one\n\n") == []  # the next line may continue a list item
    assert [b.text for b in splitter.feed("two")] == ["one"]
    assert [b.text for b in splitter.finish()] == ["two"]


def test_fenced_code_with_blank_lines_stays_one_block() -> None:
    doc = "Look:\n\n```python\ndef f():\n\n    return 1\n```\n\nDone."
    assert split(doc) == ["Look:", "```python\ndef f():\n\n    return 1\n```", "Done."]


def test_indented_continuations_stay_with_their_list_item() -> None:
    doc = "- item one\n\n  more about one\n- item two\n\nAfter."
    assert split(doc) == ["- item one\n\n  more about one\n- item two", "After."]


def test_an_unclosed_fence_is_flushed_at_the_end() -> None:
    assert split("```\ncode that never closes\n\nstill code") == ["```\ncode that never closes\n\nstill code"]


# --- tool calls and results --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("read", {"path": "src/app.py"}, "read src/app.py"),
        ("read", {"path": "@src/app.py", "offset": 10, "limit": 50}, "read src/app.py:10-59"),
        ("bash", {"command": "pytest -q"}, "bash pytest -q"),
        ("bash", {"command": "cd x\nmake", "timeout": 30}, "bash cd x … (timeout 30s)"),
        ("write", {"path": "a.txt", "content": "1\n2\n3\n"}, "write a.txt (3 lines)"),
        ("edit", {"path": "a.py", "old_text": "x", "new_text": "y"}, "edit a.py"),
        ("grep", {"pattern": "TODO", "path": "src"}, 'grep "TODO" in src'),
        ("find", {"pattern": "*.py"}, "find *.py"),
        ("ls", {}, "ls ."),
        ("custom", {"k": 1}, 'custom {"k":1}'),
    ],
)
def test_describe_call(name: str, args: dict[str, object], expected: str) -> None:
    assert describe_call(name, BUILTIN.meta(name), args) == expected


def test_describe_call_is_cut_to_the_width() -> None:
    line = describe_call("bash", BUILTIN.meta("bash"), {"command": "echo " + "x" * 300}, width=40)
    assert len(line) <= 40 and line.endswith("…")


def test_preview_shows_the_head_and_every_notice() -> None:
    body = "\n".join(f"line {i}" for i in range(1, 101))
    notice = "[Showing lines 1-100 of 5000. Use offset=101 to continue.]"
    preview = result_preview(body + "\n\n" + notice, max_lines=3)
    assert [(p.text, p.kind) for p in preview] == [
        ("line 1", "body"),
        ("line 2", "body"),
        ("line 3", "body"),
        ("… 97 more lines", "more"),
        (notice, "notice"),
    ]


def test_preview_keeps_bash_outcomes_and_spill_notices() -> None:
    text = "out\n\n[Showing lines 1-3 of 3. Full output: /tmp/x.log]\n\nCommand exited with code 2"
    kinds = [(p.text, p.kind) for p in result_preview(text, max_lines=1)]
    assert kinds == [
        ("out", "body"),
        ("[Showing lines 1-3 of 3. Full output: /tmp/x.log]", "notice"),
        ("Command exited with code 2", "status"),
    ]
    assert [p.text for p in result_preview("")] == ["(no output)"]


# --- the footer ---------------------------------------------------------------------------


def test_format_tokens() -> None:
    assert [format_tokens(n) for n in (0, 999, 1_234, 56_789, 128_000, 2_500_000)] == [
        "0",
        "999",
        "1.2k",
        "57k",
        "128k",
        "2.5M",
    ]


def _ctx_style(text: object) -> str:
    spans = [s for s in text.spans if "ctx" in text.plain[s.start : s.end]]  # type: ignore[attr-defined]
    return str(spans[-1].style)


def test_footer_shows_model_tokens_cost_and_context_share() -> None:
    totals = Totals(input=12_345, output=678, cost=0.0123)
    footer = footer_text("test-model", totals, 32_000, 128_000, 100_000, thinking="high")
    assert footer.plain == "test-model (high) · ↑12k ↓678 · $0.012 · ctx 25% of 128k"
    assert _ctx_style(footer) == "dim"


def test_footer_warns_from_75_percent_and_is_red_over_the_threshold() -> None:
    assert _ctx_style(footer_text("m", Totals(), 96_000, 128_000, 110_000)) == "yellow"
    assert _ctx_style(footer_text("m", Totals(), 112_000, 128_000, 110_000)) == "red"
    assert "ctx 0%" in footer_text("m", Totals(), 0, 128_000, 110_000).plain


# --- rendering a run ----------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, 3001)))
    (proj / "small.py").write_text("def f():\n    return 1\n")
    return proj


async def test_a_run_renders_text_tools_and_notices(project: Path, faux: FauxProvider) -> None:
    faux.queue(
        FauxReply(
            content=[
                ThinkingContent(thinking="Let me look at the file first."),
                TextContent(text="I will read it."),
                ToolCall(id="", name="read", arguments={"path": "big.txt"}),
            ]
        ),
        tool_call("bash", {"command": "exit 3"}),
        text("## Result\n\nThe file has **3000** rows.\n\n- one\n- two"),
    )
    model = faux.model(context_window=128_000, max_tokens=8_192)
    session = CodingSession(
        cwd=project, model=model, store=SessionStore.in_memory(project), settings=settings_from_dict({})
    )
    console = recording_console()
    renderer = Renderer(console)
    session.subscribe(renderer.handle)
    await session.prompt("count the rows")
    out = output(console)
    assert "Let me look at the file first." in out
    assert "I will read it." in out
    assert "● read big.txt" in out
    assert "│ row 1" in out and "│ row 5" not in out
    assert "more lines" in out
    assert "[Showing lines 1-" in out and "Use offset=" in out  # the read tool's notice, in full
    assert "● bash exit 3" in out
    assert "Command exited with code 3" in out
    assert "Result" in out and "3000" in out and "• one" in out
    assert renderer.totals.output > 0
    assert renderer.activity == ""


def test_errors_aborts_and_session_notices() -> None:
    console = recording_console()
    renderer = Renderer(console)
    failed = AssistantMessage(
        api="x", provider="p", model="m", stop_reason=StopReason.ERROR, error_message="401 invalid api key"
    )
    renderer.handle(MessageEndEvent(message=failed))
    renderer.handle(
        MessageEndEvent(message=AssistantMessage(api="x", provider="p", model="m", stop_reason=StopReason.ABORTED))
    )
    renderer.handle(RetryStartEvent(attempt=1, max_attempts=3, delay=2.0, error_message="503 overloaded"))
    renderer.handle(RetryEndEvent(success=True, attempt=1))
    renderer.handle(CompactionStartEvent(reason="threshold", tokens_before=120_000))
    renderer.handle(
        CompactionEndEvent(reason="threshold", tokens_before=120_000, tokens_after=30_000, entry_id="abc", summary="s")
    )
    renderer.handle(CompactionEndEvent(reason="manual", tokens_before=10, skipped="nothing to compact"))
    out = output(console)
    assert "error: 401 invalid api key" in out
    assert "aborted" in out
    assert "503 overloaded; retrying in 2 s (1/3)…" in out
    assert "compacting the context (the context is near the limit; ~120k tokens)" in out
    assert "compacted: ~120k → ~30k tokens" in out
    assert "nothing compacted: nothing to compact" in out


def test_tool_errors_are_red_and_spill_notices_follow_the_replaced_result() -> None:
    console = Console(file=StringIO(), width=100, record=True, color_system="standard", force_terminal=True)
    renderer = Renderer(console)
    renderer.handle(ToolExecutionStartEvent(tool_call_id="c1", tool_name="read", args={"path": "nope.txt"}))
    renderer.handle(
        ToolExecutionEndEvent(
            tool_call_id="c1", tool_name="read", result=ToolResult.error("File not found: nope.txt"), is_error=True
        )
    )
    ansi = console.export_text(styles=True, clear=False)
    assert "\x1b[31m" in ansi and "File not found: nope.txt" in ansi
    renderer.handle(ToolExecutionStartEvent(tool_call_id="c2", tool_name="bash", args={"command": "cat big"}))
    renderer.handle(
        ToolExecutionEndEvent(tool_call_id="c2", tool_name="bash", result=ToolResult.text("x" * 50), is_error=False)
    )
    spilled = "[Output too large for the context: 50 characters, 1 lines. The full output is in /tmp/s.txt]"
    renderer.handle(
        MessageEndEvent(
            message=ToolResultMessage(
                tool_call_id="c2", tool_name="bash", content=[TextContent(text="xxxx\n\n" + spilled)]
            )
        )
    )
    assert spilled in console.export_text()


def test_shell_result_shows_the_tail_and_where_the_rest_is() -> None:
    console = recording_console()
    renderer = Renderer(console)
    message = BashExecutionMessage(
        command="seq 100",
        output="\n".join(str(i) for i in range(1, 101)),
        exit_code=1,
        truncated=True,
        full_output_path="/tmp/full.log",
    )
    renderer.shell_result(message, max_lines=5)
    out = output(console)
    assert "… 95 earlier lines" in out and "  100" in out and "  95\n" not in out
    assert "exit code 1" in out
    assert "Full output: /tmp/full.log" in out
    assert "(added to the context)" in out


def test_the_live_block_shows_the_answer_and_a_tool_call_as_they_stream() -> None:
    from heron.agent.events import MessageStartEvent, MessageUpdateEvent
    from heron.ai.events import TextDeltaEvent, TextStartEvent, ToolCallDeltaEvent
    from heron.cli.tui.live_view import live_block

    renderer = Renderer(recording_console(width=80))
    renderer.tools = BUILTIN
    message = AssistantMessage(api="faux", provider="faux", model="m")
    renderer.handle(MessageStartEvent(message=message))
    renderer.handle(MessageUpdateEvent(message=message, event=TextStartEvent(content_index=0, partial=message)))
    for word in ["Some ", "**bold** ", "words ", "without ", "an ", "end"]:
        delta = TextDeltaEvent(content_index=0, delta=word, partial=message)
        renderer.handle(MessageUpdateEvent(message=message, event=delta))
    assert live_block(renderer, 80) == "Some bold words without an end"  # markdown, not yet printed
    assert output(renderer.console) == ""
    renderer.handle(MessageStartEvent(message=message))  # the next answer: a tool call streams
    message.content.append(ToolCall(id="c1", name="bash", arguments={"command": "touch mark"}))
    delta = ToolCallDeltaEvent(content_index=0, delta='"touch mark', partial=message)
    renderer.handle(MessageUpdateEvent(message=message, event=delta))
    assert "● bash touch mark …" in live_block(renderer, 80)


def test_an_edit_being_written_shows_its_old_and_new_lines_as_they_stream() -> None:
    from heron.agent.events import MessageStartEvent, MessageUpdateEvent
    from heron.ai.events import ToolCallDeltaEvent
    from heron.cli.tui.live_view import live_block

    renderer = Renderer(recording_console(width=60))
    renderer.tools = BUILTIN
    message = AssistantMessage(api="faux", provider="faux", model="m")
    renderer.handle(MessageStartEvent(message=message))
    call = ToolCall(id="c1", name="edit", arguments={"path": "src/app.py"})
    message.content.append(call)

    def streamed(arguments: dict[str, object]) -> str:
        call.arguments = arguments  # what the provider parsed of the arguments so far
        delta = ToolCallDeltaEvent(content_index=0, delta="…", partial=message)
        renderer.handle(MessageUpdateEvent(message=message, event=delta))
        return live_block(renderer, 60)

    assert streamed({"path": "src/app.py"}) == "● edit src/app.py …"
    old = "def total(xs):\n    return sum(xs[:-1])"
    shown = streamed({"path": "src/app.py", "old_text": old, "new_text": "def total(xs):\n    return su"})
    assert shown.splitlines() == [
        "● edit src/app.py …",
        "  │ - def total(xs):",
        "  │ -     return sum(xs[:-1])",
        "  │ + def total(xs):",
        "  │ +     return su",
    ]
    many = {"path": "a.py", "edits": [{"old_text": f"x{n}", "new_text": f"y{n}\x1b[2J" * 20} for n in range(8)]}
    lines = streamed(many).splitlines()
    assert lines[0] == "● edit a.py (8 edits) …" and lines[1] == "  │ … 6 lines above"  # the tail: where text arrives
    assert lines[-1].startswith("  │ + y7^[[2J") and lines[-1].endswith("…")  # no escape reaches the terminal; cut
    assert all(len(line) <= 60 for line in lines) and len(lines) == 12


def test_a_multi_line_command_being_written_shows_its_lines() -> None:
    from heron.cli.tui.call_preview import preview_lines

    bash = BUILTIN.meta("bash")
    assert preview_lines(bash, {"command": "pytest -q"}) == []  # the call's line says it all
    assert preview_lines(bash, {"command": "cd src\nmake test"}) == [("cd src", "dim"), ("make test", "dim")]
    assert preview_lines(BUILTIN.meta("write"), {"path": "a", "content": "one\ntwo"}) == [
        ("one", "dim"),
        ("two", "dim"),
    ]
