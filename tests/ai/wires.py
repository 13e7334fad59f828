"""The four wire formats, scripted the same way, for the provider contract tests.

Each :class:`Wire` builds what its API really streams for a neutral script (text pieces,
a tool call with argument fragments, the end of the answer) and its real error bodies,
so one test body can run every provider through the same case.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from heron.ai import AssistantEvent, Model, StopReason, ToolCall
from tests.support.http_server import LocalServer, Reply, json_reply

JSON = dict[str, Any]


def _lines(events: list[tuple[str | None, str]]) -> bytes:
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {data}\n\n")
    return "".join(out).encode()


# --- OpenAI Chat -------------------------------------------------------------------------


def _chat(delta: JSON | None = None, finish: str | None = None, usage: JSON | None = None) -> str:
    body: JSON = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [] if usage else [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    if usage:
        body["usage"] = usage
    return json.dumps(body)


class ChatWire:
    api = "openai-chat"
    path = "/v1/chat/completions"

    def start(self) -> bytes:
        return _lines([(None, _chat({"role": "assistant", "content": ""}))])

    def text(self, *pieces: str) -> bytes:
        return _lines([(None, _chat({"content": p})) for p in pieces])

    def raw_text(self, literal: bytes) -> bytes:
        return b'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"' + literal + b'"}}]}\n\n'

    def tool(self, call_id: str, name: str, *fragments: str) -> bytes:
        head = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        events = [(None, _chat({"tool_calls": [head]}))]
        events += [(None, _chat({"tool_calls": [{"index": 0, "function": {"arguments": f}}]})) for f in fragments]
        return _lines(events)

    def end(self, tool_use: bool = False) -> bytes:
        usage = {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
        return _lines([(None, _chat({}, "tool_calls" if tool_use else "stop")), (None, _chat(usage=usage))]) + (
            b"data: [DONE]\n\n"
        )

    def bad_json(self) -> bytes:
        return b'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":\n\n'

    def keep_alive(self) -> bytes:
        return b": keep-alive\n\n"

    def error(self, status: int, message: str, kind: str, code: str | None = None, **headers: str) -> Reply:
        return json_reply(status, {"error": {"message": message, "type": kind, "code": code}}, headers=headers)


# --- OpenAI Responses --------------------------------------------------------------------


class ResponsesWire:
    api = "openai-responses"
    path = "/v1/responses"

    def _event(self, kind: str, **fields: Any) -> tuple[str, str]:
        return (kind, json.dumps({"type": kind, **fields}))

    def start(self) -> bytes:
        response = {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}
        return _lines([self._event("response.created", response=response)])

    def text(self, *pieces: str) -> bytes:
        item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
        events = [self._event("response.output_item.added", output_index=0, item=item)]
        events += [
            self._event("response.output_text.delta", output_index=0, item_id="msg_1", content_index=0, delta=p)
            for p in pieces
        ]
        return _lines(events)

    def raw_text(self, literal: bytes) -> bytes:
        return (
            b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
            b'"output_index":0,"item_id":"msg_1","content_index":0,"delta":"' + literal + b'"}\n\n'
        )

    def tool(self, call_id: str, name: str, *fragments: str) -> bytes:
        item = {"id": "fc_1", "type": "function_call", "call_id": call_id, "name": name, "arguments": ""}
        events = [self._event("response.output_item.added", output_index=1, item=item)]
        events += [
            self._event("response.function_call_arguments.delta", output_index=1, item_id="fc_1", delta=f)
            for f in fragments
        ]
        return _lines(events)

    def end(self, tool_use: bool = False) -> bytes:
        response = {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "output": [],
            "usage": {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13},
        }
        return _lines([self._event("response.completed", response=response)])

    def bad_json(self) -> bytes:
        return b"event: response.output_text.delta\ndata: {not json\n\n"

    def keep_alive(self) -> bytes:
        return b": keep-alive\n\n"

    def error(self, status: int, message: str, kind: str, code: str | None = None, **headers: str) -> Reply:
        return json_reply(status, {"error": {"message": message, "type": kind, "code": code}}, headers=headers)


# --- Anthropic Messages -------------------------------------------------------------------


class AnthropicWire:
    api = "anthropic-messages"
    path = "/v1/messages"

    def _event(self, kind: str, **fields: Any) -> tuple[str, str]:
        return (kind, json.dumps({"type": kind, **fields}))

    def start(self) -> bytes:
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
        return _lines([self._event("message_start", message=message)])

    def text(self, *pieces: str) -> bytes:
        events = [self._event("content_block_start", index=0, content_block={"type": "text", "text": ""})]
        events += [self._event("content_block_delta", index=0, delta={"type": "text_delta", "text": p}) for p in pieces]
        return _lines(events)

    def raw_text(self, literal: bytes) -> bytes:
        return (
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":"' + literal + b'"}}\n\n'
        )

    def tool(self, call_id: str, name: str, *fragments: str) -> bytes:
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events = [
            self._event("content_block_stop", index=0),
            self._event("content_block_start", index=1, content_block=block),
        ]
        events += [
            self._event("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": f})
            for f in fragments
        ]
        return _lines(events)

    def end(self, tool_use: bool = False) -> bytes:
        delta = {"stop_reason": "tool_use" if tool_use else "end_turn"}
        return _lines(
            [self._event("message_delta", delta=delta, usage={"output_tokens": 3}), self._event("message_stop")]
        )

    def bad_json(self) -> bytes:
        return b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":\n\n'

    def keep_alive(self) -> bytes:
        return b': keep-alive\n\nevent: ping\ndata: {"type": "ping"}\n\n'

    def error(self, status: int, message: str, kind: str, code: str | None = None, **headers: str) -> Reply:
        return json_reply(status, {"type": "error", "error": {"type": kind, "message": message}}, headers=headers)


# --- Gemini ---------------------------------------------------------------------------------


def _gemini(parts: list[JSON], finish: str | None = None) -> str:
    candidate: JSON = {"content": {"role": "model", "parts": parts}, "index": 0}
    body: JSON = {"candidates": [candidate], "responseId": "resp-1"}
    if finish:
        candidate["finishReason"] = finish
        body["usageMetadata"] = {"promptTokenCount": 10, "candidatesTokenCount": 3, "totalTokenCount": 13}
    return json.dumps(body)


class GeminiWire:
    api = "google-gemini"
    path = "/v1beta/models/m:streamGenerateContent"

    def start(self) -> bytes:
        return b""

    def text(self, *pieces: str) -> bytes:
        return _lines([(None, _gemini([{"text": p}])) for p in pieces])

    def raw_text(self, literal: bytes) -> bytes:
        return b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"' + literal + b'"}]}}]}\n\n'

    def tool(self, call_id: str, name: str, *fragments: str) -> bytes:
        # Gemini sends a call's arguments as one JSON object, never as text fragments.
        arguments = json.loads("".join(fragments))
        return _lines([(None, _gemini([{"functionCall": {"id": call_id, "name": name, "args": arguments}}]))])

    def end(self, tool_use: bool = False) -> bytes:
        return _lines([(None, _gemini([{"text": ""}], "STOP"))])

    def bad_json(self) -> bytes:
        return b'data: {"candidates": [{"content": \n\n'

    def keep_alive(self) -> bytes:
        return b": keep-alive\n\n"

    def error(self, status: int, message: str, kind: str, code: str | None = None, **headers: str) -> Reply:
        body = {"error": {"code": status, "message": message, "status": kind.upper()}}
        return json_reply(status, body, headers=headers)


Wire = ChatWire | ResponsesWire | AnthropicWire | GeminiWire
WIRES: list[Wire] = [ChatWire(), ResponsesWire(), AnthropicWire(), GeminiWire()]
IDS = [wire.api for wire in WIRES]

OVERFLOW_TEXT: dict[str, tuple[str, str, str | None]] = {
    "openai-chat": (
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
        "invalid_request_error",
        "context_length_exceeded",
    ),
    "openai-responses": (
        "Your input exceeds the context window of this model.",
        "invalid_request_error",
        "context_length_exceeded",
    ),
    "anthropic-messages": ("prompt is too long: 210000 tokens > 200000 maximum", "invalid_request_error", None),
    "google-gemini": (
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        "invalid_argument",
        None,
    ),
}
AUTH_KIND = {
    "openai-chat": "invalid_request_error",
    "openai-responses": "invalid_request_error",
    "anthropic-messages": "authentication_error",
    "google-gemini": "unauthenticated",
}
RATE_KIND = {
    "openai-chat": "rate_limit_error",
    "openai-responses": "rate_limit_error",
    "anthropic-messages": "rate_limit_error",
    "google-gemini": "resource_exhausted",
}
SERVER_KIND = {
    "openai-chat": "server_error",
    "openai-responses": "server_error",
    "anthropic-messages": "api_error",
    "google-gemini": "internal",
}


def model_for(wire: Wire, server: LocalServer, **fields: Any) -> Model:
    base = server.url + ("/v1" if wire.api.startswith("openai") else "")
    values: JSON = {"id": "m", "api": wire.api, "provider": f"test-{wire.api}", "base_url": base, "max_tokens": 1024}
    values.update(fields)
    return Model(**values)


def answer(wire: Wire, text: str = "Hello world") -> bytes:
    return wire.start() + wire.text(text) + wire.end()


def check_stream(events: list[AssistantEvent]) -> dict[int, list[JSON]]:
    """The stream contract every provider keeps: one ``start`` first; each block
    ``start``, ``delta``*, ``end`` with content indices in order of appearance; every block
    closed before exactly one terminal event, which is last and carries the final message
    (an error one with its reason and text). Returns each tool call's arguments as they
    stood at every ``toolcall_delta`` (copies)."""
    assert events[0].type == "start"
    assert [e.type for e in events].count("start") == 1
    terminal = [e for e in events if e.type in ("done", "error")]
    assert len(terminal) == 1 and events[-1] is terminal[0]
    open_blocks: dict[int, str] = {}
    seen = 0
    snapshots: dict[int, list[JSON]] = {}
    for event in events[1:-1]:
        kind, _, phase = event.type.rpartition("_")
        index: int = event.content_index  # type: ignore[union-attr]
        if phase == "start":
            assert index == seen, f"{event.type} opens index {index}, expected {seen}"
            seen += 1
            open_blocks[index] = kind
            continue
        assert open_blocks.get(index) == kind, f"{event.type} for a block that is not an open {kind}"
        if phase == "end":
            del open_blocks[index]
        elif kind == "toolcall":
            block = event.partial.content[index]  # type: ignore[union-attr]
            assert isinstance(block, ToolCall)
            snapshots.setdefault(index, []).append(copy.deepcopy(block.arguments))
    assert not open_blocks, f"blocks never closed: {open_blocks}"
    final = events[-1]
    if final.type == "done":
        message = final.message  # type: ignore[union-attr]
        assert final.reason == message.stop_reason  # type: ignore[union-attr]
    else:
        message = final.error  # type: ignore[union-attr]
        assert message.stop_reason in (StopReason.ERROR, StopReason.ABORTED)
        assert message.error_message
    assert len(message.content) == seen
    for block in message.content:
        if isinstance(block, ToolCall):
            assert isinstance(block.arguments, dict)
    return snapshots
