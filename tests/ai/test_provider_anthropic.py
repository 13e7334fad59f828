"""The Anthropic Messages adapter against a local HTTP server speaking the real wire format.

Recorded streams go through the official SDK's own HTTP and SSE handling, so what is
checked here is what heron would get from api.anthropic.com.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from heron.ai import (
    NO_RETRY,
    AssistantEvent,
    AssistantMessage,
    Context,
    ErrorEvent,
    ImageContent,
    Model,
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
)
from heron.ai.providers.anthropic import AnthropicProvider, build_request
from heron.ai.registry import get_provider
from heron.ai.stream import open_stream
from tests.ai.wires import check_stream
from tests.support.fixtures import MANIFEST, needs_shared, sse_body, stream_name, streams_for
from tests.support.http_server import LocalServer, Reply, json_reply

API = "anthropic-messages"
MODEL_ID = "claude-sonnet-4-6"
STREAMS = streams_for(API)

FINISH = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "pause_turn": StopReason.STOP,
    "refusal": StopReason.STOP,
    "max_tokens": StopReason.LENGTH,
    "tool_use": StopReason.TOOL_USE,
}

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


# --- helpers ---------------------------------------------------------------------------


def make_model(server: LocalServer, **fields: Any) -> Model:
    values: dict[str, Any] = {
        "id": MODEL_ID,
        "api": API,
        "provider": "anthropic",
        "base_url": server.url,
        "reasoning": True,
        "input": ["text", "image"],
        "max_tokens": 8192,
    }
    values.update(fields)
    return Model(**values)


def hello() -> Context:
    return Context(messages=[UserMessage(content="hello")])


@dataclass
class Run:
    events: list[AssistantEvent]
    message: AssistantMessage
    # Per content index: the tool call's arguments as they stood at each toolcall_delta.
    snapshots: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    # Per content index: the raw argument text the deltas carried.
    raw: dict[int, str] = field(default_factory=dict)

    def types(self) -> list[str]:
        return [event.type for event in self.events]

    @property
    def terminal(self) -> AssistantEvent:
        return self.events[-1]


async def run(
    provider: AnthropicProvider,
    model: Model,
    context: Context,
    options: StreamOptions | None = None,
    on_event: Any = None,
) -> Run:
    stream = open_stream(provider, model, context, options or StreamOptions(retry=NO_RETRY))
    events: list[AssistantEvent] = []
    snapshots: dict[int, list[dict[str, Any]]] = {}
    raw: dict[int, str] = {}
    async for event in stream:
        events.append(event)
        if event.type == "toolcall_delta":
            block = event.partial.content[event.content_index]
            assert isinstance(block, ToolCall)
            snapshots.setdefault(event.content_index, []).append(copy.deepcopy(block.arguments))
            raw[event.content_index] = raw.get(event.content_index, "") + event.delta
        if on_event is not None:
            on_event(event)
    message = await stream.result()
    result = Run(events=events, message=message, snapshots=snapshots, raw=raw)
    check_stream(result.events)
    return result


def consistent(partial: Any, final: Any) -> bool:
    """Whether ``partial`` (arguments parsed from a prefix) agrees with ``final``."""
    if isinstance(partial, dict):
        return isinstance(final, dict) and all(k in final and consistent(v, final[k]) for k, v in partial.items())
    if isinstance(partial, list):
        if not isinstance(final, list) or len(partial) > len(final):
            return False
        return all(consistent(p, f) for p, f in zip(partial, final, strict=False))
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    return partial == final or partial is None


def sse(*events: tuple[str, dict[str, Any]]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def ev_message_start(msg_id: str = "msg_test", **usage: int) -> tuple[str, dict[str, Any]]:
    values = {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    values.update(usage)
    message = {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": MODEL_ID,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": values,
    }
    return ("message_start", {"type": "message_start", "message": message})


def ev_text(index: int, *pieces: str) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        )
    ]
    for piece in pieces:
        delta = {"type": "text_delta", "text": piece}
        out.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
    out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out


def ev_tool(index: int, call_id: str, name: str, *fragments: str) -> list[tuple[str, dict[str, Any]]]:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    out: list[tuple[str, dict[str, Any]]] = [
        ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
    ]
    for fragment in fragments:
        delta = {"type": "input_json_delta", "partial_json": fragment}
        out.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
    out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out


def ev_end(stop_reason: str = "end_turn", **usage: int) -> list[tuple[str, dict[str, Any]]]:
    values = {"output_tokens": 5}
    values.update(usage)
    delta = {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": values}
    return [("message_delta", delta), ("message_stop", {"type": "message_stop"})]


def ok_body(text: str = "Hi there") -> bytes:
    return sse(ev_message_start(), *ev_text(0, text), *ev_end())


OVERFLOW_BODY = {
    "type": "error",
    "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"},
}


@pytest.fixture
async def provider() -> AsyncIterator[AnthropicProvider]:
    instance = AnthropicProvider()
    try:
        yield instance
    finally:
        await instance.aclose()


# --- 1 and 2: recorded streams -----------------------------------------------------------


@needs_shared(MANIFEST)
def test_manifest_has_anthropic_streams() -> None:
    assert len(STREAMS) >= 8


@pytest.mark.parametrize("entry", STREAMS, ids=[stream_name(e) for e in STREAMS])
async def test_recorded_stream(entry: dict[str, Any], local_server: LocalServer, provider: AnthropicProvider) -> None:
    expected = entry["expected"]
    local_server.queue(Reply(body=sse_body(entry), chunk_size=37))
    result = await run(provider, make_model(local_server), hello())
    message = result.message

    assert result.terminal.type == "done", message.error_message
    texts = [b.text for b in message.content if isinstance(b, TextContent)]
    assert texts == expected["text_blocks"]
    assert "".join(texts) == expected["text"]

    thinking = [b for b in message.content if isinstance(b, ThinkingContent) and not b.redacted]
    redacted = [b for b in message.content if isinstance(b, ThinkingContent) and b.redacted]
    assert [b.thinking for b in thinking] == expected["thinking_blocks"]
    assert "".join(b.thinking for b in thinking) == expected["thinking"]
    assert any(b.thinking_signature for b in thinking) == expected["thinking_signature_present"]
    assert all(b.thinking_signature for b in thinking)
    assert len(redacted) == expected["redacted_thinking_blocks"]
    assert all(b.thinking_signature and not b.thinking for b in redacted)

    calls = message.tool_calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        (t["id"], t["name"], t["arguments"]) for t in expected["tool_calls"]
    ]
    assert all(c.raw_arguments is None for c in calls)
    server_ids = {t["id"] for t in expected.get("server_tool_calls", [])}
    assert not server_ids & {c.id for c in calls}

    # Argument deltas: their concatenation is the raw text, each partial parse a prefix of the final.
    for index, block in enumerate(message.content):
        if isinstance(block, ToolCall):
            raw = next(t["arguments_raw"] for t in expected["tool_calls"] if t["id"] == block.id)
            assert result.raw.get(index, "") == raw
            for snapshot in result.snapshots.get(index, []):
                assert consistent(snapshot, block.arguments), (snapshot, block.arguments)

    assert message.stop_reason == FINISH[expected["finish_reason"]]
    usage = expected["usage"]
    assert message.usage.input == usage["input_tokens"]
    assert message.usage.output == usage["output_tokens"]
    assert message.usage.cache_read == (usage.get("cache_read_input_tokens") or 0)
    assert message.usage.cache_write == (usage.get("cache_creation_input_tokens") or 0)
    assert message.usage.total_tokens == (
        message.usage.input + message.usage.output + message.usage.cache_read + message.usage.cache_write
    )
    assert message.response_id == expected["response_id"]
    assert (message.api, message.provider, message.model) == (API, "anthropic", MODEL_ID)


@needs_shared(MANIFEST)
async def test_server_tool_blocks_are_not_client_calls(local_server: LocalServer, provider: AnthropicProvider) -> None:
    entry = next(e for e in STREAMS if stream_name(e) == "sonnet46-server-tool-search-then-tool-use")
    local_server.queue(Reply(body=sse_body(entry), chunk_size=11))
    result = await run(provider, make_model(local_server), hello())
    kinds = [type(b).__name__ for b in result.message.content]
    assert kinds == ["TextContent", "TextContent", "ToolCall"]
    assert [c.name for c in result.message.tool_calls()] == ["get_exchange_rate"]
    assert result.types().count("toolcall_start") == 1


async def test_usage_message_delta_overrides_message_start(
    local_server: LocalServer, provider: AnthropicProvider
) -> None:
    body = sse(
        ev_message_start(input_tokens=12, cache_read_input_tokens=900, cache_creation_input_tokens=40, output_tokens=1),
        *ev_text(0, "ok"),
        *ev_end(output_tokens=33, cache_read_input_tokens=950),
    )
    local_server.queue(Reply(body=body))
    model = make_model(local_server)
    model.cost.input, model.cost.output, model.cost.cache_read, model.cost.cache_write = 3.0, 15.0, 0.3, 3.75
    usage = (await run(provider, model, hello())).message.usage
    assert (usage.input, usage.cache_read, usage.cache_write, usage.output) == (12, 950, 40, 33)
    assert usage.total_tokens == 12 + 950 + 40 + 33
    assert usage.cost.total == pytest.approx((12 * 3.0 + 33 * 15.0 + 950 * 0.3 + 40 * 3.75) / 1e6)


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("end_turn", StopReason.STOP),
        ("stop_sequence", StopReason.STOP),
        ("pause_turn", StopReason.STOP),
        ("refusal", StopReason.STOP),
        ("max_tokens", StopReason.LENGTH),
        ("tool_use", StopReason.TOOL_USE),
    ],
)
async def test_stop_reasons(
    reason: str, expected: StopReason, local_server: LocalServer, provider: AnthropicProvider
) -> None:
    local_server.queue(Reply(body=sse(ev_message_start(), *ev_text(0, "partial answer"), *ev_end(reason))))
    result = await run(provider, make_model(local_server), hello())
    assert result.terminal.type == "done"
    assert result.message.stop_reason == expected
    assert result.message.text() == "partial answer"


# --- 3: the request ----------------------------------------------------------------------


def rich_context() -> Context:
    same = {"api": API, "provider": "anthropic", "model": MODEL_ID}
    other = {"api": "openai-responses", "provider": "openai", "model": "gpt-5"}
    return Context(
        system_prompt="You are heron.",
        tools=[
            Tool(
                name="read",
                description="Read a file",
                parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            )
        ],
        messages=[
            UserMessage(content=[TextContent(text="Look at this"), ImageContent(data=PNG, mime_type="image/png")]),
            AssistantMessage(
                **other,
                content=[
                    ThinkingContent(thinking="foreign reasoning", thinking_signature="enc-abc"),
                    ThinkingContent(thinking="", thinking_signature="opaque", redacted=True),
                    TextContent(text="I will read it.", text_signature="msg_1"),
                    ToolCall(id="call_1|fc_99/x", name="read", arguments={"path": "a.txt"}),
                ],
                stop_reason=StopReason.TOOL_USE,
            ),
            ToolResultMessage(
                tool_call_id="call_1|fc_99/x", tool_name="read", content=[TextContent(text="contents of a")]
            ),
            UserMessage(content="Now two more."),
            AssistantMessage(
                **same,
                content=[
                    ThinkingContent(thinking="Let me think.", thinking_signature="sig-123"),
                    ThinkingContent(thinking="", thinking_signature="REDACTED-DATA", redacted=True),
                    TextContent(text="Reading both."),
                    ToolCall(id="toolu_A", name="read", arguments={"path": "b.txt"}),
                    ToolCall(id="toolu_B", name="read", arguments={"path": "c.png"}),
                ],
                stop_reason=StopReason.TOOL_USE,
            ),
            ToolResultMessage(
                tool_call_id="toolu_A", tool_name="read", content=[TextContent(text="no such file")], is_error=True
            ),
            ToolResultMessage(
                tool_call_id="toolu_B",
                tool_name="read",
                content=[TextContent(text="an image:"), ImageContent(data=PNG, mime_type="image/png")],
            ),
        ],
    )


async def test_request_body(local_server: LocalServer, provider: AnthropicProvider) -> None:
    local_server.queue(Reply(body=ok_body()))
    payloads: list[dict[str, Any]] = []
    options = StreamOptions(
        api_key="sk-ant-test",
        headers={"x-extra": "yes"},
        thinking="medium",
        max_tokens=16_000,
        temperature=0.3,
        retry=NO_RETRY,
        on_payload=payloads.append,
    )
    model = make_model(local_server, headers={"x-model-header": "m"})
    result = await run(provider, model, rich_context(), options)
    assert result.terminal.type == "done"

    request = local_server.requests[-1]
    assert request.method == "POST"
    assert request.path == "/v1/messages"
    body = request.json()
    assert payloads == [body]

    assert body["model"] == MODEL_ID
    assert body["stream"] is True
    assert body["max_tokens"] == 16_000
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 10_240}
    assert "temperature" not in body  # thinking runs at the default temperature
    assert body["system"] == [{"type": "text", "text": "You are heron.", "cache_control": {"type": "ephemeral"}}]
    assert body["tools"] == [
        {
            "name": "read",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        }
    ]

    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    assert messages[0]["content"] == [{"type": "text", "text": "Look at this"}, image]

    # Another model's turn: thinking became text, redacted thinking and signatures dropped,
    # the tool-call id rewritten to Anthropic's alphabet, the same id on its result.
    foreign = messages[1]["content"]
    assert [b["type"] for b in foreign] == ["text", "text", "tool_use"]
    assert foreign[0] == {"type": "text", "text": "foreign reasoning"}
    assert foreign[1] == {"type": "text", "text": "I will read it."}
    new_id = foreign[2]["id"]
    assert new_id != "call_1|fc_99/x"
    assert all(c.isalnum() or c in "_-" for c in new_id) and 1 <= len(new_id) <= 64
    assert foreign[2]["input"] == {"path": "a.txt"}
    assert messages[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": new_id,
            "content": [{"type": "text", "text": "contents of a"}],
            "is_error": False,
        },
        {"type": "text", "text": "Now two more."},
    ]

    # Same model: thinking replayed with its signature, redacted thinking with its data.
    native = messages[3]["content"]
    assert native == [
        {"type": "thinking", "thinking": "Let me think.", "signature": "sig-123"},
        {"type": "redacted_thinking", "data": "REDACTED-DATA"},
        {"type": "text", "text": "Reading both."},
        {"type": "tool_use", "id": "toolu_A", "name": "read", "input": {"path": "b.txt"}},
        {"type": "tool_use", "id": "toolu_B", "name": "read", "input": {"path": "c.png"}},
    ]

    # Both results in ONE user turn; the cache marker on its last block only.
    results = messages[4]["content"]
    assert results == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_A",
            "content": [{"type": "text", "text": "no such file"}],
            "is_error": True,
        },
        {
            "type": "tool_result",
            "tool_use_id": "toolu_B",
            "content": [{"type": "text", "text": "an image:"}, image],
            "is_error": False,
            "cache_control": {"type": "ephemeral"},
        },
    ]
    assert json.dumps(messages).count("cache_control") == 1

    headers = request.headers
    assert headers.get("x-api-key") == "sk-ant-test" or headers.get("authorization") == "Bearer sk-ant-test"
    assert headers["x-extra"] == "yes"
    assert headers["x-model-header"] == "m"
    assert "anthropic-version" in headers
    assert "x-stainless-retry-count" not in headers  # no SDK: heron retries itself


@pytest.mark.parametrize(
    ("retention", "marker"),
    [("short", {"type": "ephemeral"}), ("long", {"type": "ephemeral", "ttl": "1h"}), ("none", None)],
)
async def test_cache_retention(
    retention: Any, marker: dict[str, Any] | None, local_server: LocalServer, provider: AnthropicProvider
) -> None:
    local_server.queue(Reply(body=ok_body()))
    context = Context(
        system_prompt="sys",
        messages=[
            UserMessage(content="first"),
            AssistantMessage(api=API, provider="anthropic", model=MODEL_ID, content=[TextContent(text="ok")]),
            UserMessage(content="second"),
        ],
    )
    await run(provider, make_model(local_server), context, StreamOptions(cache_retention=retention, retry=NO_RETRY))
    body = local_server.requests[-1].json()
    if marker is None:
        assert "cache_control" not in json.dumps(body)
        assert body["system"] == [{"type": "text", "text": "sys"}]
    else:
        assert body["system"][0]["cache_control"] == marker
        assert body["messages"][-1]["content"][-1]["cache_control"] == marker
        assert "cache_control" not in body["messages"][0]["content"][-1]
        assert json.dumps(body).count("cache_control") == 2


def test_thinking_params() -> None:
    server_less = Model(id=MODEL_ID, api=API, provider="anthropic", reasoning=True, max_tokens=32_000)
    context = hello()
    off = build_request(server_less, context, StreamOptions(thinking="off", temperature=0.2))
    assert "thinking" not in off and off["temperature"] == 0.2
    high = build_request(server_less, context, StreamOptions(thinking="high"))
    assert high["thinking"] == {"type": "enabled", "budget_tokens": 20_480} and high["max_tokens"] == 32_000
    tight = build_request(server_less, context, StreamOptions(thinking="xhigh", max_tokens=4_096))
    assert tight["thinking"]["budget_tokens"] < tight["max_tokens"]
    tiny = build_request(server_less, context, StreamOptions(thinking="low", max_tokens=1_000))
    assert tiny["thinking"]["budget_tokens"] >= 1_024 and tiny["max_tokens"] > tiny["thinking"]["budget_tokens"]
    plain = Model(id="claude-3-5-haiku", api=API, provider="anthropic", reasoning=False)
    assert "thinking" not in build_request(plain, context, StreamOptions(thinking="high"))
    assert "system" not in off and "tools" not in off


def test_request_edge_cases() -> None:
    model = Model(id=MODEL_ID, api=API, provider="anthropic", input=["text"])
    context = Context(
        messages=[
            UserMessage(content=[TextContent(text="see"), ImageContent(data=PNG, mime_type="image/png")]),
            # An empty assistant turn is dropped: the users around it share one turn.
            AssistantMessage(api=API, provider="anthropic", model=MODEL_ID, content=[TextContent(text="  ")]),
            UserMessage(content="again"),
            AssistantMessage(
                api=API,
                provider="anthropic",
                model=MODEL_ID,
                content=[
                    ThinkingContent(thinking="unsigned reasoning"),
                    ToolCall(id="toolu_1", name="ls", arguments={}),
                ],
                stop_reason=StopReason.TOOL_USE,
            ),
            # No result for toolu_1: adapt_messages adds a synthetic error result.
            UserMessage(content="go on"),
        ]
    )
    body = build_request(model, context, StreamOptions())
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"][:2] == [
        {"type": "text", "text": "see"},
        {"type": "text", "text": "(image omitted: this model does not accept images)"},
    ]
    assert messages[0]["content"][2]["text"] == "again"
    assert messages[1]["content"][0] == {"type": "text", "text": "unsigned reasoning"}
    result, follow = messages[2]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1" and result["is_error"] is True
    assert follow == {"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}}


async def test_api_key_from_environment(
    local_server: LocalServer, provider: AnthropicProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")
    local_server.queue(Reply(body=ok_body()))
    await run(provider, make_model(local_server), hello())
    headers = local_server.requests[-1].headers
    assert headers.get("x-api-key") == "sk-from-env" or headers.get("authorization") == "Bearer sk-from-env"


def test_registry_and_lazy_sdk_import() -> None:
    assert isinstance(get_provider(API), AnthropicProvider)
    code = (
        "import sys, heron.ai, heron.ai.providers.anthropic as a; "
        "assert 'anthropic' not in sys.modules, 'SDK imported too early'; "
        "a.AnthropicProvider().describe_error(ValueError('x')); "
        "assert 'anthropic' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- 4: bad input ------------------------------------------------------------------------


RATE_LIMITED = {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests exceeded"}}


OVERLOADED = b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'


async def test_overloaded_mid_stream(local_server: LocalServer, provider: AnthropicProvider) -> None:
    body = sse(ev_message_start(), *ev_text(0, "Half an ")[:2]) + OVERLOADED
    local_server.queue(Reply(body=body, chunk_size=37))
    options = StreamOptions(retry=RetryPolicy(base_delay=0.01))
    result = await run(provider, make_model(local_server), hello(), options)
    terminal = result.terminal
    assert isinstance(terminal, ErrorEvent)
    assert terminal.status == 529
    assert terminal.kind == "transient"
    assert result.message.error_message == f"529 overloaded_error: Overloaded ({local_server.url})"
    assert result.message.text() == "Half an "  # content kept, so no retry
    assert len(local_server.requests) == 1


async def test_overloaded_before_content_is_retried(local_server: LocalServer, provider: AnthropicProvider) -> None:
    local_server.queue(Reply(body=sse(ev_message_start("msg_first")) + OVERLOADED), Reply(body=ok_body("second")))
    options = StreamOptions(retry=RetryPolicy(base_delay=0.01))
    result = await run(provider, make_model(local_server), hello(), options)
    assert result.terminal.type == "done"
    assert result.message.text() == "second"
    assert result.message.response_id == "msg_test"
    assert len(local_server.requests) == 2


async def test_unknown_events_and_deltas_are_ignored(local_server: LocalServer, provider: AnthropicProvider) -> None:
    citation = {"type": "char_location", "cited_text": "x", "document_index": 0, "start_char_index": 0}
    body = sse(
        ev_message_start(),
        ("future_event", {"type": "future_event", "payload": 1}),
        *ev_text(0, "hi")[:1],
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": citation}},
        ),
        *ev_text(0, "hi")[1:],
        *ev_end(),
    )
    local_server.queue(Reply(body=body))
    result = await run(provider, make_model(local_server), hello())
    assert result.terminal.type == "done"
    assert result.message.text() == "hi"
    assert result.types() == ["start", "text_start", "text_delta", "text_end", "done"]


@pytest.mark.parametrize(
    ("reply", "kind", "message"),
    [
        (json_reply(400, {"error": "weird proxy"}), "invalid_request", '400: {"error": "weird proxy"}'),
        (
            Reply(status=502, body="<html>bad gateway</html>", content_type="text/html"),
            "transient",
            "502: <html>bad gateway</html> (http://127.0.0.1:PORT)",
        ),
    ],
)
async def test_foreign_error_bodies(
    reply: Reply, kind: str, message: str, local_server: LocalServer, provider: AnthropicProvider
) -> None:
    local_server.queue(reply)
    result = await run(provider, make_model(local_server), hello())
    terminal = result.terminal
    assert isinstance(terminal, ErrorEvent)
    assert terminal.kind == kind
    assert result.message.error_message == message.replace("PORT", str(local_server.port))
    assert not is_context_overflow(result.message)
