"""The event stream: exact order, subscriptions, iterators, JSON form."""

from __future__ import annotations

import asyncio
import json
import logging
from itertools import groupby

import pytest

from heron.agent import (
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    FunctionTool,
    LoopConfig,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolResult,
    TurnEndEvent,
    agent_event_to_json,
    iterate_loop,
    run_loop,
)
from heron.agent.events import AgentEvent as AgentEventAlias
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.types import AssistantMessage, StopReason, TextContent, ThinkingContent, ToolResultMessage, UserMessage
from tests.agent.support import (
    NoParams,
    UpdateFn,
    assert_tool_results_paired,
    echo_tool,
    event_types,
    make_agent,
    record,
)

ALL_TYPES = {
    "agent_start",
    "agent_end",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
}


def collapsed(events: list[AgentEvent]) -> list[str]:
    """Event types with runs of message_update folded into ``message_update*`` and the
    role of each message_start/end attached."""
    out: list[str] = []
    for kind, group in groupby(events, key=lambda e: e.type):
        items = list(group)
        if kind == "message_update":
            out.append("message_update*")
            continue
        for event in items:
            if isinstance(event, MessageStartEvent | MessageEndEvent):
                out.append(f"{kind}:{event.message.role}")
            else:
                out.append(kind)
    return out


async def test_exact_sequence_for_prompt_tool_answer(faux: FauxProvider) -> None:
    agent = make_agent(faux, [echo_tool()])
    events = record(agent)
    faux.queue(tool_call("echo", {"text": "hi"}, "c1", text_before="Calling echo."), text("The echo said hi."))
    added = await agent.prompt("say hi")

    assert collapsed(events) == [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant",
        "message_update*",
        "message_end:assistant",
        "tool_execution_start",
        "tool_execution_end",
        "message_start:toolResult",
        "message_end:toolResult",
        "turn_end",
        "turn_start",
        "message_start:assistant",
        "message_update*",
        "message_end:assistant",
        "turn_end",
        "agent_end",
    ]
    # the updates are the raw stream events of the message that is streaming
    first_assistant = added[1]
    assert isinstance(first_assistant, AssistantMessage)
    updates = [e for e in events if isinstance(e, MessageUpdateEvent)]
    stream_types = [u.event.type for u in updates if u.message is first_assistant]
    assert stream_types[0] == "text_start"
    assert "toolcall_start" in stream_types and stream_types[-1] == "toolcall_end"
    assert all(t not in ("start", "done", "error") for t in (u.event.type for u in updates))

    turn_ends = [e for e in events if isinstance(e, TurnEndEvent)]
    assert turn_ends[0].message is first_assistant
    assert [r.tool_call_id for r in turn_ends[0].tool_results] == ["c1"]
    assert turn_ends[0].tool_results[0] is added[2]
    assert turn_ends[1].message is added[3] and turn_ends[1].tool_results == []

    end = events[-1]
    assert isinstance(end, AgentEndEvent)
    assert end.messages == added == agent.messages
    # message_end carries the very objects that were stored, in order
    ended = [e.message for e in events if isinstance(e, MessageEndEvent)]
    assert all(a is b for a, b in zip(ended, agent.messages, strict=True))

    tool_end = next(e for e in events if isinstance(e, ToolExecutionEndEvent))
    assert tool_end.tool_call_id == "c1" and tool_end.tool_name == "echo" and not tool_end.is_error


async def test_agent_state_follows_the_events(faux: FauxProvider) -> None:
    agent = make_agent(faux, [echo_tool()])
    snapshots: list[tuple[str, bool, bool, frozenset[str]]] = []

    def watch(event: AgentEvent) -> None:
        snapshots.append(
            (
                event.type,
                agent.state.is_streaming,
                agent.state.stream_message is not None,
                frozenset(agent.state.pending_tool_calls),
            )
        )

    agent.subscribe(watch)
    faux.queue(tool_call("echo", {"text": "x"}, "c1"), text("ok"))
    await agent.prompt("go")
    assert all(is_streaming for _, is_streaming, _, _ in snapshots)
    assert any(kind == "message_update" and streaming for kind, _, streaming, _ in snapshots)
    assert next(p for kind, _, _, p in snapshots if kind == "tool_execution_start") == {"c1"}
    assert next(p for kind, _, _, p in snapshots if kind == "tool_execution_end") == frozenset()
    assert not agent.state.is_streaming
    assert agent.state.stream_message is None


async def test_subscribe_and_unsubscribe(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    first: list[AgentEvent] = []
    second: list[AgentEvent] = []
    unsubscribe = agent.subscribe(first.append)
    agent.subscribe(second.append)
    faux.queue(text("one"), text("two"))
    await agent.prompt("a")
    count = len(first)
    assert count > 0 and event_types(first) == event_types(second)
    unsubscribe()
    unsubscribe()  # idempotent
    await agent.prompt("b")
    assert len(first) == count
    assert len(second) == 2 * count


async def test_a_failing_listener_does_not_break_the_run(faux: FauxProvider, caplog: pytest.LogCaptureFixture) -> None:
    agent = make_agent(faux, [echo_tool()])

    def broken(event: AgentEvent) -> None:
        if event.type in ("tool_execution_start", "message_update"):
            raise RuntimeError("UI bug")

    agent.subscribe(broken)
    healthy = record(agent)
    faux.queue(tool_call("echo", {"text": "x"}, "c1"), text("ok"))
    with caplog.at_level(logging.ERROR, logger="heron.agent.emitter"):
        await agent.prompt("go")
    assert_tool_results_paired(agent.messages)
    assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert healthy[-1].type == "agent_end"
    assert "agent event listener failed on tool_execution_start" in caplog.text  # contained, not silent


async def test_events_async_iterator(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    faux.queue(text("hello there"))

    async def consume() -> list[AgentEvent]:
        return [event async for event in agent.events()]

    consumer = asyncio.create_task(consume())
    await agent.prompt("hi")
    events = await asyncio.wait_for(consumer, 5)
    assert events[0].type == "agent_start"
    assert events[-1].type == "agent_end"
    assert "message_update" in event_types(events)
    assert len(agent._events) == 0  # the iterator unsubscribed when it ended


async def test_events_iterator_stops_at_the_end_of_one_run(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    faux.queue(text("1"), text("2"))

    async def consume() -> list[str]:
        return [event.type async for event in agent.events()]

    consumer = asyncio.create_task(consume())
    await agent.prompt("first")
    await agent.prompt("second")
    types = await asyncio.wait_for(consumer, 5)
    assert types.count("agent_start") == 1 and types.count("agent_end") == 1


async def test_iterate_loop(faux: FauxProvider) -> None:
    context = AgentContext(system_prompt="sys", messages=[], tools=[echo_tool()])
    config = LoopConfig(model=faux.model())
    faux.queue(tool_call("echo", {"text": "x"}, "c1"), text("done"))
    prompt = UserMessage(content="go")
    events = [e async for e in iterate_loop([prompt], context, config, AbortSignal())]
    assert events[0].type == "agent_start" and events[-1].type == "agent_end"
    assert context.messages[0] is prompt
    assert [m.role for m in context.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert faux.requests[0].system_prompt == "sys"
    assert_tool_results_paired(context.messages)


async def test_iterate_loop_closed_early_aborts_the_run(faux: FauxProvider) -> None:
    started = asyncio.Event()

    async def hang(call_id: str, params: NoParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        started.set()
        await signal.wait()
        return ToolResult.error("aborted")

    context = AgentContext(system_prompt="", messages=[], tools=[FunctionTool("hang", "H.", NoParams, hang)])
    config = LoopConfig(model=faux.model())
    signal = AbortSignal()
    faux.queue(tool_call("hang", {}, "c1"), text("never"))
    iterator = iterate_loop([UserMessage(content="go")], context, config, signal)
    async for event in iterator:
        if event.type == "tool_execution_start":
            break
    await asyncio.wait_for(iterator.aclose(), 5)  # type: ignore[attr-defined]
    assert signal.aborted
    assert started.is_set()
    assert_tool_results_paired(context.messages)
    final = context.messages[-1]
    assert isinstance(final, AssistantMessage) and final.stop_reason == StopReason.ABORTED


async def test_cancelling_run_loop_cancels_its_tools(faux: FauxProvider) -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def hang(call_id: str, params: NoParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return ToolResult.text("unreachable")

    context = AgentContext(system_prompt="", messages=[], tools=[FunctionTool("hang", "H.", NoParams, hang)])
    faux.queue(tool_call("hang", {}, "c1"))
    task = asyncio.create_task(
        run_loop([UserMessage(content="go")], context, LoopConfig(model=faux.model()), AbortSignal(), lambda e: None)
    )
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(cancelled.wait(), 5)


async def test_run_loop_returns_added_messages(faux: FauxProvider) -> None:
    existing = UserMessage(content="earlier")
    context = AgentContext(system_prompt="", messages=[existing])
    faux.queue(text("ok"))
    emitted: list[AgentEvent] = []
    added = await run_loop(
        [UserMessage(content="now")], context, LoopConfig(model=faux.model()), AbortSignal(), emitted.append
    )
    assert [m.role for m in added] == ["user", "assistant"]
    assert context.messages[0] is existing and context.messages[1:] == added


async def test_every_event_type_serialises_to_json(faux: FauxProvider) -> None:
    async def progress(call_id: str, params: NoParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        on_update(ToolResult.text("halfway", details={"pct": 50}))
        return ToolResult.text("done", details={"nested": {"ok": True}})

    agent = make_agent(faux, [FunctionTool("progress", "P.", NoParams, progress)])
    events = record(agent)
    faux.queue(
        FauxReply(content=[ThinkingContent(thinking="hmm", thinking_signature="sig"), TextContent(text="go")]),
    )
    faux.queue(tool_call("progress", {}, "c1"), text("finished"))
    agent.follow_up("next")  # makes the first answer lead to another turn
    await agent.prompt("start")
    assert {e.type for e in events} == ALL_TYPES
    for event in events:
        data = agent_event_to_json(event)
        assert data["type"] == event.type
        assert json.loads(json.dumps(data)) == data
    update = next(agent_event_to_json(e) for e in events if e.type == "tool_execution_update")
    assert update["partial_result"]["content"] == [{"type": "text", "text": "halfway"}]
    assert update["partial_result"]["details"] == {"pct": 50}
    message_update = next(agent_event_to_json(e) for e in events if e.type == "message_update")
    assert message_update["message"]["role"] == "assistant"
    assert "type" in message_update["event"]
    end = agent_event_to_json(events[-1])
    assert [m["role"] for m in end["messages"]] == [m.role for m in agent.messages]
    turn_end = next(agent_event_to_json(e) for e in events if e.type == "turn_end" and e.tool_results)  # type: ignore[union-attr]
    assert turn_end["tool_results"][0]["toolCallId"] == "c1"


def test_agent_event_union_is_exported() -> None:
    assert AgentEvent is AgentEventAlias


def test_result_message_json_shape() -> None:
    message = ToolResultMessage(tool_call_id="c", tool_name="t", content=[TextContent(text="x")])
    data = agent_event_to_json(MessageEndEvent(message=message))
    assert data == {"message": message.to_json_dict(), "type": "message_end"}
