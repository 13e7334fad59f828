"""Steering and follow-up messages."""

from __future__ import annotations

import asyncio

from heron.agent import SKIPPED_FOR_STEERING, FunctionTool, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.types import AssistantMessage, Context, ToolResultMessage, UserMessage
from tests.agent.support import (
    Gate,
    NoParams,
    UpdateFn,
    assert_tool_results_paired,
    calls,
    echo_tool,
    last_assistant,
    make_agent,
    record,
    results_of,
    text_of,
    user_texts,
    wait_until,
)


async def test_steer_skips_the_rest_of_a_sequential_batch(faux: FauxProvider) -> None:
    gate = Gate()
    agent = make_agent(faux, [gate.tool], tool_execution="sequential")
    events = record(agent)
    faux.queue(
        calls(("gate", {"path": "a"}, "c1"), ("gate", {"path": "b"}, "c2"), ("gate", {"path": "c"}, "c3")),
        text("changing course"),
    )
    task = asyncio.create_task(agent.prompt("do three things"))
    await wait_until(lambda: gate.started == ["c1"])
    agent.steer("Stop, use the other directory.")
    gate.open("c1")
    await asyncio.wait_for(task, 5)

    assert gate.started == ["c1"]  # the others never ran
    results = results_of(agent.messages)
    assert not results["c1"].is_error
    for call_id in ("c2", "c3"):
        assert results[call_id].is_error
        assert text_of(results[call_id]) == SKIPPED_FOR_STEERING == "Skipped due to queued user message."
    assert_tool_results_paired(agent.messages)

    # the steering message follows the results and is sent with the next model call
    sent = faux.requests[-1].messages
    assert len(faux.requests) == 2
    assert isinstance(sent[-1], UserMessage)
    assert sent[-1].text() == "Stop, use the other directory."
    assert [m.tool_call_id for m in sent[-4:-1] if isinstance(m, ToolResultMessage)] == ["c1", "c2", "c3"]
    assert [m.role for m in agent.messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "toolResult",
        "user",
        "assistant",
    ]
    assert last_assistant(agent.messages).text() == "changing course"
    # delivered through the usual events, inside the next turn
    steer_start = next(
        i
        for i, e in enumerate(events)
        if e.type == "message_start" and isinstance(e.message, UserMessage) and e.message is sent[-1]  # type: ignore[union-attr]
    )
    assert events[steer_start - 1].type == "turn_start"
    assert events[steer_start - 2].type == "turn_end"
    assert agent.clear_queues() == []


async def test_steer_while_streaming_an_answer_gets_another_turn(faux: FauxProvider) -> None:
    agent = make_agent(faux)

    def first(context: Context) -> FauxReply:
        agent.steer("one more thing")
        return text("first answer")

    faux.queue(first, text("second answer"))
    await agent.prompt("hello")
    assert len(faux.requests) == 2
    assert user_texts(faux.requests[1].messages) == ["hello", "one more thing"]
    assert [m.role for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert last_assistant(agent.messages).text() == "second answer"


async def test_steer_in_parallel_mode_does_not_skip_started_calls(faux: FauxProvider) -> None:
    gate = Gate()
    agent = make_agent(faux, [gate.tool])
    faux.queue(calls(("gate", {"path": "a"}, "c1"), ("gate", {"path": "b"}, "c2")), text("ok"))
    task = asyncio.create_task(agent.prompt("go"))
    await wait_until(lambda: gate.started == ["c1", "c2"])
    agent.steer("hurry")
    gate.open("c1", "c2")
    await asyncio.wait_for(task, 5)
    assert not any(r.is_error for r in results_of(agent.messages).values())
    assert user_texts(faux.requests[-1].messages) == ["go", "hurry"]
    assert_tool_results_paired(agent.messages)


async def test_follow_up_waits_until_the_agent_would_stop(faux: FauxProvider) -> None:
    agent = make_agent(faux)

    async def ask_later(call_id: str, params: NoParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        agent.follow_up("and then summarise")
        return ToolResult.text("step done")

    agent.set_tools([FunctionTool("step", "A step.", NoParams, ask_later), echo_tool()])
    faux.queue(tool_call("step", {}, "c1"), tool_call("echo", {"text": "x"}, "c2"), text("work done"), text("summary"))
    added = await agent.prompt("work")

    assert len(faux.requests) == 4
    # not delivered after the tool calls, while the agent still had work to do
    for request in faux.requests[:3]:
        assert "and then summarise" not in user_texts(request.messages)
    # delivered once the answer had no tool calls, and the agent kept running for it
    final_request = faux.requests[3].messages
    assert isinstance(final_request[-2], AssistantMessage) and final_request[-2].text() == "work done"
    assert isinstance(final_request[-1], UserMessage) and final_request[-1].text() == "and then summarise"
    assert last_assistant(agent.messages).text() == "summary"
    assert added[-1] is agent.messages[-1]
    assert_tool_results_paired(agent.messages)


async def test_follow_up_queued_before_the_run(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    agent.follow_up("second question")
    agent.follow_up("third question")
    faux.queue(text("a1"), text("a2"))
    await agent.prompt("first question")
    assert [m.text() for m in agent.messages if isinstance(m, UserMessage | AssistantMessage)] == [
        "first question",
        "a1",
        "second question",
        "third question",
        "a2",
    ]
    assert user_texts(faux.requests[1].messages) == ["first question", "second question", "third question"]


async def test_steering_wins_over_follow_up(faux: FauxProvider) -> None:
    agent = make_agent(faux)

    def first(context: Context) -> FauxReply:
        agent.follow_up("later")
        agent.steer("now")
        return text("a1")

    faux.queue(first, text("a2"), text("a3"))
    await agent.prompt("start")
    assert user_texts(faux.requests[1].messages) == ["start", "now"]
    assert user_texts(faux.requests[2].messages) == ["start", "now", "later"]


async def test_clear_queues_returns_what_was_pending(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    agent.steer("s")
    agent.follow_up("f")
    steering, follow_up = agent.queued()
    assert [m.text() for m in steering if isinstance(m, UserMessage)] == ["s"]
    assert [m.text() for m in follow_up if isinstance(m, UserMessage)] == ["f"]
    steering.clear()  # a copy: reading the queues does not change them
    assert agent.queued_counts() == (1, 1)
    cleared = agent.clear_queues()
    assert [m.text() for m in cleared if isinstance(m, UserMessage)] == ["s", "f"]
    faux.queue(text("ok"))
    await agent.prompt("p")
    assert len(faux.requests) == 1
    assert agent.queued() == ([], [])
