"""A scripted provider: the backbone of heron's tests and benchmarks.

Replies are queued (or computed from the context by a function) and streamed in small
chunks through the same builder as the real providers, so everything above ``heron.ai``
can be exercised offline and deterministically. Usage is estimated from the serialised
request, and prompt-cache reads are simulated from the prefix the request shares with
the previous request of the same session - enough to measure cache stability.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import math
from collections import deque
from collections.abc import AsyncIterator, Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from heron.ai.builder import MessageBuilder
from heron.ai.events import AssistantEvent
from heron.ai.options import StreamOptions
from heron.ai.overflow import ErrorKind, ProviderError
from heron.ai.registry import register_provider
from heron.ai.types import (
    Context,
    Message,
    Model,
    ModelCost,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
)

FauxBlock = TextContent | ThinkingContent | ToolCall


@dataclass
class FauxReply:
    """One scripted answer. ``error`` is raised after ``error_after_chunks`` chunks have
    been streamed (0: before any content, as an HTTP error would be)."""

    content: list[FauxBlock] = field(default_factory=list)
    stop_reason: StopReason | None = None
    error: ProviderError | None = None
    error_after_chunks: int = 0
    usage: Usage | None = None
    delay: float = 0.0  # seconds before the reply starts (a slow model: what waiting for it costs)


ReplyFunction = Callable[[Context], FauxReply]


def text(value: str) -> FauxReply:
    return FauxReply(content=[TextContent(text=value)])


def tool_call(name: str, arguments: dict[str, Any], call_id: str | None = None, text_before: str = "") -> FauxReply:
    content: list[FauxBlock] = []
    if text_before:
        content.append(TextContent(text=text_before))
    content.append(ToolCall(id=call_id or "", name=name, arguments=arguments))
    return FauxReply(content=content)


def error(
    message: str, status: int | None = None, *, after_chunks: int = 0, retry_after: float | None = None
) -> FauxReply:
    return FauxReply(
        error=ProviderError(message, status=status, retry_after=retry_after), error_after_chunks=after_chunks
    )


def serialise_request(context: Context) -> str:
    """The request as the faux "wire" sees it: system, tools, then messages in the shape a
    real provider receives (roles and content, no timestamps or usage), one JSON line each,
    so sizes and byte-identical prefixes mean what they would for a real provider."""
    parts = [json.dumps({"system": context.system_prompt or ""}, ensure_ascii=False)]
    for tool in context.tools or []:
        parts.append(json.dumps(tool.to_json_dict(), ensure_ascii=False, sort_keys=True))
    for message in context.messages:
        cached = _wire_cache.get(id(message))
        if cached is None or cached[0] is not message:
            line = json.dumps(_wire_message(message), ensure_ascii=False, sort_keys=True)
            if len(_wire_cache) >= 100_000:
                _wire_cache.clear()
            _wire_cache[id(message)] = (message, line)
        else:
            line = cached[1]
        parts.append(line)
    return "\n".join(parts)


# Serialised form per message object: a long faux session re-sends thousands of
# messages per request, and benchmarks should measure heron, not json.dumps.
# Messages are treated as immutable once sent (as the agent does).
_wire_cache: dict[int, tuple[Message, str]] = {}


def _wire_block(block: Any) -> dict[str, Any]:
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingContent):
        return {"type": "thinking", "thinking": block.thinking}
    if isinstance(block, ToolCall):
        return {"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.arguments}
    return {"type": "image", "mime_type": block.mime_type, "data": block.data}


def _wire_message(message: Message) -> dict[str, Any]:
    if isinstance(message, ToolResultMessage):
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "is_error": message.is_error,
            "content": [_wire_block(b) for b in message.content],
        }
    content = message.content
    if isinstance(content, str):
        return {"role": message.role, "content": content}
    return {"role": message.role, "content": [_wire_block(b) for b in content]}


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (a prompt cache serves that much)."""
    limit = min(len(a), len(b))
    if a[:limit] == b[:limit]:
        return limit
    lo, hi = 0, limit
    while lo < hi:  # binary search on slice equality: C-speed comparisons
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class FauxProvider:
    """``faux = FauxProvider.install()``; ``faux.queue(text("hi"))``; ``faux.model()``."""

    def __init__(self, api: str = "faux", *, chunk_size: int = 16, chunk_delay: float = 0.0) -> None:
        self.api = api
        self.chunk_size = chunk_size
        self.chunk_delay = chunk_delay
        self._queue: deque[FauxReply | ReplyFunction] = deque()
        self._fallback: ReplyFunction | None = None
        self._ids = itertools.count(1)
        self._last_request: dict[str, str] = {}
        self.requests: list[Context] = []
        self.payloads: list[str] = []

    @classmethod
    def install(cls, api: str = "faux", **kwargs: Any) -> FauxProvider:
        provider = cls(api, **kwargs)
        register_provider(provider)
        return provider

    def model(self, model_id: str = "faux-1", **fields: Any) -> Model:
        values: dict[str, Any] = {
            "id": model_id,
            "name": f"Faux {model_id}",
            "api": self.api,
            "provider": "faux",
            "reasoning": True,
            "input": ["text", "image"],
            "cost": ModelCost(input=1.0, output=2.0, cache_read=0.1, cache_write=1.25),
        }
        values.update(fields)
        return Model(**values)

    # --- scripting -----------------------------------------------------------

    def queue(self, *replies: FauxReply | ReplyFunction) -> None:
        self._queue.extend(replies)

    def set_fallback(self, reply: ReplyFunction | None) -> None:
        """Used when the queue is empty (instead of the "no reply queued" error)."""
        self._fallback = reply

    @property
    def pending(self) -> int:
        return len(self._queue)

    def clear(self) -> None:
        self._queue.clear()

    # --- Provider --------------------------------------------------------------

    def describe_error(self, exc: BaseException) -> ProviderError | None:
        return None

    async def stream(
        self, model: Model, context: Context, options: StreamOptions, builder: MessageBuilder
    ) -> AsyncIterator[AssistantEvent]:
        self.requests.append(context)
        payload = serialise_request(context)
        self.payloads.append(payload)
        if options.on_payload is not None:
            options.on_payload({"model": model.id, "body": payload})
        reply = self._next_reply(context)
        if reply is None:
            raise ProviderError("faux provider: no reply queued", kind=ErrorKind.INVALID_REQUEST)
        self._account_input(builder.usage, payload, options.session_id)
        builder.message.response_id = f"faux-{next(self._ids)}"
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.error is not None and reply.error_after_chunks == 0:
            raise reply.error

        chunks = 0
        size = self.chunk_size
        delay = self.chunk_delay
        output_chars = 0
        delta: Callable[[Hashable, str], AssistantEvent]
        for index, block in enumerate(reply.content):
            if isinstance(block, TextContent):
                yield builder.start_text(index, block.text_signature)
                pieces: Iterable[str] = (block.text[i : i + size] for i in range(0, len(block.text), size))
                delta = builder.text_delta
                output_chars += len(block.text)
            elif isinstance(block, ThinkingContent):
                yield builder.start_thinking(index, block.thinking_signature, bool(block.redacted))
                pieces = (block.thinking[i : i + size] for i in range(0, len(block.thinking), size))
                delta = builder.thinking_delta
                output_chars += len(block.thinking)
            else:
                call_id = block.id or f"call_{next(self._ids)}"
                yield builder.start_tool_call(index, call_id, block.name, block.thought_signature)
                raw = block.raw_arguments if block.raw_arguments is not None else json.dumps(block.arguments)
                pieces = (raw[i : i + size] for i in range(0, len(raw), size))
                delta = builder.tool_call_delta
                output_chars += len(block.name) + len(raw)
            for piece in pieces:
                if reply.error is not None and chunks >= reply.error_after_chunks:
                    raise reply.error
                if delay:
                    await asyncio.sleep(delay)
                yield delta(index, piece)
                chunks += 1
            yield builder.end(index)
        if reply.error is not None:
            raise reply.error

        usage = builder.usage
        usage.output = math.ceil(output_chars / 4)
        if reply.usage is not None:
            builder.message.usage = copy.deepcopy(reply.usage)
        if reply.stop_reason is not None:
            builder.stop_reason = reply.stop_reason
        elif any(isinstance(b, ToolCall) for b in reply.content):
            builder.stop_reason = StopReason.TOOL_USE
        else:
            builder.stop_reason = StopReason.STOP

    def _next_reply(self, context: Context) -> FauxReply | None:
        if self._queue:
            item = self._queue.popleft()
        elif self._fallback is not None:
            item = self._fallback
        else:
            return None
        return item(context) if callable(item) else item

    def _account_input(self, usage: Usage, payload: str, session_id: str | None) -> None:
        total = math.ceil(len(payload) / 4)
        cached = 0
        if session_id is not None:
            previous = self._last_request.get(session_id)
            if previous is not None:
                cached = common_prefix(previous, payload) // 4
            self._last_request[session_id] = payload
        usage.cache_read = cached
        usage.input = total - cached
