"""Context decisions recorded in the session file, so a new process sends the same bytes.

Everything that shapes a request and is decided at run time - which tool results are
pruned (with the exact stub text), the window a server really enforces, whether
automatic compaction was switched off - is appended to the session as a ``custom`` entry
of type ``heron.context`` the moment it is decided. pi's loader keeps ``custom`` entries
out of the context, so pi still opens these files. Compactions (with their re-injected
block and the turn prompt they keep) are ``compaction`` entries; spills and de-dup stubs
are the tool results themselves. Nothing that changes what the model sees lives only in
process memory: :class:`ContextDecisions` is rebuilt from the path when a session opens
and kept in step with the file by appending through it.

Decisions are read from the *path* (root to leaf): moving to another branch leaves the
decisions of the branch behind, as it leaves its messages.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from heron.context.continuity.todos import TODOS_CUSTOM_TYPE, TodoItem, clean_todos
from heron.session.entries import CompactionEntry, CustomEntry, Entry, iso_to_ms

DECISION_CUSTOM_TYPE = "heron.context"

OP_PRUNE = "prune"
OP_WINDOW = "window"
OP_WINDOW_RESET = "window_reset"  # a learned window dropped: by the user, or a larger request was served
OP_AUTO_COMPACTION = "auto_compaction"
OP_IDLE = "idle"  # the idle policy's decision before the prompt cache expired (heron.context.compaction.idle)
OP_FLUSH = "flush"
OP_CALIBRATION = "calibration"
OP_NATIVE = "native"  # provider-native compaction off for a model (its server rejected the fields)
OP_BACKGROUND = "background"  # a background summary started (its cut), or ended unused (why)
OP_CALL_ARGS = "call_args"  # tool calls whose arguments requests show shortened (heron.context.view.call_args)
OP_BACKGROUND_SENT = "background_sent"  # its request went out (a later process does not send it again)
OP_BACKGROUND_RESULT = "background_result"  # what it answered, kept by a process that ended before using it
OP_BUDGET_NOTICE = "budget_notice"  # a budget notice told on a tool result (heron.context.window.budget_notice)


@dataclass(frozen=True, slots=True)
class LearnedWindow:
    """A window the server enforces below the configured one, learnt from a rejection."""

    model: str  # "provider/id"
    window: int
    rejected_tokens: int
    source: str  # "error text" | "rejected size"


@dataclass(frozen=True, slots=True)
class PendingSummary:
    """A background summary started and not yet written or given up (heron.context.compaction.background):
    the cut it summarises up to, and the model and window it was asked with."""

    first_kept_entry_id: str
    model: str
    window: int
    # when it was recorded: a restarted process asks for it with the view of that moment
    started_ms: int = field(default=0, compare=False)
    # its request went out (OP_BACKGROUND_SENT), and what came back when a process that
    # ended before the compaction kept it (OP_BACKGROUND_RESULT: heron.context.compaction.background_record)
    sent: bool = field(default=False, compare=False)
    result: dict[str, Any] | None = field(default=None, compare=False)


@dataclass(eq=False, repr=False)
class ContextDecisions:
    """The decisions on one path, in the order they were made. A session's mutable state,
    compared by identity and never printed, so no generated ``__eq__`` or ``__repr__`` (two
    functions fewer compiled at import)."""

    stubs: dict[str, str] = field(default_factory=dict)  # tool call id -> stub text
    stub_ms: dict[str, int] = field(default_factory=dict)  # tool call id -> when its stub was recorded
    # tool call id -> how requests show its oversized arguments (heron.context.view.call_args)
    call_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    notices: dict[str, str] = field(default_factory=dict)  # tool call id -> budget notice it carries
    notice_mark: int = 0  # the highest budget mark told since the latest compaction
    windows: dict[str, LearnedWindow] = field(default_factory=dict)  # model key -> latest
    auto_compaction: bool = True
    auto_compaction_reason: str = ""
    auto_compaction_by_user: bool = False  # switched off by the user (not by heron after a compaction saved too little)
    last_view_change_ms: int = 0  # timestamp of the latest prune step
    todos: list[TodoItem] | None = None  # the latest task list on the path
    flushed: bool = False  # a memory flush ran (or was skipped) since the latest compaction
    # model key -> (the server's tokens per heron-estimated token, samples behind it)
    calibration: dict[str, tuple[float, int]] = field(default_factory=dict)
    native_off: dict[str, str] = field(default_factory=dict)  # model key -> why native compaction is off
    background: PendingSummary | None = None  # the background summary started since the latest compaction
    background_failed: bool = False  # one failed since the latest compaction: none starts until the next
    warmed_ms: int = 0  # when the latest warm-up refreshed the prompt cache (its answer came)

    @classmethod
    def from_entries(cls, entries: Iterable[Entry]) -> ContextDecisions:
        decisions = cls()
        for entry in entries:
            decisions.see(entry)
        return decisions

    def see(self, entry: Entry) -> None:
        """Take an entry of the path into account (those that are not decisions are ignored)."""
        if isinstance(entry, CompactionEntry):
            self.compacted()
        elif isinstance(entry, CustomEntry):
            if entry.custom_type == DECISION_CUSTOM_TYPE:
                self.apply(entry.data, iso_to_ms(entry.timestamp))
            elif entry.custom_type == TODOS_CUSTOM_TYPE:
                todos = clean_todos(entry.data)
                if todos is not None:
                    self.todos = todos

    def compacted(self) -> None:
        """A compaction entry: a new epoch (the next compaction may flush again, the
        budget marks are told again, and the background summary of the last one is spent)."""
        self.flushed = False
        self.notice_mark = 0
        self.background = None
        self.background_failed = False

    def apply(self, data: Any, timestamp_ms: int) -> None:
        """Take one recorded decision into account (unknown or malformed ones are ignored:
        a newer heron may record more, and a hand-edited file must not stop a session)."""
        if not isinstance(data, dict):
            return
        op = data.get("op")
        if op == OP_PRUNE:
            stubs = data.get("stubs")
            if isinstance(stubs, dict):
                for call_id, text in stubs.items():
                    if isinstance(call_id, str) and isinstance(text, str) and call_id not in self.stubs:
                        self.stubs[call_id] = text  # a stub never changes once sent
                        self.stub_ms[call_id] = timestamp_ms
                self.last_view_change_ms = max(self.last_view_change_ms, timestamp_ms)
        elif op == OP_CALL_ARGS:
            self._call_args(data, timestamp_ms)
        elif op == OP_WINDOW:
            model, window = data.get("model"), data.get("window")
            if isinstance(model, str) and isinstance(window, int) and window > 0:
                rejected = data.get("rejectedTokens")
                self.windows[model] = LearnedWindow(
                    model=model,
                    window=window,
                    rejected_tokens=rejected if isinstance(rejected, int) else 0,
                    source=str(data.get("source") or ""),
                )
        elif op == OP_WINDOW_RESET:
            model = data.get("model")
            if isinstance(model, str):
                self.windows.pop(model, None)
        elif op == OP_BUDGET_NOTICE:
            call_id, mark, text = data.get("callId"), data.get("mark"), data.get("text")
            if isinstance(call_id, str) and isinstance(mark, int) and isinstance(text, str):
                self.notices.setdefault(call_id, text)  # like a stub: never changes once sent
                self.notice_mark = max(self.notice_mark, mark)
        elif op == OP_FLUSH:
            self.flushed = True
        elif op == OP_CALIBRATION:
            model, ratio, samples = data.get("model"), data.get("ratio"), data.get("samples")
            if isinstance(model, str) and isinstance(ratio, int | float) and 0.1 <= ratio <= 10:
                self.calibration[model] = (float(ratio), samples if isinstance(samples, int) else 1)
        elif op == OP_NATIVE:
            model = data.get("model")
            if isinstance(model, str) and data.get("enabled") is False:
                self.native_off[model] = str(data.get("reason") or "")
            elif isinstance(model, str) and data.get("enabled") is True:
                self.native_off.pop(model, None)
        elif op == OP_BACKGROUND:
            self._background(data, timestamp_ms)
        elif op == OP_IDLE and data.get("action") == "warm" and not data.get("failed"):
            self.warmed_ms = max(self.warmed_ms, timestamp_ms)
        elif op in (OP_BACKGROUND_SENT, OP_BACKGROUND_RESULT):
            self._background_outcome(op, data)
        elif op == OP_AUTO_COMPACTION:
            enabled = data.get("enabled")
            if isinstance(enabled, bool):
                self.auto_compaction = enabled
                self.auto_compaction_reason = str(data.get("reason") or "")
                self.auto_compaction_by_user = data.get("by") == "user"

    def _call_args(self, data: dict[str, Any], timestamp_ms: int) -> None:
        calls = data.get("calls")
        if not isinstance(calls, dict):
            return
        for call_id, shown in calls.items():
            if isinstance(call_id, str) and isinstance(shown, dict):
                self.call_args.setdefault(call_id, shown)  # like a stub: never changes once sent
        # the reply that carried the call whole is no longer what requests carry: its usage
        # anchors no count (it counted the arguments whole), as after a pruning step
        self.last_view_change_ms = max(self.last_view_change_ms, timestamp_ms)

    def _background(self, data: dict[str, Any], timestamp_ms: int) -> None:
        ended = data.get("ended")
        if isinstance(ended, str):
            self.background = None
            self.background_failed = self.background_failed or ended == "failed"
            return
        cut, model, window = data.get("firstKeptEntryId"), data.get("model"), data.get("window")
        if isinstance(cut, str) and isinstance(model, str) and isinstance(window, int):
            self.background = PendingSummary(cut, model, window, started_ms=timestamp_ms)

    def _background_outcome(self, op: str, data: dict[str, Any]) -> None:
        """The pending summary's request went out, or its answer was kept (only for the
        summary of the same cut: a record of an earlier one is spent)."""
        pending = self.background
        if pending is None or data.get("firstKeptEntryId") != pending.first_kept_entry_id:
            return
        if op == OP_BACKGROUND_SENT:
            self.background = replace(pending, sent=True)
            return
        result = data.get("result")
        if isinstance(result, dict):
            self.background = replace(pending, sent=True, result=result)

    def learned_window(self, model_key: str) -> int | None:
        learned = self.windows.get(model_key)
        return learned.window if learned is not None else None


def prune_data(stubs: dict[str, str]) -> dict[str, Any]:
    return {"op": OP_PRUNE, "stubs": dict(stubs)}


def window_data(learned: LearnedWindow) -> dict[str, Any]:
    return {
        "op": OP_WINDOW,
        "model": learned.model,
        "window": learned.window,
        "rejectedTokens": learned.rejected_tokens,
        "source": learned.source,
    }


def window_reset_data(model: str, window: int, reason: str) -> dict[str, Any]:
    return {"op": OP_WINDOW_RESET, "model": model, "window": window, "reason": reason}


def calibration_data(model: str, ratio: float, samples: int) -> dict[str, Any]:
    return {"op": OP_CALIBRATION, "model": model, "ratio": round(ratio, 4), "samples": samples}


def native_data(model: str, enabled: bool, reason: str) -> dict[str, Any]:
    return {"op": OP_NATIVE, "model": model, "enabled": enabled, "reason": reason}


def auto_compaction_data(enabled: bool, reason: str, *, by_user: bool = False) -> dict[str, Any]:
    """``by_user``: the user switched it (rpc ``set_auto_compaction``); heron's own switch-off
    after a compaction that saved too little still compacts a request that cannot be sent
    otherwise (docs/context.md, "Compaction", the 5% rule)."""
    data: dict[str, Any] = {"op": OP_AUTO_COMPACTION, "enabled": enabled, "reason": reason}
    if by_user:
        data["by"] = "user"
    return data


def background_data(pending: PendingSummary) -> dict[str, Any]:
    return {
        "op": OP_BACKGROUND,
        "firstKeptEntryId": pending.first_kept_entry_id,
        "model": pending.model,
        "window": pending.window,
    }


def background_sent_data(pending: PendingSummary) -> dict[str, Any]:
    return {"op": OP_BACKGROUND_SENT, "firstKeptEntryId": pending.first_kept_entry_id}


def background_result_data(pending: PendingSummary, result: dict[str, Any]) -> dict[str, Any]:
    return {"op": OP_BACKGROUND_RESULT, "firstKeptEntryId": pending.first_kept_entry_id, "result": result}


def background_end_data(ended: str, reason: str) -> dict[str, Any]:
    """``ended``: "failed" (none starts again until the next compaction) or "discarded"."""
    return {"op": OP_BACKGROUND, "ended": ended, "reason": reason}


def flush_data(files: list[str], skipped: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"op": OP_FLUSH, "files": list(files)}
    if skipped:
        out["skipped"] = skipped
    return out
