"""What a session report shows, read from the session file alone.

The report (``heron sessions report``, rpc ``export_report``, :func:`heron.coding.report.write_report`)
draws the context curve of one session: one point per request (an assistant message on the
current path), the tokens it sent, and a marker for every ledger record and model switch. This
module walks the path once and turns it into plain data; :mod:`heron.coding.report.page`
renders it. Nothing here talks to a model or needs the process that ran the session, so a
report of a finished, crashed or foreign (pi) session is the same.

Tokens sent per request come from the provider's usage (input + cache read + cache write);
where a provider reported none (zero or output-only usage), heron's own estimate stands in: the
messages the request carried at chars / 4, with compactions and prune steps applied as the
session recorded them. Such points are flagged ``estimated``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from heron.agent.messages import AgentMessage
from heron.ai.types import AssistantMessage, ToolResultMessage, UserMessage
from heron.context.compaction.plan import CompactionSettings
from heron.context.continuity.todos import TODOS_CUSTOM_TYPE, clean_todos
from heron.context.records.ledger import LEDGER_CUSTOM_TYPE
from heron.context.window.budget import estimate_message_tokens
from heron.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    Entry,
    MessageEntry,
    ModelChangeEntry,
)
from heron.session.store import SessionStore

CONTEXT_CUSTOM_TYPE = "heron.context"
MEMORY_CUSTOM_TYPE = "heron.memory"


@dataclass(slots=True)
class RequestPoint:
    """One request: what it sent and what it cost."""

    index: int  # 0-based position on the curve
    entry_id: str  # the assistant message that answered it
    turn: int  # the user turn it belongs to (0-based)
    timestamp: str
    model: str
    tokens: int  # prompt tokens sent
    estimated: bool  # no usage was reported: heron's own count
    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    cost: float = 0.0
    window: int | None = None

    @property
    def cache_hit(self) -> float | None:
        sent = self.input + self.cache_read + self.cache_write
        return self.cache_read / sent if sent else None


@dataclass(slots=True)
class Marker:
    """A ledger record or a model switch, placed at the request it first affected."""

    request: int  # index of the RequestPoint (the next request after the record)
    kind: str
    title: str
    recover: str
    entry_id: str
    detail: dict[str, Any] = field(default_factory=dict)
    summary: str | None = None  # a compaction's summary


@dataclass(slots=True)
class TurnRow:
    """One user turn: its prompt, its requests' totals and its messages (see transcript)."""

    index: int
    prompt: str
    first_request: int
    requests: int = 0
    input: int = 0
    cache_read: int = 0
    output: int = 0
    cost: float = 0.0
    messages: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class BranchRow:
    """One leaf of the session tree."""

    leaf_id: str
    length: int  # entries from the root
    fork_point: str | None  # the entry where it leaves the current path (None: on it)
    first_prompt: str
    label: str | None
    current: bool
    summaries: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ReportData:
    session_id: str
    path: str | None
    cwd: str
    started: str
    requests: list[RequestPoint] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    turns: list[TurnRow] = field(default_factory=list)
    branches: list[BranchRow] = field(default_factory=list)
    children: list[dict[str, str]] = field(default_factory=list)  # sub-agent, forked and handed-off sessions
    parent: dict[str, str] | None = None  # the session this one came from: its file and how
    todos: list[dict[str, str]] = field(default_factory=list)
    memory: str = ""
    pruned: dict[str, tuple[str, int]] = field(default_factory=dict)  # call id -> (stub, first request without it)
    reserve: int | None = None
    warnings: list[str] = field(default_factory=list)
    # model -> the working budget its compactions recorded (heron.context.window.working_budget)
    budgets: dict[str, dict[str, Any]] = field(default_factory=dict)

    def threshold_at(self, point: RequestPoint) -> int | None:
        """The compaction threshold at that request: window - reserve, the reserve capped
        at a quarter of the window as the policy caps it, or the model's working budget
        when its compactions recorded a lower one."""
        if point.window is None or self.reserve is None:
            return None
        reserve = CompactionSettings(reserve_tokens=self.reserve).for_window(point.window).reserve_tokens
        threshold = max(0, point.window - reserve)
        budget = self.budgets.get(point.model, {}).get("tokens")
        return min(threshold, budget) if isinstance(budget, int) else threshold


WindowSource = Mapping[str, int] | Callable[[str], int | None] | None


def window_lookup(windows: WindowSource) -> Callable[[str], int | None]:
    if windows is None:
        return lambda _model: None
    if isinstance(windows, Mapping):
        return windows.get
    return windows


def text_of(message: AgentMessage) -> str:
    """The plain text of a message: its own ``text()`` where it has one (user, assistant,
    tool result), else a string content (an extension's note), else nothing."""
    text = getattr(message, "text", None)
    if callable(text):
        return str(text())
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else ""


class _Estimate:
    """heron's own running count of what a request carries (for providers without usage)."""

    def __init__(self) -> None:
        self.tokens: dict[str, int] = {}  # entry id -> tokens, since the last compaction
        self.results: dict[str, tuple[str, int]] = {}  # tool call id -> (entry id, tokens)
        self.total = 0

    def add(self, entry_id: str, message: AgentMessage) -> None:
        tokens = estimate_message_tokens(message)
        self.tokens[entry_id] = tokens
        self.total += tokens
        if isinstance(message, ToolResultMessage):
            self.results[message.tool_call_id] = (entry_id, tokens)

    def compacted(self, entry: CompactionEntry) -> None:
        kept, keeping = 0, False
        for entry_id, tokens in self.tokens.items():
            keeping = keeping or entry_id == entry.first_kept_entry_id
            kept += tokens if keeping else 0
        summary = math.ceil(len(entry.summary) / 4)
        self.tokens = {"summary": summary}
        self.results = {}
        self.total = summary + kept

    def pruned(self, stubs: dict[str, Any]) -> None:
        for call_id, stub in stubs.items():
            found = self.results.pop(call_id, None)
            if found is not None and isinstance(stub, str):
                entry_id, tokens = found
                after = math.ceil(len(stub) / 4)
                self.tokens[entry_id] = after
                self.total -= tokens - after


@dataclass
class _Walk:
    """State of one pass over the current path."""

    data: ReportData
    configured: Callable[[str], int | None]
    windows: dict[str, int | None] = field(default_factory=dict)
    learned: dict[str, int] = field(default_factory=dict)
    estimate: _Estimate = field(default_factory=_Estimate)
    model: str = ""
    summaries: dict[str, str] = field(default_factory=dict)
    pending: list[Marker] = field(default_factory=list)

    def window(self) -> int | None:
        if self.model not in self.windows:
            self.windows[self.model] = self.configured(self.model)
        return self.learned.get(self.model) or self.windows[self.model]

    def place(self, marker: Marker) -> None:
        marker.request = len(self.data.requests)
        self.data.markers.append(marker)


def _usage_point(walk: _Walk, entry: MessageEntry, message: AssistantMessage) -> RequestPoint:
    usage = message.usage
    sent = usage.input + usage.cache_read + usage.cache_write
    model = f"{message.provider}/{message.model}" if message.provider else message.model
    if model and model != walk.model:
        walk.model = model
    turn = max(0, len(walk.data.turns) - 1)
    return RequestPoint(
        index=len(walk.data.requests),
        entry_id=entry.id,
        turn=turn,
        timestamp=entry.timestamp,
        model=walk.model,
        tokens=sent if sent > 0 else walk.estimate.total,
        estimated=sent <= 0,
        input=usage.input,
        cache_read=usage.cache_read,
        cache_write=usage.cache_write,
        output=usage.output,
        cost=usage.cost.total,
        window=walk.window(),
    )


def _on_message(walk: _Walk, entry: MessageEntry, transcript: bool) -> None:
    message = entry.message
    data = walk.data
    if isinstance(message, UserMessage):
        data.turns.append(TurnRow(index=len(data.turns), prompt=text_of(message), first_request=len(data.requests)))
    elif isinstance(message, AssistantMessage):
        point = _usage_point(walk, entry, message)
        data.requests.append(point)
        if data.turns:
            row = data.turns[-1]
            row.requests += 1
            row.input += point.input + point.cache_write
            row.cache_read += point.cache_read
            row.output += point.output
            row.cost += point.cost
    if transcript:
        if not data.turns:
            data.turns.append(TurnRow(index=0, prompt="", first_request=0))
        data.turns[-1].messages.append({"entry": entry.id, "message": message})
    walk.estimate.add(entry.id, message)


def _ledger_marker(walk: _Walk, entry: CustomEntry) -> None:
    record = entry.data if isinstance(entry.data, dict) else {}
    kind = str(record.get("kind") or "unknown")
    ref = record.get("ref")
    tool = record.get("tool")
    before, after = record.get("tokensBefore"), record.get("tokensAfter")
    title = kind
    if tool:
        title += f" · {tool}"
    if isinstance(before, int) and isinstance(after, int) and before != after:
        title += f" · {before:,} → {after:,} tokens"
    marker = Marker(
        request=0,
        kind=kind,
        title=title,
        recover=str(record.get("recover") or ""),
        entry_id=entry.id,
        detail={k: v for k, v in record.items() if k not in {"kind", "recover"}},
    )
    detail = record.get("detail")
    budget = detail.get("working_budget") if isinstance(detail, dict) else None
    if kind == "compaction" and isinstance(budget, dict):
        walk.data.budgets.setdefault(walk.model, budget)
    if kind == "compaction" and isinstance(ref, str):
        marker.summary = walk.summaries.get(ref)
        if marker.summary is None:
            walk.pending.append(marker)  # the compaction entry comes after its record
    walk.place(marker)


def _on_custom(walk: _Walk, entry: CustomEntry) -> None:
    data = entry.data if isinstance(entry.data, dict) else {}
    if entry.custom_type == LEDGER_CUSTOM_TYPE:
        _ledger_marker(walk, entry)
    elif entry.custom_type == TODOS_CUSTOM_TYPE:
        todos = clean_todos(data) or []
        walk.data.todos = [{"content": t["content"], "status": t["status"]} for t in todos]
    elif entry.custom_type == MEMORY_CUSTOM_TYPE:
        walk.data.memory = str(data.get("text") or "")
    elif entry.custom_type == CONTEXT_CUSTOM_TYPE:
        op = data.get("op")
        if op == "prune" and isinstance(data.get("stubs"), dict):
            walk.estimate.pruned(data["stubs"])
            for call_id, stub in data["stubs"].items():
                if isinstance(stub, str):  # the first step that names a result wins (docs/context.md)
                    walk.data.pruned.setdefault(call_id, (stub, len(walk.data.requests)))
        elif op == "window" and isinstance(data.get("window"), int) and isinstance(data.get("model"), str):
            walk.learned[data["model"]] = data["window"]


def _on_model_change(walk: _Walk, entry: ModelChangeEntry) -> None:
    model = f"{entry.provider}/{entry.model_id}"
    previous = walk.model
    walk.model = model
    if previous and previous != model:
        walk.place(
            Marker(
                request=0,
                kind="model_switch",
                title=f"model switch · {previous} → {model}",
                recover="",
                entry_id=entry.id,
                detail={"from": previous, "to": model},
            )
        )


def _on_compaction(walk: _Walk, entry: CompactionEntry) -> None:
    walk.summaries[entry.id] = entry.summary
    for marker in walk.pending:
        if marker.detail.get("ref") == entry.id:
            marker.summary = entry.summary
    walk.pending = [m for m in walk.pending if m.summary is None]
    walk.estimate.compacted(entry)


def walk_path(walk: _Walk, entries: Iterable[Entry], transcript: bool) -> None:
    """One pass over the current path, in order."""
    for entry in entries:
        if isinstance(entry, MessageEntry):
            _on_message(walk, entry, transcript)
        elif isinstance(entry, CustomEntry):
            _on_custom(walk, entry)
        elif isinstance(entry, ModelChangeEntry):
            _on_model_change(walk, entry)
        elif isinstance(entry, CompactionEntry):
            _on_compaction(walk, entry)
        elif isinstance(entry, BranchSummaryEntry) and transcript and walk.data.turns:
            walk.data.turns[-1].messages.append({"entry": entry.id, "branch_summary": entry.summary})
    last = len(walk.data.requests) - 1
    for marker in walk.data.markers:  # records after the last request sit on it
        marker.request = max(0, min(marker.request, last))


def collect(
    store: SessionStore,
    *,
    windows: WindowSource = None,
    reserve: int | None = None,
    transcript: bool = True,
) -> ReportData:
    """The report's data for the current leaf of ``store``.

    ``windows``: the context window of each model (``provider/id``) as configured, as a
    mapping or a look-up function; windows the session learnt from a server override them.
    ``reserve``: tokens kept free below the window (the compaction threshold is window -
    reserve). The tree rows are added by
    :func:`heron.coding.report.build_report`."""
    header = store.header
    data = ReportData(
        session_id=store.session_id,
        path=str(store.path) if store.path is not None else None,
        cwd=header.cwd if header is not None else "",
        started=header.timestamp if header is not None else "",
        reserve=reserve,
    )
    walk = _Walk(data=data, configured=window_lookup(windows))
    if store.leaf_id is not None:
        walk_path(walk, store.path_to(store.leaf_id), transcript)
    data.warnings = list(store.warnings)
    return data
