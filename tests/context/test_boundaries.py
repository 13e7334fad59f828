"""Step boundaries and compaction requests, read from the messages through the tool catalog."""

from __future__ import annotations

from typing import Any

from heron.agent.tool_meta import ToolCatalog, ToolMeta
from heron.ai.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from heron.context.compaction.boundaries import compaction_request, next_step_tokens, step_boundary
from tests.support.tools import BUILTIN

WHO: dict[str, Any] = {"api": "faux", "provider": "faux", "model": "m"}


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)])


def ask(*calls: tuple[str, str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(content=[ToolCall(id=i, name=n, arguments=a) for i, n, a in calls], **WHO)


def answer(text: str) -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text=text)], **WHO)


def result(call_id: str, name: str, text: str = "ok", error: bool = False) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name=name, content=[TextContent(text=text)], is_error=error)


def todos(*done: str, pending: tuple[str, ...] = ()) -> dict[str, Any]:
    items = [{"content": c, "status": "completed"} for c in done]
    return {"todos": items + [{"content": c, "status": "pending"} for c in pending]}


def test_the_users_next_prompt_is_a_turn_boundary() -> None:
    messages = [user("a"), answer("done"), user("b")]
    assert step_boundary(messages, BUILTIN) == "turn"


def test_a_todo_item_newly_completed_is_a_boundary_and_an_unchanged_list_is_not() -> None:
    first = [user("go"), ask(("t1", "todo", todos(pending=("a", "b")))), result("t1", "todo")]
    assert step_boundary(first, BUILTIN) is None  # nothing completed
    second = [*first, ask(("t2", "todo", todos("a", pending=("b",)))), result("t2", "todo")]
    assert step_boundary(second, BUILTIN) == "todo"
    again = [*second, ask(("t3", "todo", todos("a", pending=("b",)))), result("t3", "todo")]
    assert step_boundary(again, BUILTIN) is None  # the same item: no new step done
    # a new list whose first item is done counts, though fewer items are completed than before
    fresh = [*second, ask(("t4", "todo", todos("c", pending=("d",)))), result("t4", "todo")]
    assert step_boundary(fresh, BUILTIN) == "todo"


def test_a_todo_call_beside_an_edit_or_failing_is_not_a_boundary() -> None:
    base = [user("go")]
    edit = {"path": "a.py", "old_text": "x", "new_text": "y"}
    beside = [*base, ask(("e", "edit", edit), ("t", "todo", todos("a"))), result("e", "edit"), result("t", "todo")]
    assert step_boundary(beside, BUILTIN) is None
    failed = [*base, ask(("t", "todo", todos("a"))), result("t", "todo", error=True)]
    assert step_boundary(failed, BUILTIN) is None
    mid = [*base, ask(("e", "edit", edit)), result("e", "edit")]
    assert step_boundary(mid, BUILTIN) is None


def test_the_kind_decides_not_the_name() -> None:
    class Renamed:
        name = "tasks"
        meta = ToolMeta(kind="todo")

    class Shrink:
        name = "squash"
        meta = ToolMeta(kind="compact")

    catalog = ToolCatalog([Renamed(), Shrink()])
    done = [user("go"), ask(("t", "tasks", todos("a"))), result("t", "tasks")]
    assert step_boundary(done, catalog) == "todo"
    asked = [user("go"), ask(("c", "squash", {"focus": " the parser bug "})), result("c", "squash")]
    request = compaction_request(asked, catalog)
    assert request is not None and (request.call_id, request.focus) == ("c", "the parser bug")
    named = [user("go"), ask(("c", "compact", {})), result("c", "compact")]
    assert compaction_request(named, catalog) is None  # "compact" is not a compact-kind tool here


def test_a_compaction_request_is_an_answered_compact_call_after_the_last_assistant_message() -> None:
    call = ("c", "compact", {"focus": ""})
    asked = [user("go"), ask(call), result("c", "compact")]
    request = compaction_request(asked, BUILTIN)
    assert request is not None and request.focus is None
    assert compaction_request([*asked, answer("ok")], BUILTIN) is None
    assert compaction_request([user("go"), ask(call), result("c", "compact", error=True)], BUILTIN) is None


def test_the_next_step_is_predicted_from_the_largest_recent_step() -> None:
    big = "x" * 4_000  # ~1,000 tokens
    messages: list[Any] = [user("one")]
    messages += [ask(("r", "read", {"path": "a"})), result("r", "read", big)]
    messages += [ask(("t", "todo", todos("a"))), result("t", "todo")]
    messages += [answer("short answer"), user("two")]
    assert next_step_tokens(messages, BUILTIN) >= 1_000
    assert next_step_tokens([user("x")], BUILTIN) < 10
