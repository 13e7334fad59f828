"""Turning a file's ids and ``parentId`` links into a tree, repairing what is broken.

Files are edited by hand, written by other tools, cut short by crashes. What is found is
fixed in memory, with a warning, and the file is left as it is until heron rewrites it:

- an entry without an id gets a fresh one;
- of two entries with one id the later keeps it (a ``parentId`` names the latest entry
  with that id written before the child, as in pi's id map) and the earlier is renamed;
- a ``parentId`` naming a line that could not be read but whose id and parent could be
  salvaged ("bridges") is re-attached to that line's parent; one naming nothing makes the
  entry a root (an orphan);
- a cycle of ``parentId`` links (no entry of it reaches a root) is cut: the entry of the
  cycle whose link points forwards in the file - the kind a normal writer never makes,
  as a parent is written before its children - becomes a root. Otherwise the context of
  a leaf below the cycle would hold the cycle's messages over and over.

:class:`Repairs` keeps which entries differ from their lines, so a rewrite or a fork
re-encodes exactly those and copies every other line byte for byte.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from heron.ai.types import JSON
from heron.session import _scan
from heron.session.entries import CURRENT_VERSION, Entry, SessionHeader, entry_from_json, migrate, new_entry_id
from heron.session.index import ROOT, EntryIndex

Warn = Callable[[str], None]
_UNRESOLVED = -2


@dataclass(slots=True)
class Loaded:
    """A scanned file as a tree: the index, its repairs, the entries decoded on the way."""

    index: EntryIndex
    repairs: Repairs
    cache: dict[int, Entry]
    migrated: bool  # an older version, migrated in memory: the lines are not the entries


def load_scan(raw: _scan.RawIndex, header: SessionHeader, warn: Warn) -> Loaded:
    """Turn what :func:`heron.session._scan.scan` found into a tree. Files older than
    version 3 are decoded whole and migrated (``header.version`` is brought up to date)."""
    index, repairs = EntryIndex(), Repairs()
    loaded = Loaded(index, repairs, {}, migrated=raw.full)
    index.offsets, index.lengths, index.line_nos = raw.offsets, raw.lengths, raw.line_nos
    if raw.full:
        dicts = [raw.parsed[i] for i in range(len(raw.types))]
        header_json = raw.header if raw.header is not None else {"type": "session", "version": CURRENT_VERSION}
        before = header.version
        for message in migrate(header_json, dicts, raw.line_nos):
            warn(message)
        header.version = max(CURRENT_VERSION, before) if raw.header is not None else CURRENT_VERSION
        loaded.migrated = before < CURRENT_VERSION and raw.header is not None
        index.types = [str(d.get("type")) for d in dicts]
        index.roles = list(raw.roles)
        ids: list[str] = []
        parents: list[str | None] = []
        for i, data in enumerate(dicts):
            _decode(loaded, i, data, warn)
            eid, parent = data.get("id"), data.get("parentId")
            ids.append(eid if isinstance(eid, str) else "")
            parents.append(parent if isinstance(parent, str) else None)
        resolve(index, repairs, ids, parents, raw.bridges, warn)
    else:
        index.types, index.roles = raw.types, raw.roles
        for i, data in raw.parsed.items():
            _decode(loaded, i, data, warn)
        resolve(index, repairs, raw.ids, raw.parents, raw.bridges, warn)
    for i, entry in loaded.cache.items():  # entries decoded during the scan: renamed ids, new parents
        repairs.fix_links(i, entry, index)
    index.set_windows(raw.windows)
    return loaded


def _decode(loaded: Loaded, index: int, data: JSON, warn: Warn) -> None:
    try:
        loaded.cache[index] = entry_from_json(data)
    except ValueError as exc:
        loaded.repairs.bad.add(index)
        warn(f"line {loaded.index.line_nos[index] + 1}: malformed entry skipped: {exc}")


class Repairs:
    """The entries whose line in the file is not what the tree has in memory."""

    def __init__(self) -> None:
        self.disk_ids: dict[int, str] = {}  # renamed: index -> the id in the file ("" for none)
        self.relinked: set[int] = set()  # parentId in memory differs from the file
        self.dangling: dict[int, str] = {}  # orphans: index -> the parentId that names nothing
        self.bad: set[int] = set()  # lines found malformed when decoded

    def changed(self, index: int) -> bool:
        return index in self.disk_ids or index in self.dangling or index in self.relinked

    def expected_id(self, index: int, ids: list[str]) -> str:
        """The id entry ``index`` has in the file."""
        return self.disk_ids.get(index, ids[index])

    def rewritten(self) -> None:
        """The file now holds the tree as it is in memory."""
        self.disk_ids.clear()
        self.relinked.clear()

    def fix_links(self, index: int, entry: Entry, tree: EntryIndex) -> None:
        """Give a decoded entry the id and parent the tree has."""
        entry.id = tree.ids[index]
        parent = tree.parents[index]
        if parent >= 0:
            entry.parent_id = tree.ids[parent]
        elif index not in self.dangling:
            entry.parent_id = None


def resolve(
    tree: EntryIndex,
    repairs: Repairs,
    ids: list[str],
    parents: list[str | None],
    bridges: dict[str, str | None],
    warn: Warn,
) -> None:
    """Fill ``tree.ids``, ``tree.by_id`` and ``tree.parents`` (positions) from the file's
    ids and parent ids, repairing as the module says."""
    n = len(ids)
    by_id = dict(zip(ids, range(n), strict=True))
    resolved: list[int]
    if len(by_id) == n and "" not in by_id:
        # None and "" (no parent) resolve to the root through the same C-level lookup
        lookup = cast("dict[str | None, int]", by_id)
        lookup[None] = lookup[""] = ROOT
        resolved = list(map(lookup.get, parents, itertools.repeat(_UNRESOLVED)))
        del lookup[None], lookup[""]
    else:
        by_id, resolved = _resolve_slow(ids, parents, tree.line_nos, repairs, warn)
    tree.ids = ids
    tree.by_id = by_id
    unresolved = [i for i, p in enumerate(resolved) if p == _UNRESOLVED] if _UNRESOLVED in resolved else []
    for i in unresolved:
        resolved[i] = _attach(i, ids, parents, bridges, by_id, tree.line_nos, repairs, warn)
    if repairs.disk_ids or unresolved:
        for i, p in enumerate(resolved):
            if p >= 0 and ids[p] != parents[i]:
                repairs.relinked.add(i)
    tree.parents = resolved
    cut_cycles(tree, repairs, warn)


def _attach(
    i: int,
    ids: list[str],
    parents: list[str | None],
    bridges: dict[str, str | None],
    by_id: dict[str, int],
    line_nos: list[int],
    repairs: Repairs,
    warn: Warn,
) -> int:
    """The parent of an entry whose ``parentId`` names no entry: through bridges, or none."""
    wanted = parents[i]
    seen: set[str] = set()
    target: str | None = wanted
    while target is not None and target not in by_id and target in bridges and target not in seen:
        seen.add(target)
        target = bridges[target]
    where = f"line {line_nos[i] + 1}"
    if target is not None and target in by_id:
        warn(f"{where}: parent {wanted} was a malformed line; entry {ids[i]} attached to {target}")
        return by_id[target]
    repairs.dangling[i] = wanted or ""
    if target is None and seen:
        warn(f"{where}: parent {wanted} was a malformed root line; entry {ids[i]} is a root")
    else:
        warn(f"{where}: parent {wanted} not found; entry {ids[i]} treated as a root")
    return ROOT


def _resolve_slow(
    ids: list[str], parents: list[str | None], line_nos: list[int], repairs: Repairs, warn: Warn
) -> tuple[dict[str, int], list[int]]:
    """Duplicate or missing ids (see the module docstring)."""
    taken = set(ids)
    by_id: dict[str, int] = {}
    resolved: list[int] = []
    for i, eid in enumerate(ids):
        parent = parents[i]
        resolved.append(ROOT if not parent else by_id.get(parent, _UNRESOLVED))
        where = f"line {line_nos[i] + 1}"
        if not eid:
            new = new_entry_id(taken)
            taken.add(new)
            ids[i] = new
            repairs.disk_ids[i] = ""
            warn(f"{where}: entry without an id; given {new} in memory")
            eid = new
        elif eid in by_id:
            earlier = by_id[eid]
            new = new_entry_id(taken)
            taken.add(new)
            ids[earlier] = new
            by_id[new] = earlier
            repairs.disk_ids[earlier] = eid
            warn(
                f"{where}: duplicate id {eid} (also on line {line_nos[earlier] + 1}); "
                f"the earlier entry is renamed {new} in memory"
            )
        by_id[eid] = i
    # forward references (a parent written after its child) are resolved at the end
    for i, p in enumerate(resolved):
        if p == _UNRESOLVED and parents[i] in by_id:
            resolved[i] = by_id[parents[i] or ""]
    return by_id, resolved


def cut_cycles(tree: EntryIndex, repairs: Repairs, warn: Warn) -> None:
    """Make every entry reach a root. A file whose links all point backwards has no cycle,
    which one C-level pass shows; only other files are walked."""
    parents = tree.parents
    n = len(parents)
    if not any(map(operator.ge, parents, range(n))):
        return
    state = [0] * n  # 0: not visited, 1: on the current walk, 2: reaches a root
    for start in range(n):
        walk: list[int] = []
        i = start
        while i >= 0 and state[i] == 0:
            state[i] = 1
            walk.append(i)
            i = parents[i]
        if i >= 0 and state[i] == 1:  # the walk came back to itself: a cycle from i
            cycle = walk[walk.index(i) :]
            cut = next((k for k in cycle if parents[k] >= k), cycle[-1])
            warn(
                f"line {tree.line_nos[cut] + 1}: parent links form a cycle through {len(cycle)} "
                f"entr{'y' if len(cycle) == 1 else 'ies'}; entry {tree.ids[cut]} (parent "
                f"{tree.ids[parents[cut]]}) treated as a root"
            )
            parents[cut] = ROOT
            repairs.relinked.add(cut)
        for k in walk:
            state[k] = 2
