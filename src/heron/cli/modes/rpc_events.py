"""heron's session events in the shape pi 1.6's RPC protocol gives them (docs/rpc.md).

pi's clients (its ``RpcClient`` and the editor adapters built on it) read camelCase
fields: ``toolCallId``, ``assistantMessageEvent.contentIndex``, ``toolResults`` and so
on, and events pi names differently (``auto_retry_start``). This module is the one place
that maps heron's events onto those shapes; ``--mode json`` keeps its own form.

heron's own events (``ledger``, ``context_warning``, ``todos``, ``subagent``, and the
rpc server's ``run_end``) are extra event types a pi client ignores; their fields stay
as heron has always written them, so heron's existing clients keep working.
"""

from __future__ import annotations

from typing import Any

from heron.agent.events import (
    AgentEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
)
from heron.agent.tools import ToolResult
from heron.ai.types import AssistantMessage, ToolCall
from heron.cli.events_json import drops_field, event_json, message_stub
from heron.coding.events import (
    CompactionEndEvent,
    CompactionStartEvent,
    RetryEndEvent,
    RetryStartEvent,
    SubagentEvent,
)

# Stream-event fields that pi spells differently (the rest - type, delta - agree).
_STREAM_FIELDS = {"content_index": "contentIndex", "tool_call": "toolCall"}


def tool_result_json(result: ToolResult) -> dict[str, Any]:
    """A tool's result as pi sends it in ``tool_execution_*``: content and details (the
    error flag is a field of the event itself)."""
    return {"content": [block.to_json_dict() for block in result.content], "details": _plain(result.details)}


def assistant_event_json(event: MessageUpdateEvent) -> dict[str, Any]:
    """The stream event of a ``message_update`` without the message so far (only the
    delta: writing the whole message each time made output grow with the square of the
    answer). ``toolcall_start`` names its call, as pi's does."""
    inner = event.event
    out: dict[str, Any] = {}
    for name in inner.__dataclass_fields__:
        if drops_field(inner, name):
            continue
        value = getattr(inner, name)
        out[_STREAM_FIELDS.get(name, name)] = value.to_json_dict() if hasattr(value, "to_json_dict") else _plain(value)
    if out.get("type") == "toolcall_start":
        index = out.get("contentIndex", -1)
        content = event.message.content
        block = content[index] if 0 <= index < len(content) else None
        if isinstance(block, ToolCall):
            out["id"], out["toolName"] = block.id, block.name
    return out


def pi_event(event: Any, *, will_retry: bool = False) -> dict[str, Any]:
    """One session event as pi's RPC mode writes it."""
    if isinstance(event, MessageUpdateEvent):
        return {
            "type": "message_update",
            "usage": event.message.usage.to_json_dict(),
            "assistantMessageEvent": assistant_event_json(event),
        }
    if isinstance(event, MessageStartEvent) and isinstance(event.message, AssistantMessage):
        # pi 1.6 marks an assistant message that is still streaming with stopReason "pending";
        # its terminal reason comes with message_end
        start = event_json(event)
        start["message"] = {**start["message"], "stopReason": "pending"}
        return start
    if isinstance(event, ToolExecutionStartEvent):
        return {
            "type": event.type,
            "toolCallId": event.tool_call_id,
            "toolName": event.tool_name,
            "args": _plain(event.args),
        }
    if isinstance(event, ToolExecutionUpdateEvent):
        return {
            "type": event.type,
            "toolCallId": event.tool_call_id,
            "toolName": event.tool_name,
            "args": _plain(event.args),
            "partialResult": tool_result_json(event.partial_result),
        }
    if isinstance(event, ToolExecutionEndEvent):
        return {
            "type": event.type,
            "toolCallId": event.tool_call_id,
            "toolName": event.tool_name,
            "result": tool_result_json(event.result),
            "isError": event.is_error,
        }
    if isinstance(event, TurnEndEvent):
        return {
            "type": event.type,
            "message": message_stub(event.message),
            "toolResults": [message_stub(m) for m in event.tool_results],
        }
    if isinstance(event, AgentEndEvent):
        return {"type": event.type, "messages": [message_stub(m) for m in event.messages], "willRetry": will_retry}
    if isinstance(event, CompactionStartEvent):
        return {"type": event.type, "reason": event.reason, "tokensBefore": event.tokens_before}
    if isinstance(event, RetryStartEvent):
        return {
            "type": "auto_retry_start",
            "attempt": event.attempt,
            "maxAttempts": event.max_attempts,
            "delayMs": round(event.delay * 1000),
            "errorMessage": event.error_message,
        }
    if isinstance(event, RetryEndEvent):
        out: dict[str, Any] = {"type": "auto_retry_end", "success": event.success, "attempt": event.attempt}
        if event.final_error is not None:
            out["finalError"] = event.final_error
        return out
    if isinstance(event, SubagentEvent):
        return {
            "type": event.type,
            "sessionId": event.session_id,
            "toolCallId": event.tool_call_id,
            "event": pi_event(event.event),
        }
    return event_json(event)


def compaction_end_json(
    event: CompactionEndEvent, first_kept_entry_id: str | None, *, aborted: bool = False, will_retry: bool = False
) -> dict[str, Any]:
    """``compaction_end`` as pi's: ``result`` when a summary was written, ``errorMessage``
    when it failed; heron's extras (``entryId``, ``skipped``, ``autoDisabled``) beside them."""
    out: dict[str, Any] = {"type": event.type, "reason": event.reason, "aborted": aborted, "willRetry": will_retry}
    if event.entry_id is not None and not event.error:
        out["result"] = compaction_result(event, first_kept_entry_id)
    if event.error:
        out["errorMessage"] = event.error
    out["entryId"] = event.entry_id
    out["skipped"] = event.skipped
    out["autoDisabled"] = event.auto_disabled
    return out


def compaction_result(event: CompactionEndEvent, first_kept_entry_id: str | None) -> dict[str, Any]:
    """pi's ``CompactionResult`` (what the ``compact`` command answers), plus the id of the
    compaction entry heron wrote."""
    return {
        "summary": event.summary or "",
        "firstKeptEntryId": first_kept_entry_id,
        "tokensBefore": event.tokens_before,
        "estimatedTokensAfter": event.tokens_after,
        "details": {},
        "entryId": event.entry_id,
    }


def _plain(value: Any) -> Any:
    if hasattr(value, "to_json_dict"):
        return value.to_json_dict()
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def drop_unchanged_usage(update: dict[str, Any], sent: dict[str, Any] | None) -> dict[str, Any] | None:
    """A ``message_update`` carries ``usage`` only when it differs from the last one written
    for the same message (the first update of a message always has it): usage changes a
    few times per answer, deltas arrive by the thousand. Returns the usage now known."""
    usage = update.get("usage")
    if usage is not None and usage == sent:
        del update["usage"]
    return usage if usage is not None else sent
