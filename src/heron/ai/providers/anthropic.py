"""Anthropic Messages API (``POST /v1/messages``, streamed) over heron's lean HTTP client.

The request side turns heron's message model into Messages API turns: the system prompt
as a cached text block, consecutive tool results merged into one user turn, thinking
replayed with its signature to the model that wrote it, and a cache marker on the last
block of the last user turn so each request reuses the previous one's prefix.

The response side maps the raw stream events (``message_start``, ``content_block_*``,
``message_delta``, ``message_stop``) onto a :class:`MessageBuilder`. Blocks the server
runs itself (``server_tool_use``, ``*_tool_result``) are not client tool calls and are
skipped. The transport (client per event loop, SSE reading, connection failures) is
:mod:`heron.ai.providers.http`; each history segment's turns are built once
(:mod:`heron.ai.providers.wire`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from heron.ai.adapt import adapt_messages, anthropic_tool_id
from heron.ai.builder import MessageBuilder
from heron.ai.events import AssistantEvent
from heron.ai.options import ContextManagement, StreamOptions
from heron.ai.overflow import ProviderError, classify, parse_retry_after
from heron.ai.providers import http
from heron.ai.providers.base import IMAGE_OMITTED, HttpProvider, StreamTranslator, set_usage
from heron.ai.providers.wire import (
    History,
    Segment,
    all_items,
    array_pieces,
    dumps,
    make_segment,
)
from heron.ai.thinking import budget_tokens
from heron.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    NativeCompaction,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

JSON = dict[str, Any]

API_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
# The beta headers server-side context management needs (docs/context.md).
COMPACTION_BETA = "compact-2026-01-12"
CLEARING_BETA = "context-management-2025-06-27"

EMPTY_RESULT = "(no output)"

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "pause_turn": StopReason.STOP,
    "refusal": StopReason.STOP,
    "max_tokens": StopReason.LENGTH,
    "model_context_window_exceeded": StopReason.LENGTH,
    "tool_use": StopReason.TOOL_USE,
    # pause_after_compaction (heron never asks for it): the reply holds the compaction only.
    "compaction": StopReason.STOP,
}

# Status of an ``error`` event inside a 200 stream, from its ``error.type``.
_STATUS_OF_ERROR_TYPE: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


_MAX_ERROR_TEXT = 2_000


def map_stop_reason(reason: str | None) -> StopReason:
    if reason is None:
        return StopReason.STOP
    return _STOP_REASONS.get(reason, StopReason.STOP)


# --- request ---------------------------------------------------------------------


def cache_marker(options: StreamOptions) -> JSON | None:
    if options.cache_retention == "none":
        return None
    marker: JSON = {"type": "ephemeral"}
    if options.cache_retention == "long":
        marker["ttl"] = "1h"
    return marker


def _image_block(block: ImageContent) -> JSON:
    return {"type": "image", "source": {"type": "base64", "media_type": block.mime_type, "data": block.data}}


def _user_blocks(content: str | list[TextContent | ImageContent], model: Model) -> list[JSON]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    out: list[JSON] = []
    for block in content:
        if isinstance(block, TextContent):
            if block.text.strip():  # the API rejects empty and whitespace-only text blocks
                out.append({"type": "text", "text": block.text})
        elif model.supports_images():
            out.append(_image_block(block))
        else:
            out.append({"type": "text", "text": IMAGE_OMITTED})
    return out


def _assistant_blocks(message: AssistantMessage, model: Model) -> list[JSON]:
    out: list[JSON] = []
    native = message.native_compaction
    if native is not None and native.matches(model):
        # The API ignores everything before this block: the view sends none of it.
        out.append({"type": "compaction", "content": native.content})
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                out.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            # adapt_messages already turned another model's thinking into text, so what is
            # left here was written by this model and may be replayed with its signature.
            if block.redacted:
                if block.thinking_signature:
                    out.append({"type": "redacted_thinking", "data": block.thinking_signature})
            elif block.thinking_signature:
                out.append({"type": "thinking", "thinking": block.thinking, "signature": block.thinking_signature})
            elif block.thinking.strip():
                # No signature (the stream was cut before it arrived): the API would reject
                # it as thinking, but the reasoning is still worth keeping as text.
                out.append({"type": "text", "text": block.thinking})
        elif isinstance(block, ToolCall):
            out.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments})
    return out


def _tool_result_block(message: ToolResultMessage, model: Model) -> JSON:
    content = _user_blocks(message.content, model)
    if not content:
        content = [{"type": "text", "text": EMPTY_RESULT}]
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": content,
        "is_error": message.is_error,
    }


def convert_messages(messages: list[Message], model: Model, marker: JSON | None) -> list[JSON]:
    """Messages API turns for already adapted ``messages``.

    Consecutive messages of the same role (tool results, a user message after them, or
    anything left next to a skipped empty message) share one turn: the API wants turns
    to alternate, and all results of one assistant turn in the user turn right after it.
    """
    turns: list[JSON] = []
    for message in messages:
        if isinstance(message, UserMessage):
            role, blocks = "user", _user_blocks(message.content, model)
        elif isinstance(message, ToolResultMessage):
            role, blocks = "user", [_tool_result_block(message, model)]
        else:
            role, blocks = "assistant", _assistant_blocks(message, model)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if marker is not None:
        for turn in reversed(turns):
            if turn["role"] == "user":
                turn["content"][-1]["cache_control"] = dict(marker)
                break
    return turns


def context_edits(management: ContextManagement) -> list[JSON]:
    """The ``context_management.edits`` of a request: tool-result clearing, then compaction."""
    edits: list[JSON] = []
    if management.clear_trigger is not None:
        clear: JSON = {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": management.clear_trigger},
            "keep": {"type": "tool_uses", "value": management.clear_keep},
        }
        if management.clear_at_least is not None:
            clear["clear_at_least"] = {"type": "input_tokens", "value": management.clear_at_least}
        if management.exclude_tools:
            clear["exclude_tools"] = list(management.exclude_tools)
        edits.append(clear)
    if management.compact_trigger is not None:
        trigger = {"type": "input_tokens", "value": management.compact_trigger}
        compact: JSON = {"type": "compact_20260112", "trigger": trigger}
        if management.instructions:
            compact["instructions"] = management.instructions
        edits.append(compact)
    return edits


def beta_features(management: ContextManagement | None) -> list[str]:
    """The ``anthropic-beta`` values the request's context management needs."""
    if management is None:
        return []
    out = [CLEARING_BETA] if management.clear_trigger is not None else []
    return [*out, COMPACTION_BETA] if management.compact_trigger is not None else out


def build_request(model: Model, context: Context, options: StreamOptions) -> JSON:
    """The JSON body of ``POST /v1/messages`` (with ``stream: true``)."""
    marker = cache_marker(options)
    messages = adapt_messages(context.messages, model, anthropic_tool_id)
    max_tokens = options.max_tokens or model.max_tokens
    body: JSON = {"model": model.id, "max_tokens": max_tokens, "stream": True}
    if context.system_prompt:
        system: JSON = {"type": "text", "text": context.system_prompt}
        if marker is not None:
            system["cache_control"] = dict(marker)
        body["system"] = [system]
    body["messages"] = convert_messages(messages, model, marker)
    if context.tools:
        body["tools"] = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
            for tool in context.tools
        ]
    if model.reasoning and options.thinking != "off":
        budget = budget_tokens(options.thinking, max_tokens)
        if budget >= max_tokens:  # the API requires max_tokens > budget_tokens
            body["max_tokens"] = budget + 1_024
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif options.temperature is not None:
        # Extended thinking only runs at the default temperature.
        body["temperature"] = options.temperature
    edits = context_edits(options.context_management) if options.context_management is not None else []
    if edits:
        body["context_management"] = {"edits": edits}
    return body


# --- errors ------------------------------------------------------------------------


def _error_fields(body: object) -> tuple[str | None, str | None]:
    """``(error.type, error.message)`` of an API error body, if it has that shape."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            kind = error.get("type")
            text = error.get("message")
            return (kind if isinstance(kind, str) else None, text if isinstance(text, str) else None)
    return None, None


def describe_failure(status: int, body: Any, headers: Mapping[str, str] | None, fallback: str = "") -> ProviderError:
    """A failed answer as a :class:`ProviderError`. ``status`` below 400 means an
    ``error`` event inside a 200 stream: its ``error.type`` gives the status."""
    error_type, provider_text = _error_fields(body)
    in_stream = status < 400
    if in_stream:
        status = _STATUS_OF_ERROR_TYPE.get(error_type or "", 500)
    if provider_text is None:
        if isinstance(body, str):
            provider_text = body.strip()
        elif body is not None:  # JSON of another shape (a proxy's own error format)
            provider_text = json.dumps(body, ensure_ascii=False)
        else:
            provider_text = ""
    shown = provider_text or fallback
    if len(shown) > _MAX_ERROR_TEXT:  # an HTML error page from a proxy
        shown = shown[:_MAX_ERROR_TEXT] + "..."
    label = f"{status} {error_type}" if error_type else str(status)
    retry_after = None if in_stream else parse_retry_after(headers)
    return ProviderError(
        f"{label}: {shown}" if shown else label,
        status=status,
        retry_after=retry_after,
        kind=classify(status, provider_text),
    )


# --- provider ----------------------------------------------------------------------


def _target(model: Model) -> tuple[Any, ...]:
    return (model.api, model.provider, model.id, model.supports_images())


def _with_marker(turn: JSON, marker: JSON) -> JSON:
    content = list(turn["content"])
    content[-1] = {**content[-1], "cache_control": dict(marker)}
    return {**turn, "content": content}


def _clean(segments: list[Segment]) -> bool:
    """No wire turn spans two of ``segments`` (adjacent turns of one role would merge)."""
    last_role: str | None = None
    for segment in segments:
        if segment.items:
            if segment.items[0]["role"] == last_role:
                return False
            last_role = segment.items[-1]["role"]
    return True


def messages_json(history: History, marker: JSON | None) -> list[bytes]:
    """The ``messages`` array from cached segments: the cache marker goes on a copy of the
    last user turn, and a turn split over two segments (the segment between held only
    dropped messages) is merged, as :func:`convert_messages` would."""
    loose = history.loose
    if not _clean(history.segments[max(0, history.frozen - 1) :]):
        merged = convert_turns(all_items(history.segments), marker)
        return array_pieces([dumps(turn).encode() for turn in merged])
    wires = [segment.wire for segment in loose]
    if marker is not None:
        for n in range(len(loose) - 1, -1, -1):
            items = loose[n].items
            user = next((i for i in range(len(items) - 1, -1, -1) if items[i]["role"] == "user"), None)
            if user is not None:
                changed = [*items[:user], _with_marker(items[user], marker), *items[user + 1 :]]
                wires[n] = make_segment(changed).wire
                break
        else:  # the last user turn is in a joined block (rare): build the array whole
            turns = convert_turns(all_items(history.segments), marker)
            return array_pieces([dumps(turn).encode() for turn in turns])
    return array_pieces([*history.blocks, *wires])


def convert_turns(turns: list[JSON], marker: JSON | None) -> list[JSON]:
    """Adjacent turns of one role merged, then the marker placed (the slow path)."""
    out: list[JSON] = []
    for turn in turns:
        if out and out[-1]["role"] == turn["role"]:
            out[-1] = {**out[-1], "content": [*out[-1]["content"], *turn["content"]]}
        else:
            out.append(turn)
    if marker is not None:
        for n in range(len(out) - 1, -1, -1):
            if out[n]["role"] == "user":
                out[n] = _with_marker(out[n], marker)
                break
    return out


class AnthropicProvider(HttpProvider):
    api = "anthropic-messages"
    default_base_url = DEFAULT_BASE_URL
    path = "/v1/messages"
    base_url_env = "ANTHROPIC_BASE_URL"

    def build_request(self, model: Model, context: Context, options: StreamOptions) -> JSON:
        return build_request(model, context, options)

    def convert(self, messages: list[Message], model: Model) -> list[JSON]:
        return convert_messages(messages, model, None)

    def tool_id(self, call_id: str) -> str:
        return anthropic_tool_id(call_id)

    def clean(self, segments: list[Segment]) -> bool:
        return _clean(segments)

    def history_array(self, history: History, lead: list[JSON], options: StreamOptions) -> list[bytes]:
        return messages_json(history, cache_marker(options))  # the system prompt is not a message here

    def auth_headers(self, model: Model, options: StreamOptions) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        key = http.api_key(options, (API_KEY_ENV,))
        if key:
            headers["x-api-key"] = key
        elif os.environ.get("ANTHROPIC_AUTH_TOKEN"):
            headers["authorization"] = f"Bearer {os.environ['ANTHROPIC_AUTH_TOKEN']}"
        betas = beta_features(options.context_management)
        if betas:
            headers["anthropic-beta"] = ",".join(betas)
        return headers

    def translator(self, model: Model, context: Context, builder: MessageBuilder) -> StreamTranslator:
        return _Translator(builder)

    def status_error(self, exc: http.HttpStatusError) -> ProviderError:
        return describe_failure(exc.status, exc.body, exc.headers, exc.reason)


class _Translator(StreamTranslator):
    """Messages API events onto the builder; ``message_stop`` finishes the response.
    A ``compaction`` block (its summary in one ``compaction_delta``) becomes the
    message's :class:`NativeCompaction`; one without a summary (null content: the
    compaction failed) is dropped, and covers nothing."""

    def __init__(self, builder: MessageBuilder) -> None:
        super().__init__(builder)
        self._compactions: dict[Any, list[str]] = {}

    def event(self, event: Any, name: str | None) -> list[AssistantEvent]:
        kind = event.get("type")
        if kind is None or kind == "ping":
            return []
        if kind == "error":
            raise describe_failure(200, event, None, "error event in the stream")
        if kind == "message_stop":
            self.finished = True
            return []
        builder = self.builder
        if kind == "content_block_delta":
            return self._on_delta(event, builder)
        if kind == "content_block_start":
            return self._on_block_start(event, builder)
        if kind == "content_block_stop":
            index = event.index
            if index in self._compactions:
                self._compaction_done(builder, "".join(self._compactions.pop(index)))
                return []
            return [builder.end(index)] if builder.is_open(index) else []
        if kind == "message_start":
            message = event.message
            builder.message.response_id = getattr(message, "id", None)
            _apply_usage(builder, getattr(message, "usage", None))
        elif kind == "message_delta":
            delta = getattr(event, "delta", None)
            reason = getattr(delta, "stop_reason", None)
            if reason is not None:
                builder.stop_reason = map_stop_reason(reason)
            _apply_usage(builder, getattr(event, "usage", None))
            applied = getattr(getattr(event, "context_management", None), "applied_edits", None)
            if isinstance(applied, list):
                edits = [dict(edit) for edit in applied if isinstance(edit, dict)]
                builder.message.context_edits = edits or None
        return []

    def _compaction_done(self, builder: MessageBuilder, content: str) -> None:
        if content:
            message = builder.message
            message.native_compaction = NativeCompaction(api=message.api, provider=message.provider, content=content)

    def _on_block_start(self, event: Any, builder: MessageBuilder) -> list[AssistantEvent]:
        index = event.index
        block = event.content_block
        kind = getattr(block, "type", None)
        out: list[AssistantEvent] = []
        if kind == "text":
            out.append(builder.start_text(index))
            text = getattr(block, "text", "") or ""
            if text:
                out.append(builder.text_delta(index, text))
        elif kind == "thinking":
            out.append(builder.start_thinking(index, getattr(block, "signature", None) or None))
            thinking = getattr(block, "thinking", "") or ""
            if thinking:
                out.append(builder.thinking_delta(index, thinking))
        elif kind == "compaction":
            initial = getattr(block, "content", None)
            self._compactions[index] = [initial] if isinstance(initial, str) else []
        elif kind == "redacted_thinking":
            out.append(builder.start_thinking(index, getattr(block, "data", None) or None, redacted=True))
        elif kind == "tool_use":
            out.append(builder.start_tool_call(index, block.id, block.name))
            initial = getattr(block, "input", None)
            if isinstance(initial, dict) and initial:
                builder.set_tool_arguments(index, json.dumps(initial))
        # server_tool_use, web_search_tool_result, tool_search_tool_result...: run by the
        # server, nothing for the client to do; their deltas find no open block.
        return out

    def _on_delta(self, event: Any, builder: MessageBuilder) -> list[AssistantEvent]:
        index = event.index
        delta = event.delta
        kind = getattr(delta, "type", None)
        if kind == "compaction_delta" and index in self._compactions:
            content = getattr(delta, "content", None)
            if isinstance(content, str):
                self._compactions[index].append(content)
            return []
        if not builder.is_open(index):
            return []
        if kind == "text_delta":
            text = delta.text or ""
            return [builder.text_delta(index, text)] if text else []
        if kind == "thinking_delta":
            thinking = delta.thinking or ""
            return [builder.thinking_delta(index, thinking)] if thinking else []
        if kind == "signature_delta":
            block = builder.thinking(index)
            block.thinking_signature = (block.thinking_signature or "") + (delta.signature or "")
            return []
        if kind == "input_json_delta":
            fragment = delta.partial_json or ""
            return [builder.tool_call_delta(index, fragment)] if fragment else []
        return []  # citations_delta and future delta kinds carry nothing heron keeps


def _apply_usage(builder: MessageBuilder, usage: Any) -> None:
    """Copy the fields the event reports; ``message_delta`` overrides ``message_start``."""
    if usage is None:
        return
    current = builder.usage

    def read(wire_name: str, value: int) -> int:
        reported = getattr(usage, wire_name, None)
        return value if reported is None else int(reported)

    set_usage(
        builder,
        input=read("input_tokens", current.input),
        output=read("output_tokens", current.output),
        cache_read=read("cache_read_input_tokens", current.cache_read),
        cache_write=read("cache_creation_input_tokens", current.cache_write),
    )
