"""The one message model every provider speaks.

Plain slotted dataclasses with a small hand-written codec rather than pydantic models:
``import heron.ai`` must stay cheap (no pydantic, no asyncio at import), and a stream
mutates these objects once per delta, so attribute writes must cost nothing.

On disk (session files) they use pi's camelCase JSON. Fields a class does not know are
kept in ``extra`` and written back, so a session written by pi or a newer heron loses
nothing when this heron rewrites it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

JSON = dict[str, Any]


def now_ms() -> int:
    return int(time.time() * 1000)


def _pop_extra(data: JSON, known: frozenset[str]) -> JSON:
    return {k: v for k, v in data.items() if k not in known}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _float_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _put(out: JSON, key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


# --- content blocks ---------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class TextContent:
    """A block of text; ``text_signature`` is the provider's id for it, sent back unchanged."""

    text: str
    text_signature: str | None = None
    extra: JSON = field(default_factory=dict, repr=False, compare=False)
    type: Literal["text"] = "text"

    _KNOWN = frozenset({"type", "text", "textSignature"})

    def to_json_dict(self) -> JSON:
        out: JSON = {**self.extra, "type": "text", "text": self.text}
        _put(out, "textSignature", self.text_signature)
        return out

    @classmethod
    def from_json_dict(cls, data: JSON) -> TextContent:
        return cls(
            text=data.get("text") or "",
            text_signature=data.get("textSignature"),
            extra=_pop_extra(data, cls._KNOWN),
        )


@dataclass(slots=True, kw_only=True)
class ThinkingContent:
    """Model reasoning. ``thinking_signature`` is the provider's opaque token that must be
    replayed to the same model; ``redacted`` marks encrypted reasoning with no readable
    text (the signature then holds the encrypted payload)."""

    thinking: str
    thinking_signature: str | None = None
    redacted: bool | None = None
    extra: JSON = field(default_factory=dict, repr=False, compare=False)
    type: Literal["thinking"] = "thinking"

    _KNOWN = frozenset({"type", "thinking", "thinkingSignature", "redacted"})

    def to_json_dict(self) -> JSON:
        out: JSON = {**self.extra, "type": "thinking", "thinking": self.thinking}
        _put(out, "thinkingSignature", self.thinking_signature)
        _put(out, "redacted", self.redacted)
        return out

    @classmethod
    def from_json_dict(cls, data: JSON) -> ThinkingContent:
        return cls(
            thinking=data.get("thinking") or "",
            thinking_signature=data.get("thinkingSignature"),
            redacted=data.get("redacted"),
            extra=_pop_extra(data, cls._KNOWN),
        )


@dataclass(slots=True, kw_only=True)
class ImageContent:
    data: str  # base64, no data: prefix
    mime_type: str
    extra: JSON = field(default_factory=dict, repr=False, compare=False)
    type: Literal["image"] = "image"

    _KNOWN = frozenset({"type", "data", "mimeType"})

    def to_json_dict(self) -> JSON:
        return {**self.extra, "type": "image", "data": self.data, "mimeType": self.mime_type}

    @classmethod
    def from_json_dict(cls, data: JSON) -> ImageContent:
        return cls(
            data=data.get("data") or "",
            mime_type=data.get("mimeType") or "image/png",
            extra=_pop_extra(data, cls._KNOWN),
        )


@dataclass(slots=True, kw_only=True)
class ToolCall:
    """A tool call of the model; ``raw_arguments`` keeps what did not parse as a JSON object."""

    id: str
    name: str
    arguments: JSON = field(default_factory=dict)
    thought_signature: str | None = None  # Gemini attaches reasoning state to calls
    # Set only when the streamed argument text was not a JSON object: the text as sent,
    # so the error shown to the model (and the session) keeps it.
    raw_arguments: str | None = None
    extra: JSON = field(default_factory=dict, repr=False, compare=False)
    type: Literal["toolCall"] = "toolCall"

    _KNOWN = frozenset({"type", "id", "name", "arguments", "thoughtSignature", "rawArguments"})

    def to_json_dict(self) -> JSON:
        out: JSON = {**self.extra, "type": "toolCall", "id": self.id, "name": self.name, "arguments": self.arguments}
        _put(out, "thoughtSignature", self.thought_signature)
        _put(out, "rawArguments", self.raw_arguments)
        return out

    @classmethod
    def from_json_dict(cls, data: JSON) -> ToolCall:
        arguments = data.get("arguments")
        return cls(
            id=data.get("id") or "",
            name=data.get("name") or "",
            arguments=arguments if isinstance(arguments, dict) else {},
            thought_signature=data.get("thoughtSignature"),
            raw_arguments=data.get("rawArguments"),
            extra=_pop_extra(data, cls._KNOWN),
        )


@dataclass(slots=True, kw_only=True)
class NativeCompaction:
    """A provider's own compaction of the conversation, returned inside a reply: Anthropic's
    ``compaction`` block (``content`` is its summary) or OpenAI Responses' ``compaction``
    item (``content`` is its ``encrypted_content``, ``item_id`` its id). Opaque to heron:
    it is sent back, in place of everything before the reply that carries it, only to the
    api and provider that wrote it (docs/context.md, "Provider-native compaction")."""

    api: str
    provider: str
    content: str
    item_id: str | None = None

    def matches(self, model: Model) -> bool:
        """Whether ``model`` is served by the api and provider that can read this block."""
        return self.api == model.api and self.provider == model.provider

    def to_json_dict(self) -> JSON:
        out: JSON = {"api": self.api, "provider": self.provider, "content": self.content}
        _put(out, "id", self.item_id)
        return out

    @classmethod
    def from_json_dict(cls, data: Any) -> NativeCompaction | None:
        """None for anything malformed (a hand-edited file): the reply then covers nothing."""
        if not isinstance(data, dict):
            return None
        api, provider, content = data.get("api"), data.get("provider"), data.get("content")
        if not (isinstance(api, str) and api and isinstance(provider, str) and provider):
            return None
        if not isinstance(content, str) or not content:
            return None
        return cls(api=api, provider=provider, content=content, item_id=_str_or_none(data.get("id")))


UserBlock = TextContent | ImageContent
AssistantBlock = TextContent | ThinkingContent | ToolCall
ContentBlock = TextContent | ThinkingContent | ImageContent | ToolCall

_BLOCKS: dict[str, Any] = {
    "text": TextContent,
    "thinking": ThinkingContent,
    "image": ImageContent,
    "toolCall": ToolCall,
}


def block_from_json(data: JSON) -> ContentBlock:
    kind = data.get("type")
    cls = _BLOCKS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown content block type {kind!r}")
    block: ContentBlock = cls.from_json_dict(data)
    return block


def _blocks(raw: Any, allowed: tuple[type, ...]) -> list[Any]:
    if not isinstance(raw, list):
        raise ValueError("content must be a list of blocks")
    out = []
    for item in raw:
        block = block_from_json(item)
        if not isinstance(block, allowed):
            raise ValueError(f"content block {block.type!r} is not allowed here")
        out.append(block)
    return out


# --- usage ------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class Cost:
    """Dollars."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0

    def to_json_dict(self) -> JSON:
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "total": self.total,
        }

    @classmethod
    def from_json_dict(cls, data: JSON) -> Cost:
        return cls(
            input=data.get("input", 0.0),
            output=data.get("output", 0.0),
            cache_read=data.get("cacheRead", 0.0),
            cache_write=data.get("cacheWrite", 0.0),
            total=data.get("total", 0.0),
        )


@dataclass(slots=True, kw_only=True)
class Usage:
    """Token counts as the provider reported them. ``input`` excludes cached tokens, which
    are in ``cache_read`` / ``cache_write``, so the four add up to the request's size."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = field(default_factory=Cost)

    def context_tokens(self) -> int:
        """Tokens the request and its answer occupy in the window."""
        return self.input + self.output + self.cache_read + self.cache_write

    def to_json_dict(self) -> JSON:
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "totalTokens": self.total_tokens,
            "cost": self.cost.to_json_dict(),
        }

    @classmethod
    def from_json_dict(cls, data: JSON) -> Usage:
        input_tokens = data.get("input", 0)
        output = data.get("output", 0)
        cache_read = data.get("cacheRead", 0)
        cache_write = data.get("cacheWrite", 0)
        return cls(
            input=input_tokens,
            output=output,
            cache_read=cache_read,
            cache_write=cache_write,
            total_tokens=data.get("totalTokens", input_tokens + output + cache_read + cache_write),
            cost=Cost.from_json_dict(data.get("cost") or {}),
        )


class StopReason(StrEnum):
    """Why the model stopped. Values are pi's on-disk spelling (``toolUse``)."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_USE = "toolUse"
    ERROR = "error"
    ABORTED = "aborted"


# --- messages ---------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class UserMessage:
    """What the user (or heron on the user's behalf) says: text, or text and images."""

    content: str | list[UserBlock]
    timestamp: int = field(default_factory=now_ms)
    extra: JSON = field(default_factory=dict, repr=False, compare=False)
    role: Literal["user"] = "user"

    _KNOWN = frozenset({"role", "content", "timestamp"})

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    def to_json_dict(self) -> JSON:
        content: Any = self.content if isinstance(self.content, str) else [b.to_json_dict() for b in self.content]
        return {**self.extra, "role": "user", "content": content, "timestamp": self.timestamp}

    @classmethod
    def from_json_dict(cls, data: JSON) -> UserMessage:
        raw = data.get("content", "")
        content = raw if isinstance(raw, str) else _blocks(raw, (TextContent, ImageContent))
        return cls(content=content, timestamp=data.get("timestamp") or 0, extra=_pop_extra(data, cls._KNOWN))


@dataclass(slots=True, kw_only=True)
class AssistantMessage:
    """One answer of the model: its blocks, usage, stop reason, and where it came from."""

    api: str
    provider: str
    model: str
    content: list[AssistantBlock] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason = StopReason.STOP
    error_message: str | None = None
    # Errors as data (set with stop_reason error/aborted): the kind is an
    # ``heron.ai.overflow.ErrorKind`` value, so callers decide by kind, never by the text.
    error_kind: str | None = None
    error_status: int | None = None
    retry_after: float | None = None
    response_id: str | None = None
    timestamp: int = field(default_factory=now_ms)
    # The provider compacted the conversation while answering (covers everything before).
    native_compaction: NativeCompaction | None = None
    # Server-side context edits the provider reports it applied (Anthropic's
    # ``context_management.applied_edits``), as reported.
    context_edits: list[JSON] | None = None
    # The server rejected the request's ``context_management`` fields; this answer came
    # from the same request sent again without them (the error text).
    context_management_error: str | None = None
    extra: JSON = field(default_factory=dict, repr=False, compare=False)
    role: Literal["assistant"] = "assistant"

    _KNOWN = frozenset(
        {
            "role",
            "content",
            "api",
            "provider",
            "model",
            "usage",
            "stopReason",
            "errorMessage",
            "responseId",
            "timestamp",
            "errorKind",
            "errorStatus",
            "retryAfter",
            "nativeCompaction",
            "contextEdits",
            "contextManagementError",
        }
    )

    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    def tool_calls(self) -> list[ToolCall]:
        return [b for b in self.content if isinstance(b, ToolCall)]

    def to_json_dict(self) -> JSON:
        out: JSON = {
            **self.extra,
            "role": "assistant",
            "content": [b.to_json_dict() for b in self.content],
            "api": self.api,
            "provider": self.provider,
            "model": self.model,
            "usage": self.usage.to_json_dict(),
            "stopReason": str(self.stop_reason),
            "timestamp": self.timestamp,
        }
        _put(out, "errorMessage", self.error_message)
        _put(out, "errorKind", self.error_kind)
        _put(out, "errorStatus", self.error_status)
        _put(out, "retryAfter", self.retry_after)
        _put(out, "responseId", self.response_id)
        if self.native_compaction is not None:
            out["nativeCompaction"] = self.native_compaction.to_json_dict()
        _put(out, "contextEdits", self.context_edits)
        _put(out, "contextManagementError", self.context_management_error)
        return out

    @classmethod
    def from_json_dict(cls, data: JSON) -> AssistantMessage:
        reason = data.get("stopReason", "stop")
        try:
            stop_reason = StopReason(reason)
        except ValueError:
            stop_reason = StopReason.ERROR
        return cls(
            content=_blocks(data.get("content") or [], (TextContent, ThinkingContent, ToolCall)),
            api=data.get("api") or "",
            provider=data.get("provider") or "",
            model=data.get("model") or "",
            usage=Usage.from_json_dict(data.get("usage") or {}),
            stop_reason=stop_reason,
            error_message=data.get("errorMessage"),
            error_kind=_str_or_none(data.get("errorKind")),
            error_status=data.get("errorStatus") if isinstance(data.get("errorStatus"), int) else None,
            retry_after=_float_or_none(data.get("retryAfter")),
            response_id=data.get("responseId"),
            timestamp=data.get("timestamp") or 0,
            native_compaction=NativeCompaction.from_json_dict(data.get("nativeCompaction")),
            context_edits=_edits(data.get("contextEdits")),
            context_management_error=_str_or_none(data.get("contextManagementError")),
            extra=_pop_extra(data, cls._KNOWN),
        )


def _edits(raw: Any) -> list[JSON] | None:
    if not isinstance(raw, list):
        return None
    return [item for item in raw if isinstance(item, dict)] or None


@dataclass(slots=True, kw_only=True)
class ToolResultMessage:
    """A tool's result, sent back to the model as the answer to one tool call."""

    tool_call_id: str
    tool_name: str
    content: list[UserBlock] = field(default_factory=list)
    details: Any = None  # for the UI and the session; never sent to the model
    is_error: bool = False
    timestamp: int = field(default_factory=now_ms)
    extra: JSON = field(default_factory=dict, repr=False, compare=False)
    role: Literal["toolResult"] = "toolResult"

    _KNOWN = frozenset({"role", "toolCallId", "toolName", "content", "details", "isError", "timestamp"})

    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    def to_json_dict(self) -> JSON:
        out: JSON = {
            **self.extra,
            "role": "toolResult",
            "toolCallId": self.tool_call_id,
            "toolName": self.tool_name,
            "content": [b.to_json_dict() for b in self.content],
            "isError": self.is_error,
            "timestamp": self.timestamp,
        }
        _put(out, "details", self.details)
        return out

    @classmethod
    def from_json_dict(cls, data: JSON) -> ToolResultMessage:
        return cls(
            tool_call_id=data.get("toolCallId") or "",
            tool_name=data.get("toolName") or "",
            content=_blocks(data.get("content") or [], (TextContent, ImageContent)),
            details=data.get("details"),
            is_error=bool(data.get("isError", False)),
            timestamp=data.get("timestamp") or 0,
            extra=_pop_extra(data, cls._KNOWN),
        )


Message = UserMessage | AssistantMessage | ToolResultMessage

_MESSAGES: dict[str, Any] = {
    "user": UserMessage,
    "assistant": AssistantMessage,
    "toolResult": ToolResultMessage,
}


def message_from_json(data: JSON) -> Message:
    """Decode an LLM message; raises ``ValueError`` on anything malformed."""
    if not isinstance(data, dict):
        raise ValueError("a message must be a JSON object")
    role = data.get("role")
    cls = _MESSAGES.get(role) if isinstance(role, str) else None
    if cls is None:
        raise ValueError(f"unknown message role {role!r}")
    try:
        message: Message = cls.from_json_dict(data)
    except (TypeError, AttributeError, KeyError) as exc:
        raise ValueError(f"malformed {role} message: {exc}") from exc
    return message


# --- tools, context, model --------------------------------------------------


@dataclass(slots=True, kw_only=True)
class Tool:
    """What the model is told about a tool: the JSON schema of its parameters."""

    name: str
    description: str
    parameters: JSON = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_json_dict(self) -> JSON:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(slots=True, kw_only=True)
class Context:
    system_prompt: str | None = None
    messages: list[Message] = field(default_factory=list)
    tools: list[Tool] | None = None


ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")

InputKind = Literal["text", "image"]


@dataclass(slots=True, kw_only=True)
class ModelCost:
    """Dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_MAX_TOKENS = 16_384
WINDOW_ASSUMED = "assumed"  # Model.window_source of a window nobody configured


@dataclass(slots=True, kw_only=True)
class Model:
    """A model and how to reach it: the wire (``api``), the provider, its window and costs."""

    id: str
    api: str
    provider: str
    name: str = ""
    base_url: str | None = None
    reasoning: bool = False
    input: list[InputKind] = field(default_factory=lambda: ["text"])
    cost: ModelCost = field(default_factory=ModelCost)
    context_window: int = DEFAULT_CONTEXT_WINDOW
    max_tokens: int = DEFAULT_MAX_TOKENS
    headers: dict[str, str] | None = None
    # Quirks of OpenAI-compatible servers (e.g. {"max_tokens_field": "max_tokens"}).
    compat: JSON | None = None
    # Where ``context_window`` came from: "" when it was configured (the catalogue,
    # models.json); ``WINDOW_ASSUMED`` when nobody said (heron's default, worth asking the
    # server); otherwise what told it (``--context-window``, a server's endpoint).
    window_source: str = ""
    # False when ``max_tokens`` is heron's default rather than a configured value: the
    # output cap then stays within a quarter of the window (docs/configuration.md).
    max_tokens_configured: bool = True
    # The model's ``compaction`` entry in models.json ({"native": bool, "serverClearing":
    # bool}): provider-native compaction and server-side clearing for this model alone.
    compaction: JSON | None = None
    server_slots: int | None = None  # requests its server serves at once, when it said (llama.cpp /props)

    @property
    def ref(self) -> str:
        """``provider/id``, the form ``--model`` takes."""
        return f"{self.provider}/{self.id}"

    def supports_images(self) -> bool:
        return "image" in self.input
