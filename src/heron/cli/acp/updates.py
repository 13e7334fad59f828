"""Heron's session events turned into ACP ``session/update`` payloads.

The translation is pure (events in, update objects out) so it can be tested without a
connection; :mod:`heron.cli.acp.agent` sends what it returns, in order.

* text and thinking deltas -> ``agent_message_chunk`` / ``agent_thought_chunk``;
* a tool call, once the model finished writing it -> ``tool_call`` (pending, with kind,
  title, locations, diff), then ``tool_call_update`` in_progress and completed/failed;
* the todo tool's list -> ``plan``;
* a compaction -> a ``tool_call`` of kind ``other`` titled "Compact the context", whose
  update says how many tokens it saved, so the editor shows why the context shrank.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, TypeAlias

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    PlanEntry,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)

from heron.agent.events import MessageUpdateEvent, ToolExecutionEndEvent, ToolExecutionStartEvent
from heron.agent.tool_meta import ToolCatalog
from heron.ai.events import TextDeltaEvent, ThinkingDeltaEvent, ToolCallEndEvent
from heron.cli.acp import toolcalls
from heron.cli.acp.subagent_asks import SubagentCalls
from heron.coding.events import (
    CompactionEndEvent,
    CompactionStartEvent,
    GoalEvent,
    GoalLoopEvent,
    SubagentEvent,
    TodosEvent,
)

Update: TypeAlias = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | UsageUpdate
)


def text(kind: str, value: str) -> AgentMessageChunk | AgentThoughtChunk | UserMessageChunk:
    block = TextContentBlock(type="text", text=value)
    if kind == "thought":
        return AgentThoughtChunk(session_update="agent_thought_chunk", content=block)
    if kind == "user":
        return UserMessageChunk(session_update="user_message_chunk", content=block)
    return AgentMessageChunk(session_update="agent_message_chunk", content=block)


def terminal_content(terminal_id: str) -> TerminalToolCallContent:
    return TerminalToolCallContent(type="terminal", terminal_id=terminal_id)


def terminal_shown(call_id: str, terminal_id: str) -> ToolCallProgress:
    """The update that puts the editor's terminal (running a bash call) into the tool call."""
    return ToolCallProgress(
        session_update="tool_call_update", tool_call_id=call_id, content=[terminal_content(terminal_id)]
    )


def plan(todos: list[dict[str, Any]]) -> AgentPlanUpdate:
    entries = [
        PlanEntry(
            content=str(t.get("content", "")),
            priority="medium",
            status=t["status"] if t.get("status") in ("pending", "in_progress", "completed") else "pending",
        )
        for t in todos
    ]
    return AgentPlanUpdate(session_update="plan", entries=entries)


def compaction_start(call_id: str, tokens_before: int) -> ToolCallStart:
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title="Compact the context",
        kind="other",
        status="in_progress",
        raw_input={"tokens_before": tokens_before},
    )


def compaction_end(call_id: str, summary: str | None, note: str, failed: bool) -> ToolCallProgress:
    body = note + (f"\n\n{summary}" if summary else "")
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        status="failed" if failed else "completed",
        content=[ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=body))],
    )


class EventTranslator:
    """Turns the events of one session into updates; remembers each call's arguments
    (for the final update's diff) and the id of the compaction under way."""

    def __init__(self, cwd: Path, tools: ToolCatalog) -> None:
        self.cwd = cwd
        self.tools = tools  # what each of the session's tools is: kinds, files
        self._args: dict[str, tuple[str, dict[str, Any]]] = {}
        self._announced: set[str] = set()
        self._before: dict[str, toolcalls.Before] = {}  # a write's old text, read before it ran
        self._compaction_id = "compaction"
        self._compacting = False  # a compaction start was sent and its end not yet
        self.terminals: dict[str, str] = {}  # tool call id -> the editor's terminal running it
        self.subagents = SubagentCalls(cwd, tools)  # sub-agents' running calls, for their permission questions

    def translate(self, event: Any) -> list[Update]:
        if isinstance(event, MessageUpdateEvent):
            inner = event.event
            if isinstance(inner, TextDeltaEvent) and inner.delta:
                return [text("message", inner.delta)]
            if isinstance(inner, ThinkingDeltaEvent) and inner.delta:
                return [text("thought", inner.delta)]
            if isinstance(inner, ToolCallEndEvent):
                call = inner.tool_call
                return self._announce(call.id, call.name, dict(call.arguments))
            return []
        if isinstance(event, ToolExecutionStartEvent):
            return [
                *self._announce(event.tool_call_id, event.tool_name, dict(event.args)),
                toolcalls.running(event.tool_call_id),
            ]
        if isinstance(event, ToolExecutionEndEvent):
            name, args = self._args.pop(event.tool_call_id, (event.tool_name, None))
            self._announced.discard(event.tool_call_id)
            done = toolcalls.finished(
                event.tool_call_id,
                self.tools.meta(name),
                args,
                list(event.result.content),
                event.is_error,
                event.result.details,
                self.cwd,
                self._before.pop(event.tool_call_id, toolcalls.Old.UNKNOWN),
            )
            terminal = self.terminals.pop(event.tool_call_id, None)
            if terminal is not None:  # the editor keeps showing a released terminal's output
                done.content = [terminal_content(terminal), *(done.content or [])]
            return [done]
        if isinstance(event, TodosEvent):
            return [plan(list(event.todos))]
        if isinstance(event, GoalEvent):  # /goal answered in place of the model
            return [text("agent", event.reply)]
        if isinstance(event, GoalLoopEvent):  # a line between the loop's steps, and at its end
            return [text("agent", f"\n\n[{event.line()}]\n\n")]
        if isinstance(event, SubagentEvent):
            task = self._args.get(event.tool_call_id)
            return list(self.subagents.observe(event, task[1] if task else None))
        return self._compaction(event)

    def _announce(self, call_id: str, name: str, args: dict[str, Any]) -> list[Update]:
        if call_id in self._announced:
            return []
        self._announced.add(call_id)
        self._args[call_id] = (name, args)
        meta = self.tools.meta(name)
        if meta.kind == "write":
            self._before[call_id] = toolcalls.write_before(meta, args, self.cwd)
        before = self._before.get(call_id, toolcalls.Old.DISK)
        return [toolcalls.start(call_id, name, meta, args, self.cwd, before)]

    def unfinished(self, why: str) -> list[Update]:
        """Failed updates for what the turn started and did not end (calls announced but
        never run, a compaction under way when the turn was cancelled), so the editor does
        not show them running for ever; sent when a prompt ends."""
        note = ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=why))
        out: list[Update] = [
            ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, status="failed", content=[note])
            for call_id in sorted(self._announced)
        ]
        self._announced.clear()
        self._args.clear()
        self._before.clear()
        if self._compacting:
            out.append(compaction_end(self._compaction_id, None, f"Not compacted: {why}", failed=True))
            self._compacting = False
        return out

    def _compaction(self, event: Any) -> list[Update]:
        if isinstance(event, CompactionStartEvent):
            self._compaction_id = f"compaction-{uuid.uuid4().hex[:12]}"
            self._compacting = True
            return [compaction_start(self._compaction_id, event.tokens_before)]
        if isinstance(event, CompactionEndEvent):
            self._compacting = False
            call_id = self._compaction_id
            if event.error or event.skipped:
                return [
                    compaction_end(
                        call_id, None, f"Not compacted: {event.error or event.skipped}", failed=bool(event.error)
                    )
                ]
            note = f"Compacted ({event.reason}): {event.tokens_before} -> {event.tokens_after} tokens."
            return [compaction_end(call_id, event.summary, note, failed=False)]
        return []
