"""The typed appends of a session (``append_message``, ``set_label``, ...).

Each builds one entry and hands it to :meth:`SessionStore.append`, which gives it its id,
parent and timestamp and writes it; kept apart from the store so the store's module is
about keeping the tree and the file, not about the kinds of entries.
"""

from __future__ import annotations

from typing import Any

from heron.agent.messages import AgentMessage
from heron.ai.types import ImageContent, TextContent
from heron.session.entries import (
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
)


class EntryAppends:
    """Mixed into :class:`heron.session.store.SessionStore`."""

    def append(self, entry: Entry) -> Entry:
        raise NotImplementedError

    def has(self, entry_id: str) -> bool:
        raise NotImplementedError

    def append_message(self, message: AgentMessage) -> MessageEntry:
        entry = MessageEntry(message=message)
        self.append(entry)
        return entry

    def append_model_change(self, provider: str, model_id: str) -> ModelChangeEntry:
        entry = ModelChangeEntry(provider=provider, model_id=model_id)
        self.append(entry)
        return entry

    def append_thinking_level_change(self, level: str) -> ThinkingLevelChangeEntry:
        entry = ThinkingLevelChangeEntry(thinking_level=level)
        self.append(entry)
        return entry

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        details: Any = None,
        from_hook: bool | None = None,
    ) -> CompactionEntry:
        entry = CompactionEntry(
            summary=summary,
            first_kept_entry_id=first_kept_entry_id,
            tokens_before=tokens_before,
            details=details,
            from_hook=from_hook,
        )
        self.append(entry)
        return entry

    def append_custom(self, custom_type: str, data: Any = None) -> CustomEntry:
        entry = CustomEntry(custom_type=custom_type, data=data)
        self.append(entry)
        return entry

    def append_custom_message(
        self,
        custom_type: str,
        content: str | list[TextContent | ImageContent],
        display: bool = True,
        details: Any = None,
    ) -> CustomMessageEntry:
        entry = CustomMessageEntry(custom_type=custom_type, content=content, display=display, details=details)
        self.append(entry)
        return entry

    def set_label(self, target_id: str, label: str | None) -> LabelEntry:
        """Label an entry (``None`` clears). Appended like any entry, so it moves the leaf."""
        if not self.has(target_id):
            raise KeyError(f"no entry {target_id!r} in this session")
        entry = LabelEntry(target_id=target_id, label=label or None)
        self.append(entry)
        return entry

    def set_name(self, name: str | None) -> SessionInfoEntry:
        entry = SessionInfoEntry(name=name or None)
        self.append(entry)
        return entry
