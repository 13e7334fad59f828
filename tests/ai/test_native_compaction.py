"""Provider-native compaction and server-side clearing on the wire (docs/context.md,
"Provider-native compaction"): what the request asks for, the compaction block or item
parsed from the real SSE event shapes into the message's ``native_compaction``, sent back
only to the api and provider that wrote it, and a request the server rejects for its
context-management fields sent once more without them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from heron.ai import (
    NO_RETRY,
    AssistantMessage,
    Context,
    Model,
    StopReason,
    StreamOptions,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from heron.ai.options import ContextManagement
from heron.ai.providers.anthropic import AnthropicProvider
from heron.ai.providers.openai_chat import OpenAIChatProvider
from heron.ai.providers.openai_responses import OpenAIResponsesProvider
from heron.ai.stream import open_stream
from heron.ai.types import NativeCompaction, message_from_json
from tests.support.http_server import LocalServer, json_reply
from tests.support.sse import anthropic_reply, openai_reply, responses_reply

ANTHROPIC = "anthropic-messages"
RESPONSES = "openai-responses"
MANAGED = ContextManagement(compact_trigger=12_000, instructions="Keep file names.")


def model(api: str, server: LocalServer, provider: str = "local") -> Model:
    base = server.url + ("/v1" if api.startswith("openai") else "")
    return Model(id="m", api=api, provider=provider, base_url=base, max_tokens=1024)


@pytest.fixture
async def providers() -> AsyncIterator[dict[str, Any]]:
    made = {ANTHROPIC: AnthropicProvider(), RESPONSES: OpenAIResponsesProvider(), "openai-completions": None}
    made["openai-completions"] = OpenAIChatProvider()
    try:
        yield made
    finally:
        for provider in made.values():
            await provider.aclose()


async def ask(
    provider: Any, target: Model, messages: list[Any], management: ContextManagement | None
) -> AssistantMessage:
    options = StreamOptions(retry=NO_RETRY, context_management=management)
    stream = open_stream(provider, target, Context(system_prompt="sys", messages=messages), options)
    async for _ in stream:
        pass
    return await stream.result()


def prompt(text: str = "go") -> UserMessage:
    return UserMessage(content=text, timestamp=1)


async def test_anthropic_request_block_and_replay(local_server: LocalServer, providers: dict[str, Any]) -> None:
    target = model(ANTHROPIC, local_server)
    local_server.queue(anthropic_reply("after", [("c1", "read", {"path": "a"})], compaction="SUMMARY-1"))
    answer = await ask(providers[ANTHROPIC], target, [prompt()], MANAGED)
    sent = local_server.requests[-1]
    body = sent.json()
    assert body["context_management"] == {
        "edits": [
            {
                "type": "compact_20260112",
                "trigger": {"type": "input_tokens", "value": 12_000},
                "instructions": "Keep file names.",
            }
        ]
    }
    assert sent.headers["anthropic-beta"] == "compact-2026-01-12"
    assert answer.native_compaction == NativeCompaction(api=ANTHROPIC, provider="local", content="SUMMARY-1")
    assert answer.text() == "after" and [c.id for c in answer.tool_calls()] == ["c1"]
    # stored and read back byte for byte
    assert message_from_json(json.loads(json.dumps(answer.to_json_dict()))).to_json_dict() == answer.to_json_dict()

    result = ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="x")])
    local_server.queue(anthropic_reply("done"))
    await ask(providers[ANTHROPIC], target, [answer, result], MANAGED)
    turns = local_server.requests[-1].json()["messages"]
    assert turns[0]["role"] == "assistant"
    assert turns[0]["content"][0] == {"type": "compaction", "content": "SUMMARY-1"}
    assert [b["type"] for b in turns[0]["content"]] == ["compaction", "text", "tool_use"]


async def test_anthropic_clearing_edits_and_applied_edits(local_server: LocalServer, providers: dict[str, Any]) -> None:
    target = model(ANTHROPIC, local_server)
    clearing = ContextManagement(clear_trigger=9_000, clear_keep=2, clear_at_least=1_000, exclude_tools=("todo",))
    applied = [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 3, "cleared_input_tokens": 4_000}]
    local_server.queue(anthropic_reply("ok", applied_edits=applied))
    answer = await ask(providers[ANTHROPIC], target, [prompt()], clearing)
    sent = local_server.requests[-1]
    assert sent.headers["anthropic-beta"] == "context-management-2025-06-27"
    assert sent.json()["context_management"]["edits"] == [
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 9_000},
            "keep": {"type": "tool_uses", "value": 2},
            "clear_at_least": {"type": "input_tokens", "value": 1_000},
            "exclude_tools": ["todo"],
        }
    ]
    assert answer.context_edits == applied and answer.native_compaction is None


async def test_anthropic_failed_compaction_block_covers_nothing(
    local_server: LocalServer, providers: dict[str, Any]
) -> None:
    """A compaction block with null content (the compaction failed) is not kept."""
    target = model(ANTHROPIC, local_server)
    local_server.queue(anthropic_reply("after", compaction=None))
    answer = await ask(providers[ANTHROPIC], target, [prompt()], MANAGED)
    assert answer.native_compaction is None and answer.text() == "after"
    assert answer.stop_reason == StopReason.STOP


async def test_responses_request_item_and_replay(local_server: LocalServer, providers: dict[str, Any]) -> None:
    target = model(RESPONSES, local_server)
    local_server.queue(responses_reply("after", [("c1", "read", {"path": "a"})], compaction=("cmp_1", "ENC==")))
    answer = await ask(providers[RESPONSES], target, [prompt()], MANAGED)
    body = local_server.requests[-1].json()
    assert body["context_management"] == [{"type": "compaction", "compact_threshold": 12_000}]
    assert answer.native_compaction == NativeCompaction(
        api=RESPONSES, provider="local", content="ENC==", item_id="cmp_1"
    )

    result = ToolResultMessage(
        tool_call_id=answer.tool_calls()[0].id, tool_name="read", content=[TextContent(text="x")]
    )
    local_server.queue(responses_reply("done"))
    await ask(providers[RESPONSES], target, [answer, result], MANAGED)
    items = local_server.requests[-1].json()["input"]
    assert items[0] == {"type": "compaction", "id": "cmp_1", "encrypted_content": "ENC=="}
    assert [i["type"] for i in items] == ["compaction", "message", "function_call", "function_call_output"]


async def test_responses_item_without_encrypted_content_is_dropped(
    local_server: LocalServer, providers: dict[str, Any]
) -> None:
    target = model(RESPONSES, local_server)
    local_server.queue(responses_reply("after", compaction=("cmp_1", None)))
    answer = await ask(providers[RESPONSES], target, [prompt()], MANAGED)
    assert answer.native_compaction is None and answer.text() == "after"


async def test_block_never_reaches_another_provider(local_server: LocalServer, providers: dict[str, Any]) -> None:
    """An opaque block goes back only to the api and provider that wrote it."""
    written = AssistantMessage(
        api=RESPONSES,
        provider="local",
        model="m",
        content=[TextContent(text="earlier answer")],
        native_compaction=NativeCompaction(api=RESPONSES, provider="local", content="ENC==", item_id="cmp_1"),
    )
    messages: list[Any] = [written, prompt("next")]
    local_server.queue(anthropic_reply("a"), responses_reply("b"), openai_reply("c"))
    await ask(providers[ANTHROPIC], model(ANTHROPIC, local_server), messages, None)
    await ask(providers[RESPONSES], model(RESPONSES, local_server, provider="other"), messages, None)
    await ask(providers["openai-completions"], model("openai-completions", local_server), messages, None)
    for request in local_server.requests[-3:]:
        assert b"ENC==" not in request.body and b"compaction" not in request.body


@pytest.mark.parametrize("api", [ANTHROPIC, RESPONSES])
async def test_rejected_fields_fall_back(api: str, local_server: LocalServer, providers: dict[str, Any]) -> None:
    """A server that rejects the context-management fields: the same request once more
    without them, and the answer says why."""
    target = model(api, local_server)
    error = {"type": "invalid_request_error", "message": "context_management: unknown beta"}
    local_server.queue(
        json_reply(400, {"type": "error", "error": error}),
        anthropic_reply("plain") if api == ANTHROPIC else responses_reply("plain"),
    )
    answer = await ask(providers[api], target, [prompt()], MANAGED)
    first, second = local_server.requests[-2:]
    assert "context_management" in first.json() and "context_management" not in second.json()
    assert "anthropic-beta" not in second.headers
    assert answer.stop_reason == StopReason.STOP and answer.text() == "plain"
    assert answer.context_management_error is not None and "unknown beta" in answer.context_management_error


async def test_other_invalid_requests_are_not_resent(local_server: LocalServer, providers: dict[str, Any]) -> None:
    target = model(ANTHROPIC, local_server)
    error = {"type": "invalid_request_error", "message": "messages: bad"}
    local_server.queue(json_reply(400, {"type": "error", "error": error}))
    answer = await ask(providers[ANTHROPIC], target, [prompt()], None)
    assert answer.stop_reason == StopReason.ERROR and len(local_server.requests) == 1


def test_malformed_stored_block_is_ignored() -> None:
    raw = {"role": "assistant", "content": [], "api": ANTHROPIC, "provider": "p", "model": "m"}
    for bad in ({"api": ANTHROPIC, "provider": "p", "content": ""}, {"content": "x"}, "text", 5):
        message = message_from_json({**raw, "nativeCompaction": bad})
        assert isinstance(message, AssistantMessage) and message.native_compaction is None
