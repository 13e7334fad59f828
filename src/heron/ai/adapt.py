"""Make a history written by one model acceptable to another (docs/ai.md, "Switching models mid-session").

A session may switch model mid-way. Providers reject foreign reasoning signatures and
tool-call ids outside their alphabet, and every provider rejects a tool call without
its result. Each adapter calls :func:`adapt_messages` on the context before building
its request; the stored session is never changed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from heron.ai.types import (
    AssistantMessage,
    Message,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

NO_RESULT_TEXT = "No result provided"

IdRule = Callable[[str], str]

_ANTHROPIC_BAD = re.compile(r"[^A-Za-z0-9_-]")


def _short_hash(value: str) -> str:
    return hashlib.sha1(value.encode()).hexdigest()[:10]


def anthropic_tool_id(call_id: str) -> str:
    """Anthropic accepts ``[A-Za-z0-9_-]{1,64}``."""
    clean = _ANTHROPIC_BAD.sub("_", call_id) or "call"
    if clean == call_id and len(clean) <= 64:
        return call_id
    if len(clean) > 64 or clean != call_id:
        clean = f"{clean[:52]}_{_short_hash(call_id)}"
    return clean[:64]


def openai_chat_tool_id(call_id: str) -> str:
    """OpenAI Chat accepts at most 40 characters (Responses ids like ``call_x|fc_y`` are longer)."""
    if len(call_id) <= 40 and call_id:
        return call_id
    if not call_id:
        return "call_" + _short_hash("empty")
    return f"{call_id[:29]}_{_short_hash(call_id)}"


def identity_id(call_id: str) -> str:
    return call_id


def same_model(message: AssistantMessage, model: Model) -> bool:
    return message.provider == model.provider and message.api == model.api and message.model == model.id


def adapt_messages(messages: list[Message], model: Model, id_rule: IdRule = identity_id) -> list[Message]:
    """A copy of ``messages`` the target model accepts.

    - assistant messages that ended in ``error``/``aborted`` are skipped, with their
      tool results (the provider never produced a complete turn there);
    - another model's thinking becomes plain text, its signatures are dropped;
    - tool-call ids are rewritten by ``id_rule`` consistently in calls and results;
    - a tool call with no result gets a synthetic error result, so the request is valid.
    """
    out: list[Message] = []
    skipped_calls: set[str] = set()
    pending: list[ToolCall] = []  # calls of the last assistant message still without result
    id_map: dict[str, str] = {}

    def map_id(call_id: str) -> str:
        mapped = id_map.get(call_id)
        if mapped is None:
            mapped = id_rule(call_id)
            id_map[call_id] = mapped
        return mapped

    def flush_pending() -> None:
        for call in pending:
            out.append(
                ToolResultMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=[TextContent(text=NO_RESULT_TEXT)],
                    is_error=True,
                )
            )
        pending.clear()

    for message in messages:
        if isinstance(message, AssistantMessage):
            flush_pending()
            if message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
                skipped_calls.update(call.id for call in message.tool_calls())
                continue
            adapted = _adapt_assistant(message, model, map_id)
            pending.extend(b for b in adapted.content if isinstance(b, ToolCall))
            out.append(adapted)
        elif isinstance(message, ToolResultMessage):
            if message.tool_call_id in skipped_calls:
                continue
            new_id = map_id(message.tool_call_id)
            match = next((c for c in pending if c.id == new_id), None)
            if match is None:
                # A result whose call is not in the history: send it as context, not as
                # a dangling tool result every provider would reject.
                flush_pending()
                out.append(
                    UserMessage(
                        content=f"[Result of an earlier {message.tool_name} call]\n{message.text()}",
                        timestamp=message.timestamp,
                    )
                )
                continue
            pending.remove(match)
            if new_id != message.tool_call_id:
                message = _copy_result(message, new_id)
            out.append(message)
        else:
            flush_pending()
            out.append(message)
    flush_pending()
    return out


def _copy_result(message: ToolResultMessage, new_id: str) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=new_id,
        tool_name=message.tool_name,
        content=message.content,
        details=message.details,
        is_error=message.is_error,
        timestamp=message.timestamp,
    )


def _adapt_assistant(message: AssistantMessage, model: Model, map_id: IdRule) -> AssistantMessage:
    native = same_model(message, model)
    content: list[TextContent | ThinkingContent | ToolCall] = []
    changed = False
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if native:
                content.append(block)
                continue
            changed = True
            if block.redacted or not block.thinking.strip():
                continue
            content.append(TextContent(text=block.thinking))
        elif isinstance(block, TextContent):
            if not native and block.text_signature is not None:
                changed = True
                content.append(TextContent(text=block.text))
            else:
                content.append(block)
        else:
            new_id = map_id(block.id)
            if new_id != block.id or (not native and block.thought_signature is not None):
                changed = True
                block = ToolCall(
                    id=new_id,
                    name=block.name,
                    arguments=block.arguments,
                    thought_signature=block.thought_signature if native else None,
                )
            content.append(block)
    if not changed:
        return message
    return AssistantMessage(
        content=content,
        api=message.api,
        provider=message.provider,
        model=message.model,
        usage=message.usage,
        stop_reason=message.stop_reason,
        error_message=message.error_message,
        error_kind=message.error_kind,
        error_status=message.error_status,
        retry_after=message.retry_after,
        response_id=message.response_id,
        timestamp=message.timestamp,
        native_compaction=message.native_compaction,  # each provider sends only its own
        context_edits=message.context_edits,
    )
