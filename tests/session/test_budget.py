"""estimate_context_tokens: last assistant usage + ceil(chars/4) of what follows.

The rules are in docs/context.md ("Counting tokens")."""

from __future__ import annotations

from heron.agent.messages import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ExtensionMessage,
    UINote,
)
from heron.ai.types import (
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from heron.context.window.budget import estimate_context_tokens, estimate_message_tokens, message_chars
from tests.session.support import assistant, user

IMAGE = ImageContent(data="aGk=", mime_type="image/png")


def test_chars_per_message_kind() -> None:
    assert message_chars(user("abcd")) == 4
    assert message_chars(UserMessage(content=[TextContent(text="abc"), IMAGE])) == 3  # user images not counted
    call = ToolCall(id="c", name="read", arguments={"path": "ä b"})
    reply = assistant("hi", calls=[call])
    reply.content.insert(0, ThinkingContent(thinking="think"))
    assert message_chars(reply) == 2 + 5 + 4 + len('{"path":"ä b"}')
    result = ToolResultMessage(tool_call_id="c", tool_name="read", content=[TextContent(text="12345"), IMAGE])
    assert message_chars(result) == 5 + 4800
    assert estimate_message_tokens(result) == 2 + 1200
    assert message_chars(ExtensionMessage(custom_type="x", content=[TextContent(text="ab"), IMAGE])) == 4802
    assert message_chars(BashExecutionMessage(command="ls", output="a b")) == 5
    assert message_chars(BashExecutionMessage(command="ls", output="a b", exclude_from_context=True)) == 0
    assert message_chars(CompactionSummaryMessage(summary="s" * 9)) == 9
    assert message_chars(BranchSummaryMessage(summary="s" * 7)) == 7
    assert message_chars(UINote(text="only for the user")) == 0


def test_last_usage_plus_estimate_of_what_follows() -> None:
    first = assistant("x", usage=Usage(input=100, output=20, cache_read=1000, cache_write=5))
    messages = [
        user("q" * 40),
        first,
        user("a" * 9),
        ToolResultMessage(tool_call_id="c", tool_name="t", content=[TextContent(text="b" * 4)]),
    ]
    assert estimate_context_tokens(messages) == 1125 + 3 + 1
    # aborted and failed replies report nothing usable: the one before counts
    aborted = assistant("", usage=Usage(), stop=StopReason.ABORTED)
    assert estimate_context_tokens([*messages, aborted]) == 1125 + 3 + 1 + 0
    # no usage at all: everything estimated
    assert estimate_context_tokens([user("q" * 40), user("r")]) == 10 + 1
    assert estimate_context_tokens([]) == 0
