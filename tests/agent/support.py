"""Shared helpers for the heron.agent tests: tools, gates, and the tool-pairing invariant."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from heron.agent import (
    Agent,
    AgentEvent,
    AgentMessage,
    AgentTool,
    FunctionTool,
    ToolParams,
    ToolResult,
)
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, FauxReply
from heron.ai.types import AssistantMessage, StopReason, TextContent, ToolCall, ToolResultMessage, UserMessage

UpdateFn = Callable[[ToolResult], None]


class TextParams(ToolParams):
    text: str


class PathParams(ToolParams):
    path: str


class NoParams(ToolParams):
    pass


def echo_tool(name: str = "echo") -> FunctionTool[TextParams]:
    async def run(call_id: str, params: TextParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        return ToolResult.text(f"echo: {params.text}", details={"length": len(params.text)})

    return FunctionTool(name, "Echo the text back.", TextParams, run)


def calls(*specs: tuple[str, dict[str, Any], str]) -> FauxReply:
    """One assistant reply with several tool calls: ``(name, arguments, call_id)`` each."""
    return FauxReply(content=[ToolCall(id=call_id, name=name, arguments=args) for name, args, call_id in specs])


def make_agent(faux: FauxProvider, tools: list[AgentTool[Any]] | None = None, **kwargs: Any) -> Agent:
    return Agent(model=faux.model(), system_prompt="You are a test.", tools=tools or [], **kwargs)


def record(agent: Agent) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    agent.subscribe(events.append)
    return events


def results_of(messages: list[AgentMessage]) -> dict[str, ToolResultMessage]:
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}


def last_assistant(messages: list[AgentMessage]) -> AssistantMessage:
    return next(m for m in reversed(messages) if isinstance(m, AssistantMessage))


def user_texts(messages: list[Any]) -> list[str]:
    return [m.text() for m in messages if isinstance(m, UserMessage)]


def text_of(result: ToolResultMessage | ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


class Gate:
    """A tool whose calls start, then wait until the test opens their gate."""

    def __init__(self, name: str = "gate", key: bool = False) -> None:
        self.started: list[str] = []
        self.finished: list[str] = []
        self._gates: dict[str, asyncio.Event] = {}

        async def run(call_id: str, params: PathParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
            self.started.append(call_id)
            await self.gate(call_id).wait()
            self.finished.append(call_id)
            return ToolResult.text(f"done {call_id} {params.path}")

        self.tool: FunctionTool[PathParams] = FunctionTool(
            name, "Wait for the test.", PathParams, run, concurrency_key=(lambda p: p.path) if key else None
        )

    def gate(self, call_id: str) -> asyncio.Event:
        return self._gates.setdefault(call_id, asyncio.Event())

    def open(self, *call_ids: str) -> None:
        for call_id in call_ids:
            self.gate(call_id).set()


async def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Yield to the event loop until ``condition`` holds (fails the test on timeout)."""

    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0)

    await asyncio.wait_for(poll(), timeout)


async def settle(rounds: int = 20) -> None:
    """Give every ready task several chances to run."""
    for _ in range(rounds):
        await asyncio.sleep(0)


def assert_tool_results_paired(messages: list[AgentMessage]) -> None:
    """The invariant every provider relies on.

    Every tool call of a completed assistant message has exactly one tool result after it
    and before the next assistant message, in call order, with the call's tool name; every
    tool result belongs to a call of the assistant message before it. An assistant message
    that ended in error or aborted was never a complete turn: its calls are not run, and no
    result may follow it.
    """
    expected: list[ToolCall] = []  # calls of the latest assistant message still owed a result
    allowed: dict[str, str] = {}  # call id -> tool name for the latest assistant message
    answered: set[str] = set()
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            assert not expected, f"message {index}: calls {[c.id for c in expected]} have no result"
            if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
                expected, allowed = [], {}
            else:
                expected = message.tool_calls()
                allowed = {c.id: c.name for c in expected}
                assert len(allowed) == len(expected), f"message {index}: duplicate tool call ids"
            answered = set()
        elif isinstance(message, ToolResultMessage):
            call_id = message.tool_call_id
            assert call_id in allowed, f"message {index}: result {call_id!r} has no call before it"
            assert call_id not in answered, f"message {index}: second result for {call_id!r}"
            assert expected and expected[0].id == call_id, f"message {index}: result {call_id!r} out of call order"
            assert message.tool_name == allowed[call_id]
            answered.add(call_id)
            expected.pop(0)
    assert not expected, f"calls {[c.id for c in expected]} at the end have no result"


def assert_tool_events_paired(events: list[AgentEvent]) -> None:
    """Each tool call has exactly one tool_execution_start, then exactly one tool_execution_end."""
    state: dict[str, str] = {}
    for event in events:
        if event.type == "tool_execution_start":
            assert event.tool_call_id not in state, f"second start for {event.tool_call_id}"
            state[event.tool_call_id] = "started"
        elif event.type == "tool_execution_update":
            assert state.get(event.tool_call_id) == "started", f"update outside {event.tool_call_id}'s run"
        elif event.type == "tool_execution_end":
            assert state.get(event.tool_call_id) == "started", f"end without start for {event.tool_call_id}"
            state[event.tool_call_id] = "ended"
    assert all(value == "ended" for value in state.values()), state


def event_types(events: list[AgentEvent]) -> list[str]:
    return [e.type for e in events]


__all__ = [
    "Gate",
    "NoParams",
    "PathParams",
    "TextParams",
    "assert_tool_events_paired",
    "assert_tool_results_paired",
    "calls",
    "echo_tool",
    "event_types",
    "last_assistant",
    "make_agent",
    "record",
    "results_of",
    "settle",
    "text_of",
    "user_texts",
    "wait_until",
]
