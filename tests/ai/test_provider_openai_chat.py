"""OpenAI Chat Completions adapter, offline: recorded streams replayed through a local
HTTP server and the official SDK, the request body it sends, and every failure path."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from heron.ai import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    stream,
)
from heron.ai.events import AssistantEvent, DoneEvent, ErrorEvent
from heron.ai.options import NO_RETRY
from heron.ai.providers.openai_chat import INCOMPLETE, OpenAIChatProvider, build_request
from tests.support.fixtures import sse_body, stream_params, streams_for
from tests.support.http_server import LocalServer, Reply, json_reply

API = "openai-chat"
STREAMS = streams_for(API)
IMAGE = "iVBORw0KGgo="  # base64 of a PNG signature: enough for the wire format


# --- helpers ------------------------------------------------------------------


def chat_model(server: LocalServer, **fields: Any) -> Model:
    values: dict[str, Any] = {
        "id": "gpt-test",
        "api": API,
        "provider": "openai",
        "base_url": server.url + "/v1",
        "input": ["text", "image"],
    }
    values.update(fields)
    return Model(**values)


def hello() -> Context:
    return Context(messages=[UserMessage(content="hi")])


async def collect(model: Model, context: Context | None = None, **options: Any) -> list[AssistantEvent]:
    options.setdefault("api_key", "sk-test")
    return [event async for event in stream(model, context or hello(), StreamOptions(**options))]


def final(events: list[AssistantEvent]) -> AssistantMessage:
    last = events[-1]
    if isinstance(last, DoneEvent):
        return last.message
    assert isinstance(last, ErrorEvent)
    return last.error


def check_sequence(events: list[AssistantEvent]) -> None:
    """One start first, start/delta*/end per block with one kind and index, one terminal last."""
    assert events[0].type == "start"
    assert [e.type for e in events].count("start") == 1
    assert events[-1].type in ("done", "error")
    assert all(e.type not in ("done", "error") for e in events[:-1])
    state: dict[int, str] = {}  # content_index -> "open:<kind>" / "closed"
    for event in events[1:-1]:
        kind, _, phase = event.type.rpartition("_")
        index = event.content_index  # type: ignore[union-attr]
        if phase == "start":
            assert index not in state, f"block {index} started twice"
            assert index == len(state), "blocks are numbered in order"
            state[index] = f"open:{kind}"
        else:
            assert state.get(index) == f"open:{kind}", f"{event.type} on block {index} in state {state.get(index)}"
            if phase == "end":
                state[index] = "closed"
    assert all(value == "closed" for value in state.values()), state
    message = final(events)
    assert len(message.content) == len(state)


def sse(*chunks: dict[str, Any] | str, done: bool = True) -> bytes:
    lines = [f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n" for c in chunks]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    body.update(extra)
    return body


def tool_delta(
    index: int | None, *, call_id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {}}
    if index is not None:
        call["index"] = index
    if call_id is not None:
        call["id"] = call_id
    if name is not None:
        call["function"]["name"] = name
    if args is not None:
        call["function"]["arguments"] = args
    return {"tool_calls": [call]}


def usage_chunk(prompt: int = 10, completion: int = 5, cached: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def expected_usage(usage: dict[str, Any]) -> dict[str, int]:
    prompt = usage["prompt_tokens"]
    completion = usage["completion_tokens"]
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    # xAI counts reasoning outside completion_tokens (its total says so); heron's output includes it.
    output = (
        completion + reasoning if reasoning and usage["total_tokens"] == prompt + completion + reasoning else completion
    )
    return {
        "input": prompt - cached,
        "cache_read": cached,
        "cache_write": 0,
        "output": output,
        "total_tokens": prompt - cached + cached + output,
    }


STOP_MAP = {"stop": StopReason.STOP, "length": StopReason.LENGTH, "tool_calls": StopReason.TOOL_USE}


# --- 1 + 2: recorded streams ----------------------------------------------------


@pytest.mark.parametrize("entry", stream_params(API))
async def test_recorded_stream(local_server: LocalServer, entry: dict[str, Any]) -> None:
    expected = entry["expected"]
    local_server.queue(Reply(body=sse_body(entry), chunk_size=37))
    model = chat_model(local_server, reasoning=bool(expected["thinking"]))

    events: list[AssistantEvent] = []
    raw_prefixes: dict[int, list[str]] = {}
    async for event in stream(model, hello(), StreamOptions(api_key="sk-test")):
        events.append(event)
        if event.type == "toolcall_delta":
            parts = raw_prefixes.setdefault(event.content_index, [])
            parts.append((parts[-1] if parts else "") + event.delta)

    check_sequence(events)
    assert isinstance(events[-1], DoneEvent), getattr(events[-1], "error", None)
    message = events[-1].message

    assert message.text() == expected["text"]
    assert [b.text for b in message.content if isinstance(b, TextContent)] == expected["text_blocks"]
    thinking = [b for b in message.content if isinstance(b, ThinkingContent)]
    assert [b.thinking for b in thinking] == expected["thinking_blocks"]
    assert all(b.thinking_signature == "reasoning_content" for b in thinking)

    calls = message.tool_calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        (t["id"], t["name"], t["arguments"]) for t in expected["tool_calls"]
    ]
    assert all(c.raw_arguments is None for c in calls)
    for index, block in enumerate(message.content):
        if not isinstance(block, ToolCall):
            continue
        prefixes = raw_prefixes.get(index, [])
        raw = prefixes[-1] if prefixes else ""
        assert all(raw.startswith(p) for p in prefixes)
        assert (json.loads(raw) if raw.strip() else {}) == block.arguments

    finish = expected["finish_reason"]
    want = StopReason.TOOL_USE if expected["tool_calls"] else STOP_MAP[finish]
    assert message.stop_reason == want

    usage = expected_usage(expected["usage"])
    got = message.usage
    assert {
        "input": got.input,
        "cache_read": got.cache_read,
        "cache_write": got.cache_write,
        "output": got.output,
        "total_tokens": got.total_tokens,
    } == usage
    assert message.response_id == expected["response_id"]
    assert message.api == API and message.model == "gpt-test"

    sent = local_server.requests[-1]
    assert sent.path == "/v1/chat/completions"
    assert sent.json()["stream"] is True


async def test_openrouter_reasoning_field(local_server: LocalServer) -> None:
    body = sse(
        chunk({"role": "assistant", "content": "", "reasoning": "Let me "}),
        chunk({"content": None, "reasoning": "think."}),
        chunk({"content": "Done", "reasoning": None}),
        chunk({"content": " here."}),
        chunk({}, "stop"),
        usage_chunk(prompt=100, completion=20, cached=60),
    )
    local_server.queue(Reply(body=body, chunk_size=29))
    events = await collect(chat_model(local_server, reasoning=True))
    check_sequence(events)
    message = final(events)
    assert message.stop_reason == StopReason.STOP
    thinking, text = message.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Let me think."
    assert thinking.thinking_signature == "reasoning"
    assert isinstance(text, TextContent) and text.text == "Done here."
    assert (message.usage.input, message.usage.cache_read, message.usage.output) == (40, 60, 20)
    assert message.usage.total_tokens == 120


async def test_header_repeat_with_full_arguments_is_not_doubled(local_server: LocalServer) -> None:
    body = sse(
        chunk(tool_delta(0, call_id="call_a", name="edit", args='{"path": ')),
        chunk(tool_delta(0, args='"a.py"}')),
        chunk(tool_delta(0, call_id="call_a", name="edit", args='{"path": "a.py"}')),
        chunk({}, "tool_calls"),
    )
    local_server.queue(Reply(body=body))
    message = final(await collect(chat_model(local_server)))
    (call,) = message.tool_calls()
    assert (call.id, call.name, call.arguments, call.raw_arguments) == ("call_a", "edit", {"path": "a.py"}, None)


async def test_calls_without_index_and_reused_index(local_server: LocalServer) -> None:
    body = sse(
        chunk(tool_delta(None, call_id="c1", name="read", args='{"p": 1}')),
        chunk(tool_delta(None, call_id="c2", name="read", args='{"p":')),
        chunk(tool_delta(None, args=" 2}")),
        chunk(tool_delta(0, call_id="c3", name="grep", args="{}")),
        chunk(tool_delta(0, call_id="c4", name="grep", args='{"q": "x"}')),
        chunk({}, "tool_calls"),
    )
    local_server.queue(Reply(body=body, chunk_size=50))
    events = await collect(chat_model(local_server))
    check_sequence(events)
    calls = final(events).tool_calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("c1", "read", {"p": 1}),
        ("c2", "read", {"p": 2}),
        ("c3", "grep", {}),
        ("c4", "grep", {"q": "x"}),
    ]


async def test_tool_calls_without_finish_reason_end_in_tool_use(local_server: LocalServer) -> None:
    body = sse(chunk(tool_delta(0, call_id="call_1", name="ls", args="{}")))
    local_server.queue(Reply(body=body))
    events = await collect(chat_model(local_server))
    check_sequence(events)
    assert final(events).stop_reason == StopReason.TOOL_USE


@pytest.mark.parametrize(("finish", "reason"), [("length", StopReason.LENGTH), ("content_filter", StopReason.STOP)])
async def test_finish_reasons(local_server: LocalServer, finish: str, reason: StopReason) -> None:
    local_server.queue(Reply(body=sse(chunk({"content": "partial"}), chunk({}, finish))))
    message = final(await collect(chat_model(local_server)))
    assert message.stop_reason == reason
    assert message.text() == "partial"


# --- 3: the request -------------------------------------------------------------


def full_context(model: Model) -> Context:
    long_id = "call_" + "x" * 60 + "|fc_abc"
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
            UserMessage(content=[TextContent(text="look at this"), ImageContent(data=IMAGE, mime_type="image/png")]),
            AssistantMessage(
                api=model.api,
                provider=model.provider,
                model=model.id,
                content=[
                    ThinkingContent(thinking="pondering", thinking_signature="reasoning_content"),
                    TextContent(text="Reading."),
                    ToolCall(id="call_1", name="read", arguments={"path": "a.py"}),
                    ToolCall(id=long_id, name="read", arguments={"path": "b.png"}),
                ],
                stop_reason=StopReason.TOOL_USE,
            ),
            ToolResultMessage(tool_call_id="call_1", tool_name="read", content=[TextContent(text="print(1)")]),
            ToolResultMessage(
                tool_call_id=long_id,
                tool_name="read",
                content=[TextContent(text="binary file"), ImageContent(data=IMAGE, mime_type="image/jpeg")],
                is_error=True,
            ),
            UserMessage(content="thanks"),
            AssistantMessage(
                api="anthropic-messages",
                provider="anthropic",
                model="claude-x",
                content=[
                    ThinkingContent(thinking="foreign thoughts", thinking_signature="sig-abc"),
                    TextContent(text="Answer."),
                ],
            ),
            UserMessage(content="more"),
        ],
    )


async def test_request_body(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=sse(chunk({"content": "ok"}, "stop"))))
    model = chat_model(local_server, reasoning=True, max_tokens=4096, headers={"x-model-header": "m"})
    payloads: list[dict[str, Any]] = []
    events = await collect(
        model,
        full_context(model),
        thinking="high",
        headers={"x-option-header": "o"},
        on_payload=payloads.append,
        session_id="session-1",
    )
    assert isinstance(events[-1], DoneEvent)
    sent = local_server.requests[-1]
    body = sent.json()
    assert payloads == [body]

    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["x-model-header"] == "m"
    assert sent.headers["x-option-header"] == "o"
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 4096
    assert "max_tokens" not in body
    assert body["reasoning_effort"] == "high"
    assert "prompt_cache_key" not in body  # not OpenAI's server
    assert "temperature" not in body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            },
        }
    ]

    messages = body["messages"]
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "user",
        "assistant",
        "user",
    ]
    assert messages[0] == {"role": "system", "content": "You are heron."}
    assert messages[1]["content"] == [
        {"type": "text", "text": "look at this"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{IMAGE}"}},
    ]
    assistant = messages[2]
    assert assistant["content"] == "Reading."
    assert assistant["reasoning_content"] == "pondering"  # same model: replayed in its own field
    first, second = assistant["tool_calls"]
    assert first == {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.py"}'}}
    assert second["id"] != "call_" + "x" * 60 + "|fc_abc"
    assert len(second["id"]) <= 40
    assert json.loads(second["function"]["arguments"]) == {"path": "b.png"}
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"}
    assert messages[4] == {"role": "tool", "tool_call_id": second["id"], "content": "binary file"}
    images = messages[5]["content"]
    assert images[0]["type"] == "text"
    assert images[1] == {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{IMAGE}"}}
    assert messages[6] == {"role": "user", "content": "thanks"}
    foreign = messages[7]
    assert foreign["content"] == "foreign thoughts\n\nAnswer."  # another model: thinking became text
    assert "reasoning_content" not in foreign and "tool_calls" not in foreign
    assert messages[8] == {"role": "user", "content": "more"}


async def test_request_compat_flags(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=sse(chunk({"content": "ok"}, "stop"))))
    model = chat_model(
        local_server,
        reasoning=True,
        compat={"developer_role": True, "max_tokens_field": "max_tokens", "prompt_cache_key": True},
    )
    await collect(
        model, Context(system_prompt="sys", messages=[UserMessage(content="hi")]), max_tokens=99, session_id="s1"
    )
    body = local_server.requests[-1].json()
    assert body["messages"][0] == {"role": "developer", "content": "sys"}
    assert body["max_tokens"] == 99
    assert "max_completion_tokens" not in body
    assert body["prompt_cache_key"] == "s1"
    assert "reasoning_effort" not in body  # thinking off


def test_request_openai_defaults() -> None:
    model = Model(id="gpt-5", api=API, provider="openai", reasoning=True)
    options = StreamOptions(session_id="s2", thinking="minimal", temperature=0.2)
    body = build_request(model, Context(system_prompt="sys", messages=[UserMessage(content="hi")]), options)
    assert body["prompt_cache_key"] == "s2"
    assert body["reasoning_effort"] == "minimal"
    assert body["temperature"] == 0.2
    assert body["messages"][0]["role"] == "system"  # developer only when compat asks for it
    plain = build_request(Model(id="gpt-4o", api=API, provider="openai"), Context(), StreamOptions(thinking="high"))
    assert "reasoning_effort" not in plain  # not a reasoning model
    assert "prompt_cache_key" not in plain  # no session


def test_request_images_for_text_only_model() -> None:
    model = Model(id="small", api=API, provider="local", base_url="http://localhost:8080/v1")
    call = ToolCall(id="c1", name="shot", arguments={})
    context = Context(
        messages=[
            UserMessage(content=[TextContent(text="see"), ImageContent(data=IMAGE, mime_type="image/png")]),
            AssistantMessage(api=API, provider="local", model="small", content=[call], stop_reason=StopReason.TOOL_USE),
            ToolResultMessage(
                tool_call_id="c1", tool_name="shot", content=[ImageContent(data=IMAGE, mime_type="image/png")]
            ),
        ]
    )
    messages = build_request(model, context, StreamOptions())["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert all(part["type"] == "text" for part in messages[0]["content"])
    assert "image" in messages[2]["content"] and "image_url" not in json.dumps(messages)
    assert messages[1]["content"] is None


async def test_env_key_only_for_openai(local_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    local_server.queue(Reply(body=sse(chunk({"content": "ok"}, "stop"))))
    events = [e async for e in stream(chat_model(local_server), hello())]
    assert isinstance(events[-1], DoneEvent)
    assert "sk-secret" not in local_server.requests[-1].headers["authorization"]


# --- 4: bad input -----------------------------------------------------------------


async def test_clean_end_without_finish_or_done_is_incomplete(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=sse(chunk({"content": "Half an ans"}), done=False)))
    events = await collect(chat_model(local_server))
    check_sequence(events)
    last = events[-1]
    assert isinstance(last, ErrorEvent)
    assert last.error.error_message == INCOMPLETE
    assert last.error.text() == "Half an ans"


async def test_done_without_finish_reason_is_complete(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=sse(chunk({"content": "Whole answer."}))))
    events = await collect(chat_model(local_server))
    assert isinstance(events[-1], DoneEvent)
    assert events[-1].message.stop_reason == StopReason.STOP


OVERFLOWS = {
    "openai": {
        "error": {
            "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
            "130000 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    "vllm": {
        "object": "error",
        "message": "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens "
        "(35904 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    },
    "llama.cpp": {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 9000,
            "n_ctx": 8192,
        }
    },
}


async def test_overflow_message_names_type_and_code(local_server: LocalServer) -> None:
    local_server.queue(json_reply(400, OVERFLOWS["openai"]))
    last = (await collect(chat_model(local_server)))[-1]
    assert isinstance(last, ErrorEvent)
    assert (last.error.error_message or "").startswith(
        "400 invalid_request_error (context_length_exceeded): This model's maximum context length is 128000 tokens."
    )


async def test_error_object_inside_stream(local_server: LocalServer) -> None:
    body = sse(
        chunk({"content": "Starting"}),
        {"error": {"message": "Upstream provider overloaded", "code": 502}},
    )
    local_server.queue(Reply(body=body))
    events = await collect(chat_model(local_server), retry=NO_RETRY)
    check_sequence(events)
    last = events[-1]
    assert isinstance(last, ErrorEvent)
    assert last.status == 502
    assert last.kind == "transient"
    assert "Upstream provider overloaded" in (last.error.error_message or "")
    assert last.error.text() == "Starting"


# --- the module -------------------------------------------------------------------


def test_import_is_lazy() -> None:
    code = (
        "import sys, heron.ai, heron.ai.providers.openai_chat\n"
        "bad = [m for m in ('openai', 'httpx', 'httpx2') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_describe_unknown_error() -> None:
    assert OpenAIChatProvider().describe_error(ValueError("nope")) is None
    assert OpenAIChatProvider.api == API
