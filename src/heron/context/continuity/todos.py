"""The task list: stored in the session, rendered the same way every time.

The ``todo`` tool replaces the whole list on each call (as Claude Code's TodoWrite does).
Each change is a ``custom`` entry of type ``heron.todos`` in the session, so a resumed
session has the list, and the list as it stood at a compaction is carried into the
compaction's injected block: after the summary, before the kept messages. Rendering is a
pure function of the list - one line per item, its status word, then its content exactly
as given - so the same list always gives the same bytes (prompt caching, restarts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypedDict

TODOS_CUSTOM_TYPE = "heron.todos"
TODOS_MESSAGE_TYPE = "heron.todos"
STATUSES = ("pending", "in_progress", "completed")
TodoStatus = Literal["pending", "in_progress", "completed"]
HEADER = "The task list you were keeping (todo tool), as it stood when the history was compacted:"


class TodoItem(TypedDict):
    content: str
    status: TodoStatus


def clean_todos(raw: Any) -> list[TodoItem] | None:
    """The list in ``raw`` (an entry's data or a tool's details), or None if malformed."""
    items = raw.get("todos") if isinstance(raw, dict) else raw
    if not isinstance(items, list):
        return None
    out: list[TodoItem] = []
    for item in items:
        if not isinstance(item, dict):
            return None
        content, status = item.get("content"), item.get("status")
        if not isinstance(content, str) or status not in STATUSES:
            return None
        out.append(TodoItem(content=content, status=status))
    return out


def render_todos(todos: Sequence[TodoItem]) -> str:
    """One line per item: ``- [status] content``."""
    if not todos:
        return "(the task list is empty)"
    return "\n".join(f"- [{item['status']}] {item['content']}" for item in todos)


def injected_todos_text(todos: Sequence[TodoItem]) -> str:
    return f"{HEADER}\n{render_todos(todos)}"
