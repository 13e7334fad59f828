"""Tools: schemas, argument validation the model can learn from, failures, abort, updates."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from heron.agent import (
    SKIPPED_FOR_STEERING,
    AgentTool,
    FunctionTool,
    ToolError,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolParams,
    ToolResult,
)
from heron.agent.tools import validate_arguments
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.registry import unregister_provider
from heron.ai.types import StopReason, ToolCall, ToolResultMessage
from tests.agent.support import (
    Gate,
    NoParams,
    PathParams,
    UpdateFn,
    assert_tool_events_paired,
    assert_tool_results_paired,
    calls,
    echo_tool,
    last_assistant,
    make_agent,
    record,
    results_of,
    text_of,
    wait_until,
)

# --- schemas ----------------------------------------------------------------------


class Range(BaseModel):
    start: int
    end: int | None = None


class ReadParams(ToolParams):
    path: str = Field(description="File to read, relative to the working directory.")
    offset: int | None = Field(default=None, description="First line, 1-based.")
    mode: Literal["text", "bytes"] = "text"
    title: str = ""  # a parameter that happens to be called "title" must survive
    ranges: list[Range] = Field(default_factory=list)


def walk(node: Any, path: str = "") -> list[str]:
    """Paths of every ``title`` key that is a schema annotation (not a property name)."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                found.append(path)
            if key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    found += walk(sub, f"{path}/properties/{name}")
            else:
                found += walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            found += walk(item, f"{path}/{i}")
    return found


def read_tool(seen: list[ReadParams] | None = None) -> FunctionTool[ReadParams]:
    async def run(call_id: str, params: ReadParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        if seen is not None:
            seen.append(params)
        return ToolResult.text(f"contents of {params.path}")

    return FunctionTool("read", "Read a file.", ReadParams, run)


def test_schema_has_no_titles() -> None:
    definition = read_tool().definition()
    assert definition.name == "read"
    assert definition.description == "Read a file."
    schema = definition.parameters
    assert pydantic_would_add_titles()
    assert walk(schema) == []
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {"path", "offset", "mode", "title", "ranges"}
    assert schema["properties"]["title"] == {"default": "", "type": "string"}
    assert schema["required"] == ["path"]
    assert schema["properties"]["path"]["description"].startswith("File to read")
    assert schema["properties"]["mode"]["enum"] == ["text", "bytes"]
    assert schema["additionalProperties"] is False  # ToolParams forbids extras
    assert set(schema["$defs"]["Range"]["properties"]) == {"start", "end"}
    json.dumps(schema)


def pydantic_would_add_titles() -> bool:
    return "title" in ReadParams.model_json_schema()


def test_schema_is_stable_across_calls() -> None:
    tool = read_tool()
    first = json.dumps(tool.definition().parameters, sort_keys=False)
    assert json.dumps(tool.definition().parameters, sort_keys=False) == first


def test_subclassed_agent_tool() -> None:
    class Upper(AgentTool[PathParams]):
        name = "upper"
        description = "Upper-case a path."
        parameters = PathParams

        async def execute(
            self, call_id: str, params: PathParams, signal: AbortSignal, on_update: UpdateFn
        ) -> ToolResult:
            return ToolResult.text(params.path.upper())

    tool = Upper()
    assert tool.definition().parameters == {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    }
    assert tool.concurrency_key(PathParams(path="x")) is None


# --- validation -------------------------------------------------------------------


async def run_call(
    faux: FauxProvider, reply: FauxReply, tools: list[AgentTool[Any]] | None = None
) -> ToolResultMessage:
    agent = make_agent(faux, tools if tools is not None else [read_tool(), echo_tool()])
    faux.queue(reply, text("noted"))
    await agent.prompt("go")
    assert_tool_results_paired(agent.messages)
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 1
    assert last_assistant(agent.messages).text() == "noted"  # the loop went on
    # the model saw the error in its next request
    assert faux.requests[-1].messages[-1] is results[0]
    return results[0]


async def test_wrong_type_is_reported_with_arguments(faux: FauxProvider) -> None:
    seen: list[ReadParams] = []
    result = await run_call(faux, tool_call("read", {"path": 5, "offset": "ten"}, "c1"), [read_tool(seen)])
    assert result.is_error
    body = text_of(result)
    assert body.startswith('Validation failed for tool "read":\n')
    assert "  - path: Input should be a valid string" in body
    assert "  - offset: Input should be a valid integer" in body
    received = body.split("Received arguments:\n", 1)[1]
    assert json.loads(received) == {"path": 5, "offset": "ten"}
    assert seen == []


async def test_missing_argument_is_reported(faux: FauxProvider) -> None:
    result = await run_call(faux, tool_call("read", {"offset": 3}, "c1"))
    assert result.is_error
    assert "  - path: Field required" in text_of(result)
    assert '"offset": 3' in text_of(result)


async def test_extra_argument_is_reported(faux: FauxProvider) -> None:
    result = await run_call(faux, tool_call("read", {"path": "a.txt", "offest": 10}, "c1"))
    assert result.is_error
    body = text_of(result)
    assert "  - offest: unexpected argument" in body
    assert '"offest": 10' in body


async def test_nested_field_location(faux: FauxProvider) -> None:
    result = await run_call(faux, tool_call("read", {"path": "a", "ranges": [{"start": 1}, {"end": 2}]}, "c1"))
    assert "  - ranges.1.start: Field required" in text_of(result)


async def test_invalid_json_arguments_are_reported(faux: FauxProvider) -> None:
    broken = '{"path": "a.txt", "offset": '
    reply = FauxReply(content=[ToolCall(id="c1", name="read", raw_arguments=broken)])
    seen: list[ReadParams] = []
    result = await run_call(faux, reply, [read_tool(seen)])
    assert result.is_error
    assert text_of(result) == (
        'The arguments for tool "read" were not valid JSON, so the tool was not run. Send one JSON object with '
        f"the parameters as its keys.\n\nReceived arguments:\n{broken}"
    )
    assert seen == []


def test_validate_arguments_directly() -> None:
    tool = read_tool()
    ok = validate_arguments(tool, ToolCall(id="1", name="read", arguments={"path": "p", "offset": 2}))
    assert isinstance(ok, ReadParams)
    assert ok.offset == 2
    bad = validate_arguments(tool, ToolCall(id="1", name="read", arguments={}))
    assert not isinstance(bad, BaseModel)
    assert "path: Field required" in bad.message


async def test_unknown_tool(faux: FauxProvider) -> None:
    result = await run_call(faux, tool_call("nope", {"x": 1}, "c1"))
    assert result.is_error
    assert result.tool_name == "nope"
    assert text_of(result) == 'Tool "nope" not found. Available tools: echo, read.'


async def test_unknown_tool_with_no_tools(faux: FauxProvider) -> None:
    result = await run_call(faux, tool_call("nope", {}, "c1"), [])
    assert text_of(result) == 'Tool "nope" not found. Available tools: none.'


async def test_successful_call_keeps_details(faux: FauxProvider) -> None:
    result = await run_call(faux, tool_call("echo", {"text": "hey"}, "c1"))
    assert not result.is_error
    assert text_of(result) == "echo: hey"
    assert result.details == {"length": 3}
    assert result.tool_call_id == "c1"


# --- failures inside tools -----------------------------------------------------------


def failing_tool(exc: BaseException) -> FunctionTool[NoParams]:
    async def run(call_id: str, params: NoParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        raise exc

    return FunctionTool("fail", "Always fails.", NoParams, run)


async def test_tool_error_goes_to_the_model_as_is(faux: FauxProvider) -> None:
    result = await run_call(faux, tool_call("fail", {}, "c1"), [failing_tool(ToolError("file not found: a.txt"))])
    assert result.is_error
    assert text_of(result) == "file not found: a.txt"


async def test_generic_exception_is_named(faux: FauxProvider) -> None:
    result = await run_call(faux, tool_call("fail", {}, "c1"), [failing_tool(ValueError("bad value"))])
    assert result.is_error
    assert text_of(result) == "ValueError: bad value"


async def test_exception_without_message(faux: FauxProvider) -> None:
    result = await run_call(faux, tool_call("fail", {}, "c1"), [failing_tool(RuntimeError())])
    assert text_of(result) == "RuntimeError"


async def test_failure_does_not_stop_other_calls_or_next_turn(faux: FauxProvider) -> None:
    agent = make_agent(faux, [failing_tool(OSError("disk on fire")), echo_tool()])
    faux.queue(
        calls(("fail", {}, "c1"), ("echo", {"text": "a"}, "c2")),
        tool_call("echo", {"text": "b"}, "c3"),
        text("all done"),
    )
    await agent.prompt("go")
    assert_tool_results_paired(agent.messages)
    results = results_of(agent.messages)
    assert results["c1"].is_error and "disk on fire" in text_of(results["c1"])
    assert not results["c2"].is_error and not results["c3"].is_error
    assert len(faux.requests) == 3
    assert last_assistant(agent.messages).text() == "all done"


# --- abort ---------------------------------------------------------------------------


def honouring_tool(started: asyncio.Event) -> FunctionTool[NoParams]:
    async def run(call_id: str, params: NoParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        started.set()
        await signal.wait()
        raise ToolError(f"stopped: {signal.reason}")

    return FunctionTool("hang", "Runs until aborted.", NoParams, run)


async def test_abort_while_tools_run(faux: FauxProvider) -> None:
    started = asyncio.Event()
    agent = make_agent(faux, [honouring_tool(started), echo_tool()])
    events = record(agent)
    faux.queue(calls(("echo", {"text": "quick"}, "c1"), ("hang", {}, "c2"), ("hang", {}, "c3")), text("never"))
    task = asyncio.create_task(agent.prompt("go"))
    await asyncio.wait_for(started.wait(), 5)
    agent.abort("user pressed escape")
    added = await asyncio.wait_for(task, 5)

    assert_tool_results_paired(agent.messages)
    results = results_of(agent.messages)
    assert set(results) == {"c1", "c2", "c3"}
    assert not results["c1"].is_error
    assert results["c2"].is_error and text_of(results["c2"]) == "stopped: user pressed escape"
    assert results["c3"].is_error
    final = last_assistant(agent.messages)
    assert final.stop_reason == StopReason.ABORTED
    assert final is agent.messages[-1]
    assert added[-1] is final
    assert len(faux.requests) == 1  # no request after the abort
    assert faux.pending == 1
    assert events[-1].type == "agent_end"
    ends = [e for e in events if isinstance(e, ToolExecutionEndEvent)]
    assert sorted(e.tool_call_id for e in ends) == ["c1", "c2", "c3"]
    assert_tool_events_paired(events)
    assert not agent.is_running
    assert agent.state.pending_tool_calls == set()


async def test_abort_in_sequential_mode_skips_calls_not_started(faux: FauxProvider) -> None:
    started = asyncio.Event()
    ran: list[str] = []

    async def quick(call_id: str, params: NoParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        ran.append(call_id)
        return ToolResult.text("ok")

    tools = [honouring_tool(started), FunctionTool("quick", "Quick.", NoParams, quick)]
    agent = make_agent(faux, tools, tool_execution="sequential")
    events = record(agent)
    faux.queue(calls(("quick", {}, "c1"), ("hang", {}, "c2"), ("quick", {}, "c3")))
    task = asyncio.create_task(agent.prompt("go"))
    await asyncio.wait_for(started.wait(), 5)
    agent.abort()
    await asyncio.wait_for(task, 5)

    assert_tool_results_paired(agent.messages)
    results = results_of(agent.messages)
    assert ran == ["c1"]
    assert not results["c1"].is_error
    assert results["c2"].is_error
    assert results["c3"].is_error
    assert text_of(results["c3"]) == "Tool execution was aborted."
    assert last_assistant(agent.messages).stop_reason == StopReason.ABORTED
    assert_tool_events_paired(events)


async def test_tool_ignoring_the_signal_is_cancelled_after_grace(faux: FauxProvider) -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def stubborn(call_id: str, params: NoParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return ToolResult.text("finished anyway")

    agent = make_agent(faux, [FunctionTool("stubborn", "Ignores abort.", NoParams, stubborn)], abort_grace=0.05)
    events = record(agent)
    faux.queue(tool_call("stubborn", {}, "c1"))
    task = asyncio.create_task(agent.prompt("go"))
    await asyncio.wait_for(started.wait(), 5)
    loop = asyncio.get_running_loop()
    aborted_at = loop.time()
    agent.abort()
    await asyncio.wait_for(task, 5)
    # the agent's abort_grace (not the 2 s default) decided how long the tool was given
    assert loop.time() - aborted_at < 1.5

    assert cancelled.is_set()
    assert_tool_results_paired(agent.messages)
    result = results_of(agent.messages)["c1"]
    assert result.is_error
    assert text_of(result) == "Tool execution was aborted."
    assert last_assistant(agent.messages).stop_reason == StopReason.ABORTED
    end = [e for e in events if isinstance(e, ToolExecutionEndEvent)]
    assert [(e.tool_call_id, e.is_error) for e in end] == [("c1", True)]
    assert_tool_events_paired(events)


async def test_calls_queued_behind_a_stubborn_tool_are_reported_aborted(faux: FauxProvider) -> None:
    """Sequential: the call still waiting when the grace ends is cancelled too, and its
    events still read start -> end."""
    started = asyncio.Event()

    async def stubborn(call_id: str, params: NoParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        started.set()
        await asyncio.sleep(3600)
        return ToolResult.text("unreachable")

    tools = [FunctionTool("stubborn", "Ignores abort.", NoParams, stubborn), echo_tool()]
    agent = make_agent(faux, tools, tool_execution="sequential", abort_grace=0.02)
    events = record(agent)
    faux.queue(calls(("stubborn", {}, "c1"), ("echo", {"text": "x"}, "c2")))
    task = asyncio.create_task(agent.prompt("go"))
    await asyncio.wait_for(started.wait(), 5)
    agent.abort()
    await asyncio.wait_for(task, 5)

    assert_tool_results_paired(agent.messages)
    assert_tool_events_paired(events)
    results = results_of(agent.messages)
    assert text_of(results["c1"]) == text_of(results["c2"]) == "Tool execution was aborted."
    assert [(e.type, e.tool_call_id) for e in events if e.type.startswith("tool_execution")] == [
        ("tool_execution_start", "c1"),
        ("tool_execution_end", "c1"),
        ("tool_execution_start", "c2"),
        ("tool_execution_end", "c2"),
    ]


@pytest.fixture
def slow_faux() -> Iterator[FauxProvider]:
    provider = FauxProvider.install("faux-slow", chunk_size=1, chunk_delay=0.005)
    try:
        yield provider
    finally:
        unregister_provider("faux-slow")


async def test_abort_while_streaming(slow_faux: FauxProvider) -> None:
    agent = make_agent(slow_faux, [echo_tool()])
    slow_faux.queue(tool_call("echo", {"text": "x" * 200}, "c1", text_before="Let me think about this. " * 4))
    task = asyncio.create_task(agent.prompt("go"))
    await wait_until(lambda: agent.state.stream_message is not None and bool(agent.state.stream_message.content))
    agent.abort()
    await asyncio.wait_for(task, 5)
    final = last_assistant(agent.messages)
    assert final.stop_reason == StopReason.ABORTED
    assert_tool_results_paired(agent.messages)
    assert results_of(agent.messages) == {}  # an interrupted answer's calls are not run


# --- partial results ---------------------------------------------------------------


async def test_on_update_emits_tool_execution_update(faux: FauxProvider) -> None:
    async def progress(call_id: str, params: NoParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
        on_update(ToolResult.text("25%"))
        await asyncio.sleep(0)
        on_update(ToolResult.text("75%", details={"lines": 3}))
        return ToolResult.text("100%")

    agent = make_agent(faux, [FunctionTool("progress", "Reports progress.", NoParams, progress)])
    events = record(agent)
    faux.queue(tool_call("progress", {}, "c1"), text("ok"))
    await agent.prompt("go")

    tool_events = [
        e for e in events if isinstance(e, ToolExecutionStartEvent | ToolExecutionUpdateEvent | ToolExecutionEndEvent)
    ]
    assert [e.type for e in tool_events] == [
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_update",
        "tool_execution_end",
    ]
    updates = [e for e in tool_events if isinstance(e, ToolExecutionUpdateEvent)]
    assert [text_of(u.partial_result) for u in updates] == ["25%", "75%"]
    assert updates[1].partial_result.details == {"lines": 3}
    assert all(u.tool_call_id == "c1" and u.tool_name == "progress" and u.args == {} for u in updates)
    assert text_of(results_of(agent.messages)["c1"]) == "100%"


async def test_gate_helper_sanity(faux: FauxProvider) -> None:
    """The Gate helper really blocks until opened (the parallelism tests depend on it)."""
    gate = Gate()
    agent = make_agent(faux, [gate.tool])
    faux.queue(tool_call("gate", {"path": "a"}, "c1"), text("ok"))
    task = asyncio.create_task(agent.prompt("go"))
    await wait_until(lambda: gate.started == ["c1"])
    await asyncio.sleep(0.01)
    assert gate.finished == []
    assert not task.done()
    gate.open("c1")
    await asyncio.wait_for(task, 5)
    assert gate.finished == ["c1"]
    assert SKIPPED_FOR_STEERING not in text_of(results_of(agent.messages)["c1"])
