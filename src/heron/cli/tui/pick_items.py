"""What the pickers offer: the sessions of ``/resume`` and ``-r`` (date, first prompt,
size), the models of ``/model`` (context window, prices) and the entries of ``/tree``
(the conversation; the internal entries behind Tab). Plain data for
:func:`heron.cli.tui.picker.pick`, built here so the numbered lists printed without a
terminal and the pickers describe the same things."""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from heron.agent.messages import BashExecutionMessage
from heron.ai.types import AssistantMessage, Model, UserMessage
from heron.cli.sessions_cmd import render_tree
from heron.cli.tui.picker import Item
from heron.session.entries import BranchSummaryEntry, CompactionEntry, MessageEntry
from heron.session.paths import SessionSummary
from heron.session.store import SessionStore

TREE_INDEX = re.compile(r"\[(\d+)\] ")
# picker.pick's signature: a title, the items, what Tab shows; the value picked or None
Picker = Callable[..., Awaitable[Any]]
M = TypeVar("M", bound=str)


def format_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KB"
    return f"{size / 1024 / 1024:.1f} MB"


def session_title(summary: SessionSummary, width: int = 70) -> str:
    """The session's name, else its first prompt on one line."""
    title = summary.name or " ".join((summary.first_message or "(no messages)").split())
    return title if len(title) <= width else title[: width - 1] + "…"


def session_items(summaries: Sequence[SessionSummary], current: Path | None) -> list[Item[Path]]:
    items = []
    for summary in summaries:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(summary.modified))
        try:
            size = format_size(summary.path.stat().st_size)
        except OSError:
            size = "?"
        detail = f"{summary.message_count} msgs · {size} · {summary.id[:8]}"
        is_current = current is not None and summary.path == current
        items.append(Item(f"{when}  {session_title(summary)}", summary.path, detail, current=is_current))
    return items


def format_window(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:g}M"
    return f"{tokens / 1000:g}k" if tokens >= 1000 else str(tokens)


def model_detail(model: Model) -> str:
    """``200k context · $3/$15 per M tokens · reasoning``."""
    parts = [f"{format_window(model.context_window)} context"]
    cost = model.cost
    parts.append(f"${cost.input:g}/${cost.output:g} per M tokens" if cost.input or cost.output else "no prices")
    if model.reasoning:
        parts.append("reasoning")
    return " · ".join(parts)


def model_items(models: Sequence[Model], current: Model) -> list[Item[str]]:
    return [
        Item(m.ref, m.ref, model_detail(m), current=(m.provider, m.id) == (current.provider, current.id))
        for m in models
    ]


def is_conversation(store: SessionStore, index: int) -> bool:
    """A prompt, an answer, a ``!command`` or a summary; not a tool result, a ledger or memory record, a
    model or thinking-level change, a label."""
    entry = store.entry_at(index, cache=False)
    if isinstance(entry, MessageEntry):
        return isinstance(entry.message, UserMessage | AssistantMessage | BashExecutionMessage)
    return isinstance(entry, CompactionEntry | BranchSummaryEntry)


def tree_items(store: SessionStore, width: int) -> list[Item[int]]:
    """The lines of ``/tree``'s drawing, each picking its entry number."""
    leaf = store.leaf_index
    items = []
    for line in render_tree(store, width=width):
        found = TREE_INDEX.search(line)
        if found is None:
            continue
        index = int(found.group(1))
        items.append(Item(line, index, extra=not is_conversation(store, index), current=index == leaf))
    return items


def mode_items(modes: Sequence[M], help: Mapping[M, str], current: str) -> list[Item[M]]:
    """The permission modes of ``/mode``, each with what it allows."""
    return [Item(mode, mode, help[mode], current=mode == current) for mode in modes]
