"""OpenAI Chat Completions, and every server that speaks it.

One adapter serves OpenAI itself and the OpenAI-compatible servers reached through
``model.base_url`` (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, DeepSeek, xAI, Qwen,
Groq...). Those servers agree on the shape of a chunk but not on the details, so the
stream mapping is deliberately lenient:

- tool calls are keyed by the delta's ``index``; a continuation may repeat the id and
  name (OpenRouter), carry an empty-string id (Alibaba), or bring name and arguments in
  separate chunks; a server that resends the whole argument text is recognised;
- reasoning text arrives as ``reasoning_content`` (DeepSeek, xAI, llama.cpp) or
  ``reasoning`` (OpenRouter) on the delta; the field name is kept as the thinking
  block's signature so the text is replayed to the same model under the same field;
- ``finish_reason`` may be missing altogether (OpenRouter): a stream that still reached
  its usage chunk or ``data: [DONE]`` is complete, one with none of the three is not.

The transport is :mod:`heron.ai.providers.http` (no SDK); each history segment's
messages are built once (:mod:`heron.ai.providers.wire`).

``model.compat`` switches per-server behaviour:

- ``developer_role`` (bool): the system prompt goes as a ``developer`` message to
  reasoning models;
- ``max_tokens_field`` (``"max_completion_tokens"`` | ``"max_tokens"``);
- ``prompt_cache_key`` (bool): send ``options.session_id`` as ``prompt_cache_key``
  (default: only to OpenAI itself);
- ``include_usage`` (bool, default true): ask for the usage chunk
  (``stream_options``); some old servers reject the option;
- ``reasoning_effort`` (bool, default true): send ``reasoning_effort`` to reasoning models;
- ``extra_body`` (object): merged into the request body (provider routing, chat-template
  arguments...).

A local server (:func:`heron.ai.reading.asks_progress`) is asked for its prompt progress
(``"return_progress": true``, which llama.cpp answers with ``prompt_progress`` chunks while
it reads and other servers ignore); those chunks and the final chunk's ``timings`` go to
the builder, for the wait on a server still reading (:mod:`heron.ai.reading`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Hashable
from typing import Any

from heron.ai.adapt import adapt_messages, openai_chat_tool_id, same_model
from heron.ai.builder import MessageBuilder
from heron.ai.events import AssistantEvent
from heron.ai.options import StreamOptions
from heron.ai.overflow import ProviderError
from heron.ai.providers import http
from heron.ai.providers.base import IMAGE_OMITTED, HttpProvider, StreamTranslator, set_usage
from heron.ai.providers.openai_errors import error_message as _error_message
from heron.ai.providers.openai_errors import status_error, stream_error
from heron.ai.reading import asks_progress, progress_of
from heron.ai.thinking import OPENAI_EFFORT
from heron.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

JSON = dict[str, Any]

OPENAI_HOST = "api.openai.com"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY = http.NO_KEY  # local servers ignore the key; some proxies insist on one
INCOMPLETE = http.INCOMPLETE
TOOL_IMAGES_NOTE = "Images returned by the tool call above:"

# Delta fields that carry reasoning text, in order of preference.
REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")

_STOP_REASONS: dict[str, StopReason] = {
    "stop": StopReason.STOP,
    "end_turn": StopReason.STOP,
    "length": StopReason.LENGTH,
    "max_tokens": StopReason.LENGTH,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "content_filter": StopReason.STOP,
}


def is_openai_url(base_url: str | None) -> bool:
    return base_url is None or OPENAI_HOST in base_url


def _compat(model: Model) -> JSON:
    return model.compat or {}


# --- request ------------------------------------------------------------------


def build_request(model: Model, context: Context, options: StreamOptions) -> JSON:
    """The JSON body of a streaming ``/chat/completions`` request."""
    compat = _compat(model)
    messages: list[JSON] = []
    if context.system_prompt:
        role = "developer" if model.reasoning and compat.get("developer_role") else "system"
        messages.append({"role": role, "content": context.system_prompt})
    messages.extend(convert_messages(adapt_messages(context.messages, model, openai_chat_tool_id), model))

    body: JSON = {"model": model.id, "messages": messages, "stream": True}
    if compat.get("include_usage", True):
        body["stream_options"] = {"include_usage": True}
    max_field = compat.get("max_tokens_field") or "max_completion_tokens"
    body[max_field] = options.max_tokens or model.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = [convert_tool(tool) for tool in context.tools]
        if options.tool_choice is not None:
            body["tool_choice"] = options.tool_choice
    if model.reasoning and options.thinking != "off" and compat.get("reasoning_effort", True):
        body["reasoning_effort"] = OPENAI_EFFORT[options.thinking]
    if options.session_id and compat.get("prompt_cache_key", is_openai_url(model.base_url)):
        body["prompt_cache_key"] = options.session_id
    if asks_progress(model):
        body["return_progress"] = True
    extra = compat.get("extra_body")
    if isinstance(extra, dict):
        body.update(extra)
    return body


def convert_tool(tool: Tool) -> JSON:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def _image_part(image: ImageContent) -> JSON:
    return {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}


def _user_content(blocks: list[TextContent | ImageContent], model: Model) -> str | list[JSON]:
    """A plain string when there are no images (what every server accepts), else parts."""
    images = model.supports_images()
    if not any(isinstance(b, ImageContent) for b in blocks):
        return "\n".join(b.text for b in blocks if isinstance(b, TextContent))
    parts: list[JSON] = []
    for block in blocks:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif images:
            parts.append(_image_part(block))
        else:
            parts.append({"type": "text", "text": IMAGE_OMITTED})
    return parts


def convert_messages(messages: list[Message], model: Model) -> list[JSON]:
    """heron messages (already adapted to ``model``) as Chat Completions messages.

    A role ``tool`` message holds text only: images a tool returned are sent in a user
    message placed after the run of tool results (the tool messages must directly follow
    the assistant message that called them).
    """
    out: list[JSON] = []
    pending_images: list[ImageContent] = []

    def flush_images() -> None:
        if pending_images:
            parts: list[JSON] = [{"type": "text", "text": TOOL_IMAGES_NOTE}]
            parts.extend(_image_part(image) for image in pending_images)
            out.append({"role": "user", "content": parts})
            pending_images.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            out.append(_tool_message(message, model, pending_images))
            continue
        flush_images()
        if isinstance(message, UserMessage):
            content = message.content
            out.append(
                {"role": "user", "content": content if isinstance(content, str) else _user_content(content, model)}
            )
        else:
            converted = _assistant_message(message, model)
            if converted is not None:
                out.append(converted)
    flush_images()
    return out


def _tool_message(message: ToolResultMessage, model: Model, pending_images: list[ImageContent]) -> JSON:
    texts: list[str] = []
    for block in message.content:
        if isinstance(block, TextContent):
            texts.append(block.text)
        elif model.supports_images():
            pending_images.append(block)
        else:
            texts.append(IMAGE_OMITTED)
    text = "\n".join(texts)
    if not text.strip():
        has_images = any(isinstance(b, ImageContent) for b in message.content)
        text = "(see the attached image)" if has_images else ("(error)" if message.is_error else "(no output)")
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": text}


def _assistant_message(message: AssistantMessage, model: Model) -> JSON | None:
    texts: list[str] = []
    reasoning: dict[str, list[str]] = {}
    calls: list[JSON] = []
    native = same_model(message, model)
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text:
                texts.append(block.text)
        elif isinstance(block, ThinkingContent):
            # Only our own blocks reach here (adapt turned foreign thinking into text);
            # the signature names the field the server sent the reasoning in.
            field = block.thinking_signature
            if native and field in REASONING_FIELDS and block.thinking:
                reasoning.setdefault(field, []).append(block.thinking)
        elif isinstance(block, ToolCall):
            calls.append(
                {
                    "id": block.id,
                    "type": "function",
                    "function": {"name": block.name, "arguments": json.dumps(block.arguments, ensure_ascii=False)},
                }
            )
    if not texts and not calls:
        return None  # nothing a server would accept (an empty or thinking-only turn)
    out: JSON = {"role": "assistant", "content": "\n\n".join(texts) if texts else None}
    for field, parts in reasoning.items():
        out[field] = "".join(parts)
    if calls:
        out["tool_calls"] = calls
    return out


# --- stream -----------------------------------------------------------------------


def _extra(obj: Any, name: str) -> Any:
    """A field a server may or may not send (wire objects are dicts with attribute reads)."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class _ToolSlot:
    __slots__ = ("key", "placeholder_id")

    def __init__(self, key: Hashable, placeholder_id: bool) -> None:
        self.key = key
        self.placeholder_id = placeholder_id


class _Translator(StreamTranslator):
    """Chat Completions chunks onto the builder, and which builder blocks are open for one
    response. ``data: [DONE]`` finishes it; so, at the end, do a finish reason or usage."""

    def __init__(self, builder: MessageBuilder) -> None:
        super().__init__(builder)
        self.counter = 0
        self.text_key: Hashable | None = None
        self.thinking_key: Hashable | None = None
        self.tools: dict[int, _ToolSlot] = {}
        self.last_tool_index: int | None = None
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.tool_calls = 0

    def event(self, event: Any, name: str | None) -> list[AssistantEvent]:
        if event.get("error"):
            raise stream_error(event["error"])
        return self._chunk(event)

    def done_marker(self) -> None:
        self.finished = True

    def end(self) -> list[AssistantEvent]:
        if self.finish_reason is None and self.usage is None and not self.finished:
            raise http.incomplete()
        builder = self.builder
        if self.usage is not None:
            apply_usage(builder, self.usage)
        reason = _STOP_REASONS.get(self.finish_reason or "", StopReason.STOP)
        if builder.message.tool_calls() and reason is not StopReason.LENGTH:
            reason = StopReason.TOOL_USE
        builder.stop_reason = reason
        return []

    def _chunk(self, chunk: Any) -> list[AssistantEvent]:
        builder = self.builder
        if builder.message.response_id is None and getattr(chunk, "id", None):
            builder.message.response_id = chunk.id
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage
        self._reading(chunk)
        events: list[AssistantEvent] = []
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) not in (0, None):
                continue  # n > 1 is never requested
            delta = getattr(choice, "delta", None)
            if delta is not None:
                events.extend(self._delta(delta))
            finish = getattr(choice, "finish_reason", None)
            if finish:
                if finish == "error":
                    error = _extra(choice, "error") or _extra(chunk, "error")
                    raise ProviderError(_error_message(error) or "the server ended the response with an error")
                self.finish_reason = finish
        return events

    def _reading(self, chunk: Any) -> None:
        """llama.cpp's report of its reading of the prompt: progress while it reads, the
        final chunk's timing of the whole reading."""
        progress = progress_of(_extra(chunk, "prompt_progress"))
        if progress is not None:
            self.builder.note_progress(progress)
        timings = _extra(chunk, "timings")
        if isinstance(timings, dict):
            tokens, ms = timings.get("prompt_n"), timings.get("prompt_ms")
            if isinstance(tokens, int) and not isinstance(tokens, bool) and isinstance(ms, int | float):
                self.builder.note_prompt_timing(tokens, float(ms))

    def _delta(self, delta: Any) -> list[AssistantEvent]:
        events: list[AssistantEvent] = []
        for field in REASONING_FIELDS:
            reasoning = _extra(delta, field)
            if isinstance(reasoning, str) and reasoning:
                events.extend(self.thinking(field, reasoning))
                break
        for text in (getattr(delta, "content", None), getattr(delta, "refusal", None)):
            if isinstance(text, str) and text:
                events.extend(self.text(text))
        for call in getattr(delta, "tool_calls", None) or []:
            events.extend(self.tool_call(call))
        return events

    def _key(self, kind: str) -> Hashable:
        self.counter += 1
        return (kind, self.counter)

    def close_text(self) -> list[AssistantEvent]:
        events: list[AssistantEvent] = []
        if self.text_key is not None:
            events.append(self.builder.end(self.text_key))
            self.text_key = None
        if self.thinking_key is not None:
            events.append(self.builder.end(self.thinking_key))
            self.thinking_key = None
        return events

    def thinking(self, field: str, delta: str) -> list[AssistantEvent]:
        events: list[AssistantEvent] = []
        if self.text_key is not None:
            events.append(self.builder.end(self.text_key))
            self.text_key = None
        if self.thinking_key is None:
            self.thinking_key = self._key("thinking")
            events.append(self.builder.start_thinking(self.thinking_key, field))
        events.append(self.builder.thinking_delta(self.thinking_key, delta))
        return events

    def text(self, delta: str) -> list[AssistantEvent]:
        events: list[AssistantEvent] = []
        if self.thinking_key is not None:
            events.append(self.builder.end(self.thinking_key))
            self.thinking_key = None
        if self.text_key is None:
            self.text_key = self._key("text")
            events.append(self.builder.start_text(self.text_key))
        events.append(self.builder.text_delta(self.text_key, delta))
        return events

    def tool_call(self, delta: Any) -> list[AssistantEvent]:
        builder = self.builder
        call_id: str = getattr(delta, "id", None) or ""
        function = getattr(delta, "function", None)
        name: str = (getattr(function, "name", None) or "") if function is not None else ""
        arguments: str = (getattr(function, "arguments", None) or "") if function is not None else ""
        index = self._index(getattr(delta, "index", None), call_id)
        events: list[AssistantEvent] = []

        slot = self.tools.get(index)
        if slot is not None and call_id and not slot.placeholder_id:
            current = builder.tool_call(slot.key)
            if call_id != current.id:
                # A different call under an index already used (servers that number
                # every call 0): the previous one is complete.
                events.append(builder.end(slot.key))
                del self.tools[index]
                slot = None
        if slot is None:
            if not (call_id or name or arguments):
                return events  # an empty trailer for a call that never started
            events.extend(self.close_text())
            key = self._key("tool")
            self.tool_calls += 1
            slot = _ToolSlot(key, placeholder_id=not call_id)
            self.tools[index] = slot
            events.append(builder.start_tool_call(key, call_id or f"call_{self.tool_calls}", name))
            if arguments:
                events.append(builder.tool_call_delta(key, arguments))
            return events

        block = builder.tool_call(slot.key)
        if call_id and slot.placeholder_id:
            block.id = call_id
            slot.placeholder_id = False
        if name and not block.name:
            block.name = name
        if not arguments:
            return events
        raw = builder.raw_arguments(slot.key)
        if raw and (call_id or name):
            # The header came again (OpenRouter): the arguments may be the whole text
            # so far rather than a continuation.
            if arguments.startswith(raw):
                rest = arguments[len(raw) :]
                if rest:
                    events.append(builder.tool_call_delta(slot.key, rest))
                return events
            if _is_json(raw) and _is_json(arguments):
                builder.set_tool_arguments(slot.key, arguments)
                return events
        events.append(builder.tool_call_delta(slot.key, arguments))
        return events

    def _index(self, index: Any, call_id: str) -> int:
        if isinstance(index, int):
            self.last_tool_index = index
            return index
        # No index (some servers): a new id starts a new call, otherwise continue the last.
        last = self.last_tool_index
        if last is None or (call_id and call_id != self._id_at(last)):
            last = max(self.tools, default=-1) + 1
        self.last_tool_index = last
        return last

    def _id_at(self, index: int) -> str | None:
        slot = self.tools.get(index)
        return self.builder.tool_call(slot.key).id if slot is not None else None


def apply_usage(builder: MessageBuilder, usage: Any) -> None:
    """Usage as heron counts it: ``input`` excludes cached tokens, ``output`` includes
    reasoning (xAI reports reasoning outside ``completion_tokens``)."""
    prompt = int(getattr(usage, "prompt_tokens", None) or 0)
    completion = int(getattr(usage, "completion_tokens", None) or 0)
    reported_total = getattr(usage, "total_tokens", None)
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(prompt_details, "cached_tokens", None) if prompt_details is not None else None
    if cached is None:
        cached = _extra(usage, "prompt_cache_hit_tokens")  # DeepSeek
    cache_read = int(cached or 0)
    cache_write = 0
    if prompt_details is not None:
        cache_write = int(_extra(prompt_details, "cache_write_tokens") or 0)
    completion_details = getattr(usage, "completion_tokens_details", None)
    reasoning = int(getattr(completion_details, "reasoning_tokens", None) or 0) if completion_details else 0
    output = completion
    if reasoning and reported_total == prompt + completion + reasoning:
        output += reasoning
    set_usage(
        builder, input=prompt - cache_read - cache_write, output=output, cache_read=cache_read, cache_write=cache_write
    )


def openai_auth(options: StreamOptions, base_url: str) -> dict[str, str]:
    """Bearer auth (``OPENAI_API_KEY`` only for OpenAI's own servers), then organisation
    and project for OpenAI."""
    openai_host = is_openai_url(base_url)
    key = http.api_key(options, ("OPENAI_API_KEY",), use_env=openai_host) or NO_KEY
    headers = {"authorization": f"Bearer {key}"}
    if openai_host:
        for env, header in (("OPENAI_ORG_ID", "openai-organization"), ("OPENAI_PROJECT_ID", "openai-project")):
            if os.environ.get(env):
                headers[header] = os.environ[env]
    return headers


class OpenAIChatProvider(HttpProvider):
    api = "openai-chat"
    default_base_url = DEFAULT_BASE_URL
    path = "/chat/completions"
    base_url_env = "OPENAI_BASE_URL"

    def build_request(self, model: Model, context: Context, options: StreamOptions) -> JSON:
        return build_request(model, context, options)

    def convert(self, messages: list[Message], model: Model) -> list[JSON]:
        return convert_messages(messages, model)

    def tool_id(self, call_id: str) -> str:
        return openai_chat_tool_id(call_id)

    def auth_headers(self, model: Model, options: StreamOptions) -> dict[str, str]:
        return openai_auth(options, self.base_url(model))

    def translator(self, model: Model, context: Context, builder: MessageBuilder) -> StreamTranslator:
        return _Translator(builder)

    def status_error(self, exc: http.HttpStatusError) -> ProviderError:
        return status_error(exc)
