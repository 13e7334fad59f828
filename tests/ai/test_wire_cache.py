"""The cached request (each history segment built once) is exactly the request built from
scratch, however the history changes: growth, a pruned result, a dropped turn, another
model reading the same messages."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from heron.ai import (
    AssistantMessage,
    Context,
    Model,
    StopReason,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from heron.ai.options import NO_RETRY
from heron.ai.providers import anthropic, google, openai_chat, openai_responses, wire
from heron.ai.providers.wire import segment_starts
from heron.ai.stream import open_stream
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

Builder = Callable[[Model, Context, StreamOptions], dict[str, Any]]

PROVIDERS: list[tuple[str, Any, Builder]] = [
    ("openai-chat", openai_chat.OpenAIChatProvider, openai_chat.build_request),
    ("openai-responses", openai_responses.OpenAIResponsesProvider, openai_responses.build_request),
    ("anthropic-messages", anthropic.AnthropicProvider, anthropic.build_request),
    ("google-gemini", google.GoogleProvider, google.build_request),
]
TOOLS = [Tool(name="read", description="Read a file.", parameters={"type": "object", "properties": {}})]
OPTIONS = StreamOptions(session_id="s1")
OPTIONS_K = StreamOptions(api_key="k", retry=NO_RETRY)


def model(api: str, provider: str = "p", model_id: str = "m") -> Model:
    return Model(id=model_id, api=api, provider=provider, reasoning=True, input=["text", "image"])


def turn(api: str, n: int, *, error: bool = False) -> list[Any]:
    call = ToolCall(id=f"call_{n}", name="read", arguments={"path": f"f{n}.py"})
    assistant = AssistantMessage(
        api=api,
        provider="p",
        model="m",
        content=[ThinkingContent(thinking=f"think {n}", thinking_signature=f"sig{n}"), TextContent(text=f"t{n}"), call],
        stop_reason=StopReason.ERROR if error else StopReason.TOOL_USE,
    )
    result = ToolResultMessage(tool_call_id=f"call_{n}", tool_name="read", content=[TextContent(text=f"r{n}")])
    return [assistant, result]


def same(api: str, provider: Any, build: Builder, target: Model, messages: list[Any]) -> None:
    context = Context(system_prompt="sys", messages=list(messages), tools=TOOLS)
    sent = json.loads(provider.encode_request(target, context, OPTIONS))
    expected = json.loads(json.dumps(build(target, context, OPTIONS)))
    assert sent == expected


@pytest.mark.parametrize(("api", "cls", "build"), PROVIDERS, ids=[p[0] for p in PROVIDERS])
def test_cached_request_equals_fresh_request(api: str, cls: Any, build: Builder) -> None:
    provider = cls()
    target = model(api)
    messages: list[Any] = [UserMessage(content="start")]
    same(api, provider, build, target, messages)
    for n in range(1, 8):
        messages += turn(api, n, error=n == 4)
        same(api, provider, build, target, messages)  # the history grows
        if n % 3 == 0:
            messages.append(UserMessage(content=f"next task {n}"))
            same(api, provider, build, target, messages)
    # a result in the middle replaced by a stub (pruning replaces, never edits)
    messages[4] = ToolResultMessage(tool_call_id="call_2", tool_name="read", content=[TextContent(text="[pruned]")])
    same(api, provider, build, target, messages)
    # the same messages for another model: adapted differently (thinking becomes text)
    other = model(api, provider="q", model_id="other")
    same(api, provider, build, other, messages)
    same(api, provider, build, target, messages)
    # a compacted history: a fresh start
    compacted = [UserMessage(content="summary"), *messages[-4:]]
    same(api, provider, build, target, compacted)


@pytest.mark.parametrize(("api", "cls", "build"), PROVIDERS, ids=[p[0] for p in PROVIDERS])
def test_turn_split_by_a_dropped_message_is_merged(api: str, cls: Any, build: Builder) -> None:
    """[assistant, result, assistant(error), user]: the error turn is dropped and the
    result and the prompt around it must form one valid request."""
    provider = cls()
    target = model(api)
    failed = AssistantMessage(
        api=api, provider="p", model="m", content=[TextContent(text="half")], stop_reason=StopReason.ERROR
    )
    messages = [UserMessage(content="go"), *turn(api, 1), failed, UserMessage(content="again")]
    same(api, provider, build, target, messages[:3])
    same(api, provider, build, target, messages)


def test_segments_start_at_assistant_messages_after_user_side_ones() -> None:
    messages: list[Any] = [UserMessage(content="a"), *turn("x", 1), *turn("x", 2), UserMessage(content="b")]
    assert segment_starts(messages) == [0, 1, 3]


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "BLOCK_BYTES", 64)  # settled segments are joined into blocks at once


@pytest.mark.parametrize(("api", "cls", "build"), PROVIDERS, ids=[p[0] for p in PROVIDERS])
def test_joined_blocks_keep_the_request_exact(small_blocks: None, api: str, cls: Any, build: Builder) -> None:
    test_cached_request_equals_fresh_request(api, cls, build)
    test_turn_split_by_a_dropped_message_is_merged(api, cls, build)
    provider = cls()
    target = model(api)
    messages: list[Any] = [UserMessage(content="go")]
    for n in range(1, 6):
        messages += turn(api, n)
        same(api, provider, build, target, messages)
    # a dropped turn after the blocks were joined: the merge is still made
    failed = AssistantMessage(
        api=api, provider="p", model="m", content=[TextContent(text="x")], stop_reason=StopReason.ERROR
    )
    messages += [failed, UserMessage(content="again")]
    same(api, provider, build, target, messages)


async def test_pieces_reach_the_server_unchunked(small_blocks: None, local_server: LocalServer) -> None:
    api = "openai-chat"
    target = Model(id="m", api=api, provider="p", base_url=local_server.url + "/v1")
    provider = openai_chat.OpenAIChatProvider()
    local_server.fallback = openai_reply("ok")
    messages: list[Any] = [UserMessage(content="go")]
    for n in range(1, 5):
        messages += turn(api, n)
        context = Context(system_prompt="sys", messages=list(messages), tools=TOOLS)
        message = await open_stream(provider, target, context, StreamOptions(api_key="k", retry=NO_RETRY)).result()
        assert message.stop_reason == StopReason.STOP, message.error_message
        request = local_server.requests[-1]
        assert "transfer-encoding" not in request.headers
        assert int(request.headers["content-length"]) == len(request.body)
        assert request.json() == json.loads(json.dumps(openai_chat.build_request(target, context, OPTIONS_K)))
    assert len(provider.encode_pieces(target, context, OPTIONS_K)) > 3  # sent as pieces, not one copy
