"""The Gemini adapter against a local HTTP server speaking the real wire format.

heron's own HTTP client and SSE reader do the transport (no ``google-genai`` SDK); the
recorded streams in ../shared/fixtures/provider-streams replay through it byte for byte.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
from typing import Any

import pytest

from heron.ai import (
    NO_RETRY,
    AbortController,
    AssistantEvent,
    AssistantMessage,
    Context,
    ErrorEvent,
    ImageContent,
    Model,
    RetryPolicy,
    StopReason,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    register_provider,
    stream,
)
from heron.ai.options import StreamOptions
from heron.ai.providers.google import (
    SKIP_SIGNATURE,
    GoogleProvider,
    split_base_url,
)
from heron.ai.providers.google_args import parse_json_path
from heron.ai.registry import unregister_provider
from tests.ai.wires import check_stream
from tests.support.fixtures import MANIFEST, needs_shared, sse_body, stream_name, streams_for
from tests.support.http_server import LocalServer, Reply, json_reply

API = "google-gemini"
ENTRIES = streams_for(API)
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-fake-image-bytes").decode()
OVERFLOW = {
    "error": {
        "code": 400,
        "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        "status": "INVALID_ARGUMENT",
    }
}


@pytest.fixture(autouse=True)
def provider() -> Any:
    """A fresh provider per test (its client cache is bound to the test's event loop)."""
    instance = GoogleProvider()
    register_provider(instance)
    yield instance
    unregister_provider(API)


def gemini(server: LocalServer, model_id: str = "gemini-2.5-pro", **fields: Any) -> Model:
    values: dict[str, Any] = {
        "id": model_id,
        "api": API,
        "provider": "google",
        "base_url": server.url,
        "reasoning": True,
        "input": ["text", "image"],
    }
    values.update(fields)
    return Model(**values)


def sse(*payloads: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\r\n\r\n" for p in payloads)


def chunk(
    parts: list[dict[str, Any]], finish: str | None = None, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-2.5-pro", "responseId": "resp-1"}
    if usage is not None:
        out["usageMetadata"] = usage
    return out


USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


async def collect(
    model: Model, context: Context | None = None, **options: Any
) -> tuple[list[AssistantEvent], AssistantMessage]:
    options.setdefault("api_key", "test-key")
    options.setdefault("retry", NO_RETRY)
    events_stream = stream(model, context or Context(messages=[UserMessage(content="hi")]), StreamOptions(**options))
    events = [event async for event in events_stream]
    return events, await events_stream.result()


# --- 1 + 2: every recorded Gemini stream ------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES, ids=[stream_name(e) for e in ENTRIES])
async def test_recorded_stream(local_server: LocalServer, entry: dict[str, Any]) -> None:
    expected = entry["expected"]
    local_server.queue(Reply(body=sse_body(entry), chunk_size=37, content_type="text/event-stream"))
    model = gemini(local_server, entry["model"])
    events, message = await collect(model)

    check_stream(events)
    assert events[-1].type == "done", message.error_message
    request = local_server.requests[-1]
    assert request.path == f"/v1beta/models/{entry['model']}:streamGenerateContent"
    assert request.query == {"alt": ["sse"]}

    assert message.text() == expected["text"]
    thinking = "".join(b.thinking for b in message.content if isinstance(b, ThinkingContent))
    assert thinking == expected["thinking"]
    texts = [b for b in message.content if isinstance(b, TextContent)]
    assert len(texts) == len(expected["text_blocks"]) or expected["text"] == ""
    signature_on = set(expected["thought_signature_on"])
    if signature_on & {"text", "empty-text"}:
        assert any(b.text_signature for b in texts)
    else:
        assert not any(b.text_signature for b in texts)

    calls = message.tool_calls()
    assert [c.name for c in calls] == [c["name"] for c in expected["tool_calls"]]
    assert [c.arguments for c in calls] == [c["arguments"] for c in expected["tool_calls"]]
    assert [bool(c.thought_signature) for c in calls] == [c["thought_signature"] for c in expected["tool_calls"]]
    assert all(c.raw_arguments is None for c in calls)
    for call, wanted in zip(calls, expected["tool_calls"], strict=True):
        if wanted["id"] is not None:
            assert call.id == wanted["id"]
        else:
            assert call.id.startswith(f"{call.name}_")
    assert len({c.id for c in calls}) == len(calls), "synthesised ids must be unique"

    assert expected["finish_reason"] == "STOP"
    assert message.stop_reason == (StopReason.TOOL_USE if calls else StopReason.STOP)

    usage = expected["usage"]
    cached = usage.get("cachedContentTokenCount", 0)
    assert message.usage.input == usage["promptTokenCount"] - cached
    assert message.usage.cache_read == cached
    assert message.usage.cache_write == 0
    assert message.usage.output == usage.get("candidatesTokenCount", 0) + usage.get("thoughtsTokenCount", 0)
    assert message.usage.total_tokens == usage["totalTokenCount"]
    assert message.response_id == expected["response_id"]
    assert message.model == entry["model"]


@needs_shared(MANIFEST)
async def test_signatures_are_kept_as_sent(local_server: LocalServer) -> None:
    entry = next(e for e in ENTRIES if "thought-summaries" in e["file"])
    body = sse_body(entry)
    local_server.queue(Reply(body=body))
    _, message = await collect(gemini(local_server, entry["model"]))
    wire = [json.loads(line[6:]) for line in body.decode().split("\r\n") if line.startswith("data: ")]
    sent = [
        p["thoughtSignature"] for w in wire for p in w["candidates"][0]["content"]["parts"] if "thoughtSignature" in p
    ]
    texts = [b for b in message.content if isinstance(b, TextContent)]
    assert [b.text_signature for b in texts] == sent


@needs_shared(MANIFEST)
async def test_streamed_partial_arguments_stream_as_deltas(local_server: LocalServer) -> None:
    entry = next(e for e in ENTRIES if "partial" in " ".join(e["what_it_exercises"]) or "vertex" in e["file"])
    local_server.queue(Reply(body=sse_body(entry), chunk_size=37))
    events, message = await collect(gemini(local_server, entry["model"]))
    check_stream(events)
    index = message.content.index(message.tool_calls()[1])
    deltas = [e.delta for e in events if e.type == "toolcall_delta" and e.content_index == index]  # type: ignore[union-attr]
    assert len(deltas) > 1, "partialArgs should reach the consumer as they arrive"
    assert json.loads("".join(deltas)) == {"id": "A"}


# --- 3: the request ---------------------------------------------------------------


def rich_context(model: Model) -> Context:
    def sig(value: str) -> str:
        return base64.b64encode(value.encode()).decode()

    same = {"api": model.api, "provider": model.provider, "model": model.id}
    return Context(
        system_prompt="Be terse.",
        tools=[
            Tool(
                name="read",
                description="Read a file.",
                parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            )
        ],
        messages=[
            UserMessage(content=[TextContent(text="look at this"), ImageContent(data=PNG, mime_type="image/png")]),
            AssistantMessage(
                **same,
                content=[
                    ThinkingContent(thinking="Let me think.", thinking_signature=sig("think-sig")),
                    TextContent(text="Reading both.", text_signature=sig("text-sig")),
                    ToolCall(id="call_1", name="read", arguments={"path": "a.py"}, thought_signature=sig("call-sig")),
                    ToolCall(id="call_2", name="read", arguments={"path": "b.png"}),
                ],
                stop_reason=StopReason.TOOL_USE,
            ),
            ToolResultMessage(tool_call_id="call_1", tool_name="read", content=[TextContent(text="print(1)")]),
            ToolResultMessage(
                tool_call_id="call_2",
                tool_name="read",
                content=[TextContent(text="binary file"), ImageContent(data=PNG, mime_type="image/png")],
                is_error=True,
            ),
            AssistantMessage(
                api="anthropic-messages",
                provider="anthropic",
                model="claude-sonnet-4-5",
                content=[
                    ThinkingContent(thinking="Foreign thoughts.", thinking_signature="anthropic-signature"),
                    TextContent(text="Once more."),
                    ToolCall(id="toolu_01ABC", name="read", arguments={"path": "c.py"}),
                ],
                stop_reason=StopReason.TOOL_USE,
            ),
            ToolResultMessage(tool_call_id="toolu_01ABC", tool_name="read", content=[TextContent(text="pass")]),
            UserMessage(content="thanks"),
        ],
    )


def camel(fields: dict[str, Any]) -> dict[str, Any]:
    """Keys in the API's JSON spelling. The SDK passes some nested config objects through
    in their proto field names (``include_thoughts``); the API reads both spellings."""
    return {k.split("_")[0] + "".join(w.title() for w in k.split("_")[1:]): v for k, v in fields.items()}


def urlsafe(value: str) -> str:
    return base64.urlsafe_b64encode(value.encode()).decode()


def image_of(part: dict[str, Any]) -> tuple[str, bytes]:
    """(mime type, bytes) of an inline-data part, whichever spelling the SDK used."""
    blob = camel(part.get("inlineData") or part["inline_data"])
    return blob["mimeType"], base64.urlsafe_b64decode(blob["data"].replace("+", "-").replace("/", "_"))


async def test_request_body_gemini_25(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=sse(chunk([{"text": "ok"}], "STOP", USAGE))))
    model = gemini(local_server, "gemini-2.5-pro", headers={"x-model-header": "m"}, max_tokens=30_000)
    payloads: list[dict[str, Any]] = []
    _, message = await collect(
        model,
        rich_context(model),
        api_key="secret-key",
        thinking="medium",
        headers={"x-extra": "e"},
        on_payload=payloads.append,
    )
    assert message.stop_reason == StopReason.STOP, message.error_message
    request = local_server.requests[-1]
    assert request.path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    assert request.query == {"alt": ["sse"]}
    assert request.headers["x-goog-api-key"] == "secret-key"
    assert request.headers["x-model-header"] == "m"
    assert request.headers["x-extra"] == "e"
    body = request.json()

    assert body["systemInstruction"]["parts"] == [{"text": "Be terse."}]
    (declaration,) = body["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "read" and declaration["description"] == "Read a file."
    # the SDK writes this field in its proto name; the API accepts both spellings
    schema = declaration.get("parametersJsonSchema", declaration.get("parameters_json_schema"))
    assert schema == {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    config = body["generationConfig"]
    assert config["maxOutputTokens"] == 30_000
    assert camel(config["thinkingConfig"]) == {"includeThoughts": True, "thinkingBudget": 10_240}

    contents = body["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user", "user"]
    image_bytes = base64.b64decode(PNG)
    assert contents[0]["parts"][0] == {"text": "look at this"}
    assert image_of(contents[0]["parts"][1]) == ("image/png", image_bytes)

    # the same model's history: thoughts, signatures and call ids replayed as they were
    assert contents[1]["parts"] == [
        {"text": "Let me think.", "thought": True, "thoughtSignature": urlsafe("think-sig")},
        {"text": "Reading both.", "thoughtSignature": urlsafe("text-sig")},
        {
            "functionCall": {"id": "call_1", "name": "read", "args": {"path": "a.py"}},
            "thoughtSignature": urlsafe("call-sig"),
        },
        {"functionCall": {"id": "call_2", "name": "read", "args": {"path": "b.png"}}},
    ]
    # consecutive tool results share one user turn; the image follows the responses
    results = contents[2]["parts"]
    assert results[0] == {"functionResponse": {"id": "call_1", "name": "read", "response": {"output": "print(1)"}}}
    assert results[1] == {"functionResponse": {"id": "call_2", "name": "read", "response": {"error": "binary file"}}}
    assert "text" in results[2]
    assert image_of(results[3]) == ("image/png", image_bytes)

    # another model's history: thinking becomes text, no signatures
    assert contents[3]["parts"] == [
        {"text": "Foreign thoughts."},
        {"text": "Once more."},
        {"functionCall": {"id": "toolu_01ABC", "name": "read", "args": {"path": "c.py"}}},
    ]
    assert contents[4]["parts"] == [
        {"functionResponse": {"id": "toolu_01ABC", "name": "read", "response": {"output": "pass"}}}
    ]
    assert contents[5]["parts"] == [{"text": "thanks"}]

    # on_payload saw the request just before it went out, JSON-ready
    assert len(payloads) == 1
    json.dumps(payloads[0])
    assert payloads[0]["model"] == "gemini-2.5-pro"


async def test_request_body_gemini_3(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=sse(chunk([{"text": "ok"}], "STOP", USAGE))))
    model = gemini(local_server, "gemini-3-pro-preview")
    _, message = await collect(model, rich_context(model), thinking="low")
    assert message.stop_reason == StopReason.STOP, message.error_message
    body = local_server.requests[-1].json()
    assert camel(body["generationConfig"]["thinkingConfig"]) == {"includeThoughts": True, "thinkingLevel": "LOW"}
    contents = body["contents"]
    # Gemini 3 takes the tool's image inside its function response
    error_result = contents[2]["parts"][1]["functionResponse"]
    assert error_result["response"] == {"error": "binary file"}
    assert image_of(error_result["parts"][0]) == ("image/png", base64.b64decode(PNG))
    assert len(contents[2]["parts"]) == 2
    # a call written by another model gets Google's documented placeholder signature
    foreign_call = contents[3]["parts"][-1]
    assert foreign_call["thoughtSignature"] == SKIP_SIGNATURE
    # the model's own unsigned parallel call is left alone
    assert "thoughtSignature" not in contents[1]["parts"][3]


async def test_thinking_off_and_non_reasoning_models_send_no_thinking_config(local_server: LocalServer) -> None:
    for model, thinking in (
        (gemini(local_server, "gemini-2.5-pro"), "off"),
        (gemini(local_server, "gemini-2.0-flash", reasoning=False), "high"),
    ):
        local_server.queue(Reply(body=sse(chunk([{"text": "ok"}], "STOP", USAGE))))
        await collect(model, thinking=thinking)
        assert "thinkingConfig" not in local_server.requests[-1].json()["generationConfig"]


async def test_high_thinking_level_and_images_not_supported(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=sse(chunk([{"text": "ok"}], "STOP", USAGE))))
    model = gemini(local_server, "gemini-3-flash-preview", input=["text"])
    context = Context(messages=[UserMessage(content=[ImageContent(data=PNG, mime_type="image/png")])])
    await collect(model, context, thinking="xhigh")
    body = local_server.requests[-1].json()
    assert camel(body["generationConfig"]["thinkingConfig"])["thinkingLevel"] == "HIGH"
    assert "inlineData" not in json.dumps(body) and "inline_data" not in json.dumps(body)


def test_base_url_with_version() -> None:
    assert split_base_url(None) == (None, "v1beta")
    assert split_base_url("http://proxy/gemini") == ("http://proxy/gemini", "v1beta")
    assert split_base_url("https://generativelanguage.googleapis.com/v1beta") == (
        "https://generativelanguage.googleapis.com/",
        "v1beta",
    )
    assert split_base_url("https://example.com/v1/") == ("https://example.com/", "v1")


async def test_versioned_base_url_reaches_the_same_path(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=sse(chunk([{"text": "ok"}], "STOP", USAGE))))
    await collect(gemini(local_server, base_url=local_server.url + "/v1beta"))
    assert local_server.requests[-1].path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"


async def test_api_key_from_environment(local_server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "env-key")
    local_server.queue(Reply(body=sse(chunk([{"text": "ok"}], "STOP", USAGE))))
    await collect(gemini(local_server), api_key=None)
    assert local_server.requests[-1].headers["x-goog-api-key"] == "env-key"


def test_sdk_is_imported_lazily() -> None:
    code = (
        "import sys, heron.ai, heron.ai.providers.google\n"
        "from heron.ai import get_provider\n"
        "get_provider('google-gemini')\n"
        "assert not [m for m in sys.modules if m.startswith('google')], sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- response mapping details ------------------------------------------------------


async def test_interleaved_parts_and_cached_usage(local_server: LocalServer) -> None:
    usage = {
        "promptTokenCount": 1000,
        "cachedContentTokenCount": 600,
        "candidatesTokenCount": 40,
        "thoughtsTokenCount": 60,
        "totalTokenCount": 1100,
    }
    body = sse(
        chunk([{"text": "Plan", "thought": True}]),
        chunk([{"text": " more", "thought": True, "thoughtSignature": "c2lnLTE="}]),
        chunk([{"text": "Answer "}, {"text": "text."}]),
        chunk([{"functionCall": {"id": "fc-1", "name": "read", "args": {"path": "x"}}}]),
        chunk([{"text": "after"}], "STOP", usage),
    )
    local_server.queue(Reply(body=body, chunk_size=29))
    events, message = await collect(gemini(local_server))
    check_stream(events)
    assert [b.type for b in message.content] == ["thinking", "text", "toolCall", "text"]
    thinking = message.content[0]
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking == "Plan more" and thinking.thinking_signature == "c2lnLTE="
    assert message.text() == "Answer text.after"
    assert message.tool_calls()[0].id == "fc-1"
    assert message.stop_reason == StopReason.TOOL_USE
    assert (message.usage.input, message.usage.cache_read, message.usage.output) == (400, 600, 100)
    assert message.usage.total_tokens == 1100


async def test_signature_only_thought_part_is_kept(local_server: LocalServer) -> None:
    body = sse(
        chunk([{"text": "Hmm.", "thought": True}]),
        chunk([{"thought": True, "thoughtSignature": "c2lnLTI="}]),
        chunk([{"text": "Done."}], "STOP", USAGE),
    )
    local_server.queue(Reply(body=body))
    events, message = await collect(gemini(local_server))
    check_stream(events)
    thinking = message.content[0]
    assert isinstance(thinking, ThinkingContent)
    assert (thinking.thinking, thinking.thinking_signature) == ("Hmm.", "c2lnLTI=")
    assert message.text() == "Done."


async def test_synthesised_ids_do_not_clash_with_history(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=sse(chunk([{"functionCall": {"name": "read", "args": {}}}], "STOP", USAGE))))
    model = gemini(local_server)
    history = Context(
        messages=[
            UserMessage(content="go"),
            AssistantMessage(
                api=API,
                provider="google",
                model=model.id,
                content=[ToolCall(id="read_1", name="read")],
                stop_reason=StopReason.TOOL_USE,
            ),
            ToolResultMessage(tool_call_id="read_1", tool_name="read", content=[TextContent(text="x")]),
        ]
    )
    _, message = await collect(model, history)
    assert message.tool_calls()[0].id == "read_2"


async def test_max_tokens_maps_to_length(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=sse(chunk([{"text": "cut sho"}], "MAX_TOKENS", USAGE))))
    events, message = await collect(gemini(local_server))
    check_stream(events)
    assert message.stop_reason == StopReason.LENGTH
    assert message.text() == "cut sho"


@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "MALFORMED_FUNCTION_CALL"])
async def test_blocked_finish_reasons_raise(local_server: LocalServer, reason: str) -> None:
    local_server.queue(Reply(body=sse(chunk([{"text": "partial"}], reason, USAGE))))
    events, message = await collect(gemini(local_server))
    check_stream(events)
    assert message.stop_reason == StopReason.ERROR
    assert reason in (message.error_message or "")
    assert message.text() == "partial"
    assert message.usage.input == 10


async def test_blocked_prompt_raises(local_server: LocalServer) -> None:
    body = sse({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 7}})
    local_server.queue(Reply(body=body))
    events, message = await collect(gemini(local_server))
    check_stream(events)
    assert message.stop_reason == StopReason.ERROR
    assert "PROHIBITED_CONTENT" in (message.error_message or "")


async def test_error_inside_the_stream(local_server: LocalServer) -> None:
    body = sse(
        chunk([{"text": "Hello"}]),
        {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}},
    )
    local_server.queue(Reply(body=body))
    events, message = await collect(gemini(local_server), retry=RetryPolicy(base_delay=0.01))
    check_stream(events)
    assert message.stop_reason == StopReason.ERROR
    assert message.error_message == f"503 UNAVAILABLE: The model is overloaded. ({local_server.url})"
    assert message.text() == "Hello"
    assert len(local_server.requests) == 1, "content was shown: no retry"


# --- 4: bad input -----------------------------------------------------------------


async def test_stream_closed_cleanly_without_finish_reason(local_server: LocalServer) -> None:
    local_server.queue(Reply(body=sse(chunk([{"text": "Hello"}]), chunk([{"text": " wor"}]))))
    events, message = await collect(gemini(local_server))
    check_stream(events)
    assert message.stop_reason == StopReason.ERROR
    assert message.error_message == "stream ended before the response was complete"
    assert message.text() == "Hello wor"


async def test_function_call_args_not_an_object(local_server: LocalServer) -> None:
    body = sse(chunk([{"text": "Calling."}]), chunk([{"functionCall": {"name": "read", "args": "path=x"}}], "STOP"))
    local_server.queue(Reply(body=body))
    events, message = await collect(gemini(local_server))
    check_stream(events)
    assert message.stop_reason == StopReason.ERROR
    assert message.text() == "Calling."
    assert "could not read" in (message.error_message or "")


async def test_unfinished_streamed_arguments_keep_raw_text(local_server: LocalServer) -> None:
    body = sse(
        chunk([{"functionCall": {"name": "write", "willContinue": True}}]),
        chunk(
            [
                {
                    "functionCall": {
                        "partialArgs": [
                            {"jsonPath": "$.path", "stringValue": "a.txt"},
                            {"jsonPath": "$.content", "stringValue": "hello wo", "willContinue": True},
                        ],
                        "willContinue": True,
                    }
                }
            ]
        ),
    )
    local_server.queue(Reply(body=body, chunk_size=23))
    events, message = await collect(gemini(local_server, "gemini-3-flash-preview"))
    check_stream(events)
    assert message.stop_reason == StopReason.ERROR
    call = message.tool_calls()[0]
    # the unfinished text is kept as sent; what could be parsed of it is kept too
    assert call.raw_arguments == '{"path": "a.txt", "content": "hello wo'
    assert call.arguments == {"path": "a.txt", "content": "hello wo"}


async def test_retry_delay_from_the_error_body(local_server: LocalServer) -> None:
    details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]
    local_server.queue(
        json_reply(
            429,
            {"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED", "details": details}},
        )
    )
    events, _ = await collect(gemini(local_server))
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.retry_after == 7.0


async def test_server_error_without_heron_retry_is_sent_once(local_server: LocalServer) -> None:
    local_server.queue(json_reply(503, {"error": {"code": 503, "message": "Unavailable", "status": "UNAVAILABLE"}}))
    local_server.fallback = Reply(body=sse(chunk([{"text": "no"}], "STOP", USAGE)))
    events, message = await collect(gemini(local_server), retry=NO_RETRY)
    assert message.stop_reason == StopReason.ERROR
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.kind == "transient"
    assert len(local_server.requests) == 1


@needs_shared(MANIFEST)
async def test_abort_in_the_middle_of_a_tool_call(local_server: LocalServer) -> None:
    entry = next(e for e in ENTRIES if "vertex" in e["file"])
    local_server.queue(Reply(body=sse_body(entry), chunk_size=120, chunk_delay=0.05))
    controller = AbortController()
    options = StreamOptions(api_key="k", retry=NO_RETRY, signal=controller.signal)
    events_stream = stream(gemini(local_server, entry["model"]), Context(messages=[UserMessage(content="go")]), options)
    events: list[AssistantEvent] = []
    armed = False
    async for event in events_stream:
        events.append(event)
        if event.type == "toolcall_delta" and not armed and len(event.partial.tool_calls()) == 2:
            armed = True
            asyncio.get_running_loop().call_later(0.02, controller.abort)
    message = await events_stream.result()
    check_stream(events)
    assert message.stop_reason == StopReason.ABORTED
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.kind == "aborted"
    calls = message.tool_calls()
    assert [c.name for c in calls][:2] == ["read_theme", "read_screen"]
    assert len(calls) < 4
    assert calls[1].raw_arguments is not None  # unfinished, kept as sent


# --- partialArgs paths --------------------------------------------------------------


def test_json_paths() -> None:
    assert parse_json_path("$") == []
    assert parse_json_path("$.a.b[2]") == ["a", "b", 2]
    assert parse_json_path("$['a b'].c") == ["a b", "c"]
    assert parse_json_path('$["x"][0]') == ["x", 0]
    assert parse_json_path("a.b") is None
    assert parse_json_path("$.a[") is None


async def test_nested_partial_arguments(local_server: LocalServer) -> None:
    body = sse(
        chunk([{"functionCall": {"name": "edit", "willContinue": True}, "thoughtSignature": "c2ln"}]),
        chunk(
            [
                {
                    "functionCall": {
                        "partialArgs": [
                            {"jsonPath": "$.edits[0].old", "stringValue": "a"},
                            {"jsonPath": "$.edits[0].new", "stringValue": "b", "willContinue": True},
                        ],
                        "willContinue": True,
                    }
                }
            ]
        ),
        chunk(
            [
                {
                    "functionCall": {
                        "partialArgs": [{"jsonPath": "$.edits[0].new", "stringValue": "c"}],
                        "willContinue": True,
                    }
                }
            ]
        ),
        chunk(
            [
                {
                    "functionCall": {
                        "partialArgs": [
                            {"jsonPath": "$.count", "numberValue": 2},
                            {"jsonPath": "$.dry", "boolValue": False},
                            {"jsonPath": "$.note", "nullValue": "NULL_VALUE"},
                        ]
                    }
                }
            ]
        ),
        chunk([{"text": ""}], "STOP", USAGE),
    )
    local_server.queue(Reply(body=body, chunk_size=31))
    events, message = await collect(gemini(local_server, "gemini-3-flash-preview"))
    check_stream(events)
    assert message.stop_reason == StopReason.TOOL_USE
    call = message.tool_calls()[0]
    assert call.arguments == {"edits": [{"old": "a", "new": "bc"}], "count": 2, "dry": False, "note": None}
    assert call.thought_signature == "c2ln"
    assert call.raw_arguments is None
