"""The stateful agent: a message list, a model, tools, and one run at a time.

``Agent`` wraps :func:`run_loop` with what an application needs: queues for messages
typed while it works (steer / follow up), abort, waiting for idle, subscriptions, and
setters that take effect at the next turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from heron.agent.emitter import Emitter
from heron.agent.events import AgentEvent, MessageEndEvent, MessageStartEvent, MessageUpdateEvent
from heron.agent.loop import (
    DEFAULT_MAX_PARALLEL,
    AfterToolBatch,
    AgentContext,
    ConvertToLlm,
    LoopConfig,
    MessageQueues,
    StreamFn,
    TransformContext,
    _default_stream,
    call_tool,
    run_loop,
)
from heron.agent.messages import AgentMessage, convert_to_llm
from heron.agent.tools import AfterToolCall, AgentTool, BeforeToolCall, ToolResult
from heron.agent.turn_limit import TurnLimit
from heron.ai.abort import AbortController, AbortSignal
from heron.ai.options import StreamOptions
from heron.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StopReason,
    TextContent,
    ThinkingLevel,
    ToolCall,
    UserMessage,
)

Listener = Callable[[AgentEvent], None]
PromptInput = str | AgentMessage | list[AgentMessage]


class AgentBusyError(RuntimeError):
    pass


@dataclass
class AgentState:
    """The agent's state between runs: system prompt, model, tools, messages, what is streaming."""

    system_prompt: str
    model: Model
    thinking_level: ThinkingLevel = "off"
    tools: list[AgentTool[Any]] = field(default_factory=list)
    messages: list[AgentMessage] = field(default_factory=list)
    is_streaming: bool = False
    stream_message: AssistantMessage | None = None
    pending_tool_calls: set[str] = field(default_factory=set)
    error: str | None = None


class Agent:
    def __init__(
        self,
        *,
        model: Model,
        system_prompt: str = "",
        tools: list[AgentTool[Any]] | None = None,
        messages: list[AgentMessage] | None = None,
        thinking_level: ThinkingLevel = "off",
        convert_to_llm: ConvertToLlm = convert_to_llm,
        transform_context: TransformContext | None = None,
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        stream_options: Callable[[Context], StreamOptions] | None = None,
        stream_fn: StreamFn = _default_stream,
        tool_execution: Literal["parallel", "sequential"] = "parallel",
        abort_grace: float = 2.0,
        after_tool_batch: AfterToolBatch | None = None,
        max_parallel: int = DEFAULT_MAX_PARALLEL,
        max_turns: int | None = None,
    ) -> None:
        self.state = AgentState(
            system_prompt=system_prompt,
            model=model,
            thinking_level=thinking_level,
            tools=list(tools or []),
            messages=list(messages or []),
        )
        self.convert_to_llm = convert_to_llm
        self.transform_context = transform_context
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.stream_options = stream_options
        self.stream_fn = stream_fn
        self.tool_execution = tool_execution
        self.abort_grace = abort_grace
        self.after_tool_batch = after_tool_batch
        self.max_parallel = max_parallel  # tool calls of one answer running at once
        self.turn_limit = TurnLimit(max_turns)  # model calls per prompt (heron.agent.turn_limit)
        self._queues = MessageQueues()
        self._events: Emitter[AgentEvent] = Emitter("agent event listener")
        self._controller: AbortController | None = None
        self._run: asyncio.Task[list[AgentMessage]] | None = None
        # The running loop's config and context, so the setters reach the next turn.
        self._config: LoopConfig | None = None
        self._context: AgentContext | None = None

    # --- setters (take effect at the next turn) -------------------------------------

    def set_model(self, model: Model) -> None:
        self.state.model = model
        if self._config is not None:
            self._config.model = model

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        self.state.thinking_level = level
        if self._config is not None:
            self._config.thinking_level = level

    def set_tools(self, tools: list[AgentTool[Any]]) -> None:
        self.state.tools = list(tools)
        if self._context is not None:
            self._context.tools = self.state.tools

    def set_system_prompt(self, prompt: str) -> None:
        self.state.system_prompt = prompt
        if self._context is not None:
            self._context.system_prompt = prompt

    def replace_messages(self, messages: list[AgentMessage]) -> None:
        self._ensure_idle()
        self.state.messages = list(messages)

    @property
    def messages(self) -> list[AgentMessage]:
        return self.state.messages

    @property
    def is_running(self) -> bool:
        return self._run is not None and not self._run.done()

    # --- events ------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` for every event; returns an unsubscribe function.

        A listener that raises is logged and skipped: a broken UI must not stop the run.
        """
        return self._events.subscribe(listener)

    async def events(self) -> AsyncIterator[AgentEvent]:
        """Events of the next (or current) run as an async iterator, ending at agent_end."""
        queue: asyncio.Queue[AgentEvent] = asyncio.Queue()
        unsubscribe = self.subscribe(queue.put_nowait)
        try:
            while True:
                event = await queue.get()
                yield event
                if event.type == "agent_end":
                    return
        finally:
            unsubscribe()

    def _emit(self, event: AgentEvent) -> None:
        state = self.state
        if isinstance(event, MessageStartEvent | MessageUpdateEvent) and isinstance(event.message, AssistantMessage):
            state.stream_message = event.message
        elif isinstance(event, MessageEndEvent):
            state.stream_message = None
        elif event.type == "tool_execution_start":
            state.pending_tool_calls.add(event.tool_call_id)
        elif event.type == "tool_execution_end":
            state.pending_tool_calls.discard(event.tool_call_id)
        self._events.emit(event)

    # --- running -----------------------------------------------------------------------

    async def prompt(
        self, message: PromptInput, images: list[ImageContent] | None = None, *, keep_count: bool = False
    ) -> list[AgentMessage]:
        """Add the prompt and run until the agent stops; returns the messages added.
        ``keep_count``: the run goes on from the last one (an application that continues on
        its own), so its model calls count against the same allowance."""
        self._ensure_idle()
        if isinstance(message, str):
            content: list[TextContent | ImageContent] = [TextContent(text=message), *(images or [])]
            prompts: list[AgentMessage] = [UserMessage(content=content)]
        elif isinstance(message, list):
            prompts = list(message)
        else:
            prompts = [message]
        if not keep_count:
            self.turn_limit.used = 0  # a new prompt, a new allowance; continue_() keeps counting
        return await self._start(prompts)

    async def continue_(self) -> list[AgentMessage]:
        """Run from the current messages (after a tool result or a user message was added
        by hand, or to retry after an error that was removed)."""
        self._ensure_idle()
        last = self.state.messages[-1] if self.state.messages else None
        if last is None:
            raise ValueError("nothing to continue: the message list is empty")
        if isinstance(last, AssistantMessage) and last.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):
            raise ValueError("nothing to continue: the last message is the assistant's answer")
        return await self._start([])

    def append(self, message: AgentMessage) -> None:
        """Add a message between runs, with its ``message_start`` and ``message_end``, so
        every listener records and shows it as one the loop added (an application's note
        of why it stopped, a result for a call whose run died)."""
        self._ensure_idle()
        self._emit(MessageStartEvent(message=message))
        self.state.messages.append(message)
        self._emit(MessageEndEvent(message=message))

    async def call_tool(self, call: ToolCall, signal: AbortSignal) -> ToolResult:
        """Run one call of the agent's tools the way the loop runs a model's call (validation,
        ``before_tool_call``, the tool, ``after_tool_call``), but outside the conversation: a
        program the model started (the ``script`` tool) calling the tools. The hooks in place
        now are used, so an extension's or the permission layer's hold for these calls too."""
        state = self.state
        config = LoopConfig(
            model=state.model, before_tool_call=self.before_tool_call, after_tool_call=self.after_tool_call
        )
        context = AgentContext(system_prompt=state.system_prompt, messages=state.messages, tools=state.tools)
        return await call_tool(call, context, config, signal)

    def steer(self, message: PromptInput) -> None:
        """Deliver before the next model call; tool calls not yet started are skipped."""
        self._queues.steering.extend(_as_messages(message))

    def follow_up(self, message: PromptInput) -> None:
        """Deliver when the agent would otherwise stop."""
        self._queues.follow_up.extend(_as_messages(message))

    def has_queued(self) -> bool:
        """A steering or follow-up message waits to be delivered."""
        return bool(self._queues.steering or self._queues.follow_up)

    def queued_counts(self) -> tuple[int, int]:
        """How many (steering, follow-up) messages wait to be delivered."""
        return len(self._queues.steering), len(self._queues.follow_up)

    def queued(self) -> tuple[list[AgentMessage], list[AgentMessage]]:
        """The (steering, follow-up) messages waiting to be delivered, as copies: a client
        that shows the queues (rpc's ``queue_update``) reads them without owning them."""
        return list(self._queues.steering), list(self._queues.follow_up)

    def clear_queues(self) -> list[AgentMessage]:
        return self._queues.take_steering() + self._queues.take_follow_up()

    def abort(self, reason: str | None = None) -> None:
        if self._controller is not None:
            self._controller.abort(reason)

    async def wait_for_idle(self) -> None:
        """Wait for the current run to end. Cancelling the wait (a timeout) leaves the run alone."""
        if self._run is not None:
            await asyncio.wait({self._run})

    def _ensure_idle(self) -> None:
        if self.is_running:
            raise AgentBusyError("the agent is running: use steer() or follow_up(), or wait_for_idle()")

    async def _start(self, prompts: list[AgentMessage]) -> list[AgentMessage]:
        state = self.state
        self._controller = AbortController()
        state.is_streaming = True
        state.error = None
        config = LoopConfig(
            model=state.model,
            thinking_level=state.thinking_level,
            convert_to_llm=self.convert_to_llm,
            transform_context=self.transform_context,
            before_tool_call=self.before_tool_call,
            after_tool_call=self.after_tool_call,
            queues=self._queues,
            tool_execution=self.tool_execution,
            stream_options=self.stream_options,
            stream_fn=self.stream_fn,
            abort_grace=self.abort_grace,
            after_tool_batch=self.after_tool_batch,
            max_parallel=self.max_parallel,
            turn_limit=self.turn_limit,
        )
        context = AgentContext(system_prompt=state.system_prompt, messages=state.messages, tools=state.tools)
        self._config, self._context = config, context
        self._run = asyncio.ensure_future(run_loop(prompts, context, config, self._controller.signal, self._emit))
        try:
            try:
                added = await asyncio.shield(self._run)
            except asyncio.CancelledError:
                # The caller was cancelled (a timeout, a UI task): stop the run the clean way,
                # so every tool call still gets its result, then let the cancellation through.
                if not self._run.done():
                    self._controller.abort()
                    await asyncio.wait({self._run})
                raise
        finally:
            self._config = self._context = None
            state.is_streaming = False
            state.stream_message = None
            state.pending_tool_calls.clear()
        last = added[-1] if added else None
        if isinstance(last, AssistantMessage) and last.stop_reason == StopReason.ERROR:
            state.error = last.error_message
        return added


def _as_messages(message: PromptInput) -> list[AgentMessage]:
    if isinstance(message, str):
        return [UserMessage(content=[TextContent(text=message)])]
    if isinstance(message, list):
        return list(message)
    return [message]
