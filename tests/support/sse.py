"""Small builders for scripted provider replies: OpenAI Chat Completions and Anthropic
Messages SSE bodies, one whole assistant turn per call.

The end-to-end tests script a conversation (text, tool calls, a final answer) against
:class:`tests.support.http_server.LocalServer`; these functions build the bodies the real
APIs would stream, split into several deltas so the client's incremental parsing is used
(tool arguments arrive in pieces, as they do from the real services).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tests.support.http_server import Reply

# A tool call to script: (call id, tool name, arguments).
Call = tuple[str, str, dict[str, Any]]


def _pieces(text: str, parts: int = 3) -> list[str]:
    """``text`` cut into up to ``parts`` non-empty pieces (the deltas of one block)."""
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


# --- OpenAI Chat Completions --------------------------------------------------------------


def openai_chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    model: str = "test-model",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``chat.completion.chunk``; ``usage`` makes it the trailing usage-only chunk."""
    body: dict[str, Any] = {
        "id": "chatcmpl-e2e",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": model,
        "choices": [] if usage is not None else [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def openai_sse(chunks: list[dict[str, Any]], done: bool = True) -> bytes:
    lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def openai_turn(
    text: str = "",
    calls: Sequence[Call] = (),
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    model: str = "test-model",
) -> bytes:
    """One assistant turn: optional text, then tool calls (arguments streamed in pieces),
    the finish reason (``tool_calls`` or ``stop``) and a usage chunk."""
    chunks: list[dict[str, Any]] = [openai_chunk({"role": "assistant", "content": ""}, model=model)]
    chunks += [openai_chunk({"content": piece}, model=model) for piece in _pieces(text)]
    for index, (call_id, name, arguments) in enumerate(calls):
        head = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        chunks.append(openai_chunk({"tool_calls": [head]}, model=model))
        for piece in _pieces(json.dumps(arguments)):
            chunks.append(
                openai_chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}, model=model)
            )
    chunks.append(openai_chunk({}, finish="tool_calls" if calls else "stop", model=model))
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    chunks.append(openai_chunk(usage=usage, model=model))
    return openai_sse(chunks)


def openai_reply(text: str = "", calls: Sequence[Call] = (), **usage: Any) -> Reply:
    return Reply(body=openai_turn(text, calls, **usage))


# --- Anthropic Messages -----------------------------------------------------------------------


def anthropic_sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def anthropic_turn(
    text: str = "",
    calls: Sequence[Call] = (),
    input_tokens: int = 100,
    output_tokens: int = 20,
    model: str = "claude-test",
    compaction: str | bool | None = False,
    applied_edits: list[dict[str, Any]] | None = None,
) -> bytes:
    """One assistant turn: ``message_start``, an optional text block, one ``tool_use``
    block per call (input as ``input_json_delta`` pieces), ``message_delta`` with the
    stop reason (``tool_use`` or ``end_turn``) and ``message_stop``. ``compaction``: a
    ``compaction`` block first (as the API streams it: ``content_block_start``, one
    ``compaction_delta`` with the whole summary, ``content_block_stop``; None: a failed
    compaction, null content). ``applied_edits``: the ``context_management`` the final
    ``message_delta`` reports."""
    message: dict[str, Any] = {
        "id": "msg_e2e",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": 1,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        },
    }
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": message})]
    index = 0
    if compaction is not False:
        start = {"type": "content_block_start", "index": 0, "content_block": {"type": "compaction", "content": None}}
        events.append(("content_block_start", start))
        if isinstance(compaction, str):
            delta = {"type": "compaction_delta", "content": compaction}
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index += 1
    if text:
        block: dict[str, Any] = {"type": "text", "text": ""}
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": block}))
        for piece in _pieces(text):
            delta = {"type": "text_delta", "text": piece}
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for call_id, name, arguments in calls:
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": block}))
        for piece in _pieces(json.dumps(arguments)):
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": output_tokens},
    }
    if applied_edits is not None:
        end["context_management"] = {"applied_edits": applied_edits}
    events += [("message_delta", end), ("message_stop", {"type": "message_stop"})]
    return anthropic_sse(events)


def anthropic_reply(text: str = "", calls: Sequence[Call] = (), **usage: Any) -> Reply:
    return Reply(body=anthropic_turn(text, calls, **usage))


# --- OpenAI Responses -------------------------------------------------------------------------


def responses_turn(
    text: str = "",
    calls: Sequence[Call] = (),
    input_tokens: int = 100,
    output_tokens: int = 20,
    compaction: tuple[str, str | None] | None = None,
) -> bytes:
    """One response as ``POST /v1/responses`` streams it: ``response.created``, each output
    item between ``response.output_item.added`` and ``.done`` (a message's text as
    ``response.output_text.delta`` pieces, a function call's arguments as
    ``response.function_call_arguments.delta`` pieces), then ``response.completed`` with
    the usage. ``compaction``: (item id, encrypted content) of a ``compaction`` item
    first, as server-side compaction emits it (None content: a malformed item)."""
    events: list[dict[str, Any]] = []
    output: list[dict[str, Any]] = []
    response = {"id": "resp_e2e", "object": "response", "status": "in_progress", "output": []}
    events.append({"type": "response.created", "response": response})

    def item(done: dict[str, Any], added: dict[str, Any], between: list[dict[str, Any]]) -> None:
        index = len(output)
        events.append({"type": "response.output_item.added", "output_index": index, "item": added})
        events.extend({**e, "output_index": index} for e in between)
        events.append({"type": "response.output_item.done", "output_index": index, "item": done})
        output.append(done)

    if compaction is not None:
        ident, encrypted = compaction
        done = {"type": "compaction", "id": ident, **({"encrypted_content": encrypted} if encrypted else {})}
        item(done, {"type": "compaction", "id": ident}, [])
    if text:
        ident = f"msg_{len(output)}"
        deltas = [
            {"type": "response.output_text.delta", "item_id": ident, "content_index": 0, "delta": p}
            for p in _pieces(text)
        ]
        content = [{"type": "output_text", "text": text, "annotations": []}]
        added = {"type": "message", "id": ident, "role": "assistant", "status": "in_progress", "content": []}
        item({**added, "status": "completed", "content": content}, added, deltas)
    for call_id, name, arguments in calls:
        ident = f"fc_{call_id}"
        raw = json.dumps(arguments)
        added = {"type": "function_call", "id": ident, "call_id": call_id, "name": name, "arguments": ""}
        deltas = [
            {"type": "response.function_call_arguments.delta", "item_id": ident, "delta": p} for p in _pieces(raw)
        ]
        deltas.append({"type": "response.function_call_arguments.done", "item_id": ident, "arguments": raw})
        item({**added, "arguments": raw, "status": "completed"}, added, deltas)
    usage = {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }
    events.append(
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": output, "usage": usage},
        }
    )
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def responses_reply(text: str = "", calls: Sequence[Call] = (), **fields: Any) -> Reply:
    return Reply(body=responses_turn(text, calls, **fields))
