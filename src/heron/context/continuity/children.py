"""The registry of a session's sub-agents: which children it started, and how they ended.

Each child is linked from the parent's session by ``custom`` entries of type
``heron.subagent`` (one when it starts, one when it ends; the latest per id wins). The
registry is a pure function of the path, and the compaction carries it into its injected
block (after the summary, like the task list), so the model can still refer to a child
whose call was summarised away. Rendering is deterministic: same registry, same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypedDict

from heron.session.entries import CustomEntry, Entry

CHILD_CUSTOM_TYPE = "heron.subagent"
CHILDREN_MESSAGE_TYPE = "heron.subagents"
STATUSES = ("running", "done", "error", "aborted")
HEADER = "Sub-agents you started earlier (task tool), as they stood when the history was compacted:"


class ChildRecord(TypedDict):
    id: str
    description: str
    status: str
    session: str


def clean_child(raw: Any) -> ChildRecord | None:
    """The record in ``raw`` (an entry's data), or None if malformed."""
    if not isinstance(raw, dict):
        return None
    values = {key: raw.get(key) for key in ("id", "description", "status", "session")}
    if not all(isinstance(value, str) for value in values.values()) or values["status"] not in STATUSES:
        return None
    return ChildRecord(
        id=str(values["id"]),
        description=str(values["description"]),
        status=str(values["status"]),
        session=str(values["session"]),
    )


def clean_children(raw: Any) -> list[ChildRecord] | None:
    if not isinstance(raw, list):
        return None
    out = [clean_child(item) for item in raw]
    return None if any(item is None for item in out) else [item for item in out if item is not None]


def children_on_path(entries: Iterable[Entry]) -> list[ChildRecord]:
    """The children linked on a path, in the order they started, each at its latest status."""
    found: dict[str, ChildRecord] = {}
    for entry in entries:
        if isinstance(entry, CustomEntry) and entry.custom_type == CHILD_CUSTOM_TYPE:
            record = clean_child(entry.data)
            if record is not None:
                found[record["id"]] = record
    return list(found.values())


def render_children(children: Sequence[ChildRecord]) -> str:
    lines = [f"- {c['id']} [{c['status']}] {c['description']} (session: {c['session']})" for c in children]
    return "\n".join([HEADER, *lines])
