"""What the agent sees for a leaf: messages, model and thinking level (docs/sessions.md; pi's
``buildSessionContext``).

The path is the chain of entries from the root to the leaf. Settings: the latest
``model_change`` or assistant message on the path gives the model, the latest
``thinking_level_change`` the thinking level (a version-1 header's ``provider`` /
``modelId`` / ``thinkingLevel`` count as the first record; the default level is "off").

Messages: with a compaction on the path (the latest one counts), its summary as a
:class:`CompactionSummaryMessage`, then the entries from its ``firstKeptEntryId`` up to the
compaction, then everything after it; without one, the whole path. Only ``message``,
``custom_message`` (as an :class:`ExtensionMessage`) and non-empty ``branch_summary``
entries produce messages.

A compaction whose ``firstKeptEntryId`` is not on the path (missing from the file, or on
another branch) is treated as if it had kept everything it could have summarised: the
entries from the previous compaction's first kept entry (or from the root) up to it. The
summary then repeats some of those messages, which costs tokens but loses nothing; the
budget check before the next request compacts again if the window needs it. (pi drops them
all instead, silently.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from heron.agent.messages import (
    AgentMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ExtensionMessage,
)
from heron.ai.types import AssistantMessage
from heron.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    ModelChangeEntry,
    ModelRef,
    SessionHeader,
    ThinkingLevelChangeEntry,
    iso_to_ms,
)

DEFAULT_THINKING_LEVEL = "off"


@runtime_checkable
class EntrySource(Protocol):
    """What :func:`build_context` needs from a store: cheap structure, lazy entries."""

    @property
    def header(self) -> SessionHeader | None: ...

    def lineage(self, entry_id: str | None) -> tuple[Sequence[str], Sequence[str]]:
        """Ids and types of the entries from the root to ``entry_id``."""
        ...

    def role_of(self, entry_id: str) -> str | None: ...

    def get(self, entry_id: str) -> Entry | None: ...

    def _warn(self, message: str) -> None: ...


@dataclass(slots=True)
class SessionContext:
    """``messages[i]`` comes from entry ``entry_ids[i]`` (the compaction summary from the
    compaction entry). ``model`` is None when nothing on the path names one."""

    messages: list[AgentMessage] = field(default_factory=list)
    entry_ids: list[str] = field(default_factory=list)
    model: ModelRef | None = None
    thinking_level: str = DEFAULT_THINKING_LEVEL
    compaction_id: str | None = None
    warnings: list[str] = field(default_factory=list)


class _ListSource:
    """:class:`EntrySource` over a plain list of entries (first entry with an id wins)."""

    def __init__(self, entries: Iterable[Entry], header: SessionHeader | None) -> None:
        self._header = header
        self.by_id: dict[str, Entry] = {}
        for entry in entries:
            self.by_id.setdefault(entry.id, entry)
        self.warnings: list[str] = []

    @property
    def header(self) -> SessionHeader | None:
        return self._header

    def lineage(self, entry_id: str | None) -> tuple[Sequence[str], Sequence[str]]:
        ids = self.path_ids(entry_id)
        return ids, [self.by_id[i].type for i in ids]

    def path_ids(self, entry_id: str | None = None) -> list[str]:
        out: list[str] = []
        seen: set[str] = set()
        current = entry_id
        while current is not None and current in self.by_id and current not in seen:
            seen.add(current)
            out.append(current)
            current = self.by_id[current].parent_id
        if current is not None and current in seen:
            self._warn(f"parent links form a cycle at entry {current}; the path is cut there")
        out.reverse()
        return out

    def role_of(self, entry_id: str) -> str | None:
        entry = self.by_id[entry_id]
        return entry.message.role if isinstance(entry, MessageEntry) else None

    def get(self, entry_id: str) -> Entry | None:
        return self.by_id.get(entry_id)

    def _warn(self, message: str) -> None:
        self.warnings.append(message)


def restore_settings(
    source: EntrySource, ids: Sequence[str], types: Sequence[str]
) -> tuple[ModelRef | None, str | None]:
    """The model and thinking level recorded on a path (None: nothing recorded)."""
    model: ModelRef | None = None
    thinking: str | None = None
    changed = last_index(types, "model_change", len(types))
    for i in range(len(types) - 1, -1 if changed is None else changed - 1, -1):
        if types[i] == "model_change":
            entry = source.get(ids[i])
            if isinstance(entry, ModelChangeEntry) and entry.provider and entry.model_id:
                model = entry.model
                break
        elif types[i] == "message" and source.role_of(ids[i]) == "assistant":
            entry = source.get(ids[i])
            message = entry.message if isinstance(entry, MessageEntry) else None
            if isinstance(message, AssistantMessage) and message.provider and message.model:
                model = ModelRef(message.provider, message.model)
                break
    before = len(types)
    while thinking is None:
        found = last_index(types, "thinking_level_change", before)
        if found is None:
            break
        entry = source.get(ids[found])
        if isinstance(entry, ThinkingLevelChangeEntry):
            thinking = entry.thinking_level
        before = found
    header = source.header
    if header is not None:
        model = model or header.legacy_model
        thinking = thinking or header.legacy_thinking_level
    return model, thinking


def settings_after(model: ModelRef | None, thinking: str | None, entry: Entry) -> tuple[ModelRef | None, str | None]:
    """The settings of a path after ``entry`` is appended to it (for a store's cache of
    its leaf's settings, so an append does not walk the path again)."""
    if isinstance(entry, ModelChangeEntry):
        model = entry.model
    elif isinstance(entry, ThinkingLevelChangeEntry):
        thinking = entry.thinking_level
    elif (
        isinstance(entry, MessageEntry)
        and isinstance(entry.message, AssistantMessage)
        and entry.message.provider
        and entry.message.model
    ):
        model = ModelRef(entry.message.provider, entry.message.model)
    return model, thinking


def last_index(values: Sequence[str], value: str, before: int) -> int | None:
    """The last position < ``before`` holding ``value`` (searched in C, not in Python)."""
    if before <= 0:
        return None
    head = values[:before]
    reverse = head[::-1]
    try:
        return before - 1 - reverse.index(value)
    except ValueError:
        return None


def build_context(
    entries: EntrySource | Iterable[Entry], leaf_id: str | None, *, header: SessionHeader | None = None
) -> SessionContext:
    """The context for ``leaf_id`` (None: the empty context before the first entry).
    ``entries`` is a :class:`SessionStore` (entries are decoded only as needed) or any
    iterable of entries; ``header`` supplies version-1 settings for a plain list."""
    source = entries if isinstance(entries, EntrySource) else _ListSource(entries, header)
    out = SessionContext()
    if leaf_id is None:
        return out
    ids, types = source.lineage(leaf_id)
    model, thinking = restore_settings(source, ids, types)
    out.model = model
    out.thinking_level = thinking or DEFAULT_THINKING_LEVEL

    latest = last_index(types, "compaction", len(types))
    compaction = source.get(ids[latest]) if latest is not None else None
    if latest is None or not isinstance(compaction, CompactionEntry):  # none (or unreadable)
        _emit(source, ids, types, 0, len(ids), out)
    else:
        out.compaction_id = compaction.id
        out.messages.append(
            CompactionSummaryMessage(
                summary=compaction.summary,
                tokens_before=compaction.tokens_before,
                timestamp=iso_to_ms(compaction.timestamp),
            )
        )
        out.entry_ids.append(compaction.id)
        start = _position(ids, compaction.first_kept_entry_id, latest)
        if start is None:
            start = _region_start(source, ids, types, latest)
            message = (
                f"compaction {compaction.id}: first kept entry {compaction.first_kept_entry_id or '(none)'} "
                f"is not on the path; keeping the {latest - start} entries it could have summarised"
            )
            source._warn(message)
            out.warnings.append(message)
        _emit(source, ids, types, start, latest, out)
        _emit(source, ids, types, latest + 1, len(ids), out)
    if isinstance(source, _ListSource):
        out.warnings.extend(w for w in source.warnings if w not in out.warnings)
    return out


def _position(ids: Sequence[str], entry_id: str, before: int) -> int | None:
    if not entry_id:
        return None
    try:
        return ids.index(entry_id, 0, before)
    except ValueError:
        return None


def _region_start(source: EntrySource, ids: Sequence[str], types: Sequence[str], compaction: int) -> int:
    """Where the region a compaction at ``compaction`` considered starts (docs/context.md):
    the previous compaction's first kept entry, else just after it, else the root."""
    previous = last_index(types, "compaction", compaction)
    if previous is None:
        return 0
    entry = source.get(ids[previous])
    if isinstance(entry, CompactionEntry):
        kept = _position(ids, entry.first_kept_entry_id, previous)
        if kept is not None:
            return kept
    return previous + 1


def _emit(
    source: EntrySource, ids: Sequence[str], types: Sequence[str], start: int, stop: int, out: SessionContext
) -> None:
    messages, entry_ids = out.messages, out.entry_ids
    for i in range(start, stop):
        kind = types[i]
        if kind == "message":
            entry = source.get(ids[i])
            if isinstance(entry, MessageEntry):
                messages.append(entry.message)
                entry_ids.append(ids[i])
        elif kind == "custom_message":
            entry = source.get(ids[i])
            if isinstance(entry, CustomMessageEntry):
                messages.append(
                    ExtensionMessage(
                        custom_type=entry.custom_type,
                        content=entry.content,
                        display=entry.display,
                        details=entry.details,
                        timestamp=iso_to_ms(entry.timestamp),
                    )
                )
                entry_ids.append(ids[i])
        elif kind == "branch_summary":
            entry = source.get(ids[i])
            if isinstance(entry, BranchSummaryEntry) and entry.summary:
                messages.append(
                    BranchSummaryMessage(
                        summary=entry.summary, from_id=entry.from_id or "", timestamp=iso_to_ms(entry.timestamp)
                    )
                )
                entry_ids.append(ids[i])
