"""Agent message kinds: JSON round trips, unknown roles, registration, and what the model sees."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

import heron.agent.messages as messages_module
from heron.agent import (
    AgentMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ExtensionMessage,
    OpaqueMessage,
    UINote,
    agent_message_from_json,
    convert_to_llm,
    register_message_type,
)
from heron.ai.providers.faux import FauxProvider, text
from heron.ai.types import (
    JSON,
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tests.agent.support import make_agent

CUSTOM_SAMPLES: list[AgentMessage] = [
    BashExecutionMessage(
        command="make test",
        output="2 failed",
        exit_code=2,
        cancelled=False,
        truncated=True,
        full_output_path="/tmp/heron/out.txt",
        exclude_from_context=True,
        timestamp=1_700_000_000_001,
    ),
    BashExecutionMessage(command="sleep 10", output="", exit_code=None, cancelled=True, timestamp=3),
    ExtensionMessage(
        custom_type="todo",
        content=[TextContent(text="1. write tests"), ImageContent(data="aGVsbG8=", mime_type="image/png")],
        display=False,
        details={"items": [1, 2]},
        timestamp=1_700_000_000_002,
    ),
    ExtensionMessage(custom_type="note", content="plain string content", timestamp=4),
    BranchSummaryMessage(summary="We tried X; it failed.", from_id="entry-42", timestamp=1_700_000_000_003),
    CompactionSummaryMessage(summary="Goal: fix the bug.", tokens_before=123_456, timestamp=1_700_000_000_004),
    UINote(text="Context compacted", level="warning", data={"saved": 1000}, timestamp=1_700_000_000_005),
]


def roundtrip(message: AgentMessage) -> AgentMessage:
    wire = json.loads(json.dumps(message.to_json_dict()))
    return agent_message_from_json(wire)


@pytest.mark.parametrize("message", CUSTOM_SAMPLES, ids=lambda m: type(m).__name__)
def test_custom_messages_round_trip(message: AgentMessage) -> None:
    back = roundtrip(message)
    assert type(back) is type(message)
    assert back == message
    assert back.to_json_dict() == message.to_json_dict()
    assert back.role == message.role
    assert back.timestamp == message.timestamp


def test_roles_on_disk() -> None:
    assert [m.to_json_dict()["role"] for m in CUSTOM_SAMPLES] == [
        "bashExecution",
        "bashExecution",
        "custom",
        "custom",
        "branchSummary",
        "compactionSummary",
        "uiNote",
    ]
    bash = CUSTOM_SAMPLES[0].to_json_dict()
    assert bash["exitCode"] == 2
    assert bash["fullOutputPath"] == "/tmp/heron/out.txt"
    assert bash["excludeFromContext"] is True
    assert CUSTOM_SAMPLES[2].to_json_dict()["customType"] == "todo"
    assert CUSTOM_SAMPLES[5].to_json_dict()["tokensBefore"] == 123_456
    assert CUSTOM_SAMPLES[4].to_json_dict()["fromId"] == "entry-42"


@pytest.mark.parametrize("message", CUSTOM_SAMPLES, ids=lambda m: type(m).__name__)
def test_unknown_fields_of_known_roles_survive_a_round_trip(message: AgentMessage) -> None:
    wire = {**message.to_json_dict(), "addedByNewerHeron": {"nested": [1, "two"]}}
    back = agent_message_from_json(wire)
    assert back.to_json_dict() == wire


def test_llm_roles_decode_to_llm_messages() -> None:
    user = UserMessage(content="hi", timestamp=1)
    result = ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="x")], timestamp=2)
    assert roundtrip(user) == user
    assert isinstance(roundtrip(result), ToolResultMessage)
    assistant = AssistantMessage(api="faux", provider="faux", model="m", content=[ToolCall(id="c", name="n")])
    assert roundtrip(assistant) == assistant


def test_unknown_role_is_kept_verbatim() -> None:
    raw: JSON = {"role": "hologram", "timestamp": 77, "payload": {"deep": [1, {"x": None}]}, "flag": True}
    message = agent_message_from_json(json.loads(json.dumps(raw)))
    assert isinstance(message, OpaqueMessage)
    assert message.role == "hologram"
    assert message.timestamp == 77
    assert message.to_json_dict() == raw
    assert agent_message_from_json(message.to_json_dict()).to_json_dict() == raw
    # never reaches the model
    assert convert_to_llm([message]) == []


def test_opaque_message_without_timestamp() -> None:
    message = agent_message_from_json({"role": "x"})
    assert isinstance(message, OpaqueMessage)
    assert message.timestamp == 0


def test_non_object_is_rejected() -> None:
    with pytest.raises(ValueError):
        agent_message_from_json(["not", "a", "message"])  # type: ignore[arg-type]


async def test_unknown_role_is_not_sent_by_the_agent(faux: FauxProvider) -> None:
    opaque = agent_message_from_json({"role": "hologram", "timestamp": 1, "secret": "do not send"})
    agent = make_agent(faux, messages=[opaque])
    faux.queue(text("ok"))
    await agent.prompt("hello")
    sent = faux.requests[0].messages
    assert [m.role for m in sent] == ["user"]
    assert "do not send" not in faux.payloads[0]
    assert agent.messages[0] is opaque  # still stored


# --- application-defined types ---------------------------------------------------


@dataclass(kw_only=True)
class TodoCard:
    items: list[str]
    timestamp: int = 0
    role: str = "todoCard"
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json_dict(self) -> JSON:
        return {**self.extra, "role": self.role, "items": list(self.items), "timestamp": self.timestamp}

    @classmethod
    def from_json_dict(cls, data: JSON) -> TodoCard:
        extra = {k: v for k, v in data.items() if k not in {"role", "items", "timestamp"}}
        return cls(items=list(data["items"]), timestamp=data.get("timestamp", 0), extra=extra)


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test do not leak into other tests."""
    monkeypatch.setattr(messages_module, "_CUSTOM", dict(messages_module._CUSTOM))


def test_register_message_type_for_an_app_type(registry: None) -> None:
    card = TodoCard(items=["a", "b"], timestamp=9)
    assert isinstance(agent_message_from_json(card.to_json_dict()), OpaqueMessage)  # not yet known
    register_message_type("todoCard", TodoCard.from_json_dict)
    back = roundtrip(card)
    assert isinstance(back, TodoCard)
    assert back == card
    # an app type the default conversion does not know is not sent to the model
    assert convert_to_llm([card, UserMessage(content="x")])[0].role == "user"
    assert len(convert_to_llm([card])) == 0


def test_register_message_type_rejects_llm_roles(registry: None) -> None:
    for role in ("user", "assistant", "toolResult"):
        with pytest.raises(ValueError, match="reserved"):
            register_message_type(role, TodoCard.from_json_dict)


def test_malformed_app_message_is_a_value_error(registry: None) -> None:
    register_message_type("todoCard", TodoCard.from_json_dict)
    with pytest.raises(ValueError, match="malformed todoCard"):
        agent_message_from_json({"role": "todoCard"})  # no items: KeyError inside the decoder


# --- convert_to_llm ------------------------------------------------------------------


def only_user_text(message: AgentMessage) -> str:
    converted = convert_to_llm([message])
    assert len(converted) == 1
    user = converted[0]
    assert isinstance(user, UserMessage)
    assert user.timestamp == message.timestamp
    return user.text()


def test_compaction_summary_prefix() -> None:
    message = CompactionSummaryMessage(summary="Goal: X.\nDone: Y.", tokens_before=5, timestamp=11)
    assert only_user_text(message) == (
        "The conversation history before this point was compacted into the following summary:\n\n"
        "<summary>\nGoal: X.\nDone: Y.\n</summary>"
    )


def test_branch_summary_prefix() -> None:
    message = BranchSummaryMessage(summary="Tried Z.", from_id="e1", timestamp=12)
    assert only_user_text(message) == (
        "The following is a summary of a branch that this conversation came back from:\n\n"
        "<summary>\nTried Z.\n</summary>"
    )


def test_bash_execution_success() -> None:
    message = BashExecutionMessage(command="ls -la", output="a.txt\nb.txt", exit_code=0, timestamp=13)
    assert only_user_text(message) == "Ran `ls -la`\n```\na.txt\nb.txt\n```"


def test_bash_execution_exit_code() -> None:
    message = BashExecutionMessage(command="pytest", output="1 failed", exit_code=1)
    assert only_user_text(message) == "Ran `pytest`\n```\n1 failed\n```\n\nCommand exited with code 1"


def test_bash_execution_cancelled() -> None:
    message = BashExecutionMessage(command="sleep 99", output="partial", exit_code=None, cancelled=True)
    assert only_user_text(message) == "Ran `sleep 99`\n```\npartial\n```\n\n(command cancelled)"


def test_bash_execution_truncated_with_path() -> None:
    message = BashExecutionMessage(
        command="cat big.log", output="...last lines", exit_code=0, truncated=True, full_output_path="/tmp/full.log"
    )
    assert only_user_text(message) == (
        "Ran `cat big.log`\n```\n...last lines\n```\n\n[Output truncated. Full output: /tmp/full.log]"
    )


def test_bash_execution_no_output() -> None:
    assert only_user_text(BashExecutionMessage(command="true", output="", exit_code=0)) == "Ran `true`\n(no output)"


def test_bash_execution_excluded_from_context() -> None:
    message = BashExecutionMessage(command="secret", output="token", exit_code=0, exclude_from_context=True)
    assert convert_to_llm([message]) == []


def test_ui_notes_are_dropped() -> None:
    assert convert_to_llm([UINote(text="shown to the user only")]) == []


def test_extension_message_becomes_user_message() -> None:
    image = ImageContent(data="aGk=", mime_type="image/png")
    blocks = convert_to_llm([ExtensionMessage(custom_type="card", content=[TextContent(text="t"), image])])
    assert isinstance(blocks[0], UserMessage)
    assert blocks[0].content == [TextContent(text="t"), image]
    assert only_user_text(ExtensionMessage(custom_type="card", content="as string", display=False)) == "as string"


def test_llm_messages_pass_through_as_the_same_objects() -> None:
    user = UserMessage(content="q")
    assistant = AssistantMessage(
        api="faux", provider="faux", model="m", content=[ToolCall(id="c1", name="read", arguments={})]
    )
    result = ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="r")])
    note = UINote(text="hidden")
    summary = CompactionSummaryMessage(summary="s")
    converted = convert_to_llm([summary, user, note, assistant, result])
    assert len(converted) == 4
    assert converted[1] is user
    assert converted[2] is assistant
    assert converted[3] is result
    assert isinstance(converted[0], UserMessage)


def test_order_is_kept_across_kinds() -> None:
    mixed: list[AgentMessage] = [
        UserMessage(content="1"),
        BashExecutionMessage(command="c", output="2"),
        UINote(text="skip"),
        BranchSummaryMessage(summary="3"),
        BashExecutionMessage(command="x", output="skip", exclude_from_context=True),
        ExtensionMessage(custom_type="t", content="4"),
    ]
    texts = [m.text() for m in convert_to_llm(mixed) if isinstance(m, UserMessage)]
    assert texts[0] == "1"
    assert texts[1].startswith("Ran `c`")
    assert "<summary>\n3\n</summary>" in texts[2]
    assert texts[3] == "4"
    assert len(texts) == 4
