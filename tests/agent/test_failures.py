"""Bad input from the provider or from the application's own hooks."""

from __future__ import annotations

from typing import Any

from heron.agent import AgentMessage, UINote, convert_to_llm
from heron.ai.abort import AbortSignal
from heron.ai.overflow import ProviderError
from heron.ai.providers.faux import FauxProvider, FauxReply, error, text, tool_call
from heron.ai.types import AssistantMessage, Message, StopReason, TextContent, ToolCall, UserMessage
from tests.agent.support import (
    assert_tool_results_paired,
    echo_tool,
    last_assistant,
    make_agent,
    record,
    results_of,
    user_texts,
)

LONG = "The quick brown fox jumps over the lazy dog. " * 4


async def test_provider_error_mid_stream_ends_the_run(faux: FauxProvider) -> None:
    agent = make_agent(faux, [echo_tool()])
    events = record(agent)
    faux.queue(
        tool_call("echo", {"text": "x"}, "c1"),
        FauxReply(content=[TextContent(text=LONG)], error=ProviderError("upstream exploded"), error_after_chunks=2),
        text("never sent"),
    )
    added = await agent.prompt("go")

    final = agent.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert final.stop_reason == StopReason.ERROR
    assert final.error_message is not None and "upstream exploded" in final.error_message
    assert final.text() == LONG[:32]  # the two chunks that arrived are kept
    assert added[-1] is final
    assert agent.state.error == final.error_message
    assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert_tool_results_paired(agent.messages)
    assert faux.pending == 1
    assert events[-2].type == "turn_end" and events[-1].type == "agent_end"
    assert not agent.is_running


async def test_provider_error_inside_a_tool_call_does_not_run_it(faux: FauxProvider) -> None:
    ran: list[str] = []
    tool = echo_tool()
    original = tool._fn

    async def spy(call_id: str, params: Any, signal: AbortSignal, on_update: Any) -> Any:
        ran.append(call_id)
        return await original(call_id, params, signal, on_update)

    tool._fn = spy
    agent = make_agent(faux, [tool])
    faux.queue(
        FauxReply(
            content=[ToolCall(id="c1", name="echo", arguments={"text": "y" * 100})],
            error=ProviderError("connection dropped mid-call", status=400),
            error_after_chunks=1,
        )
    )
    await agent.prompt("go")
    final = last_assistant(agent.messages)
    assert final.stop_reason == StopReason.ERROR
    assert ran == []
    assert results_of(agent.messages) == {}
    assert_tool_results_paired(agent.messages)
    # the session goes on: the next prompt is answered
    faux.queue(text("recovered"))
    await agent.prompt("again")
    assert last_assistant(agent.messages).text() == "recovered"
    assert_tool_results_paired(agent.messages)


async def test_provider_error_before_any_content(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    faux.queue(error("invalid api key", status=401))
    await agent.prompt("go")
    final = last_assistant(agent.messages)
    assert final.stop_reason == StopReason.ERROR
    assert final.content == []
    assert "invalid api key" in (final.error_message or "")
    assert len(faux.requests) == 1  # an auth error is not retried


async def test_empty_faux_queue(faux: FauxProvider) -> None:
    agent = make_agent(faux)
    events = record(agent)
    added = await agent.prompt("anyone there?")
    assert [m.role for m in added] == ["user", "assistant"]
    final = added[-1]
    assert isinstance(final, AssistantMessage)
    assert final.stop_reason == StopReason.ERROR
    assert final.error_message == "faux provider: no reply queued"
    assert [e.type for e in events if e.type.startswith(("agent", "turn"))] == [
        "agent_start",
        "turn_start",
        "turn_end",
        "agent_end",
    ]


async def test_transform_context_that_raises(faux: FauxProvider) -> None:
    async def broken(messages: list[AgentMessage], signal: AbortSignal) -> list[AgentMessage]:
        raise LookupError("compaction index missing")

    agent = make_agent(faux, transform_context=broken)
    events = record(agent)
    added = await agent.prompt("go")
    final = agent.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert final.stop_reason == StopReason.ERROR
    assert final.error_message == "Preparing the request failed: LookupError: compaction index missing"
    assert final.provider == "faux" and final.model == "faux-1"
    assert added == agent.messages
    assert [m.role for m in agent.messages] == ["user", "assistant"]
    assert faux.requests == []
    assert agent.state.error == final.error_message
    assert [e.type for e in events][-4:] == ["message_start", "message_end", "turn_end", "agent_end"]


async def test_convert_to_llm_that_raises(faux: FauxProvider) -> None:
    def broken(messages: list[AgentMessage]) -> list[Message]:
        raise TypeError("cannot convert a hologram")

    agent = make_agent(faux, [echo_tool()], convert_to_llm=broken)
    added = await agent.prompt("go")
    final = last_assistant(agent.messages)
    assert final.stop_reason == StopReason.ERROR
    assert final.error_message == "Preparing the request failed: TypeError: cannot convert a hologram"
    assert [m.role for m in added] == ["user", "assistant"]
    assert faux.requests == []
    assert_tool_results_paired(agent.messages)


async def test_hook_failure_after_tools_keeps_results(faux: FauxProvider) -> None:
    """transform_context breaking on the second turn: the first turn's results stay paired."""
    calls_seen = 0

    async def breaks_later(messages: list[AgentMessage], signal: AbortSignal) -> list[AgentMessage]:
        nonlocal calls_seen
        calls_seen += 1
        if calls_seen == 2:
            raise RuntimeError("second turn")
        return messages

    agent = make_agent(faux, [echo_tool()], transform_context=breaks_later)
    faux.queue(tool_call("echo", {"text": "x"}, "c1"), text("never"))
    await agent.prompt("go")
    assert [m.role for m in agent.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert last_assistant(agent.messages).error_message == "Preparing the request failed: RuntimeError: second turn"
    assert_tool_results_paired(agent.messages)


async def test_async_convert_to_llm_is_awaited(faux: FauxProvider) -> None:
    async def convert(messages: list[AgentMessage]) -> list[Message]:
        return [*convert_to_llm(messages), UserMessage(content="(appended by an async converter)")]

    agent = make_agent(faux, convert_to_llm=convert)
    faux.queue(text("ok"))
    await agent.prompt("go")
    assert user_texts(faux.requests[0].messages) == ["go", "(appended by an async converter)"]
    assert user_texts(agent.messages) == ["go"]


# --- transform_context -----------------------------------------------------------------


async def test_transform_context_output_is_what_is_sent(faux: FauxProvider) -> None:
    received: list[list[AgentMessage]] = []
    signals: list[AbortSignal] = []
    earlier = [UserMessage(content=f"old {i}") for i in range(5)]

    async def keep_last_two(messages: list[AgentMessage], signal: AbortSignal) -> list[AgentMessage]:
        received.append(list(messages))
        signals.append(signal)
        return [UINote(text="dropped by convert"), UserMessage(content="[earlier turns elided]"), *messages[-2:]]

    agent = make_agent(faux, [echo_tool()], messages=list(earlier), transform_context=keep_last_two)
    faux.queue(tool_call("echo", {"text": "x"}, "c1"), text("ok"))
    await agent.prompt("new")

    # it received the stored messages, as they stood before each call
    assert len(received) == 2
    assert all(a is b for a, b in zip(received[0], [*earlier, agent.messages[5]], strict=True))
    assert len(received[1]) == 8
    assert all(a is b for a, b in zip(received[1], agent.messages[:8], strict=True))
    assert not signals[0].aborted
    # its output, converted, is what the provider got
    assert user_texts(faux.requests[0].messages) == ["[earlier turns elided]", "old 4", "new"]
    second = faux.requests[1].messages
    assert [m.role for m in second] == ["user", "assistant", "toolResult"]
    assert second[1] is agent.messages[6] and second[2] is agent.messages[7]
    # the stored list is untouched
    assert agent.messages[:5] == earlier
    assert [m.role for m in agent.messages] == ["user"] * 6 + ["assistant", "toolResult", "assistant"]


async def test_transform_context_editing_its_argument_does_not_edit_the_session(faux: FauxProvider) -> None:
    async def destructive(messages: list[AgentMessage], signal: AbortSignal) -> list[AgentMessage]:
        del messages[:-1]
        messages.insert(0, UserMessage(content="injected"))
        return messages

    agent = make_agent(faux, messages=[UserMessage(content="keep me")], transform_context=destructive)
    faux.queue(text("ok"))
    await agent.prompt("now")
    assert user_texts(faux.requests[0].messages) == ["injected", "now"]
    assert user_texts(agent.messages) == ["keep me", "now"]
    assert len(agent.messages) == 3
