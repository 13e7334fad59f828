"""The message model round-trips through JSON losslessly, including pi's real sessions."""

from __future__ import annotations

import json

import pytest

from heron.ai.types import (
    AssistantMessage,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    message_from_json,
)
from tests.support.fixtures import FIXTURES, needs_shared


def roundtrip(message: object) -> object:
    data = message.to_json_dict()  # type: ignore[attr-defined]
    return message_from_json(json.loads(json.dumps(data)))


def test_every_message_kind_roundtrips() -> None:
    messages = [
        UserMessage(content="plain"),
        UserMessage(content=[TextContent(text="look"), ImageContent(data="aGk=", mime_type="image/png")]),
        AssistantMessage(
            api="anthropic-messages",
            provider="anthropic",
            model="claude",
            content=[
                ThinkingContent(thinking="hmm", thinking_signature="sig"),
                ThinkingContent(thinking="", thinking_signature="enc", redacted=True),
                TextContent(text="answer", text_signature="ts"),
                ToolCall(id="t1", name="read", arguments={"path": "ä.py"}, thought_signature="g"),
                ToolCall(id="t2", name="bad", arguments={}, raw_arguments='{"x": '),
            ],
            usage=Usage(input=1, output=2, cache_read=3, cache_write=4, total_tokens=10),
            stop_reason=StopReason.TOOL_USE,
            error_message=None,
            response_id="r1",
        ),
        ToolResultMessage(
            tool_call_id="t1",
            tool_name="read",
            content=[TextContent(text="ok"), ImageContent(data="aGk=", mime_type="image/jpeg")],
            details={"lines": 3},
            is_error=True,
        ),
    ]
    for message in messages:
        assert roundtrip(message) == message


def test_camel_case_on_disk() -> None:
    data = ToolResultMessage(tool_call_id="a", tool_name="bash", content=[]).to_json_dict()
    assert {"toolCallId", "toolName", "isError", "role", "content", "timestamp"} <= set(data)
    msg = AssistantMessage(api="x", provider="y", model="z", stop_reason=StopReason.TOOL_USE).to_json_dict()
    assert msg["stopReason"] == "toolUse"
    assert set(msg["usage"]) == {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"}


def test_unknown_fields_are_kept() -> None:
    raw = {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "1", "name": "n", "arguments": {}, "partialJson": "{}"}],
        "api": "a",
        "provider": "p",
        "model": "m",
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0}},
        "stopReason": "toolUse",
        "timestamp": 5,
        "futureField": {"nested": True},
    }
    message = message_from_json(raw)
    out = message.to_json_dict()
    assert out["futureField"] == {"nested": True}
    assert out["content"][0]["partialJson"] == "{}"


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "wizard", "content": "x"},
        {"role": "user", "content": [{"type": "hologram"}]},
        {"role": "assistant", "content": "not a list", "api": "a", "provider": "p", "model": "m"},
        "not an object",
    ],
)
def test_malformed_messages_raise_value_error(bad: object) -> None:
    with pytest.raises(ValueError):
        message_from_json(bad)  # type: ignore[arg-type]


@needs_shared(FIXTURES / "pi" / "sessions")
def test_real_pi_messages_roundtrip_exactly() -> None:
    """Every message in pi's real session files decodes and encodes back to the same JSON
    (pi writes no ``totalTokens`` in old files; we only compare the keys pi wrote)."""
    count = 0
    for path in sorted((FIXTURES / "pi" / "sessions").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry.get("type") != "message" or entry["message"]["role"] not in ("user", "assistant", "toolResult"):
                continue
            original = entry["message"]
            encoded = message_from_json(original).to_json_dict()
            for key, value in original.items():
                if key == "usage":
                    assert {k: encoded[key][k] for k in value} == value
                else:
                    assert encoded[key] == value, key
            count += 1
    assert count > 1500
