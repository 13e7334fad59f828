"""Agent events (docs/agent.md, "Events"). Every UI, log and persistence step subscribes to these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from heron.ai.events import AssistantEvent, event_to_json
from heron.ai.types import AssistantMessage, ToolResultMessage

if TYPE_CHECKING:
    from heron.agent.messages import AgentMessage
    from heron.agent.tools import ToolResult


@dataclass(slots=True, kw_only=True)
class AgentStartEvent:
    """A run of the agent began."""

    type: Literal["agent_start"] = "agent_start"


@dataclass(slots=True, kw_only=True)
class AgentEndEvent:
    """``messages``: everything the run added, in order."""

    messages: list[AgentMessage]
    type: Literal["agent_end"] = "agent_end"


@dataclass(slots=True, kw_only=True)
class TurnStartEvent:
    """A turn began: one model call and the tool calls of its answer."""

    type: Literal["turn_start"] = "turn_start"


@dataclass(slots=True, kw_only=True)
class TurnEndEvent:
    """A turn ended: the model's answer and the results of its tool calls."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage] = field(default_factory=list)
    type: Literal["turn_end"] = "turn_end"


@dataclass(slots=True, kw_only=True)
class MessageStartEvent:
    """A message began (an answer starts streaming; others start and end at once)."""

    message: AgentMessage
    type: Literal["message_start"] = "message_start"


@dataclass(slots=True, kw_only=True)
class MessageUpdateEvent:
    """Only for assistant messages while they stream; ``event`` is the raw stream event."""

    message: AssistantMessage
    event: AssistantEvent
    type: Literal["message_update"] = "message_update"


@dataclass(slots=True, kw_only=True)
class MessageEndEvent:
    """The message is final: persist it now, so a crash loses at most the message in flight
    (docs/sessions.md, "Durability")."""

    message: AgentMessage
    type: Literal["message_end"] = "message_end"


@dataclass(slots=True, kw_only=True)
class ToolExecutionStartEvent:
    """A tool call's execution began, with the arguments the model sent."""

    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    type: Literal["tool_execution_start"] = "tool_execution_start"


@dataclass(slots=True, kw_only=True)
class ToolExecutionUpdateEvent:
    """A running tool reported partial output."""

    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    partial_result: ToolResult
    type: Literal["tool_execution_update"] = "tool_execution_update"


@dataclass(slots=True, kw_only=True)
class ToolExecutionEndEvent:
    """A tool call's execution ended with its result."""

    tool_call_id: str
    tool_name: str
    result: ToolResult
    is_error: bool
    type: Literal["tool_execution_end"] = "tool_execution_end"


AgentEvent = (
    AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
)


def agent_event_to_json(event: Any) -> dict[str, Any]:
    """JSON-ready form of an agent event (json mode, rpc mode, logs)."""
    out: dict[str, Any] = {}
    for name in event.__dataclass_fields__:
        out[name] = _jsonable(getattr(event, name))
    return out


def _jsonable(value: Any) -> Any:
    if hasattr(value, "to_json_dict"):
        return value.to_json_dict()
    if hasattr(value, "__dataclass_fields__") and hasattr(value, "partial"):
        return event_to_json(value)
    if hasattr(value, "__dataclass_fields__"):
        return {name: _jsonable(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    return value
