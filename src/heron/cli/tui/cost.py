"""``/cost``: tokens and cost of this session, by model.

Summed over the assistant messages on the session's path - the conversation the user is
in, from its first entry, also the part a compaction took out of the context - and
grouped by the provider and model that answered (each answer records both). Branches
left by ``/tree`` are not on the path and not counted; ``heron sessions info`` counts
the whole file. Summaries made for compaction are requests of their own whose usage the
session does not record, so they are not in these figures (the note says so). What the
sub-agents of the ``task`` tool cost is a row of its own, from the usage each child's
registry entry records.
"""

from __future__ import annotations

from dataclasses import dataclass

from heron.ai.types import AssistantMessage, Usage
from heron.context.continuity.children import CHILD_CUSTOM_TYPE
from heron.session.entries import CustomEntry, MessageEntry
from heron.session.store import SessionStore


@dataclass(slots=True)
class ModelUsage:
    provider: str
    model: str
    answers: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0

    def add(self, message: AssistantMessage) -> None:
        self.add_usage(message.usage)

    def add_usage(self, usage: Usage, answers: int = 1) -> None:
        self.answers += answers
        self.input += usage.input
        self.output += usage.output
        self.cache_read += usage.cache_read
        self.cache_write += usage.cache_write
        self.cost += usage.cost.total


def usage_by_model(store: SessionStore) -> list[ModelUsage]:
    """One row per provider/model on the path, in the order each first answered."""
    rows: dict[tuple[str, str], ModelUsage] = {}
    for index in store.path_indices():
        if store.role_at(index) != "assistant":
            continue
        entry = store.entry_at(index, cache=False)
        if not isinstance(entry, MessageEntry) or not isinstance(entry.message, AssistantMessage):
            continue
        message = entry.message
        key = (message.provider, message.model)
        row = rows.get(key)
        if row is None:
            row = rows[key] = ModelUsage(message.provider, message.model)
        row.add(message)
    children = _children_usage(store)
    return [*rows.values(), *([children] if children is not None else [])]


def _children_usage(store: SessionStore) -> ModelUsage | None:
    """What the sub-agents of this session cost (the task tool records it with each child)."""
    finished: dict[str, Usage] = {}
    types = store.types()
    for index in store.path_indices():
        if types[index] != "custom":
            continue
        entry = store.entry_at(index, cache=False)
        if not isinstance(entry, CustomEntry) or entry.custom_type != CHILD_CUSTOM_TYPE:
            continue
        data = entry.data if isinstance(entry.data, dict) else {}
        if isinstance(data.get("usage"), dict) and isinstance(data.get("id"), str):
            finished[data["id"]] = Usage.from_json_dict(data["usage"])
    if not finished:
        return None
    row = ModelUsage("sub-agents", f"{len(finished)} child session(s)")
    for usage in finished.values():
        row.add_usage(usage, answers=0)
    return row


def cost_lines(rows: list[ModelUsage], compactions: int) -> list[str]:
    if not rows:
        return ["no answers in this session yet"]
    header = (
        f"  {'model':<36} {'answers':>7} {'input':>10} {'output':>9} {'cache read':>11} {'cache write':>11} "
        f"{'cost':>10}"
    )
    lines = [header]
    total = ModelUsage("", "total")
    for row in rows:
        lines.append(_row(f"{row.provider}/{row.model}", row))
        for name in ("answers", "input", "output", "cache_read", "cache_write", "cost"):
            setattr(total, name, getattr(total, name) + getattr(row, name))
    if len(rows) > 1:
        lines.append(_row("total", total))
    if compactions:
        lines.append(
            f"  ({compactions} compaction summar{'y' if compactions == 1 else 'ies'} on this path: "
            "their requests are not recorded, so not counted)"
        )
    if all(row.cost == 0 for row in rows):
        lines.append('  (no prices known for these models: add "cost" to a model in models.json to see one)')
    return lines


def _row(name: str, row: ModelUsage) -> str:
    shown = name if len(name) <= 36 else name[:35] + "…"
    return (
        f"  {shown:<36} {row.answers:>7,} {row.input:>10,} {row.output:>9,} {row.cache_read:>11,} "
        f"{row.cache_write:>11,} {'$' + format(row.cost, '.4f'):>10}"
    )
