"""The rpc server's event writer: the session's events, as they happen, in pi's RPC
shapes (docs/rpc.md).

It holds what presenting needs to remember between events and nothing else: the answer
streaming now (``get_partial_message`` reads it), the usage the last ``message_update``
carried (so an unchanged one is not repeated), when each tool call started (its
``durationMs``), how many compactions are under way, and the queues as last written (a
``queue_update`` only when they changed). The mapping of one event onto pi's shape is
:mod:`heron.cli.modes.rpc_events`; the server owns the runs and the commands.
"""

from __future__ import annotations

import time
from typing import Any

from heron.agent.events import MessageEndEvent, MessageUpdateEvent, ToolExecutionEndEvent, ToolExecutionStartEvent
from heron.ai.types import AssistantMessage
from heron.cli.app_state import App
from heron.cli.modes.rpc_events import compaction_end_json, drop_unchanged_usage, pi_event
from heron.cli.modes.rpc_protocol import Write, message_text
from heron.coding.events import CompactionEndEvent, CompactionStartEvent, SessionEvent
from heron.session.entries import CompactionEntry


class EventPresenter:
    """Writes ``app.session``'s events through ``write`` (subscribe :meth:`handle`)."""

    def __init__(self, app: App, write: Write) -> None:
        self.app = app
        self._write = write
        self.partial: AssistantMessage | None = None  # the answer streaming now, if any
        self.compacting = 0  # compaction_start seen without its compaction_end
        self._usage_sent: dict[str, Any] | None = None  # the usage the last message_update carried
        self._tool_started: dict[str, float] = {}  # tool call id -> when it started (for durationMs)
        self._queue_seen: tuple[list[str], list[str]] = ([], [])

    def handle(self, event: SessionEvent) -> None:
        if isinstance(event, MessageUpdateEvent):
            self.partial = event.message
        elif isinstance(event, MessageEndEvent):
            self.partial, self._usage_sent = None, None
        if isinstance(event, CompactionStartEvent):
            self.compacting += 1
        elif isinstance(event, CompactionEndEvent):
            self.compacting = max(0, self.compacting - 1)
            self._write(compaction_end_json(event, self.first_kept(event.entry_id)))
            return
        out = pi_event(event)
        if isinstance(event, MessageUpdateEvent):
            self._usage_sent = drop_unchanged_usage(out, self._usage_sent)
        elif isinstance(event, ToolExecutionStartEvent):
            self._tool_started[event.tool_call_id] = time.monotonic()
        elif isinstance(event, ToolExecutionEndEvent):
            started = self._tool_started.pop(event.tool_call_id, None)
            if started is not None:
                out["durationMs"] = round((time.monotonic() - started) * 1000)
        self._write(out)
        self.queue_changed()

    def first_kept(self, entry_id: str | None) -> str | None:
        """The first entry a compaction kept, for pi's ``firstKeptEntryId``."""
        store = self.app.session.store
        entry = store.get(entry_id) if entry_id is not None and store.has(entry_id) else None
        return entry.first_kept_entry_id if isinstance(entry, CompactionEntry) else None

    def queues(self) -> tuple[list[str], list[str]]:
        """The texts of the steering and follow-up messages waiting now."""
        steering, follow_up = self.app.session.agent.queued()
        return [message_text(m) for m in steering], [message_text(m) for m in follow_up]

    def queue_changed(self) -> None:
        """pi's ``queue_update``: the whole queues, whenever they changed (a steer queued,
        delivered, or dropped at the end of a run)."""
        now = self.queues()
        if now != self._queue_seen:
            self._queue_seen = now
            self._write({"type": "queue_update", "steering": now[0], "followUp": now[1]})
