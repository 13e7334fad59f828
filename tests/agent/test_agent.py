"""The Agent API: busy rules, continue_, setters that apply at the next turn, idle."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from heron.agent import Agent, AgentBusyError, FunctionTool, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.options import StreamOptions
from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.ai.registry import stream as ai_stream
from heron.ai.stream import AssistantEventStream
from heron.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tests.agent.support import (
    Gate,
    NoParams,
    UpdateFn,
    assert_tool_results_paired,
    echo_tool,
    last_assistant,
    make_agent,
    record,
    user_texts,
    wait_until,
)


async def test_prompt_forms(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    image = ImageContent(data="aGk=", mime_type="image/png")
    faux.queue(text("1"), text("2"), text("3"))
    added = await agent.prompt("look", images=[image])
    prompt = added[0]
    assert isinstance(prompt, UserMessage)
    assert prompt.content == [TextContent(text="look"), image]
    own = UserMessage(content="as message")
    added = await agent.prompt(own)
    assert added[0] is own
    batch = [UserMessage(content="a"), UserMessage(content="b")]
    added = await agent.prompt(batch)
    assert added[:2] == batch
    assert user_texts(faux.requests[-1].messages)[-2:] == ["a", "b"]
    assert [m.role for m in added] == ["user", "user", "assistant"]


async def test_prompt_while_running_is_refused(faux: FauxProvider) -> None:
    gate = Gate()
    agent = make_agent(faux, [gate.tool])
    faux.queue(tool_call("gate", {"path": "a"}, "c1"), text("ok"))
    task = asyncio.create_task(agent.prompt("go"))
    await wait_until(lambda: gate.started == ["c1"])
    assert agent.is_running
    assert agent.state.is_streaming
    with pytest.raises(AgentBusyError):
        await agent.prompt("again")
    with pytest.raises(AgentBusyError):
        await agent.continue_()
    with pytest.raises(AgentBusyError):
        agent.replace_messages([])
    gate.open("c1")
    await asyncio.wait_for(task, 5)
    assert not agent.is_running
    assert user_texts(agent.messages) == ["go"]  # the refused prompt was not added
    faux.queue(text("second run"))
    await agent.prompt("again")
    assert last_assistant(agent.messages).text() == "second run"


async def test_continue_on_empty_list_is_refused(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    with pytest.raises(ValueError, match="empty"):
        await agent.continue_()
    assert faux.requests == []


async def test_continue_after_an_answer_is_refused(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    faux.queue(text("answer"))
    await agent.prompt("q")
    with pytest.raises(ValueError, match="assistant"):
        await agent.continue_()
    assert len(faux.requests) == 1


async def test_continue_after_a_tool_result_added_by_hand(faux: FauxProvider) -> None:
    call = ToolCall(id="c1", name="echo", arguments={"text": "x"})
    history = [
        UserMessage(content="q"),
        AssistantMessage(api="faux", provider="faux", model="faux-1", content=[call], stop_reason=StopReason.TOOL_USE),
        ToolResultMessage(tool_call_id="c1", tool_name="echo", content=[TextContent(text="echo: x")]),
    ]
    agent = make_agent(faux, [echo_tool()])
    agent.replace_messages(history)
    faux.queue(text("continued"))
    added = await agent.continue_()
    assert [m.role for m in added] == ["assistant"]
    assert faux.requests[0].messages == history
    assert agent.messages[:3] == history
    assert last_assistant(agent.messages).text() == "continued"
    assert_tool_results_paired(agent.messages)


async def test_continue_after_a_user_message_and_after_an_error(faux: FauxProvider) -> None:
    agent = make_agent(faux, messages=[UserMessage(content="pending question")])
    faux.queue(text("here"))
    await agent.continue_()
    assert user_texts(faux.requests[0].messages) == ["pending question"]
    # an error is not an answer: it may be continued (retried)
    await agent.prompt("next")  # the faux queue is empty: the provider fails
    assert last_assistant(agent.messages).stop_reason == StopReason.ERROR
    faux.queue(text("retried"))
    await agent.continue_()
    assert last_assistant(agent.messages).text() == "retried"


async def test_setters_take_effect_at_the_next_turn(faux: FauxProvider) -> None:
    thinking_seen: list[str] = []
    models_seen: list[str] = []

    def spy(model: Model, context: Context, options: StreamOptions) -> AssistantEventStream:
        thinking_seen.append(options.thinking)
        models_seen.append(model.id)
        return ai_stream(model, context, options)

    agent = make_agent(faux, stream_fn=spy)
    other = echo_tool("other")

    async def reconfigure(call_id: str, params: NoParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        agent.set_model(faux.model("faux-2"))
        agent.set_thinking_level("high")
        agent.set_tools([other])
        agent.set_system_prompt("You are reconfigured.")
        return ToolResult.text("reconfigured")

    agent.set_tools([FunctionTool("reconfigure", "R.", NoParams, reconfigure)])
    faux.queue(tool_call("reconfigure", {}, "c1"), text("after"))
    await agent.prompt("go")

    assert models_seen == ["faux-1", "faux-2"]
    assert thinking_seen == ["off", "high"]
    assert [t.name for t in faux.requests[0].tools or []] == ["reconfigure"]
    assert [t.name for t in faux.requests[1].tools or []] == ["other"]
    assert faux.requests[0].system_prompt == "You are a test."
    assert faux.requests[1].system_prompt == "You are reconfigured."
    answers = [m for m in agent.messages if isinstance(m, AssistantMessage)]
    assert [a.model for a in answers] == ["faux-1", "faux-2"]
    assert agent.state.model.id == "faux-2"
    assert agent.state.thinking_level == "high"

    # and they persist into the next run
    faux.queue(text("again"))
    await agent.prompt("more")
    assert models_seen[-1] == "faux-2" and thinking_seen[-1] == "high"
    assert [t.name for t in faux.requests[-1].tools or []] == ["other"]


async def test_thinking_level_does_not_override_explicit_stream_options(faux: FauxProvider) -> None:
    seen: list[tuple[str, str | None]] = []

    def spy(model: Model, context: Context, options: StreamOptions) -> AssistantEventStream:
        seen.append((options.thinking, options.session_id))
        assert options.signal is not None
        return ai_stream(model, context, options)

    agent = make_agent(
        faux, stream_fn=spy, thinking_level="low", stream_options=lambda ctx: StreamOptions(session_id="s1")
    )
    faux.queue(text("a"))
    await agent.prompt("x")
    agent.stream_options = lambda ctx: StreamOptions(session_id="s1", thinking="minimal")
    faux.queue(text("b"))
    await agent.prompt("y")
    assert seen == [("low", "s1"), ("minimal", "s1")]


async def test_wait_for_idle(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    await agent.wait_for_idle()  # never ran: returns at once
    gate = Gate()
    agent.set_tools([gate.tool])
    faux.queue(tool_call("gate", {"path": "a"}, "c1"), text("done"))
    task = asyncio.create_task(agent.prompt("go"))
    await wait_until(lambda: agent.is_running)
    waiter = asyncio.create_task(agent.wait_for_idle())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    gate.open("c1")
    await asyncio.wait_for(waiter, 5)
    assert not agent.is_running
    assert last_assistant(agent.messages).text() == "done"
    await task


async def test_a_timed_out_wait_for_idle_leaves_the_run_alone(faux: FauxProvider) -> None:
    gate = Gate()
    agent = make_agent(faux, [gate.tool])
    faux.queue(tool_call("gate", {"path": "a"}, "c1"), text("done"))
    task = asyncio.create_task(agent.prompt("go"))
    await wait_until(lambda: gate.started == ["c1"])
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(agent.wait_for_idle(), 0.01)
    assert agent.is_running
    gate.open("c1")
    await asyncio.wait_for(task, 5)
    assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert last_assistant(agent.messages).text() == "done"


async def test_cancelling_prompt_aborts_the_run_cleanly(faux: FauxProvider) -> None:
    """A caller's timeout or a cancelled UI task must not leave a call without its result,
    nor a tool running on after the run."""
    gate = Gate()
    agent = make_agent(faux, [gate.tool], abort_grace=0.02)
    events = record(agent)
    faux.queue(tool_call("gate", {"path": "a"}, "c1"), text("never"))
    task = asyncio.create_task(agent.prompt("go"))
    await wait_until(lambda: gate.started == ["c1"])
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not agent.is_running
    assert_tool_results_paired(agent.messages)
    assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert last_assistant(agent.messages).stop_reason == StopReason.ABORTED
    assert events[-1].type == "agent_end"
    gate.open("c1")
    await asyncio.sleep(0.01)
    assert gate.finished == []  # the tool was cancelled, not left running
    assert faux.pending == 1  # no request after the cancellation
    faux.clear()
    faux.queue(text("fresh"))
    await agent.prompt("again")  # and the agent is usable
    assert last_assistant(agent.messages).text() == "fresh"


async def test_a_crashing_stream_fn_surfaces_and_leaves_the_agent_usable(faux: FauxProvider) -> None:
    def broken_stream(model: Model, context: Context, options: StreamOptions) -> Any:
        async def events() -> Any:
            raise RuntimeError("stream implementation bug")
            yield  # pragma: no cover

        return events()

    agent = make_agent(faux, stream_fn=broken_stream)
    with pytest.raises(RuntimeError, match="stream implementation bug"):
        await agent.prompt("go")
    await agent.wait_for_idle()
    assert not agent.is_running
    assert not agent.state.is_streaming
    assert [m.role for m in agent.messages] == ["user"]
    # the agent is usable again
    agent.stream_fn = ai_stream
    faux.queue(text("recovered"))
    await agent.prompt("retry")
    assert last_assistant(agent.messages).text() == "recovered"


async def test_error_is_recorded_in_state(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    await agent.prompt("nothing queued")
    assert agent.state.error is not None and "no reply queued" in agent.state.error
    faux.queue(text("fine"))
    await agent.prompt("again")
    assert agent.state.error is None


async def test_abort_when_idle_is_harmless(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    agent.abort()
    faux.queue(text("ok"))
    await agent.prompt("go")
    assert last_assistant(agent.messages).stop_reason == StopReason.STOP
    agent.abort()  # after a run: does not affect the next one
    faux.queue(text("ok2"))
    await agent.prompt("go")
    assert last_assistant(agent.messages).text() == "ok2"


def test_constructor_copies_lists(faux: FauxProvider) -> None:
    tools = [echo_tool()]
    messages = [UserMessage(content="x")]
    agent = Agent(model=faux.model(), tools=tools, messages=messages)  # type: ignore[arg-type]
    tools.append(echo_tool("other"))
    messages.append(UserMessage(content="y"))
    assert len(agent.state.tools) == 1
    assert len(agent.messages) == 1
