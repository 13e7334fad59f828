"""Google Gemini (``google-gemini``): ``models/{id}:streamGenerateContent?alt=sse``.

Spoken over heron's lean HTTP client (:mod:`heron.ai.providers.http`), like the other
providers: the request is plain JSON built once per history segment
(:mod:`heron.ai.providers.wire`) and the stream's JSON is read directly, so neither the
``google-genai`` SDK's import nor its per-request model validation is paid for.

Wire facts this adapter relies on:

- the request is ``contents`` (roles ``user``/``model``) plus ``systemInstruction``,
  ``tools[].functionDeclarations`` and ``generationConfig``; tool results are
  ``functionResponse`` parts of a user turn;
- reasoning state is an opaque ``thoughtSignature`` on a part (a thought summary, a
  text part - even an empty one - or a function call); it must go back on the same
  kind of part, and only to the model that produced it;
- a function call may come without an ``id``; on Vertex AI its arguments may be
  streamed as ``partialArgs`` (a JSON path and a value each) between a call opened
  with ``willContinue`` and an empty call that closes it.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any

from heron.ai.adapt import adapt_messages, same_model
from heron.ai.builder import MessageBuilder
from heron.ai.events import AssistantEvent
from heron.ai.options import StreamOptions
from heron.ai.overflow import ErrorKind, ProviderError, parse_retry_after
from heron.ai.providers import http
from heron.ai.providers.base import IMAGE_OMITTED, HttpProvider, StreamTranslator, set_usage
from heron.ai.providers.google_args import PartialCall, apply_partial_args
from heron.ai.providers.wire import History, Segment, all_items, array_pieces, dumps
from heron.ai.thinking import budget_tokens
from heron.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    UserMessage,
)

JSON = dict[str, Any]

API_KEY_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
DEFAULT_API_VERSION = "v1beta"
# Gemini 3 rejects a function call without a signature in the current turn. Google's
# documented escape hatch for history written by another model:
SKIP_SIGNATURE = "skip_thought_signature_validator"
INCOMPLETE = http.INCOMPLETE

_VERSION_SUFFIX = re.compile(r"^(?P<base>.*?)/(?P<version>v\d+(?:(?:alpha|beta)\d*)?)/*$")


DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"


class GObj(dict[str, Any]):
    """A Gemini JSON object read with the field names of Google's SDK (``part.thought_signature``
    reads ``thoughtSignature``), ``None`` when absent."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        key = _CAMEL.get(name)
        if key is None:
            head, *rest = name.split("_")
            key = _CAMEL[name] = head + "".join(word.title() for word in rest)
        value = self.get(key)
        return value if value is not None else self.get(name)


_CAMEL: dict[str, str] = {}


class GoogleProvider(HttpProvider):
    api = "google-gemini"
    default_base_url = DEFAULT_BASE_URL
    array_key = "contents"
    json_object = GObj

    def build_request(self, model: Model, context: Context, options: StreamOptions) -> JSON:
        return build_request(model, context, options)

    def convert(self, messages: list[Message], model: Model) -> list[JSON]:
        return convert_messages(messages, model)

    def clean(self, segments: list[Segment]) -> bool:
        return _clean(segments)

    def history_array(self, history: History, lead: list[JSON], options: StreamOptions) -> list[bytes]:
        return contents_json(history)  # the system instruction is not a turn here

    def url(self, model: Model) -> str:
        base_url, api_version = split_base_url(model.base_url)
        base = (base_url or DEFAULT_BASE_URL).rstrip("/")
        return f"{base}/{api_version}/models/{model.id}:streamGenerateContent?alt=sse"

    def payload(self, model: Model, body: list[bytes]) -> Any:
        return {"model": model.id, **json.loads(b"".join(body))}  # the model is in the URL, not the body

    def auth_headers(self, model: Model, options: StreamOptions) -> dict[str, str]:
        key = http.api_key(options, API_KEY_ENV)
        return {"x-goog-api-key": key} if key else {}

    def translator(self, model: Model, context: Context, builder: MessageBuilder) -> StreamTranslator:
        return _Translator(builder, context.messages)

    def status_error(self, exc: http.HttpStatusError) -> ProviderError:
        return describe_failure(exc.status, exc.body, exc.headers, exc.reason)


def _clean(segments: list[Segment]) -> bool:
    """No user turn of tool results continues into the next segment."""
    last: JSON | None = None
    for segment in segments:
        if segment.items:
            if last is not None and _is_results(segment.items[0]) and _is_results(last):
                return False
            last = segment.items[-1]
    return True


def contents_json(history: History) -> list[bytes]:
    """The ``contents`` array; tool results split over two segments (the segment between
    held only dropped messages) share one user turn, as :func:`convert_messages` does."""
    if not _clean(history.segments[max(0, history.frozen - 1) :]):
        merged = convert_turns(all_items(history.segments))
        return array_pieces([dumps(turn).encode() for turn in merged])
    return array_pieces(history.wires())


def _is_results(turn: JSON) -> bool:
    return turn["role"] == "user" and bool(turn["parts"]) and "functionResponse" in turn["parts"][0]


def convert_turns(turns: list[JSON]) -> list[JSON]:
    out: list[JSON] = []
    for turn in turns:
        if out and _is_results(out[-1]) and _is_results(turn):
            out[-1] = {**out[-1], "parts": [*out[-1]["parts"], *turn["parts"]]}
        else:
            out.append(turn)
    return out


# --- request --------------------------------------------------------------------


def split_base_url(base_url: str | None) -> tuple[str | None, str]:
    """``(base, api_version)``: a base URL written with its version (pi's
    ``https://generativelanguage.googleapis.com/v1beta``) must not get a second one."""
    if not base_url:
        return None, DEFAULT_API_VERSION
    match = _VERSION_SUFFIX.match(base_url)
    if match is None:
        return base_url, DEFAULT_API_VERSION
    return match.group("base") + "/", match.group("version")


def is_gemini3(model: Model) -> bool:
    return "gemini-3" in model.id.lower()


def build_body(model: Model, context: Context, options: StreamOptions) -> JSON:
    """The request without ``contents``: system instruction, tools, generation config."""
    max_tokens = options.max_tokens or model.max_tokens
    config: JSON = {"maxOutputTokens": max_tokens}
    body: JSON = {}
    if context.system_prompt:
        body["systemInstruction"] = {"parts": [{"text": context.system_prompt}]}
    if options.temperature is not None:
        config["temperature"] = options.temperature
    if context.tools:
        declarations = [
            {"name": tool.name, "description": tool.description, "parametersJsonSchema": tool.parameters}
            for tool in context.tools
        ]
        body["tools"] = [{"functionDeclarations": declarations}]
        if options.tool_choice == "none":
            body["toolConfig"] = {"functionCallingConfig": {"mode": "NONE"}}
    if model.reasoning and options.thinking != "off":
        thinking: JSON = {"includeThoughts": True}
        if is_gemini3(model):
            thinking["thinkingLevel"] = "LOW" if options.thinking in ("minimal", "low") else "HIGH"
        else:
            thinking["thinkingBudget"] = budget_tokens(options.thinking, max_tokens)
        config["thinkingConfig"] = thinking
    body["generationConfig"] = config
    return body


def build_request(model: Model, context: Context, options: StreamOptions) -> JSON:
    """The whole request body (the readable reference of what :meth:`GoogleProvider.encode_request` sends)."""
    body = build_body(model, context, options)
    body["contents"] = convert_messages(adapt_messages(context.messages, model), model)
    return body


def convert_messages(messages: list[Message], model: Model) -> list[JSON]:
    """heron messages (already adapted to ``model``) as Gemini ``contents``."""
    contents: list[JSON] = []
    results: list[JSON] | None = None  # parts of the user turn holding consecutive tool results
    for message in messages:
        if isinstance(message, ToolResultMessage):
            if results is None:
                results = []
                contents.append({"role": "user", "parts": results})
            _tool_result_parts(message, model, results)
            continue
        results = None
        if isinstance(message, UserMessage):
            parts = _user_parts(message, model)
            if parts:
                contents.append({"role": "user", "parts": parts})
        else:
            parts = _assistant_parts(message, model)
            if parts:
                contents.append({"role": "model", "parts": parts})
    return contents


def _image_part(block: ImageContent, model: Model) -> JSON:
    if not model.supports_images():
        return {"text": IMAGE_OMITTED}
    return {"inlineData": {"mimeType": block.mime_type, "data": block.data}}


def _user_parts(message: UserMessage, model: Model) -> list[JSON]:
    if isinstance(message.content, str):
        return [{"text": message.content}] if message.content else []
    parts: list[JSON] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text:
                parts.append({"text": block.text})
        else:
            parts.append(_image_part(block, model))
    return parts


def _assistant_parts(message: AssistantMessage, model: Model) -> list[JSON]:
    native = same_model(message, model)
    parts: list[JSON] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if block.redacted or (not block.thinking and not block.thinking_signature):
                continue
            part: JSON = {"text": block.thinking, "thought": True}
            _put_signature(part, block.thinking_signature)
            parts.append(part)
        elif isinstance(block, TextContent):
            if not block.text and not block.text_signature:
                continue
            part = {"text": block.text}
            _put_signature(part, block.text_signature)
            parts.append(part)
        else:
            call: JSON = {"name": block.name, "args": block.arguments}
            if block.id:
                call["id"] = block.id
            part = {"functionCall": call}
            signature = block.thought_signature
            if signature is None and not native and is_gemini3(model):
                signature = SKIP_SIGNATURE
            _put_signature(part, signature)
            parts.append(part)
    return parts


def _tool_result_parts(message: ToolResultMessage, model: Model, parts: list[JSON]) -> None:
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
    images = [b for b in message.content if isinstance(b, ImageContent)]
    if not text:
        text = "(see attached image)" if images else "(no output)"
    response: JSON = {"name": message.tool_name, "response": {"error" if message.is_error else "output": text}}
    if message.tool_call_id:
        response["id"] = message.tool_call_id
    inline = images and model.supports_images()
    if inline and is_gemini3(model):
        # Gemini 3 takes media inside the function response itself.
        response["parts"] = [{"inlineData": {"mimeType": image.mime_type, "data": image.data}} for image in images]
        images = []
    parts.append({"functionResponse": response})
    if images:
        parts.append({"text": f"Image(s) returned by the {message.tool_name} tool:"})
        parts.extend(_image_part(image, model) for image in images)


def _put_signature(part: JSON, signature: str | None) -> None:
    if signature:
        # URL-safe base64, as Google's SDK writes bytes fields (the API reads both).
        part["thoughtSignature"] = base64.urlsafe_b64encode(_b64decode(signature)).decode("ascii")


def _b64decode(value: str) -> bytes:
    """Standard or URL-safe base64, padding optional (signatures are stored as sent)."""
    cleaned = value.strip().replace("-", "+").replace("_", "/")
    cleaned += "=" * (-len(cleaned) % 4)
    try:
        return base64.b64decode(cleaned, validate=False)
    except (binascii.Error, ValueError):
        return value.encode()


def _signature_bytes(value: Any) -> bytes | None:
    """A ``thoughtSignature`` (base64 on the wire) as bytes."""
    if value is None or isinstance(value, bytes):
        return value
    return _b64decode(str(value))


def _b64encode(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _taken_ids(messages: list[Message]) -> set[str]:
    taken: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            taken.update(call.id for call in message.tool_calls())
    return taken


# --- response --------------------------------------------------------------------


def _enum_name(value: Any) -> str | None:
    if value is None:
        return None
    name = getattr(value, "value", value)
    return str(name)


class _Translator(StreamTranslator):
    """Gemini chunks onto the builder. The response is complete when a candidate brought
    its ``finishReason``; the body's end settles the stop reason."""

    def __init__(self, builder: MessageBuilder, history: list[Message]) -> None:
        super().__init__(builder)
        self._history = history
        self._taken_ids: set[str] | None = None  # ids already used, collected only when needed
        self.block: tuple[str, int] | None = None  # open text/thinking block
        self.block_kind: str | None = None
        self.counter = 0
        self.call: PartialCall | None = None
        self.finish_reason: str | None = None
        self.finish_message: str | None = None
        self.tool_calls = 0

    def _next_key(self, kind: str) -> tuple[str, int]:
        self.counter += 1
        return (kind, self.counter)

    def _call_id(self, name: str) -> str:
        n = 1
        if self._taken_ids is None:
            self._taken_ids = _taken_ids(self._history)
        while f"{name}_{n}" in self._taken_ids:
            n += 1
        call_id = f"{name}_{n}"
        self._taken_ids.add(call_id)
        return call_id

    # --- chunks --------------------------------------------------------------

    def event(self, event: Any, name: str | None) -> list[AssistantEvent]:
        if isinstance(event.get("error"), dict):
            raise describe_failure(None, event, {})
        return self.on_chunk(event)

    def on_chunk(self, chunk: Any) -> list[AssistantEvent]:
        builder = self.builder
        events: list[AssistantEvent] = []
        if chunk.response_id:
            builder.message.response_id = chunk.response_id
        self._usage(chunk.usage_metadata)
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            reason = _enum_name(feedback.block_reason)
            detail = f": {feedback.block_reason_message}" if feedback.block_reason_message else ""
            raise ProviderError(f"Gemini blocked the request ({reason}){detail}")
        if not chunk.candidates:
            return events
        candidate = chunk.candidates[0]
        content = candidate.content
        for part in (content.parts if content is not None else None) or []:
            signature = _signature_bytes(part.thought_signature)
            if part.function_call is not None:
                events.extend(self._function_call(part.function_call, signature))
            elif part.text is not None or (part.thought and signature is not None):
                events.extend(self._text(part.text or "", bool(part.thought), signature))
        if candidate.finish_reason is not None:
            self.finish_reason = _enum_name(candidate.finish_reason)
            self.finish_message = candidate.finish_message
        return events

    def _usage(self, metadata: Any) -> None:
        if metadata is None:
            return
        prompt = metadata.prompt_token_count
        candidates = metadata.candidates_token_count
        thoughts = metadata.thoughts_token_count
        if prompt is None and candidates is None and thoughts is None:
            return  # Vertex sends {"trafficType": ...} alone on intermediate chunks
        cached = metadata.cached_content_token_count or 0
        output = (candidates or 0) + (thoughts or 0)
        set_usage(
            self.builder,
            input=(prompt or 0) - cached,
            output=output,
            cache_read=cached,
            total=metadata.total_token_count,
        )

    def _text(self, text: str, thought: bool, signature: bytes | None) -> list[AssistantEvent]:
        builder = self.builder
        kind = "thinking" if thought else "text"
        events: list[AssistantEvent] = []
        if not text and signature is None:
            return events
        events.extend(self._close_call())
        if self.block is None or self.block_kind != kind:
            events.extend(self._close_block())
            key = self._next_key(kind)
            events.append(builder.start_thinking(key) if thought else builder.start_text(key))
            self.block, self.block_kind = key, kind
        key = self.block
        if text:
            events.append(builder.thinking_delta(key, text) if thought else builder.text_delta(key, text))
        if signature is not None:
            encoded = _b64encode(signature)
            if thought:
                builder.thinking(key).thinking_signature = encoded
            else:
                builder.text(key).text_signature = encoded
        return events

    def _close_block(self) -> list[AssistantEvent]:
        if self.block is None:
            return []
        key, self.block, self.block_kind = self.block, None, None
        return [self.builder.end(key)]

    def _function_call(self, call: Any, signature: bytes | None) -> list[AssistantEvent]:
        builder = self.builder
        if call.args is not None and not isinstance(call.args, dict):
            # Checked before any block changes, so the consumer never sees half a call.
            raise ProviderError(
                "Gemini sent a response heron could not read: functionCall.args is not an object",
                kind=ErrorKind.UNKNOWN,
            )
        events = self._close_block()
        encoded = _b64encode(signature) if signature is not None else None
        if call.name:
            # A named part starts a new call (and ends a streamed one still open).
            events.extend(self._close_call())
            key = self._next_key("tool")
            self.tool_calls += 1
            events.append(builder.start_tool_call(key, call.id or self._call_id(call.name), call.name, encoded))
            if call.will_continue:
                self.call = PartialCall(key=key)
                events.extend(self._continue_call(call))
                return events
            arguments: JSON = dict(call.args or {})
            if call.partial_args:
                pending = PartialCall(key=key, args=arguments)
                apply_partial_args(pending, call.partial_args)
                arguments = pending.args
            events.append(builder.tool_call_delta(key, _dumps(arguments)))
            events.append(builder.end(key))
            return events
        if self.call is None:
            return events  # a continuation of nothing: ignore
        if encoded is not None:
            builder.tool_call(self.call.key).thought_signature = encoded
        events.extend(self._continue_call(call))
        return events

    def _continue_call(self, call: Any) -> list[AssistantEvent]:
        pending = self.call
        assert pending is not None
        if call.args:
            pending.args.update(call.args)
        last_open = apply_partial_args(pending, call.partial_args or [])
        events: list[AssistantEvent] = []
        if not pending.diverged:
            text = _dumps(pending.args).rstrip("}]")
            if last_open and text.endswith('"'):
                text = text[:-1]
            if text.startswith(pending.sent):
                if len(text) > len(pending.sent):
                    events.append(self.builder.tool_call_delta(pending.key, text[len(pending.sent) :]))
                    pending.sent = text
            else:
                pending.diverged = True
        if not call.will_continue:
            events.extend(self._close_call())
        return events

    def _close_call(self) -> list[AssistantEvent]:
        pending = self.call
        if pending is None:
            return []
        self.call = None
        builder = self.builder
        events: list[AssistantEvent] = []
        full = _dumps(pending.args)
        if not pending.diverged and full.startswith(pending.sent):
            if len(full) > len(pending.sent):
                events.append(builder.tool_call_delta(pending.key, full[len(pending.sent) :]))
        else:
            builder.set_tool_arguments(pending.key, full)
        events.append(builder.end(pending.key))
        return events

    # --- end -------------------------------------------------------------------

    def end(self) -> list[AssistantEvent]:
        reason = self.finish_reason
        if reason is None:
            raise http.incomplete()
        if reason in ("STOP", "FINISH_REASON_UNSPECIFIED"):
            self.builder.stop_reason = StopReason.TOOL_USE if self.tool_calls else StopReason.STOP
        elif reason == "MAX_TOKENS":
            self.builder.stop_reason = StopReason.LENGTH
        else:
            # SAFETY, RECITATION, MALFORMED_FUNCTION_CALL, ...: the answer is not usable.
            detail = f": {self.finish_message}" if self.finish_message else ""
            raise ProviderError(f"Gemini stopped the response ({reason}){detail}")
        events = self._close_call()
        events.extend(self._close_block())
        return events


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# --- errors ----------------------------------------------------------------------


def describe_failure(status: int | None, body: Any, headers: Mapping[str, str], reason: str = "") -> ProviderError:
    """``{"error": {"code", "status", "message", "details"}}`` (an HTTP error, or an error
    object inside the stream) as a :class:`ProviderError`."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        text = body.strip()[:2000] if isinstance(body, str) else (json.dumps(body) if body else "")
        label = f"{status} {reason}".strip() if status else reason
        return ProviderError(
            f"{label}: {text}" if text else label or "error", status=status, retry_after=parse_retry_after(headers)
        )
    code = error.get("code") if isinstance(error.get("code"), int) else status
    label = " ".join(str(p) for p in (code, error.get("status")) if p)
    message = str(error.get("message") or "")
    text = f"{label}: {message}" if message else label or reason
    retry_after = parse_retry_after(headers)
    if retry_after is None:
        retry_after = _retry_delay(error)
    return ProviderError(text, status=code, retry_after=retry_after)


def _retry_delay(details: Any) -> float | None:
    """Gemini states the wait in the body (``google.rpc.RetryInfo`` ``retryDelay: "36s"``)."""
    if not isinstance(details, dict):
        return None
    error = details.get("error", details)
    items = error.get("details") if isinstance(error, dict) else None
    for item in items if isinstance(items, list) else []:
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
    return None
