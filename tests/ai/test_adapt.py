"""Cross-model adaptation of history (docs/ai.md, "Switching models mid-session")."""

from __future__ import annotations

import re

from heron.ai import (
    AssistantMessage,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from heron.ai.adapt import NO_RESULT_TEXT, adapt_messages, anthropic_tool_id, openai_chat_tool_id

CLAUDE = Model(id="claude-sonnet-4-5", api="anthropic-messages", provider="anthropic")
GPT = Model(id="gpt-5", api="openai-responses", provider="openai")
CHAT = Model(id="llama3", api="openai-chat", provider="ollama")


def assistant(model: Model, *blocks: object, stop: StopReason = StopReason.TOOL_USE) -> AssistantMessage:
    return AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        content=list(blocks),
        stop_reason=stop,  # type: ignore[arg-type]
    )


def result(call_id: str, text: str = "ok") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name="read", content=[TextContent(text=text)])


def test_same_model_keeps_thinking_and_signatures() -> None:
    msg = assistant(CLAUDE, ThinkingContent(thinking="plan", thinking_signature="sig"), TextContent(text="hi"))
    msg.stop_reason = StopReason.STOP
    out = adapt_messages([UserMessage(content="q"), msg], CLAUDE)
    assert out[1] is msg


def test_foreign_thinking_becomes_text_and_signatures_drop() -> None:
    msg = assistant(
        GPT,
        ThinkingContent(thinking="plan", thinking_signature='{"encrypted": "x"}'),
        ThinkingContent(thinking="", thinking_signature="enc", redacted=True),
        TextContent(text="answer", text_signature="t"),
        ToolCall(id="call_1|fc_1", name="read", arguments={"path": "a"}, thought_signature="g"),
    )
    out = adapt_messages([UserMessage(content="q"), msg, result("call_1|fc_1")], CLAUDE, anthropic_tool_id)
    adapted = out[1]
    assert isinstance(adapted, AssistantMessage)
    assert [b.type for b in adapted.content] == ["text", "text", "toolCall"]
    assert adapted.content[0].text == "plan"  # type: ignore[union-attr]
    assert adapted.content[1].text_signature is None  # type: ignore[union-attr]
    call = adapted.tool_calls()[0]
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", call.id)
    assert call.thought_signature is None
    res = out[2]
    assert isinstance(res, ToolResultMessage) and res.tool_call_id == call.id
    assert msg.content[3].id == "call_1|fc_1"  # the original is untouched  # type: ignore[union-attr]


def test_ids_are_rewritten_to_target_rules() -> None:
    long_id = "call_" + "x" * 80 + "|fc_" + "y" * 40
    assert len(openai_chat_tool_id(long_id)) <= 40
    assert openai_chat_tool_id(long_id) != openai_chat_tool_id(long_id + "z")
    assert anthropic_tool_id("toolu_abc") == "toolu_abc"
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", anthropic_tool_id(long_id))
    assert anthropic_tool_id("a.b") != anthropic_tool_id("a:b")


def test_errored_and_aborted_turns_are_skipped_with_their_results() -> None:
    bad = assistant(CLAUDE, ToolCall(id="t1", name="read", arguments={}), stop=StopReason.ABORTED)
    err = assistant(CLAUDE, TextContent(text="half"), stop=StopReason.ERROR)
    out = adapt_messages([UserMessage(content="q"), bad, result("t1"), err, UserMessage(content="again")], CHAT)
    assert [m.role for m in out] == ["user", "user"]


def test_call_without_result_gets_synthetic_error() -> None:
    msg = assistant(CLAUDE, ToolCall(id="t1", name="read", arguments={}), ToolCall(id="t2", name="bash", arguments={}))
    out = adapt_messages([UserMessage(content="q"), msg, result("t1"), UserMessage(content="next")], CLAUDE)
    assert [m.role for m in out] == ["user", "assistant", "toolResult", "toolResult", "user"]
    synthetic = out[3]
    assert isinstance(synthetic, ToolResultMessage)
    assert synthetic.tool_call_id == "t2" and synthetic.is_error and synthetic.text() == NO_RESULT_TEXT


def test_trailing_call_without_result_is_closed() -> None:
    msg = assistant(CLAUDE, ToolCall(id="t1", name="read", arguments={}))
    out = adapt_messages([UserMessage(content="q"), msg], CLAUDE)
    assert out[-1].role == "toolResult"


def test_orphan_result_becomes_plain_context() -> None:
    out = adapt_messages([UserMessage(content="q"), result("ghost", "data")], CLAUDE)
    assert [m.role for m in out] == ["user", "user"]
    assert "data" in out[1].text()  # type: ignore[union-attr]
