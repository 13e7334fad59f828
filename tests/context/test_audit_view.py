"""Audit findings on the view (issue 10): cases the black-box scenarios in
tests/cli/test_context_audit.py found, pinned at the unit level."""

from __future__ import annotations

from pathlib import Path

from heron.ai.types import StopReason, ToolCall
from heron.context.records.decisions import ContextDecisions
from heron.context.view.build import NO_RESULT_NOTE, ViewBuilder
from tests.context.test_view import assistant, read_call, read_result, texts, user, wire
from tests.support.tools import BUILTIN

CWD = Path("/proj")


def test_a_call_left_without_a_result_by_a_killed_process_gets_one_in_the_view() -> None:
    bash = ToolCall(id="c2", name="bash", arguments={"command": "sleep 60"})
    messages = [
        user("turn 1"),
        assistant(read_call("c1", "a.txt"), bash, ts=5),
        read_result("c1", "text"),
        user("turn 2", ts=9),
    ]
    view = ViewBuilder(CWD, BUILTIN).apply(messages, ContextDecisions())
    assert texts(view) == [
        "user:turn 1",
        "assistant:",
        "toolResult:text",
        f"toolResult:{NO_RESULT_NOTE}",
        "user:turn 2",
    ]
    note = view[3]
    assert note.tool_call_id == "c2" and note.is_error and note.timestamp == 5  # type: ignore[union-attr]
    # the same object on every request (the wire cache keys on identity), the same bytes in a new process
    builder = ViewBuilder(CWD, BUILTIN)
    assert builder.apply(messages, ContextDecisions())[3] is builder.apply(messages, ContextDecisions())[3]
    assert wire(view) == wire(ViewBuilder(CWD, BUILTIN).apply(messages, ContextDecisions()))


def test_the_running_turns_calls_and_errored_messages_get_no_invented_result() -> None:
    running = [user("turn 1"), assistant(read_call("c1", "a.txt"))]
    assert len(ViewBuilder(CWD, BUILTIN).apply(running, ContextDecisions())) == 2
    failed = assistant(read_call("c1", "a.txt"))
    failed.stop_reason = StopReason.ERROR
    assert len(ViewBuilder(CWD, BUILTIN).apply([user("turn 1"), failed, user("again")], ContextDecisions())) == 3
