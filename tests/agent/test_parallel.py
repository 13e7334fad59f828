"""Tool calls of one answer: concurrency, per-resource serialisation, result order."""

from __future__ import annotations

import asyncio

from heron.agent import FunctionTool, ToolExecutionEndEvent, ToolExecutionStartEvent, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, text
from heron.ai.types import ToolResultMessage
from tests.agent.support import (
    Gate,
    PathParams,
    UpdateFn,
    assert_tool_results_paired,
    calls,
    make_agent,
    record,
    settle,
    text_of,
    wait_until,
)


async def test_two_slow_tools_run_concurrently(faux: FauxProvider) -> None:
    """Each call waits until the other has started: this finishes only if they overlap."""
    started = {"a": asyncio.Event(), "b": asyncio.Event()}

    async def rendezvous(call_id: str, params: PathParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        me, other = ("a", "b") if params.path == "a" else ("b", "a")
        started[me].set()
        await asyncio.wait_for(started[other].wait(), 5)
        return ToolResult.text(me)

    agent = make_agent(faux, [FunctionTool("meet", "Meet.", PathParams, rendezvous)])
    events = record(agent)
    faux.queue(calls(("meet", {"path": "a"}, "c1"), ("meet", {"path": "b"}, "c2")), text("ok"))
    await asyncio.wait_for(agent.prompt("go"), 10)

    assert_tool_results_paired(agent.messages)
    tool_events = [e for e in events if isinstance(e, ToolExecutionStartEvent | ToolExecutionEndEvent)]
    # overlap: both calls started before either ended
    assert [e.type for e in tool_events] == [
        "tool_execution_start",
        "tool_execution_start",
        "tool_execution_end",
        "tool_execution_end",
    ]
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, text_of(r), r.is_error) for r in results] == [("c1", "a", False), ("c2", "b", False)]


async def test_results_are_appended_in_call_order(faux: FauxProvider) -> None:
    gate = Gate()
    agent = make_agent(faux, [gate.tool])
    events = record(agent)
    faux.queue(calls(("gate", {"path": "x"}, "c1"), ("gate", {"path": "y"}, "c2")), text("ok"))
    task = asyncio.create_task(agent.prompt("go"))
    await wait_until(lambda: gate.started == ["c1", "c2"])
    gate.open("c2")
    await wait_until(lambda: gate.finished == ["c2"])
    gate.open("c1")
    await asyncio.wait_for(task, 5)

    ends = [e.tool_call_id for e in events if isinstance(e, ToolExecutionEndEvent)]
    assert ends == ["c2", "c1"]  # the second finished first...
    results = [m.tool_call_id for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert results == ["c1", "c2"]  # ...but results follow the calls
    message_ends = [
        e.message.tool_call_id
        for e in events
        if e.type == "message_end" and isinstance(e.message, ToolResultMessage)  # type: ignore[union-attr]
    ]
    assert message_ends == ["c1", "c2"]
    request = faux.requests[-1].messages
    assert [m.tool_call_id for m in request if isinstance(m, ToolResultMessage)] == ["c1", "c2"]
    assert_tool_results_paired(agent.messages)


async def test_same_concurrency_key_is_serialised_different_keys_overlap(faux: FauxProvider) -> None:
    gate = Gate(key=True)
    agent = make_agent(faux, [gate.tool])
    faux.queue(
        calls(
            ("gate", {"path": "src/a.py"}, "c1"),
            ("gate", {"path": "src/a.py"}, "c2"),
            ("gate", {"path": "src/b.py"}, "c3"),
        ),
        text("ok"),
    )
    task = asyncio.create_task(agent.prompt("go"))
    # the two different paths run at the same time
    await wait_until(lambda: sorted(gate.started) == ["c1", "c3"])
    await settle()
    assert "c2" not in gate.started  # same path as c1: waits for it
    gate.open("c3")
    await wait_until(lambda: gate.finished == ["c3"])
    await settle()
    assert "c2" not in gate.started  # still waiting for c1, not for c3
    gate.open("c1")
    await wait_until(lambda: "c2" in gate.started)
    assert gate.finished == ["c3", "c1"]
    gate.open("c2")
    await asyncio.wait_for(task, 5)
    assert_tool_results_paired(agent.messages)
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["c1", "c2", "c3"]
    assert not any(r.is_error for r in results)


async def test_three_calls_on_one_path_run_in_call_order(faux: FauxProvider) -> None:
    gate = Gate(key=True)
    agent = make_agent(faux, [gate.tool])
    faux.queue(calls(*[("gate", {"path": "f"}, f"c{i}") for i in range(1, 4)]), text("ok"))
    task = asyncio.create_task(agent.prompt("go"))
    for call_id in ("c1", "c2", "c3"):
        await wait_until(lambda call_id=call_id: gate.started[-1:] == [call_id])  # type: ignore[misc]
        await settle()
        assert gate.started[-1] == call_id  # nothing after it started yet
        gate.open(call_id)
    await asyncio.wait_for(task, 5)
    assert gate.finished == ["c1", "c2", "c3"]


async def test_broken_concurrency_key_only_serialises(faux: FauxProvider) -> None:
    order: list[str] = []

    async def run(call_id: str, params: PathParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        order.append(call_id)
        return ToolResult.text("ok")

    def broken_key(params: PathParams) -> str:
        raise KeyError("no key")

    agent = make_agent(faux, [FunctionTool("t", "T.", PathParams, run, concurrency_key=broken_key)])
    faux.queue(calls(("t", {"path": "a"}, "c1"), ("t", {"path": "b"}, "c2")), text("ok"))
    await agent.prompt("go")
    assert order == ["c1", "c2"]
    assert_tool_results_paired(agent.messages)
    assert not any(m.is_error for m in agent.messages if isinstance(m, ToolResultMessage))


async def test_sequential_mode(faux: FauxProvider) -> None:
    gate = Gate()
    agent = make_agent(faux, [gate.tool], tool_execution="sequential")
    events = record(agent)
    faux.queue(calls(("gate", {"path": "a"}, "c1"), ("gate", {"path": "b"}, "c2")), text("ok"))
    task = asyncio.create_task(agent.prompt("go"))
    await wait_until(lambda: gate.started == ["c1"])
    await settle()
    assert gate.started == ["c1"]  # different paths, still one at a time
    gate.open("c1")
    await wait_until(lambda: gate.started == ["c1", "c2"])
    gate.open("c2")
    await asyncio.wait_for(task, 5)
    tool_events = [
        (e.type, e.tool_call_id) for e in events if isinstance(e, ToolExecutionStartEvent | ToolExecutionEndEvent)
    ]
    assert tool_events == [
        ("tool_execution_start", "c1"),
        ("tool_execution_end", "c1"),
        ("tool_execution_start", "c2"),
        ("tool_execution_end", "c2"),
    ]
    assert_tool_results_paired(agent.messages)
