"""OpenAI Responses API (``POST /v1/responses`` with ``stream: true``).

Requests are stateless (``store: false``): the whole history is sent every turn, and
reasoning is carried across turns as the encrypted reasoning item the API returns
(``include: ["reasoning.encrypted_content"]``), kept as JSON in the thinking block's
signature. A heron tool-call id is ``"<call_id>|<item_id>"`` so both halves can be
replayed; ids from other APIs are used as the ``call_id`` alone.

Wire events are read by name only, so the older event shape (no ``sequence_number``)
and item types this module does not know (server-side tools such as ``tool_search_call``,
``web_search_call``) pass through harmlessly: only ``function_call`` items become calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable
from typing import Any

from heron.ai.adapt import adapt_messages, anthropic_tool_id, same_model
from heron.ai.builder import MessageBuilder
from heron.ai.events import AssistantEvent
from heron.ai.options import StreamOptions
from heron.ai.overflow import ProviderError, classify, parse_retry_after
from heron.ai.providers import http
from heron.ai.providers.base import IMAGE_OMITTED, HttpProvider, StreamTranslator, set_usage
from heron.ai.providers.openai_chat import DEFAULT_BASE_URL, is_openai_url, openai_auth
from heron.ai.thinking import OPENAI_EFFORT
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
    UserBlock,
    UserMessage,
)

API = "openai-responses"

_ITEM_ID = re.compile(r"fc[A-Za-z0-9_-]*")

# Error codes of in-stream failures (``response.failed`` / ``error``) that have an HTTP
# meaning, so that classification and retry treat them like the HTTP error.
_CODE_STATUS: dict[str, int] = {
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "server_error": 500,
    "internal_error": 500,
    "server_is_overloaded": 529,
    "overloaded": 529,
    "service_unavailable": 503,
    "slow_down": 503,
}


def responses_tool_id(tool_id: str) -> str:
    """The id rule for Responses: ``call_id`` in ``[A-Za-z0-9_-]{1,64}``, optionally
    followed by ``|<item_id>`` when the id came from this API."""
    call_id, sep, item_id = tool_id.partition("|")
    call = anthropic_tool_id(call_id)
    if sep and _ITEM_ID.fullmatch(item_id):
        return f"{call}|{item_id}"
    return call


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """A field of a wire object (``None``, a dict, or anything with attributes)."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    value = getattr(obj, name, default)
    return default if value is None else value


# --- request ------------------------------------------------------------------------


def _data_url(image: ImageContent) -> str:
    return f"data:{image.mime_type};base64,{image.data}"


def _user_content(content: str | list[UserBlock], model: Model) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            if block.text:
                parts.append({"type": "input_text", "text": block.text})
        elif model.supports_images():
            parts.append({"type": "input_image", "image_url": _data_url(block), "detail": "auto"})
        else:
            parts.append({"type": "input_text", "text": IMAGE_OMITTED})
    return parts


def _message_id(signature: str | None) -> str | None:
    """The output-message id kept in a text block's signature (a bare id, or pi's JSON)."""
    if not signature:
        return None
    if signature.startswith("{"):
        try:
            data = json.loads(signature)
        except ValueError:
            return None
        value = data.get("id") if isinstance(data, dict) else None
        return value if isinstance(value, str) and value else None
    return signature


def _reasoning_item(signature: str | None) -> dict[str, Any] | None:
    """The reasoning item stored in a thinking signature, in the shape the API takes back."""
    if not signature:
        return None
    try:
        data = json.loads(signature)
    except ValueError:
        return None
    if not isinstance(data, dict) or not data.get("encrypted_content"):
        return None  # with store=false an item without its encrypted content cannot be resolved
    summary = [
        {"type": "summary_text", "text": part.get("text") or ""}
        for part in data.get("summary") or []
        if isinstance(part, dict)
    ]
    item: dict[str, Any] = {"type": "reasoning", "summary": summary, "encrypted_content": data["encrypted_content"]}
    if isinstance(data.get("id"), str):
        item["id"] = data["id"]
    return item


def _arguments_text(call: ToolCall) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))


def _assistant_items(message: AssistantMessage, model: Model) -> list[dict[str, Any]]:
    native = same_model(message, model)
    items: list[dict[str, Any]] = []
    compaction = message.native_compaction
    if compaction is not None and compaction.matches(model):
        # The opaque item stands for everything before it: the view sends none of that.
        item_fields = {"id": compaction.item_id} if compaction.item_id else {}
        items.append({"type": "compaction", **item_fields, "encrypted_content": compaction.content})
    for block in message.content:
        if isinstance(block, ThinkingContent):
            # adapt_messages already turned another model's thinking into text.
            reasoning = _reasoning_item(block.thinking_signature) if native else None
            if reasoning is not None:
                items.append(reasoning)
        elif isinstance(block, TextContent):
            if not block.text:
                continue
            message_id = _message_id(block.text_signature) if native else None
            if message_id is not None:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "id": message_id,
                        "status": "completed",
                        "content": [{"type": "output_text", "text": block.text, "annotations": []}],
                    }
                )
            else:
                items.append({"type": "message", "role": "assistant", "content": block.text})
        else:
            call_id, _, item_id = block.id.partition("|")
            item: dict[str, Any] = {
                "type": "function_call",
                "call_id": call_id,
                "name": block.name,
                "arguments": _arguments_text(block),
            }
            if native and item_id:
                item["id"] = item_id
            items.append(item)
    return items


def _tool_output(message: ToolResultMessage, model: Model) -> dict[str, Any]:
    call_id = message.tool_call_id.partition("|")[0]
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
    images = [b for b in message.content if isinstance(b, ImageContent)]
    output: str | list[dict[str, Any]]
    if images and model.supports_images():
        parts: list[dict[str, Any]] = [{"type": "input_text", "text": text}] if text else []
        parts.extend({"type": "input_image", "image_url": _data_url(image), "detail": "auto"} for image in images)
        output = parts
    elif images:
        output = f"{text}\n{IMAGE_OMITTED}" if text else IMAGE_OMITTED
    else:
        output = text
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def build_input(messages: list[Message], model: Model) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            content = _user_content(message.content, model)
            if content:
                items.append({"type": "message", "role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            items.extend(_assistant_items(message, model))
        else:
            items.append(_tool_output(message, model))
    return items


def build_request(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    messages = adapt_messages(context.messages, model, responses_tool_id)
    body: dict[str, Any] = {
        "model": model.id,
        "input": build_input(messages, model),
        "stream": True,
        "store": False,
        "max_output_tokens": options.max_tokens or model.max_tokens,
    }
    if context.system_prompt:
        body["instructions"] = context.system_prompt
    if context.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
                "strict": False,
            }
            for tool in context.tools
        ]
        if options.tool_choice is not None:
            body["tool_choice"] = options.tool_choice
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.session_id and options.cache_retention != "none":
        body["prompt_cache_key"] = options.session_id
        if options.cache_retention == "long" and is_openai_url(model.base_url):
            body["prompt_cache_retention"] = "24h"
    management = options.context_management
    if management is not None and management.compact_trigger is not None:
        body["context_management"] = [{"type": "compaction", "compact_threshold": management.compact_trigger}]
    if model.reasoning:
        body["include"] = ["reasoning.encrypted_content"]
        if options.thinking != "off":
            body["reasoning"] = {"effort": OPENAI_EFFORT[options.thinking], "summary": "auto"}
    return body


# --- response -----------------------------------------------------------------------


def _usage_into(builder: MessageBuilder, response: Any) -> None:
    usage = _get(response, "usage")
    if usage is None:
        return
    input_tokens = int(_get(usage, "input_tokens", 0) or 0)
    cached = int(_get(_get(usage, "input_tokens_details"), "cached_tokens", 0) or 0)
    output_tokens = int(_get(usage, "output_tokens", 0) or 0)
    total = int(_get(usage, "total_tokens", 0) or 0)
    set_usage(builder, input=input_tokens - cached, output=output_tokens, cache_read=cached, total=total)


def _stream_error(code: Any, message: Any, fallback: str) -> ProviderError:
    code_text = str(code) if code else ""
    detail = str(message) if message else fallback
    text = f"{code_text}: {detail}" if code_text and code_text not in detail else detail
    return ProviderError(text, status=_CODE_STATUS.get(code_text))


def _message_text(item: Any) -> str:
    pieces: list[str] = []
    for part in _get(item, "content", []) or []:
        kind = _get(part, "type")
        if kind == "output_text":
            pieces.append(_get(part, "text", "") or "")
        elif kind == "refusal":
            pieces.append(_get(part, "refusal", "") or "")
    return "".join(pieces)


def _signature_json(item: Any) -> str:
    summary = [
        {"type": "summary_text", "text": _get(part, "text", "") or ""} for part in _get(item, "summary", []) or []
    ]
    data: dict[str, Any] = {"type": "reasoning", "id": _get(item, "id")}
    encrypted = _get(item, "encrypted_content")
    if encrypted:
        data["encrypted_content"] = encrypted
    data["summary"] = summary
    return json.dumps(data, ensure_ascii=False)


class _Translator(StreamTranslator):
    """Maps Responses stream events onto the builder. Blocks are keyed by
    ``(output_index, kind)`` so a stray delta can never land in a block of another kind.
    ``response.completed`` / ``response.incomplete`` finish the response."""

    def __init__(self, builder: MessageBuilder) -> None:
        super().__init__(builder)
        self._index_of_item: dict[str, int] = {}
        self._parts: dict[int | None, list[Hashable]] = {}

    def _index(self, event: Any) -> int | None:
        index = _get(event, "output_index")
        if isinstance(index, int):
            return index
        item_id = _get(event, "item_id")
        return self._index_of_item.get(item_id) if isinstance(item_id, str) else None

    def _ensure_text(self, key: Hashable, signature: str | None = None) -> list[AssistantEvent]:
        if self.builder.is_open(key):
            return []
        return [self.builder.start_text(key, signature)]

    def _ensure_thinking(self, key: Hashable) -> list[AssistantEvent]:
        if self.builder.is_open(key):
            return []
        return [self.builder.start_thinking(key)]

    def _thinking_part(self, index: int | None, part: Any) -> list[AssistantEvent]:
        """The thinking block of summary part ``part`` of reasoning item ``index``: each
        part is a block of its own (the stream's text, exactly - no separator added)."""
        keys = self._parts.setdefault(index, [])
        key = (index, "thinking", part)
        if keys and keys[-1] == key:
            return []
        events: list[AssistantEvent] = []
        if keys and self.builder.is_open(keys[-1]):
            events.append(self.builder.end(keys[-1]))
        keys.append(key)
        events.append(self.builder.start_thinking(key))
        return events

    def _reasoning_done(self, index: int | None, item: Any) -> list[AssistantEvent]:
        """Close the item's thinking; its last block carries the whole reasoning item (the
        signature that is replayed once)."""
        builder = self.builder
        events: list[AssistantEvent] = []
        keys = self._parts.get(index, [])
        if not keys:  # no streamed parts: the item's own summary, or one empty block
            texts = [_get(part, "text", "") or "" for part in _get(item, "summary", []) or []] or [""]
            for n, text in enumerate(texts):
                events.extend(self._thinking_part(index, n))
                if text:
                    events.append(builder.thinking_delta(self._parts[index][-1], text))
            keys = self._parts[index]
        if builder.is_open(keys[-1]):
            builder.thinking(keys[-1]).thinking_signature = _signature_json(item)
            events.append(builder.end(keys[-1]))
        return events

    def _finish_arguments(self, key: Hashable, arguments: Any) -> list[AssistantEvent]:
        if not isinstance(arguments, str) or not self.builder.is_open(key):
            return []
        raw = self.builder.raw_arguments(key)
        if arguments == raw:
            return []
        if arguments.startswith(raw):
            return [self.builder.tool_call_delta(key, arguments[len(raw) :])]
        self.builder.set_tool_arguments(key, arguments)
        return []

    def _start_call(self, key: Hashable, item: Any) -> list[AssistantEvent]:
        call_id = str(_get(item, "call_id", "") or "")
        item_id = str(_get(item, "id", "") or "")
        heron_id = f"{call_id}|{item_id}" if item_id else call_id
        events: list[AssistantEvent] = [self.builder.start_tool_call(key, heron_id, str(_get(item, "name", "") or ""))]
        arguments = _get(item, "arguments")
        if isinstance(arguments, str) and arguments:
            events.append(self.builder.tool_call_delta(key, arguments))
        return events

    def event(self, event: Any, name: str | None) -> list[AssistantEvent]:
        error = event.get("error")
        if isinstance(error, dict) and event.get("type") in (None, "error"):
            # {"error": {...}} or {"type": "error", "error": {...}} (some gateways)
            raise _stream_error(error.get("code") or error.get("type"), error.get("message"), str(error))
        if event.get("type") is None:
            event["type"] = name
        return self.handle(event)

    def handle(self, event: Any) -> list[AssistantEvent]:
        kind = _get(event, "type")
        builder = self.builder
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            index = self._index(event)
            key = (index, "text")
            return [*self._ensure_text(key), builder.text_delta(key, str(_get(event, "delta", "")))]
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            index = self._index(event)
            part = _get(event, "summary_index", _get(event, "content_index", 0))
            events = self._thinking_part(index, part)
            part_key = self._parts[index][-1]
            return [*events, builder.thinking_delta(part_key, str(_get(event, "delta", "")))]
        if kind == "response.reasoning_summary_part.added":
            return self._thinking_part(self._index(event), _get(event, "summary_index", 0))
        if kind == "response.function_call_arguments.delta":
            key = (self._index(event), "tool")
            if not builder.is_open(key):
                return []  # no output_item.added (and so no name): nothing to attach it to
            return [builder.tool_call_delta(key, str(_get(event, "delta", "")))]
        if kind == "response.function_call_arguments.done":
            return self._finish_arguments((self._index(event), "tool"), _get(event, "arguments"))
        if kind == "response.output_item.added":
            return self._item_added(event)
        if kind == "response.output_item.done":
            return self._item_done(event)
        if kind in ("response.created", "response.in_progress"):
            response_id = _get(_get(event, "response"), "id")
            if response_id:
                builder.message.response_id = str(response_id)
            return []
        if kind in ("response.completed", "response.incomplete"):
            self._finish(_get(event, "response"), incomplete=kind == "response.incomplete")
            return []
        if kind == "response.failed":
            error = _get(_get(event, "response"), "error")
            raise _stream_error(_get(error, "code"), _get(error, "message"), "The response failed")
        if kind == "error":
            raise _stream_error(_get(event, "code"), _get(event, "message"), "An error occurred during streaming")
        return []

    def _item_added(self, event: Any) -> list[AssistantEvent]:
        item = _get(event, "item")
        index = self._index(event)
        item_id = _get(item, "id")
        if isinstance(item_id, str) and isinstance(index, int):
            self._index_of_item[item_id] = index
        item_type = _get(item, "type")
        if item_type == "message":
            return self._ensure_text((index, "text"), item_id if isinstance(item_id, str) else None)
        if item_type == "reasoning":
            return []  # a thinking block opens with each summary part (or at the item's end)
        if item_type == "function_call":
            key = (index, "tool")
            if self.builder.is_open(key):
                return []
            return self._start_call(key, item)
        return []  # executed by the server (tool_search_call, web_search_call...): not ours to run

    def _item_done(self, event: Any) -> list[AssistantEvent]:
        item = _get(event, "item")
        index = self._index(event)
        item_type = _get(item, "type")
        builder = self.builder
        events: list[AssistantEvent] = []
        if item_type == "message":
            key: Hashable = (index, "text")
            item_id = _get(item, "id")
            events.extend(self._ensure_text(key, item_id if isinstance(item_id, str) else None))
            block = builder.text(key)
            if isinstance(item_id, str) and item_id:
                block.text_signature = item_id
            full = _message_text(item)
            if full and not block.text:
                events.append(builder.text_delta(key, full))
            events.append(builder.end(key))
        elif item_type == "reasoning":
            events.extend(self._reasoning_done(index, item))
        elif item_type == "compaction":
            encrypted = _get(item, "encrypted_content")
            if isinstance(encrypted, str) and encrypted:  # without it the item cannot be sent back
                message = builder.message
                item_id = _get(item, "id")
                message.native_compaction = NativeCompaction(
                    api=message.api,
                    provider=message.provider,
                    content=encrypted,
                    item_id=item_id if isinstance(item_id, str) and item_id else None,
                )
        elif item_type == "function_call":
            key = (index, "tool")
            if not builder.is_open(key):
                events.extend(self._start_call(key, item))
            else:
                events.extend(self._finish_arguments(key, _get(item, "arguments")))
            events.append(builder.end(key))
        return events

    def _finish(self, response: Any, *, incomplete: bool) -> None:
        builder = self.builder
        self.finished = True
        response_id = _get(response, "id")
        if response_id:
            builder.message.response_id = str(response_id)
        _usage_into(builder, response)
        if incomplete:
            reason = _get(_get(response, "incomplete_details"), "reason")
            builder.stop_reason = StopReason.LENGTH if reason == "max_output_tokens" else StopReason.STOP
        elif any(isinstance(block, ToolCall) for block in builder.message.content):
            builder.stop_reason = StopReason.TOOL_USE
        else:
            builder.stop_reason = StopReason.STOP


# --- provider -----------------------------------------------------------------------


class OpenAIResponsesProvider(HttpProvider):
    api = API
    default_base_url = DEFAULT_BASE_URL
    path = "/responses"
    base_url_env = "OPENAI_BASE_URL"
    array_key = "input"

    def build_request(self, model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
        return build_request(model, context, options)

    def convert(self, messages: list[Message], model: Model) -> list[dict[str, Any]]:
        return build_input(messages, model)

    def tool_id(self, call_id: str) -> str:
        return responses_tool_id(call_id)

    def auth_headers(self, model: Model, options: StreamOptions) -> dict[str, str]:
        return openai_auth(options, self.base_url(model))

    def translator(self, model: Model, context: Context, builder: MessageBuilder) -> StreamTranslator:
        return _Translator(builder)

    def status_error(self, exc: http.HttpStatusError) -> ProviderError:
        return _status_error(exc)


def _status_error(exc: http.HttpStatusError) -> ProviderError:
    status = exc.status
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    error_type: str | None = None
    code: str | None = None
    if isinstance(body, dict):
        detail = str(body.get("message") or "")
        error_type = body.get("type") if isinstance(body.get("type"), str) else None
        raw_code = body.get("code")
        code = str(raw_code) if raw_code is not None else None
    elif isinstance(body, str):
        detail = body.strip()
    else:
        detail = ""
    label = error_type or code
    if code and code != label and code not in detail:
        detail = f"{detail} ({code})" if detail else code
    text = f"{status} {label}: {detail}" if label else f"{status}: {detail or 'no error details'}"
    retry_after = parse_retry_after(exc.headers)
    # Classify on the provider's own words: a 400/413 with an empty body is an overflow.
    kind = classify(status, f"{label or ''} {detail}" if detail else "")
    return ProviderError(text, status=status, retry_after=retry_after, kind=kind)
