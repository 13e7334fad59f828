"""Counting a session's entries: one place for ``heron sessions list`` / ``info`` and ``/session``.

All counts come from the store's index (types from the scan, roles from the lines'
prefixes), so they cost no decoding of entries, even for a 100,000-entry file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from heron.session.store import SessionStore


def count_by(values: Iterable[str | None]) -> dict[str, int]:
    """How often each value occurs (None is not counted)."""
    out: dict[str, int] = {}
    for value in values:
        if value is not None:
            out[value] = out.get(value, 0) + 1
    return out


def message_count(types: Iterable[str]) -> int:
    """Message entries (every branch, not only the leaf's path)."""
    return sum(1 for kind in types if kind == "message")


@dataclass(slots=True)
class SessionStats:
    """``by_type``: entries per type; ``by_role``: message entries per role."""

    entries: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    by_role: dict[str, int] = field(default_factory=dict)

    @property
    def messages(self) -> int:
        return self.by_type.get("message", 0)

    def describe_types(self) -> str:
        """``12 (message 10, model_change 2)``"""
        return f"{self.entries} ({', '.join(f'{k} {v}' for k, v in sorted(self.by_type.items()))})"

    def describe_roles(self) -> str:
        """``assistant 5, user 5`` (``none`` without messages)."""
        return ", ".join(f"{k} {v}" for k, v in sorted(self.by_role.items())) or "none"


def session_stats(store: SessionStore, *, roles: bool = True) -> SessionStats:
    """Counts of every entry of ``store``; ``roles=False`` skips reading message roles."""
    types = store.types()
    by_role: dict[str, int] = {}
    if roles:
        by_role = count_by(r for r, t in zip(store.roles(), types, strict=True) if t == "message")
    return SessionStats(entries=len(types), by_type=count_by(types), by_role=by_role)
