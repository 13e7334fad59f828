"""A sub-agent's (``task`` tool) permission question reaches the editor about a tool call
the editor knows: the child's asking call is announced as its own tool call (id
``<task call id>/<child call id>``, titled with the sub-agent's task) before the request,
and completed or failed when the child's call ends. Driven through the real
``heron --mode acp`` with the SDK's client; parent and child share the scripted model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp.schema import RequestPermissionResponse

from heron.agent.events import ToolExecutionEndEvent, ToolExecutionStartEvent
from heron.agent.tools import ToolResult
from heron.cli.acp.updates import EventTranslator
from heron.coding.control import Decision, PermissionPrompt
from heron.coding.events import SubagentEvent
from tests.cli.test_acp_e2e import Editor, fold, heron_acp, new_session, prompt, tool_text
from tests.cli.test_print_json_e2e import GREET, Project, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply
from tests.support.tools import BUILTIN

__all__ = ["project"]

TASK = ("call_1", "task", {"description": "fix the outside greeting", "prompt": "change outside.py"})


class Watching(Editor):
    """Also records which tool call ids it had been told about when each question came."""

    def __init__(self, answer: str | None) -> None:
        super().__init__(answer)
        self.known_when_asked: list[set[str]] = []

    async def request_permission(
        self, session_id: str, tool_call: Any, options: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.known_when_asked.append({u["toolCallId"] for u in self.updates if u["sessionUpdate"] == "tool_call"})
        return await super().request_permission(session_id, tool_call, options, **kwargs)


@pytest.mark.parametrize("answer", ["allow_once", "reject"])
def test_a_subagents_question_names_a_call_the_editor_was_shown(
    project: Project, local_server: LocalServer, answer: str
) -> None:
    outside = project.cwd.parent / "outside.py"
    outside.write_text(GREET)
    # The child's call has the same id as the parent's task call: the editor must still see two calls.
    edit = ("call_1", "edit", {"path": str(outside), "old_text": "hello, world", "new_text": "hello, child"})
    local_server.queue(
        openai_reply("", [TASK]), openai_reply("", [edit]), openai_reply("Child done."), openai_reply("Parent done.")
    )
    editor = Watching(answer)

    async def run() -> Any:
        async with heron_acp(project, local_server, editor) as conn:
            sid = await new_session(conn, project)
            return await prompt(conn, sid, "delegate the fix")

    assert asyncio.run(run()).stop_reason == "end_turn"
    allowed = answer == "allow_once"
    assert outside.read_text() == (GREET.replace("world", "child") if allowed else GREET)
    [asked] = editor.permissions
    child_id = "call_1/call_1"
    assert asked["toolCall"]["toolCallId"] == child_id
    assert asked["toolCall"]["title"].startswith("Sub-agent 'fix the outside greeting': Edit ")
    assert asked["toolCall"]["kind"] == "edit"
    assert asked["toolCall"]["content"] == [
        {"type": "diff", "path": str(outside), "oldText": "hello, world", "newText": "hello, child"}
    ]
    assert editor.known_when_asked == [{"call_1", child_id}]  # announced before it was asked
    calls = {c["toolCallId"]: c for c in fold(editor.updates) if isinstance(c, dict)}
    assert set(calls) == {"call_1", child_id}
    assert calls["call_1"]["kind"] == "other" and calls["call_1"]["status"] == "completed"
    child = calls[child_id]
    assert child["title"] == asked["toolCall"]["title"]
    assert child["status"] == ("completed" if allowed else "failed")
    assert ("Successfully replaced text" in tool_text(child)) if allowed else ("denied" in tool_text(child))
    statuses = [u.get("status") for u in editor.updates if u.get("toolCallId") == child_id]
    assert statuses == (["pending", "in_progress", "completed"] if allowed else ["pending", "failed"])
    assert fold(editor.updates)[-1] == ("agent_message_chunk", "Parent done.")


def test_calls_are_matched_across_nested_subagents_and_repeated_ids(tmp_path: Path) -> None:
    translator = EventTranslator(tmp_path, BUILTIN)
    translator.translate(
        ToolExecutionStartEvent(
            tool_call_id="t1", tool_name="task", args={"description": "look around here", "agent": "scout"}
        )
    )
    args = {"path": "x.txt", "content": "x"}
    other = {"path": "y.txt", "content": "y"}

    def nested(event: Any) -> SubagentEvent:  # a grandchild's event, as the parent session gets it
        return SubagentEvent(
            session_id="child",
            tool_call_id="t1",
            event=SubagentEvent(session_id="grandchild", tool_call_id="t2", event=event),
        )

    translator.translate(nested(ToolExecutionStartEvent(tool_call_id="c1", tool_name="write", args=args)))
    translator.translate(
        SubagentEvent(
            session_id="child",
            tool_call_id="t1",
            event=ToolExecutionStartEvent(tool_call_id="c1", tool_name="write", args=other),
        )
    )
    decision = Decision("ask", "outside the project")
    sub = translator.subagents.claim(PermissionPrompt("c1", "write", args, decision))
    assert sub is not None and sub.acp_id == "t1/t2/c1" and sub.label == "Sub-agent 'look around here' (scout)"
    assert translator.subagents.claim(PermissionPrompt("zzz", "write", args, decision)) is None
    end = ToolExecutionEndEvent(
        tool_call_id="c1", tool_name="write", result=ToolResult.text("Wrote 1 bytes"), is_error=False
    )
    [done] = translator.translate(nested(end))
    assert done.tool_call_id == "t1/t2/c1" and done.status == "completed"
    # the other child's c1 was never asked about: its end stays inside the task call
    assert translator.translate(SubagentEvent(session_id="child", tool_call_id="t1", event=end)) == []
