"""Recording a context decision: appended to the session, then applied to the decisions in memory.

Every decision that shapes a request (a pruning step, a learned window, a budget mark,
the background summary's progress, automatic compaction switched off or on) is written
the moment it is taken and only then applied to :class:`ContextDecisions`, so what the
process plans with is exactly what a process that opens the session later reads back
(docs/context.md, "Rules for reading decisions back"). The policy's parts (pruning, the
learned windows, the shortened calls) record through one :class:`DecisionRecorder`
rather than each through the store.
"""

from __future__ import annotations

from typing import Any

from heron.context.continuity.todos import TODOS_CUSTOM_TYPE, TodoItem
from heron.context.records.decisions import (
    DECISION_CUSTOM_TYPE,
    OP_IDLE,
    ContextDecisions,
    PendingSummary,
    auto_compaction_data,
    background_data,
    background_end_data,
    background_result_data,
    background_sent_data,
    flush_data,
)
from heron.context.records.ordering import strictly_ordered
from heron.session.entries import CustomEntry, iso_to_ms
from heron.session.store import SessionStore


class DecisionRecorder:
    """Writes decisions to a session and keeps :attr:`decisions` in step with what it wrote."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.decisions = ContextDecisions()

    def reload(self, store: SessionStore) -> None:
        """Re-derive every decision from ``store``'s current path (open, branch, switch file)."""
        self.store = store
        leaf = store.leaf_id
        entries: list[Any] = []
        if leaf is not None:
            ids, types = store.lineage(leaf)
            entries = [store.get(i) for i, kind in zip(ids, types, strict=True) if kind in ("custom", "compaction")]
        self.decisions = ContextDecisions.from_entries(e for e in entries if e is not None)

    def record(self, data: dict[str, Any]) -> CustomEntry:
        """One decision, appended in a millisecond of its own and applied."""
        with strictly_ordered():
            entry = self.store.append_custom(DECISION_CUSTOM_TYPE, data)
        self.decisions.apply(data, iso_to_ms(entry.timestamp))
        return entry

    def record_unordered(self, data: dict[str, Any]) -> CustomEntry:
        """A decision that moves no usage floor (a calibration): appended as it comes, and applied."""
        entry = self.store.append_custom(DECISION_CUSTOM_TYPE, data)
        self.decisions.apply(entry.data, iso_to_ms(entry.timestamp))
        return entry

    def record_idle(self, data: dict[str, Any]) -> None:
        self.record({"op": OP_IDLE, **data})  # the idle policy's decision (heron.coding.idle)

    def record_todos(self, todos: list[TodoItem]) -> None:
        """A new task list (the todo tool ran): stored, and carried into later compactions."""
        entry = self.store.append_custom(TODOS_CUSTOM_TYPE, {"todos": todos})
        self.decisions.see(entry)

    def record_flush(self, files: list[str], skipped: str | None = None) -> None:
        self.record(flush_data(files, skipped))

    def compacted(self) -> None:
        """A compaction entry was written: a new epoch (flush, budget marks, background
        summary) starts."""
        self.decisions.compacted()

    def record_background(self, first_kept_entry_id: str, model_key: str, window: int) -> PendingSummary:
        """A background summary starts (``heron.context.compaction.background``): its cut, model and
        window, so a process that opens the session restarts the same summary."""
        entry = self.record(background_data(PendingSummary(first_kept_entry_id, model_key, window)))
        return PendingSummary(first_kept_entry_id, model_key, window, started_ms=iso_to_ms(entry.timestamp))

    def note_background(self, pending: PendingSummary, result: dict[str, Any] | None = None) -> None:
        """The pending background summary's request went out, or (``result``) its answer is
        kept for a later process: recorded while it is still the pending one."""
        if self.decisions.background == pending:
            self.record(background_sent_data(pending) if result is None else background_result_data(pending, result))

    def end_background(self, ended: str, reason: str) -> None:
        """The pending background summary is given up (``ended``: "failed" or "discarded")."""
        if self.decisions.background is not None:
            self.record(background_end_data(ended, reason))

    def disable_auto_compaction(self, reason: str, *, by_user: bool = False) -> None:
        if self.decisions.auto_compaction:
            self.record(auto_compaction_data(False, reason, by_user=by_user))

    def enable_auto_compaction(self, reason: str, *, by_user: bool = False) -> None:
        if not self.decisions.auto_compaction:
            self.record(auto_compaction_data(True, reason, by_user=by_user))
