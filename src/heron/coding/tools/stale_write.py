"""The write tool's guard against losing a change someone else made.

``write`` replaces a whole file. When the file changed on disk since the model last read
or wrote it (an editor, a formatter, another process, the user), the model's content was
written against an older version, and writing it would silently drop the other change.
Like ``edit``, ``write`` then refuses, and says what the write would remove or add, so
the model can read the file again and merge, or pass ``overwrite: true`` when replacing
it is really meant. A file the model never read is written as before: there is no
version to compare with (and a new file has nothing to lose).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from heron.agent.tools import ToolError
from heron.coding.tools.env import ReadRecord
from heron.coding.tools.read_source import unchanged_since_read

# Beyond this size the summary gives sizes only: a diff of a huge file costs too much.
_DIFF_MAX_BYTES = 1_000_000
_LINES_SHOWN = 5
_LINE_CHARS = 120


def check_not_stale(path: Path, shown: str, last: ReadRecord | None, proposed: bytes, held: bytes | None) -> None:
    """Raise when ``path`` differs from the version the model last read or wrote.
    ``held``: the text a client holds for the file (compared by content, as it was read)."""
    if last is None:
        return
    try:
        info = os.stat(path)
    except OSError:
        return  # gone (or unreadable): the write reports its own error, nothing is lost
    try:
        current = held if held is not None else (path.read_bytes() if info.st_size <= _DIFF_MAX_BYTES else None)
    except OSError:
        current = None
    if unchanged_since_read(last.mtime_ns, last.size, info, current if current is not None else b""):
        return
    if current == proposed:
        return  # the file already holds exactly what the model meant to write
    raise ToolError(
        f"{shown} has changed on disk since you last read or wrote it, so it was not overwritten: "
        f"{change_summary(current, proposed, info.st_size)}\n"
        "Read it again and write content that keeps those changes, or pass overwrite: true "
        "to replace it anyway."
    )


def change_summary(current: bytes | None, proposed: bytes, current_size: int) -> str:
    """What writing ``proposed`` over ``current`` would do, in a few lines."""
    if current is None:
        return f"it is now {current_size:,} bytes (too large to compare); your content is {len(proposed):,} bytes."
    old = current.decode("utf-8", "replace").splitlines()
    new = proposed.decode("utf-8", "replace").splitlines()
    removed: list[str] = []
    added = 0
    for line in difflib.unified_diff(old, new, n=0, lineterm=""):
        if line.startswith(("---", "+++", "@@")):
            continue
        if line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added += 1
    text = f"writing your content would remove {len(removed)} line(s) the file has now and add {added}."
    for line in removed[:_LINES_SHOWN]:
        text += "\n- " + (line if len(line) <= _LINE_CHARS else line[:_LINE_CHARS] + "…")
    if len(removed) > _LINES_SHOWN:
        text += f"\n- … and {len(removed) - _LINES_SHOWN} more"
    return text
