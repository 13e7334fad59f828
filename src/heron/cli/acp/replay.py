"""A stored session as the ``session/update`` notifications ``session/load`` sends.

The client rebuilds its view of the conversation from these: the user's messages, the
agent's text and thinking, each tool call with its final state, plans, and compactions.
They come from :mod:`heron.cli.acp.toolcalls` and :mod:`heron.cli.acp.updates`, the code
the live stream uses, so a reloaded session looks as it did while it ran. The whole path
from the root to the current leaf is replayed, also what a compaction summarised: the
session file keeps it, and the user should see what they saw before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp.schema import ContentToolCallContent, ImageContentBlock, TextContentBlock, ToolCallProgress, UserMessageChunk

from heron.agent.tool_meta import ToolCatalog
from heron.ai.types import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from heron.cli.acp import toolcalls
from heron.cli.acp.updates import Update, compaction_end, compaction_start, plan, text
from heron.session.entries import CompactionEntry, MessageEntry
from heron.session.store import SessionStore


def replay(store: SessionStore, cwd: Path, tools: ToolCatalog) -> list[Update]:
    out: list[Update] = []
    calls: dict[str, ToolCall] = {}
    for entry in store.path_to():
        if isinstance(entry, CompactionEntry):
            call_id = f"compaction-{entry.id}"
            out.append(compaction_start(call_id, entry.tokens_before))
            out.append(
                compaction_end(call_id, entry.summary, f"Compacted: {entry.tokens_before} tokens before.", failed=False)
            )
        elif isinstance(entry, MessageEntry):
            if isinstance(entry.message, UserMessage):
                out.extend(_unfinished(calls))
            out.extend(_message(entry.message, calls, cwd, tools))
    return [*out, *_unfinished(calls)]


def _unfinished(calls: dict[str, ToolCall]) -> list[Update]:
    """Calls the file has no result for (heron was stopped while they ran, e.g. killed):
    shown failed, so the editor does not show them running for ever."""
    note = TextContentBlock(type="text", text="Interrupted: heron stopped before this call finished.")
    out: list[Update] = [
        ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=call_id,
            status="failed",
            content=[ContentToolCallContent(type="content", content=note)],
        )
        for call_id in calls
    ]
    calls.clear()
    return out


def _message(message: Any, calls: dict[str, ToolCall], cwd: Path, tools: ToolCatalog) -> list[Update]:
    if isinstance(message, UserMessage):
        return _user(message)
    if isinstance(message, AssistantMessage):
        out: list[Update] = []
        for block in message.content:
            if isinstance(block, TextContent) and block.text:
                out.append(text("message", block.text))
            elif isinstance(block, ThinkingContent) and block.thinking and not block.redacted:
                out.append(text("thought", block.thinking))
            elif isinstance(block, ToolCall):
                calls[block.id] = block
                # a write's old text is gone from the disk: its diff is in the final update
                # when the write created the file, and not shown otherwise
                meta = tools.meta(block.name)
                out.append(
                    toolcalls.start(block.id, block.name, meta, dict(block.arguments), cwd, toolcalls.Old.UNKNOWN)
                )
        return out
    if isinstance(message, ToolResultMessage):
        call = calls.pop(message.tool_call_id, None)
        args = dict(call.arguments) if call is not None else None
        created = isinstance(message.details, dict) and message.details.get("created") is True
        done: list[Update] = [
            toolcalls.finished(
                message.tool_call_id,
                tools.meta(message.tool_name),
                args,
                list(message.content),
                message.is_error,
                message.details,
                cwd,
                None if created else toolcalls.Old.UNKNOWN,
            )
        ]
        if (
            tools.kind(message.tool_name) == "todo"
            and not message.is_error
            and isinstance(message.details, dict)
            and isinstance(message.details.get("todos"), list)
        ):
            done.append(plan(message.details["todos"]))
        return done
    return []


def _user(message: UserMessage) -> list[Update]:
    if isinstance(message.content, str):
        return [text("user", message.content)] if message.content else []
    out: list[Update] = []
    for block in message.content:
        if isinstance(block, TextContent) and block.text:
            out.append(text("user", block.text))
        elif isinstance(block, ImageContent):
            out.append(
                UserMessageChunk(
                    session_update="user_message_chunk",
                    content=ImageContentBlock(type="image", data=block.data, mime_type=block.mime_type),
                )
            )
    return out
