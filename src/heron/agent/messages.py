"""The agent's own message list: LLM messages plus application-defined kinds.

The agent keeps more than the model may see - a command the user ran, a summary of
compacted history, an extension's card, a note for the UI. Each kind is a class with a
``role`` and a JSON codec, registered by role so sessions can store and reload it.
``convert_to_llm`` later decides what of it the model sees: visibility is decided in the
message layer, never by editing the prompt (docs/architecture.md, "Principles").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import compress
from operator import not_
from typing import Any, Protocol, runtime_checkable

from heron.ai.types import (
    JSON,
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ToolResultMessage,
    UserMessage,
    block_from_json,
    message_from_json,
    now_ms,
)


@runtime_checkable
class CustomMessage(Protocol):
    """What an application-defined message type provides."""

    @property
    def role(self) -> str: ...

    @property
    def timestamp(self) -> int: ...

    def to_json_dict(self) -> JSON: ...


AgentMessage = UserMessage | AssistantMessage | ToolResultMessage | CustomMessage

_CUSTOM: dict[str, Callable[[JSON], CustomMessage]] = {}
LLM_ROLES = frozenset({"user", "assistant", "toolResult"})


def register_message_type(role: str, decode: Callable[[JSON], CustomMessage]) -> None:
    """Teach the agent (and so the session store) to decode messages with ``role``."""
    if role in LLM_ROLES:
        raise ValueError(f"role {role!r} is reserved for LLM messages")
    _CUSTOM[role] = decode


def agent_message_from_json(data: JSON) -> AgentMessage:
    """Decode any agent message. An unknown role is kept verbatim (:class:`OpaqueMessage`)
    rather than rejected, so a session written by a newer heron round-trips."""
    if not isinstance(data, dict):
        raise ValueError("a message must be a JSON object")
    role = data.get("role")
    if role in LLM_ROLES:
        return message_from_json(data)
    decode = _CUSTOM.get(role) if isinstance(role, str) else None
    if decode is None:
        return OpaqueMessage(raw=dict(data))
    try:
        return decode(data)
    except (TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"malformed {role} message: {exc}") from exc


def _content_from_json(raw: Any) -> str | list[TextContent | ImageContent]:
    if isinstance(raw, str):
        return raw
    blocks: list[TextContent | ImageContent] = []
    for item in raw or []:
        block = block_from_json(item)
        if isinstance(block, TextContent | ImageContent):
            blocks.append(block)
    return blocks


def _content_to_json(content: str | list[TextContent | ImageContent]) -> Any:
    return content if isinstance(content, str) else [b.to_json_dict() for b in content]


def _extra(data: JSON, known: frozenset[str]) -> JSON:
    return {k: v for k, v in data.items() if k not in known}


@dataclass(slots=True, kw_only=True)
class OpaqueMessage:
    """A message of a role this heron does not know: stored and shown, never sent."""

    raw: JSON

    @property
    def role(self) -> str:
        return str(self.raw.get("role"))

    @property
    def timestamp(self) -> int:
        value = self.raw.get("timestamp")
        return value if isinstance(value, int) else 0

    def to_json_dict(self) -> JSON:
        return dict(self.raw)


@dataclass(slots=True, kw_only=True)
class BashExecutionMessage:
    """A command the user ran themselves (``!cmd``); ``exclude_from_context`` for ``!!cmd``."""

    command: str
    output: str
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    exclude_from_context: bool = False
    timestamp: int = field(default_factory=now_ms)
    extra: JSON = field(default_factory=dict, repr=False, compare=False)
    role: str = "bashExecution"

    _KNOWN = frozenset(
        {
            "role",
            "command",
            "output",
            "exitCode",
            "cancelled",
            "truncated",
            "fullOutputPath",
            "excludeFromContext",
            "timestamp",
        }
    )

    def to_json_dict(self) -> JSON:
        out: JSON = {
            **self.extra,
            "role": self.role,
            "command": self.command,
            "output": self.output,
            "exitCode": self.exit_code,
            "cancelled": self.cancelled,
            "truncated": self.truncated,
            "timestamp": self.timestamp,
        }
        if self.full_output_path is not None:
            out["fullOutputPath"] = self.full_output_path
        if self.exclude_from_context:
            out["excludeFromContext"] = True
        return out

    @classmethod
    def from_json_dict(cls, data: JSON) -> BashExecutionMessage:
        return cls(
            command=str(data.get("command", "")),
            output=str(data.get("output", "")),
            exit_code=data.get("exitCode"),
            cancelled=bool(data.get("cancelled", False)),
            truncated=bool(data.get("truncated", False)),
            full_output_path=data.get("fullOutputPath"),
            exclude_from_context=bool(data.get("excludeFromContext", False)),
            timestamp=data.get("timestamp") or 0,
            extra=_extra(data, cls._KNOWN),
        )


@dataclass(slots=True, kw_only=True)
class ExtensionMessage:
    """An extension's message (pi's ``custom`` role): in context as a user message,
    shown in the UI only when ``display`` is true."""

    custom_type: str
    content: str | list[TextContent | ImageContent]
    display: bool = True
    details: Any = None
    timestamp: int = field(default_factory=now_ms)
    extra: JSON = field(default_factory=dict, repr=False, compare=False)
    role: str = "custom"

    _KNOWN = frozenset({"role", "customType", "content", "display", "details", "timestamp"})

    def to_json_dict(self) -> JSON:
        out: JSON = {
            **self.extra,
            "role": self.role,
            "customType": self.custom_type,
            "content": _content_to_json(self.content),
            "display": self.display,
            "timestamp": self.timestamp,
        }
        if self.details is not None:
            out["details"] = self.details
        return out

    @classmethod
    def from_json_dict(cls, data: JSON) -> ExtensionMessage:
        return cls(
            custom_type=str(data.get("customType", "")),
            content=_content_from_json(data.get("content", "")),
            display=bool(data.get("display", True)),
            details=data.get("details"),
            timestamp=data.get("timestamp") or 0,
            extra=_extra(data, cls._KNOWN),
        )


@dataclass(slots=True, kw_only=True)
class BranchSummaryMessage:
    """What a branch left behind said, summarised, when the session moved to another branch."""

    summary: str
    from_id: str = ""
    timestamp: int = field(default_factory=now_ms)
    extra: JSON = field(default_factory=dict, repr=False, compare=False)
    role: str = "branchSummary"

    _KNOWN = frozenset({"role", "summary", "fromId", "timestamp"})

    def to_json_dict(self) -> JSON:
        return {
            **self.extra,
            "role": self.role,
            "summary": self.summary,
            "fromId": self.from_id,
            "timestamp": self.timestamp,
        }

    @classmethod
    def from_json_dict(cls, data: JSON) -> BranchSummaryMessage:
        return cls(
            summary=str(data.get("summary", "")),
            from_id=str(data.get("fromId", "")),
            timestamp=data.get("timestamp") or 0,
            extra=_extra(data, cls._KNOWN),
        )


@dataclass(slots=True, kw_only=True)
class CompactionSummaryMessage:
    """The summary that stands for the history a compaction took out of the context."""

    summary: str
    tokens_before: int = 0
    timestamp: int = field(default_factory=now_ms)
    extra: JSON = field(default_factory=dict, repr=False, compare=False)
    role: str = "compactionSummary"

    _KNOWN = frozenset({"role", "summary", "tokensBefore", "timestamp"})

    def to_json_dict(self) -> JSON:
        return {
            **self.extra,
            "role": self.role,
            "summary": self.summary,
            "tokensBefore": self.tokens_before,
            "timestamp": self.timestamp,
        }

    @classmethod
    def from_json_dict(cls, data: JSON) -> CompactionSummaryMessage:
        return cls(
            summary=str(data.get("summary", "")),
            tokens_before=int(data.get("tokensBefore") or 0),
            timestamp=data.get("timestamp") or 0,
            extra=_extra(data, cls._KNOWN),
        )


@dataclass(slots=True, kw_only=True)
class UINote:
    """Shown to the user, never to the model (progress cards, warnings, audit marks)."""

    text: str
    level: str = "info"
    data: Any = None
    timestamp: int = field(default_factory=now_ms)
    extra: JSON = field(default_factory=dict, repr=False, compare=False)
    role: str = "uiNote"

    _KNOWN = frozenset({"role", "text", "level", "data", "timestamp"})

    def to_json_dict(self) -> JSON:
        out: JSON = {
            **self.extra,
            "role": self.role,
            "text": self.text,
            "level": self.level,
            "timestamp": self.timestamp,
        }
        if self.data is not None:
            out["data"] = self.data
        return out

    @classmethod
    def from_json_dict(cls, data: JSON) -> UINote:
        return cls(
            text=str(data.get("text", "")),
            level=str(data.get("level", "info")),
            data=data.get("data"),
            timestamp=data.get("timestamp") or 0,
            extra=_extra(data, cls._KNOWN),
        )


register_message_type("bashExecution", BashExecutionMessage.from_json_dict)
register_message_type("custom", ExtensionMessage.from_json_dict)
register_message_type("branchSummary", BranchSummaryMessage.from_json_dict)
register_message_type("compactionSummary", CompactionSummaryMessage.from_json_dict)
register_message_type("uiNote", UINote.from_json_dict)


# --- what the model sees ------------------------------------------------------

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "\n</summary>"


def bash_execution_text(message: BashExecutionMessage) -> str:
    """How a user-run command reads to the model: the command, then its fenced output."""
    text = f"Ran `{message.command}`\n"
    text += f"```\n{message.output}\n```" if message.output else "(no output)"
    if message.cancelled:
        text += "\n\n(command cancelled)"
    elif message.exit_code not in (None, 0):
        text += f"\n\nCommand exited with code {message.exit_code}"
    if message.truncated and message.full_output_path:
        text += f"\n\n[Output truncated. Full output: {message.full_output_path}]"
    return text


def _compaction_to_llm(message: CompactionSummaryMessage) -> Message:
    text = COMPACTION_SUMMARY_PREFIX + message.summary + COMPACTION_SUMMARY_SUFFIX
    return UserMessage(content=[TextContent(text=text)], timestamp=message.timestamp)


def _branch_to_llm(message: BranchSummaryMessage) -> Message:
    text = BRANCH_SUMMARY_PREFIX + message.summary + BRANCH_SUMMARY_SUFFIX
    return UserMessage(content=[TextContent(text=text)], timestamp=message.timestamp)


def _bash_to_llm(message: BashExecutionMessage) -> Message | None:
    if message.exclude_from_context:
        return None
    return UserMessage(content=[TextContent(text=bash_execution_text(message))], timestamp=message.timestamp)


def _extension_to_llm(message: ExtensionMessage) -> Message:
    content = message.content
    blocks: list[TextContent | ImageContent] = (
        [TextContent(text=content)] if isinstance(content, str) else list(content)
    )
    return UserMessage(content=blocks, timestamp=message.timestamp)


def _hidden(message: Any) -> None:
    return None


# Exact type -> conversion; one dict lookup per message keeps the pipeline cheap at
# 10,000 messages. Types not listed (UI notes, opaque messages) are not sent.
_TO_LLM: dict[type, Callable[[Any], Message | None]] = {
    CompactionSummaryMessage: _compaction_to_llm,
    BranchSummaryMessage: _branch_to_llm,
    BashExecutionMessage: _bash_to_llm,
    ExtensionMessage: _extension_to_llm,
    UINote: _hidden,
    OpaqueMessage: _hidden,
}
_LLM_TYPES = frozenset({UserMessage, AssistantMessage, ToolResultMessage})
# Conversions of custom messages, reused while the same object is in the list: the
# next request then carries the very same user message (cheap, and byte-stable).
# Keyed by id() with the original kept alongside, so a recycled id never matches.
_converted: dict[int, tuple[Any, Message | None]] = {}
_CACHE_LIMIT = 50_000


def convert_to_llm(messages: list[AgentMessage]) -> list[Message]:
    """The default visibility rule: LLM messages pass through untouched (same objects,
    so this is cheap and prefix-stable), summaries and user-run commands become user
    messages, UI notes and unknown kinds are dropped.

    Runs before every request over the whole list, so the common case - long runs of
    plain LLM messages - is handled with C-level list operations; only the custom
    messages are visited one by one.
    """
    is_llm = list(map(_LLM_TYPES.__contains__, map(type, messages)))
    if all(is_llm):
        return list(messages)  # type: ignore[arg-type]
    out: list[Message] = []
    previous = 0
    for index in compress(range(len(is_llm)), map(not_, is_llm)):
        out.extend(messages[previous:index])  # type: ignore[arg-type]
        previous = index + 1
        converted = _convert_custom(messages[index])
        if converted is not None:
            out.append(converted)
    out.extend(messages[previous:])  # type: ignore[arg-type]
    return out


def _convert_custom(message: AgentMessage) -> Message | None:
    convert = _TO_LLM.get(type(message))
    if convert is None:
        return None
    cached = _converted.get(id(message))
    if cached is not None and cached[0] is message:
        return cached[1]
    converted = convert(message)
    if len(_converted) >= _CACHE_LIMIT:
        _converted.clear()
    _converted[id(message)] = (message, converted)
    return converted
