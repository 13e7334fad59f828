"""Labels of entries and the session's name: state spread over the whole file.

``label`` entries (``targetId``, ``label?``) and ``session_info`` entries (``name?``) may
sit anywhere in the tree and the latest one wins (an absent value clears). Unlike the
leaf's context, which walks one path, they are collected from every entry of the file,
and only when first asked for: opening a big session decodes none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from heron.session.entries import Entry, LabelEntry, SessionInfoEntry

LABEL_TYPES = frozenset({"label", "session_info"})


class SessionLabels:
    """The current label of every labelled entry and the session's name."""

    def __init__(self, *, read: bool = True) -> None:
        self.labels: dict[str, str] = {}
        self.name: str | None = None
        self.read = read  # False: the file's label and session_info entries are not taken in yet

    def ensure(self, types: Sequence[str], entry_at: Callable[[int], Entry | None]) -> None:
        """Take in every label and session_info entry of the file, once."""
        if self.read:
            return
        self.read = True
        self.labels, self.name = {}, None
        for i, kind in enumerate(types):
            if kind in LABEL_TYPES:
                entry = entry_at(i)
                if entry is not None:
                    self.note(entry)

    def note(self, entry: Entry) -> None:
        """Apply one entry (any type; only labels and session_info change anything)."""
        if isinstance(entry, LabelEntry):
            if entry.label:
                self.labels[entry.target_id] = entry.label
            else:
                self.labels.pop(entry.target_id, None)
        elif isinstance(entry, SessionInfoEntry):
            self.name = entry.name
