"""Which sessions a session was handed off from: read from the session file alone, cheap
enough for every session's start (the tools' ``search_history`` scope), so the start does
not load the frontier's rendering in :mod:`heron.coding.handoff`."""

from __future__ import annotations

from typing import Any

from heron.session.entries import CustomMessageEntry
from heron.session.store import SessionStore

HANDOFF_CUSTOM_TYPE = "heron.handoff"  # the parent's record, and the child's frontier message


def handoff_details(store: SessionStore) -> dict[str, Any] | None:
    """The details of the handoff that started ``store`` (None: it was not started by one)."""
    for entry_id, kind in zip(store.ids(), store.types(), strict=True):
        if kind == "message":  # the frontier comes before the child's first message
            return None
        if kind != "custom_message":
            continue
        entry = store.get(entry_id)
        if isinstance(entry, CustomMessageEntry) and entry.custom_type == HANDOFF_CUSTOM_TYPE:
            details = entry.details
            return details if isinstance(details, dict) else None
    return None


def lineage(store: SessionStore) -> tuple[str, ...]:
    """The ids of the sessions ``store`` was handed off from, nearest first (search_history
    searches them with the session itself)."""
    details = handoff_details(store)
    found = details.get("lineage") if details is not None else None
    if not isinstance(found, list):
        return ()
    return tuple(item for item in found if isinstance(item, str) and item)
