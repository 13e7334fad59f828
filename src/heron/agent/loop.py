"""The agent loop: stream a turn, run its tools, repeat until the model stops.

One run starts from prompt messages (or none, to continue). Each turn:
``transform_context -> convert_to_llm -> provider``, then the tool calls of the answer,
results appended in call order. Steering messages are injected before the next call
(tool calls not yet started are skipped); follow-ups only when the agent would stop.
The loop owns no I/O: everything observable leaves through ``emit``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from heron.agent.call_ids import make_call_ids_unique, seen_call_ids
from heron.agent.events import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from heron.agent.messages import AgentMessage, convert_to_llm
from heron.agent.tools import (
    AfterToolCall,
    AgentTool,
    BeforeToolCall,
    ToolCallContext,
    ToolError,
    ToolResult,
    ValidationFailure,
    validate_arguments,
)
from heron.agent.turn_limit import TurnLimit
from heron.ai.abort import AbortSignal
from heron.ai.events import DoneEvent, ErrorEvent, StartEvent
from heron.ai.options import StreamOptions
from heron.ai.registry import stream as ai_stream
from heron.ai.stream import AssistantEventStream
from heron.ai.types import (
    AssistantMessage,
    Context,
    Message,
    Model,
    StopReason,
    TextContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
)

if TYPE_CHECKING:  # parameters are validated through heron.agent.params, loaded on first use
    from pydantic import BaseModel

log = logging.getLogger(__name__)

SKIPPED_FOR_STEERING = "Skipped due to queued user message."
ABORTED_TOOL = "Tool execution was aborted."
DEFAULT_MAX_PARALLEL = 8

Emit = Callable[[AgentEvent], None]
TransformContext = Callable[[list[AgentMessage], AbortSignal], Awaitable[list[AgentMessage]]]
ConvertToLlm = Callable[[list[AgentMessage]], list[Message] | Awaitable[list[Message]]]
StreamFn = Callable[[Model, Context, StreamOptions], AssistantEventStream]
AfterToolBatch = Callable[[AssistantMessage, list[ToolResultMessage]], Awaitable[list[ToolResultMessage]]]


@dataclass
class AgentContext:
    """What the loop works on; ``messages`` is appended to in place as messages finish."""

    system_prompt: str
    messages: list[AgentMessage]
    tools: list[AgentTool[Any]] = field(default_factory=list)


class MessageQueues:
    """Messages the user typed while the agent was busy."""

    def __init__(self) -> None:
        self.steering: list[AgentMessage] = []
        self.follow_up: list[AgentMessage] = []

    def steering_pending(self) -> bool:
        return bool(self.steering)

    def take_steering(self) -> list[AgentMessage]:
        taken, self.steering = self.steering, []
        return taken

    def take_follow_up(self) -> list[AgentMessage]:
        taken, self.follow_up = self.follow_up, []
        return taken


def _default_stream(model: Model, context: Context, options: StreamOptions) -> AssistantEventStream:
    return ai_stream(model, context, options)


@dataclass
class LoopConfig:
    """What one run of the loop is given: the model, the pipeline's steps, the hooks and the limits."""

    model: Model
    thinking_level: ThinkingLevel = "off"
    convert_to_llm: ConvertToLlm = convert_to_llm
    transform_context: TransformContext | None = None
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    queues: MessageQueues = field(default_factory=MessageQueues)
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    # Per-request options (api key, session id, max tokens...); called before every call.
    stream_options: Callable[[Context], StreamOptions] | None = None
    stream_fn: StreamFn = _default_stream
    # How long running tools get to honour an abort before their tasks are cancelled.
    abort_grace: float = 2.0
    # Sees all results of one answer before they are added (per-turn output budgets).
    after_tool_batch: AfterToolBatch | None = None
    # At most this many tool calls of one answer run at once (the ``tools.maxParallel``
    # setting): 200 bash calls in one answer must not mean 200 processes.
    max_parallel: int = DEFAULT_MAX_PARALLEL
    # Model calls this prompt may still make (``--max-turns`` / ``limits.maxTurns``);
    # shared with the agent so retries of the same prompt count against it too.
    turn_limit: TurnLimit = field(default_factory=TurnLimit)


async def run_loop(
    prompts: list[AgentMessage],
    context: AgentContext,
    config: LoopConfig,
    signal: AbortSignal,
    emit: Emit,
) -> list[AgentMessage]:
    """Run until the model stops; returns the messages the run added."""
    added: list[AgentMessage] = []

    def add(message: AgentMessage) -> None:
        emit(MessageStartEvent(message=message))
        context.messages.append(message)
        added.append(message)
        emit(MessageEndEvent(message=message))

    emit(AgentStartEvent())
    emit(TurnStartEvent())
    for prompt in prompts:
        add(prompt)
    pending: list[AgentMessage] = []
    first_turn = True
    while True:
        while True:
            if not first_turn:
                emit(TurnStartEvent())
            first_turn = False
            for message in pending:
                add(message)
            pending = []

            if config.turn_limit.take():
                assistant = await _stream_turn(context, config, signal, emit)
            else:  # no request is sent: the run ends with a failed answer saying why
                assistant = _finish_synthetic(
                    context,
                    config.model,
                    StopReason.ERROR,
                    config.turn_limit.stop_text(),
                    emit,
                    config.turn_limit.stop_kind(),
                )
            added.append(assistant)
            if assistant.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
                emit(TurnEndEvent(message=assistant))
                emit(AgentEndEvent(messages=added))
                return added

            calls = assistant.tool_calls()
            results: list[ToolResultMessage] = []
            if calls:
                results = await _execute_tools(calls, assistant, context, config, signal, emit)
                if config.after_tool_batch is not None:
                    results = await _after_batch(config.after_tool_batch, assistant, results)
                for result in results:
                    add(result)
            emit(TurnEndEvent(message=assistant, tool_results=results))
            pending = config.queues.take_steering()
            if not calls and not pending:
                break
        pending = config.queues.take_follow_up()
        if not pending:
            break
    emit(AgentEndEvent(messages=added))
    return added


async def _after_batch(
    hook: AfterToolBatch, assistant: AssistantMessage, results: list[ToolResultMessage]
) -> list[ToolResultMessage]:
    """Run the batch hook; it may replace results but never drop or reorder them, so a
    broken hook falls back to the results as they were."""
    try:
        changed = await hook(assistant, results)
    except Exception:  # budgets are an optimisation; the results are still valid
        log.exception("after_tool_batch hook failed; keeping the results unchanged")
        return results
    if [r.tool_call_id for r in changed] != [r.tool_call_id for r in results]:
        log.error("after_tool_batch hook changed which results exist; keeping the originals")
        return results
    return changed


async def _stream_turn(context: AgentContext, config: LoopConfig, signal: AbortSignal, emit: Emit) -> AssistantMessage:
    """Stream one assistant message; a failure before the request becomes an error message."""
    model = config.model
    if signal.aborted:
        return _finish_synthetic(context, model, StopReason.ABORTED, signal.reason, emit)
    try:
        llm_context = await build_request_context(context, config, signal)
        options = config.stream_options(llm_context) if config.stream_options else StreamOptions()
        options.signal = signal
        if options.thinking == "off" and config.thinking_level != "off":
            options.thinking = config.thinking_level
        stream = config.stream_fn(model, llm_context, options)
    except Exception as exc:  # noqa: BLE001 - a broken hook ends the run, it does not crash it
        reason = StopReason.ABORTED if signal.aborted else StopReason.ERROR
        text = f"Preparing the request failed: {type(exc).__name__}: {exc}"
        return _finish_synthetic(context, model, reason, text, emit)

    final: AssistantMessage | None = None
    partial: AssistantMessage | None = None
    async for event in stream:
        if isinstance(event, StartEvent):
            partial = event.partial
            emit(MessageStartEvent(message=partial))
        elif isinstance(event, DoneEvent):
            final = event.message
        elif isinstance(event, ErrorEvent):
            final = event.error
        elif partial is not None:
            emit(MessageUpdateEvent(message=partial, event=event))
    assert final is not None, "heron.ai streams always end with done or error"
    if signal.aborted and final.stop_reason == StopReason.TOOL_USE:
        # the calls finished streaming after the abort: the answer is cut off there, and
        # none of its calls runs (the provider may have had the last bytes buffered)
        final.stop_reason = StopReason.ABORTED
        final.error_message = signal.reason
    make_call_ids_unique(final, seen_call_ids(context.messages))
    if partial is None:
        emit(MessageStartEvent(message=final))
    context.messages.append(final)
    emit(MessageEndEvent(message=final))
    return final


async def build_request_context(context: AgentContext, config: LoopConfig, signal: AbortSignal) -> Context:
    """The pipeline before every call: ``transform_context`` (length), then
    ``convert_to_llm`` (visibility), then the tool definitions."""
    messages = context.messages
    if config.transform_context is not None:
        # A shallow copy: a transform that edits its argument must not edit the session.
        messages = await config.transform_context(list(messages), signal)
    return await assemble_request(context.system_prompt, messages, context.tools, config.convert_to_llm)


async def assemble_request(
    system_prompt: str, messages: list[AgentMessage], tools: Sequence[AgentTool[Any]], convert: ConvertToLlm
) -> Context:
    """The request for ``messages`` as they are (already transformed): visibility, then the
    tool definitions. The one place a request's body is assembled, so a request that must
    repeat a turn's prefix byte for byte (a summary sharing the conversation's prompt
    cache) is built by it too."""
    converted = convert(messages)
    llm_messages = await converted if inspect.isawaitable(converted) else converted
    return Context(
        system_prompt=system_prompt,
        messages=llm_messages,
        tools=[tool.definition() for tool in tools] or None,
    )


def _finish_synthetic(
    context: AgentContext, model: Model, reason: StopReason, text: str, emit: Emit, kind: str | None = None
) -> AssistantMessage:
    message = AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason=reason,
        error_message=text,
        error_kind=kind,
    )
    emit(MessageStartEvent(message=message))
    context.messages.append(message)
    emit(MessageEndEvent(message=message))
    return message


# --- tools ----------------------------------------------------------------------


@dataclass
class _Prepared:
    """One tool call after lookup and validation: run it, or answer with ``result`` instead."""

    call: ToolCall
    tool: AgentTool[Any] | None = None
    params: BaseModel | None = None
    result: ToolResult | None = None  # set when the call ends before running


async def _execute_tools(
    calls: list[ToolCall],
    assistant: AssistantMessage,
    context: AgentContext,
    config: LoopConfig,
    signal: AbortSignal,
    emit: Emit,
) -> list[ToolResultMessage]:
    tools = {tool.name: tool for tool in context.tools}
    prepared = [_prepare(call, tools) for call in calls]
    results: list[ToolResult | None] = [None] * len(calls)
    sequential = config.tool_execution == "sequential"
    # Calls wait for their turn (same concurrency key, or sequential mode) before they
    # take a slot, so a call holding a slot never waits for one that has none: no deadlock.
    slots = asyncio.Semaphore(max(1, config.max_parallel))
    previous_by_key: dict[str, asyncio.Task[None]] = {}
    previous_task: asyncio.Task[None] | None = None
    tasks: list[asyncio.Task[None]] = []
    started: set[int] = set()

    async def run(index: int, wait_for: asyncio.Task[None] | None) -> None:
        item = prepared[index]
        if wait_for is not None:
            await asyncio.wait({wait_for})
        async with slots:
            started.add(index)
            results[index] = await _run_one(item, context, config, signal, emit)

    for index, item in enumerate(prepared):
        key = None
        if item.tool is not None and item.params is not None:
            try:
                key = item.tool.concurrency_key(item.params)
            except Exception:  # noqa: BLE001 - a broken key function only loses parallelism
                key = "*"
        wait_for = previous_task if sequential else (previous_by_key.get(key) if key is not None else None)
        task = asyncio.create_task(run(index, wait_for))
        tasks.append(task)
        previous_task = task
        if key is not None:
            previous_by_key[key] = task

    try:
        await _wait_with_abort(tasks, signal, config.abort_grace)
    except asyncio.CancelledError:
        for task in tasks:  # the run itself was cancelled: no tool outlives it
            task.cancel()
        raise

    messages = []
    for index, item in enumerate(prepared):
        result = results[index]
        if result is None:  # cancelled after the abort grace period
            result = ToolResult.error(ABORTED_TOOL)
            if index not in started:  # was still waiting for an earlier call
                emit(
                    ToolExecutionStartEvent(
                        tool_call_id=item.call.id, tool_name=item.call.name, args=item.call.arguments
                    )
                )
            emit(
                ToolExecutionEndEvent(tool_call_id=item.call.id, tool_name=item.call.name, result=result, is_error=True)
            )
        messages.append(
            ToolResultMessage(
                tool_call_id=item.call.id,
                tool_name=item.call.name,
                content=result.content,
                details=result.details,
                is_error=result.is_error,
            )
        )
    return messages


async def _wait_with_abort(tasks: list[asyncio.Task[None]], signal: AbortSignal, grace: float) -> None:
    pending = set(tasks)
    while pending:
        waiter = asyncio.ensure_future(signal.wait())
        done, pending = await asyncio.wait(pending | {waiter}, return_when=asyncio.FIRST_COMPLETED)
        pending.discard(waiter)
        if waiter in done:
            if pending:
                _, still = await asyncio.wait(pending, timeout=grace)
                for task in still:
                    task.cancel()
                await asyncio.gather(*still, return_exceptions=True)
            break
        waiter.cancel()
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]  # a bug in the loop itself


def _prepare(call: ToolCall, tools: dict[str, AgentTool[Any]]) -> _Prepared:
    tool = tools.get(call.name)
    if tool is None:
        available = ", ".join(sorted(tools)) or "none"
        return _Prepared(call, result=ToolResult.error(f'Tool "{call.name}" not found. Available tools: {available}.'))
    parsed = validate_arguments(tool, call)
    if isinstance(parsed, ValidationFailure):
        return _Prepared(call, tool, result=ToolResult.error(parsed.message))
    return _Prepared(call, tool, parsed)


async def _run_one(
    item: _Prepared, context: AgentContext, config: LoopConfig, signal: AbortSignal, emit: Emit
) -> ToolResult:
    call = item.call
    emit(ToolExecutionStartEvent(tool_call_id=call.id, tool_name=call.name, args=call.arguments))
    result = await _produce_result(item, context, config, signal, emit)
    emit(ToolExecutionEndEvent(tool_call_id=call.id, tool_name=call.name, result=result, is_error=result.is_error))
    return result


async def _produce_result(
    item: _Prepared, context: AgentContext, config: LoopConfig, signal: AbortSignal, emit: Emit
) -> ToolResult:
    if item.result is not None:
        return item.result
    if signal.aborted:
        return ToolResult.error(ABORTED_TOOL)
    if config.queues.steering_pending():
        return ToolResult.error(SKIPPED_FOR_STEERING)
    call, tool, params = item.call, item.tool, item.params
    assert tool is not None and params is not None
    hook_context = ToolCallContext(tool_call=call, params=params, tool=tool, messages=context.messages)

    if config.before_tool_call is not None:
        try:
            verdict = await config.before_tool_call(hook_context)
        except Exception as exc:  # noqa: BLE001
            return ToolResult.error(f"The before_tool_call hook failed, so the tool was not run: {exc}")
        if verdict is not None and verdict.block:
            return ToolResult.error(verdict.reason or "Tool call was blocked.")
        if verdict is not None and verdict.arguments is not None:
            rewritten = validate_arguments(tool, ToolCall(id=call.id, name=call.name, arguments=verdict.arguments))
            if isinstance(rewritten, ValidationFailure):
                return ToolResult.error(rewritten.message)
            params = rewritten
            hook_context.params = params

    def on_update(partial: ToolResult) -> None:
        emit(
            ToolExecutionUpdateEvent(
                tool_call_id=call.id, tool_name=call.name, args=call.arguments, partial_result=partial
            )
        )

    if signal.aborted:  # the abort came while a hook (a permission question) awaited
        return ToolResult.error(ABORTED_TOOL)
    try:
        result = await tool.execute(call.id, params, signal, on_update)
    except asyncio.CancelledError:
        raise
    except ToolError as exc:
        result = ToolResult.error(str(exc))
    except Exception as exc:  # noqa: BLE001 - the model is told; the loop goes on
        result = ToolResult.error(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)

    if config.after_tool_call is not None:
        try:
            change = await config.after_tool_call(hook_context, result)
        except Exception as exc:  # noqa: BLE001
            return ToolResult(
                content=[TextContent(text=f"The after_tool_call hook failed: {exc}"), *_texts(result)],
                details=result.details,
                is_error=True,
            )
        if change is not None:
            result = ToolResult(
                content=change.content if change.content is not None else result.content,
                details=change.details if change.details is not None else result.details,
                is_error=change.is_error if change.is_error is not None else result.is_error,
            )
    return result


async def call_tool(call: ToolCall, context: AgentContext, config: LoopConfig, signal: AbortSignal) -> ToolResult:
    """One tool call made outside any answer (a ``script``'s inner call) along the path a
    model's call takes: the tool looked up and its arguments validated, ``before_tool_call``
    (permissions, hooks), the tool, ``after_tool_call`` (redaction). No events: the call is
    not part of the conversation. Steering queued in ``config.queues`` skips it, as it would
    a model's call not yet started; give it a config with its own queues to run it anyway."""
    item = _prepare(call, {tool.name: tool for tool in context.tools})
    return await _produce_result(item, context, config, signal, lambda event: None)


def _texts(result: ToolResult) -> list[TextContent]:
    return [block for block in result.content if isinstance(block, TextContent)]


async def iterate_loop(
    prompts: list[AgentMessage], context: AgentContext, config: LoopConfig, signal: AbortSignal
) -> AsyncIterator[AgentEvent]:
    """The same run as an async iterator of events."""
    queue: asyncio.Queue[AgentEvent | None] = asyncio.Queue()

    async def produce() -> None:
        try:
            await run_loop(prompts, context, config, signal, queue.put_nowait)
        finally:
            queue.put_nowait(None)

    task = asyncio.create_task(produce())
    try:
        while (event := await queue.get()) is not None:
            yield event
        await task
    finally:
        if not task.done():
            signal.abort()
            await asyncio.gather(task, return_exceptions=True)
