"""The OpenAI Responses adapter, driven through the official SDK against a local HTTP server.

Recorded real streams are replayed byte for byte; the failure cases use small synthetic
streams in the same wire format.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from heron.ai import (
    NO_RETRY,
    AssistantMessage,
    Context,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    Model,
    RetryEvent,
    RetryPolicy,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    is_context_overflow,
    stream,
)
from heron.ai.events import AssistantEvent
from heron.ai.providers.openai_responses import OpenAIResponsesProvider, responses_tool_id
from tests.ai.wires import check_stream
from tests.support.fixtures import MANIFEST, needs_shared, sse_body, stream_name, streams_for
from tests.support.http_server import LocalServer, Reply

API = "openai-responses"
STREAMS = streams_for(API)
OVERFLOW_TEXT = "Your input exceeds the context window of this model. Please adjust your input and try again."


# --- helpers ------------------------------------------------------------------------


def make_model(server: LocalServer, **fields: Any) -> Model:
    values: dict[str, Any] = {
        "id": "gpt-test",
        "api": API,
        "provider": "openai",
        "base_url": server.url + "/v1",
        "reasoning": True,
        "input": ["text", "image"],
        "max_tokens": 4096,
    }
    values.update(fields)
    return Model(**values)


def user_context(prompt: str = "hi") -> Context:
    return Context(system_prompt="You are a test.", messages=[UserMessage(content=prompt)])


async def run(
    model: Model, context: Context | None = None, **options: Any
) -> tuple[list[AssistantEvent], AssistantMessage]:
    options.setdefault("api_key", "sk-test")
    options.setdefault("retry", NO_RETRY)
    events_stream = stream(model, context or user_context(), StreamOptions(**options))
    events = [event async for event in events_stream]
    return events, await events_stream.result()


def check_prefix_consistent(snapshot: Any, final: Any) -> None:
    """A partial parse never contradicts the final arguments: same keys, strings grow."""
    if isinstance(snapshot, dict):
        assert isinstance(final, dict)
        for key, value in snapshot.items():
            assert key in final, key
            check_prefix_consistent(value, final[key])
    elif isinstance(snapshot, list):
        assert isinstance(final, list) and len(snapshot) <= len(final)
        for value, final_value in zip(snapshot, final, strict=False):
            check_prefix_consistent(value, final_value)
    elif isinstance(snapshot, str):
        assert isinstance(final, str) and final.startswith(snapshot)


def event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


USAGE = {
    "input_tokens": 120,
    "input_tokens_details": {"cached_tokens": 100},
    "output_tokens": 7,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 127,
}


def response(status: str = "completed", **fields: Any) -> dict[str, Any]:
    return {"id": "resp_test", "object": "response", "status": status, "model": "gpt-test", "output": [], **fields}


def created() -> dict[str, Any]:
    return event("response.created", response=response("in_progress"))


def text_events(text: str, pieces: int = 4, index: int = 0) -> list[dict[str, Any]]:
    step = max(1, len(text) // pieces)
    chunks = [text[i : i + step] for i in range(0, len(text), step)]
    item = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    done_item = {**item, "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return [
        event("response.output_item.added", output_index=index, item=item),
        *(
            event("response.output_text.delta", item_id="msg_1", output_index=index, content_index=0, delta=c)
            for c in chunks
        ),
        event("response.output_item.done", output_index=index, item=done_item),
    ]


def call_events(arguments_pieces: list[str], index: int = 0, final: str | None = None) -> list[dict[str, Any]]:
    full = "".join(arguments_pieces) if final is None else final
    item = {"id": "fc_1", "type": "function_call", "status": "in_progress", "call_id": "call_1", "name": "write"}
    return [
        event("response.output_item.added", output_index=index, item={**item, "arguments": ""}),
        *(
            event("response.function_call_arguments.delta", item_id="fc_1", output_index=index, delta=piece)
            for piece in arguments_pieces
        ),
        event("response.function_call_arguments.done", item_id="fc_1", output_index=index, arguments=full),
        event("response.output_item.done", output_index=index, item={**item, "status": "completed", "arguments": full}),
    ]


def completed(**fields: Any) -> dict[str, Any]:
    return event("response.completed", response=response(usage=USAGE, **fields))


def text_body(text: str = "Hello there, friend.") -> bytes:
    return sse(created(), *text_events(text), completed())


# --- 1. recorded streams ------------------------------------------------------------


def fixture_events(entry: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for line in sse_body(entry).decode().splitlines():
        if line.startswith("data:"):
            out.append(json.loads(line[5:].strip()))
    return out


@pytest.mark.parametrize("entry", STREAMS, ids=[stream_name(e) for e in STREAMS])
async def test_recorded_stream(local_server: LocalServer, entry: dict[str, Any]) -> None:
    expected = entry["expected"]
    local_server.queue(Reply(body=sse_body(entry), chunk_size=37))
    events, message = await run(make_model(local_server))
    snapshots = check_stream(events)
    assert local_server.requests[-1].path == "/v1/responses"

    assert isinstance(events[-1], DoneEvent), message.error_message
    assert message.text() == expected["text"]
    assert [b.text for b in message.content if isinstance(b, TextContent)] == expected["text_blocks"]
    thinking = [b for b in message.content if isinstance(b, ThinkingContent)]
    # Each summary part is a thinking block of its own, exactly as streamed.
    assert [b.thinking for b in thinking if b.thinking] == expected["thinking_blocks"]
    assert "".join(b.thinking for b in thinking) == expected["thinking"]

    calls = message.tool_calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        (f"{t['id']}|{t['item_id']}", t["name"], t["arguments"]) for t in expected["tool_calls"]
    ]
    for index, block in enumerate(message.content):
        if isinstance(block, ToolCall):
            assert block.raw_arguments is None
            for snapshot in snapshots.get(index, []):
                check_prefix_consistent(snapshot, block.arguments)

    if expected["finish_reason"] == "completed":
        wanted = StopReason.TOOL_USE if expected["tool_calls"] else StopReason.STOP
    else:
        wanted = StopReason.LENGTH
    assert message.stop_reason == wanted

    usage = expected["usage"]
    cached = usage["input_tokens_details"]["cached_tokens"]
    assert message.usage.input == usage["input_tokens"] - cached
    assert message.usage.cache_read == cached
    assert message.usage.cache_write == 0
    assert message.usage.output == usage["output_tokens"]
    assert message.usage.total_tokens == usage["total_tokens"]
    assert message.response_id == expected["response_id"]

    # Reasoning items are kept whole (id + the encrypted content of output_item.done).
    done_reasoning = [
        e["item"]
        for e in fixture_events(entry)
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "reasoning"
    ]
    assert bool(done_reasoning) == expected["thinking_signature_present"]
    signed = [b for b in thinking if b.thinking_signature]  # the last block of each reasoning item
    assert len(signed) == len(done_reasoning)
    for block, item in zip(signed, done_reasoning, strict=True):
        signature = json.loads(block.thinking_signature or "")
        assert signature["id"] == item["id"]
        assert signature["encrypted_content"] == item["encrypted_content"]
        assert [p["text"] for p in signature["summary"]] == [p["text"] for p in item["summary"]]

    # Items the server executed itself never become calls for the client.
    for server_item in expected.get("server_side_items", []):
        assert all(server_item["id"] not in call.id for call in calls)


@needs_shared(MANIFEST)
async def test_replayed_reasoning_round_trip(local_server: LocalServer) -> None:
    entry = next(e for e in STREAMS if stream_name(e) == "gpt51-codex-max-reasoning-encrypted-function-call")
    model = make_model(local_server)
    local_server.queue(Reply(body=sse_body(entry), chunk_size=512))
    _, first = await run(model)
    call = first.tool_calls()[0]
    context = Context(
        messages=[
            UserMessage(content="compute"),
            first,
            ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=[TextContent(text="19")]),
        ]
    )
    local_server.queue(Reply(body=text_body("190")))
    _, second = await run(model, context, thinking="medium")
    assert second.stop_reason == StopReason.STOP
    items = local_server.requests[-1].json()["input"]
    done = next(e["item"] for e in fixture_events(entry) if e["type"] == "response.output_item.done")
    assert [i["type"] if "type" in i else i["role"] for i in items] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert items[1] == {
        "type": "reasoning",
        "id": done["id"],
        "encrypted_content": done["encrypted_content"],
        "summary": done["summary"],
    }
    assert items[2] == {
        "type": "function_call",
        "id": "fc_01830d662ab3856501693c32151234819091cfca267e98cc5f",
        "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
        "name": "calculator",
        "arguments": '{"a":12,"b":7,"op":"add"}',
    }
    assert items[3] == {"type": "function_call_output", "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn", "output": "19"}


async def test_text_signature_is_the_message_id(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=text_body("hello")))
    events, message = await run(make_model(local_server))
    check_stream(events)
    block = message.content[0]
    assert isinstance(block, TextContent) and block.text_signature == "msg_1"
    assert message.usage.input == 20 and message.usage.cache_read == 100 and message.usage.output == 7


# --- 3. request side ----------------------------------------------------------------

PNG = "iVBORw0KGgo="
SIGNATURE = json.dumps(
    {
        "type": "reasoning",
        "id": "rs_1",
        "encrypted_content": "ENC",
        "summary": [{"type": "summary_text", "text": "plan"}],
    }
)


def rich_context() -> Context:
    return Context(
        system_prompt="You are terse.",
        tools=[
            Tool(
                name="read",
                description="Read a file",
                parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            )
        ],
        messages=[
            UserMessage(content=[TextContent(text="look at this"), ImageContent(data=PNG, mime_type="image/png")]),
            AssistantMessage(
                api=API,
                provider="openai",
                model="gpt-test",
                content=[
                    ThinkingContent(thinking="plan", thinking_signature=SIGNATURE),
                    TextContent(text="Reading it.", text_signature="msg_1"),
                    ToolCall(id="call_1|fc_1", name="read", arguments={"path": "a.txt"}),
                ],
                stop_reason=StopReason.TOOL_USE,
            ),
            ToolResultMessage(tool_call_id="call_1|fc_1", tool_name="read", content=[TextContent(text="contents")]),
            AssistantMessage(
                api="anthropic-messages",
                provider="anthropic",
                model="claude-test",
                content=[
                    ThinkingContent(thinking="another model thought", thinking_signature="anthropic-sig"),
                    TextContent(text="Taking a screenshot."),
                    ToolCall(id="toolu_01.A", name="shot", arguments={}),
                ],
                stop_reason=StopReason.TOOL_USE,
            ),
            ToolResultMessage(
                tool_call_id="toolu_01.A",
                tool_name="shot",
                content=[TextContent(text="partial failure"), ImageContent(data=PNG, mime_type="image/jpeg")],
                is_error=True,
            ),
            UserMessage(content="thanks"),
        ],
    )


async def test_request_body(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=text_body()))
    payloads: list[dict[str, Any]] = []
    model = make_model(local_server, headers={"X-Model-Header": "m"})
    _, message = await run(
        model,
        rich_context(),
        api_key="sk-secret",
        thinking="high",
        max_tokens=2000,
        session_id="session-1",
        headers={"X-Extra": "1"},
        on_payload=payloads.append,
    )
    assert message.stop_reason == StopReason.STOP
    request = local_server.requests[-1]
    body = request.json()
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == "Bearer sk-secret"
    assert request.headers["x-extra"] == "1"
    assert request.headers["x-model-header"] == "m"
    assert "x-stainless-retry-count" not in request.headers  # no SDK: heron retries itself
    assert payloads == [body]

    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["store"] is False
    assert body["instructions"] == "You are terse."
    assert body["max_output_tokens"] == 2000
    assert body["prompt_cache_key"] == "session-1"
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["tools"] == [
        {
            "type": "function",
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            "strict": False,
        }
    ]
    foreign_id = responses_tool_id("toolu_01.A")
    assert foreign_id != "toolu_01.A" and "|" not in foreign_id
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "look at this"},
                {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
            ],
        },
        # same model: the reasoning item, the message id and the call's item id are replayed
        {
            "type": "reasoning",
            "id": "rs_1",
            "encrypted_content": "ENC",
            "summary": [{"type": "summary_text", "text": "plan"}],
        },
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Reading it.", "annotations": []}],
        },
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": '{"path":"a.txt"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "contents"},
        # another model: thinking became text, signature dropped, id rewritten, no item id
        {"type": "message", "role": "assistant", "content": "another model thought"},
        {"type": "message", "role": "assistant", "content": "Taking a screenshot."},
        {"type": "function_call", "call_id": foreign_id, "name": "shot", "arguments": "{}"},
        {
            "type": "function_call_output",
            "call_id": foreign_id,
            "output": [
                {"type": "input_text", "text": "partial failure"},
                {"type": "input_image", "image_url": f"data:image/jpeg;base64,{PNG}", "detail": "auto"},
            ],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
    ]


async def test_request_without_reasoning(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=text_body()), Reply(body=text_body()))
    await run(make_model(local_server), user_context(), thinking="off")
    body = local_server.requests[-1].json()
    assert "reasoning" not in body
    assert body["include"] == ["reasoning.encrypted_content"]  # a reasoning model may still reason
    assert body["max_output_tokens"] == 4096
    assert "prompt_cache_key" not in body and "tools" not in body

    await run(make_model(local_server, reasoning=False, input=["text"]), rich_context(), thinking="high")
    body = local_server.requests[-1].json()
    assert "reasoning" not in body and "include" not in body
    assert body["input"][0]["content"][1] == {
        "type": "input_text",
        "text": "(image omitted: this model does not accept images)",
    }


async def test_thinking_from_same_model_without_encrypted_content_is_not_replayed(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=text_body()))
    assistant = AssistantMessage(
        api=API,
        provider="openai",
        model="gpt-test",
        content=[ThinkingContent(thinking="x", thinking_signature=json.dumps({"id": "rs_9"})), TextContent(text="a")],
    )
    context = Context(messages=[UserMessage(content="q"), assistant, UserMessage(content="again")])
    await run(make_model(local_server), context)
    items = local_server.requests[-1].json()["input"]
    assert [i.get("type") for i in items] == ["message", "message", "message"]
    assert items[1] == {"type": "message", "role": "assistant", "content": "a"}


def test_tool_id_rule() -> None:
    assert responses_tool_id("call_abc|fc_def") == "call_abc|fc_def"
    assert responses_tool_id("call_abc") == "call_abc"
    assert responses_tool_id("call_abc|weird id") == "call_abc"
    long_id = "x" * 100
    assert len(responses_tool_id(long_id)) <= 64


def test_provider_module_imports_no_sdk() -> None:
    code = (
        "import sys, heron.ai, heron.ai.providers.openai_responses as m; "
        "m.OpenAIResponsesProvider(); print('openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"


# --- 4. failures --------------------------------------------------------------------


async def test_response_failed_context_overflow(local_server: LocalServer) -> None:
    failed = event(
        "response.failed",
        response=response("failed", error={"code": "context_length_exceeded", "message": OVERFLOW_TEXT}),
    )
    local_server.queue(Reply(body=sse(created(), failed)))
    events, message = await run(make_model(local_server))
    check_stream(events)
    terminal = events[-1]
    assert isinstance(terminal, ErrorEvent) and terminal.kind == "overflow"
    assert OVERFLOW_TEXT in (message.error_message or "")
    assert is_context_overflow(message)


async def test_response_failed_overloaded_is_retried(local_server: LocalServer) -> None:
    failed = event(
        "response.failed",
        response=response("failed", error={"code": "server_is_overloaded", "message": "The server is overloaded."}),
    )
    local_server.queue(Reply(body=sse(created(), failed)), Reply(body=text_body("ok")))
    events, message = await run(make_model(local_server), retry=RetryPolicy(base_delay=0.01))
    check_stream(events)
    assert message.stop_reason == StopReason.STOP and message.text() == "ok"
    assert len(local_server.requests) == 2


async def test_error_event_in_stream(local_server: LocalServer) -> None:
    error = event("error", code="invalid_prompt", message="Your prompt was flagged.", param=None, sequence_number=3)
    local_server.queue(Reply(body=sse(created(), *text_events("Hi there")[:2], error)))
    events, message = await run(make_model(local_server))
    check_stream(events)
    assert isinstance(events[-1], ErrorEvent)
    assert message.error_message == "invalid_prompt: Your prompt was flagged."
    assert message.text() == "Hi"


async def test_nested_error_payload_before_content_is_retried(local_server: LocalServer) -> None:
    # Some gateways send {"type": "error", "error": {...}}; the SDK raises it as an APIError.
    nested = {"type": "error", "error": {"type": "server_error", "code": "server_error", "message": "Upstream failed."}}
    local_server.queue(Reply(body=sse(created(), nested)), Reply(body=text_body("second try")))
    retries: list[RetryEvent] = []
    events, message = await run(make_model(local_server), retry=RetryPolicy(base_delay=0.01), on_retry=retries.append)
    check_stream(events)
    assert [r.error_message.split(" (http")[0] for r in retries] == ["server_error: Upstream failed."]
    assert [r.kind for r in retries] == ["transient"]
    assert message.stop_reason == StopReason.STOP and message.text() == "second try"


async def test_incomplete_max_output_tokens_is_length(local_server: LocalServer) -> None:
    incomplete = event(
        "response.incomplete",
        response=response("incomplete", incomplete_details={"reason": "max_output_tokens"}, usage=USAGE),
    )
    local_server.queue(Reply(body=sse(created(), *text_events("cut sho")[:3], incomplete)))
    events, message = await run(make_model(local_server))
    check_stream(events)
    assert isinstance(events[-1], DoneEvent)
    assert message.stop_reason == StopReason.LENGTH
    assert message.usage.output == 7


def test_describe_error_ignores_foreign_exceptions() -> None:
    assert OpenAIResponsesProvider().describe_error(RuntimeError("x")) is None
