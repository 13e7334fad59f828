"""Forking a session: a new session holding one path of another.

The fork has the same ids as the path it copies, plus the labels of those entries, and its
header names the session it came from (``parentSession``). Entries are copied byte for
byte where nothing about them changed (unknown fields and key order included), and
re-encoded where their parent in the fork is not the one they have in the file (a
malformed entry before them was left out, or an orphan became a root). In-memory sessions
fork in memory. The new file is written at once when the path holds a message (else at
its first one, like a new session: :func:`heron.session.entries.starts_file`), and it is
returned open for writing.

Forking reads the source through the store's public interface for it - :meth:`SessionStore.line_for`,
:meth:`~SessionStore.verbatim_under`, :meth:`~SessionStore.entry_at` - and fills a fork not yet written with
:meth:`SessionStore.adopt`; it touches no private part of either store.
"""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING

from heron.session import writer
from heron.session.entries import Entry, LabelEntry, iso_now, new_entry_id, starts_file
from heron.session.jsonl import dumps_line

if TYPE_CHECKING:
    from heron.session.store import SessionStore


def fork(
    source: SessionStore,
    entry_id: str | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    home: str | os.PathLike[str] | None = None,
) -> SessionStore:
    """The fork of ``source`` at ``entry_id`` (default: its leaf)."""
    store_class = type(source)  # not imported: the store imports this module to fork (no circle)
    indices = source.path_indices(entry_id)
    parent_session = str(source.path) if source.path is not None else None
    types = source.types()
    write_now = source.path is not None and any(starts_file(types[i]) for i in indices)
    if source.path is None:
        new = store_class.in_memory(source.header.cwd)
        new.header.parent_session = parent_session
    else:
        new = store_class.create(
            source.header.cwd, path=path, home=home, parent_session=parent_session, fsync=source.fsync
        )
    ids = source.ids()
    lines: list[bytes] = []
    taken: set[str] = set()
    previous: str | None = None
    for i in indices:
        found = fork_line(source, i, previous)
        if found is None:  # malformed: left out, its child is attached to the entry before it
            continue
        line, entry = found
        if not write_now:
            entry = entry or source.entry_at(i)
            if entry is None:
                continue
            new.adopt(copy.copy(entry))
        lines.append(line)
        previous = ids[i]
        taken.add(previous)
    labels = source.labels
    for i in indices:
        label = labels.get(ids[i])
        if label is not None:
            entry = LabelEntry(
                target_id=ids[i], label=label, id=new_entry_id(taken), parent_id=previous, timestamp=iso_now()
            )
            taken.add(entry.id)
            lines.append(dumps_line(entry.to_json_dict()))
            if not write_now:
                new.adopt(entry)
            previous = entry.id
    new.scrub = source.scrub
    if not write_now or new.path is None:
        return new
    data = source.scrubbed(dumps_line(new.header.to_json_dict()) + b"".join(lines))
    writer.write_new_file(new.path, data, fsync=source.fsync)
    opened = store_class.open(new.path, fsync=source.fsync)
    opened.scrub = source.scrub
    return opened


def fork_line(source: SessionStore, index: int, parent_id: str | None) -> tuple[bytes, Entry | None] | None:
    """Entry ``index``'s line in a fork where its parent is ``parent_id``: verbatim when
    the store says its line can be copied so, else re-encoded (the entry is returned too);
    None for a malformed entry."""
    line = source.line_for(index) if source.verbatim_under(index, parent_id) else None
    if line is not None:
        return line, None
    decoded = source.entry_at(index)
    if decoded is None:
        return None
    entry = copy.copy(decoded)
    entry.parent_id = parent_id
    return dumps_line(entry.to_json_dict()), entry
