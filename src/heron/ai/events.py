"""Events of one assistant-message stream.

Plain slotted dataclasses rather than pydantic models: a fast model streams tens of
thousands of deltas per answer and each event is built once, read once, and dropped.
Every event carries ``partial``, the message as it stands, so a consumer that missed
events can still render the current state.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

from heron.ai.types import AssistantMessage, StopReason, TextContent, ThinkingContent, ToolCall


@dataclass(slots=True, kw_only=True)
class StartEvent:
    """The stream began; ``partial`` is the message that the following events fill in."""

    partial: AssistantMessage
    type: Literal["start"] = "start"


@dataclass(slots=True, kw_only=True)
class TextStartEvent:
    """A text block opened at ``content_index``."""

    content_index: int
    partial: AssistantMessage
    type: Literal["text_start"] = "text_start"


@dataclass(slots=True, kw_only=True)
class TextDeltaEvent:
    """More text for the block at ``content_index``."""

    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["text_delta"] = "text_delta"


@dataclass(slots=True, kw_only=True)
class TextEndEvent:
    """The text block at ``content_index`` is complete."""

    content_index: int
    content: TextContent
    partial: AssistantMessage
    type: Literal["text_end"] = "text_end"


@dataclass(slots=True, kw_only=True)
class ThinkingStartEvent:
    """A thinking block opened at ``content_index``."""

    content_index: int
    partial: AssistantMessage
    type: Literal["thinking_start"] = "thinking_start"


@dataclass(slots=True, kw_only=True)
class ThinkingDeltaEvent:
    """More thinking for the block at ``content_index``."""

    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["thinking_delta"] = "thinking_delta"


@dataclass(slots=True, kw_only=True)
class ThinkingEndEvent:
    """The thinking block at ``content_index`` is complete."""

    content_index: int
    content: ThinkingContent
    partial: AssistantMessage
    type: Literal["thinking_end"] = "thinking_end"


@dataclass(slots=True, kw_only=True)
class ToolCallStartEvent:
    """A tool call opened at ``content_index``; its arguments follow as deltas."""

    content_index: int
    partial: AssistantMessage
    type: Literal["toolcall_start"] = "toolcall_start"


@dataclass(slots=True, kw_only=True)
class ToolCallDeltaEvent:
    """``delta`` is the raw argument text that arrived; the tool call inside ``partial``
    already holds the arguments parsed from everything received so far."""

    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["toolcall_delta"] = "toolcall_delta"


@dataclass(slots=True, kw_only=True)
class ToolCallEndEvent:
    """The tool call at ``content_index`` is complete, its arguments parsed."""

    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage
    type: Literal["toolcall_end"] = "toolcall_end"


@dataclass(slots=True, kw_only=True)
class DoneEvent:
    """The stream ended normally; ``message`` is the whole answer."""

    reason: StopReason
    message: AssistantMessage
    type: Literal["done"] = "done"


@dataclass(slots=True, kw_only=True)
class ErrorEvent:
    """Terminal failure. ``error`` is the assistant message with ``stop_reason`` error or
    aborted, its ``error_message``, and whatever content and usage had arrived."""

    reason: StopReason
    error: AssistantMessage
    kind: str = "unknown"  # an overflow.ErrorKind value
    status: int | None = None
    retry_after: float | None = None
    type: Literal["error"] = "error"


@dataclass(slots=True, kw_only=True)
class RetryEvent:
    """Not part of the stream: passed to ``on_retry`` before heron waits and tries again."""

    attempt: int
    max_retries: int
    delay: float
    error_message: str
    kind: str
    extra: dict[str, Any] = field(default_factory=dict)
    # Ready to show: what failed, where, and when heron tries again, e.g.
    # "500 api_error: Internal server error (http://host); retrying in 4 s (2/3)".
    message: str = ""


AssistantEvent = (
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent
)


def event_to_json(event: AssistantEvent) -> dict[str, Any]:
    """A JSON-ready dict of an event, messages in their on-disk camelCase form."""
    out: dict[str, Any] = {}
    for f in fields(event):
        value = getattr(event, f.name)
        out[f.name] = value.to_json_dict() if hasattr(value, "to_json_dict") else value
    return out
