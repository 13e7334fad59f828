"""The index of a session: what every entry is and where its line is, without decoding it.

Entry ``i`` (file order, header excluded) has a type, an id, a parent position (``ROOT``
for none), a message role (None until known), and the place of its line in the file
(offset, length, line number). These are parallel columns, not objects: a 100,000-entry
session is indexed by a few C-level list operations (``heron.session._scan``), and walking
a path is slicing and comparing lists.

Where each line starts is worked out lazily: the scan records windows of lines whose
prefixes it read in one go, and the offsets of a window's lines are found only when one of
its entries is first read (walking from the nearest located line, backwards from the
window's end for entries near it, as a leaf's context is, forwards otherwise).
"""

from __future__ import annotations

import bisect
import operator
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from heron.session import _scan

ROOT = -1
_LOCATE_CHUNK = 256 << 10


@dataclass(slots=True)
class SessionTree:
    """``children[id]``: the ids whose parent is ``id``, in file order; ``roots``: entries
    without a (known) parent; ``orphans``: the roots whose ``parentId`` names no entry."""

    children: dict[str, list[str]] = field(default_factory=dict)
    roots: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)


class EntryIndex:
    """The columns of a session's entries, and the walks over them."""

    def __init__(self) -> None:
        self.types: list[str] = []
        self.ids: list[str] = []
        self.parents: list[int] = []
        self.roles: list[str | None] = []
        self.offsets: list[int] = []
        self.lengths: list[int] = []
        self.line_nos: list[int] = []
        self.by_id: dict[str, int] = {}
        self.windows: list[tuple[int, int, int, int]] = []
        self._window_firsts: list[int] = []
        # per window, [a, b]: its lines before entry a and from entry b on are located
        self._located: list[list[int]] = []

    def __len__(self) -> int:
        return len(self.types)

    def set_windows(self, windows: list[tuple[int, int, int, int]]) -> None:
        self.windows = windows
        self._window_firsts = [w[2] for w in windows]
        self._located = [[w[2], w[2] + w[3]] for w in windows]

    def add(self, kind: str, entry_id: str, parent: int, role: str | None, length: int, line_no: int) -> int:
        """A new last entry (appended, or adopted by a fork); returns its position."""
        index = len(self.types)
        self.types.append(kind)
        self.ids.append(entry_id)
        self.parents.append(parent)
        self.roles.append(role)
        self.offsets.append(-1)
        self.lengths.append(length)
        self.line_nos.append(line_no)
        self.by_id[entry_id] = index
        return index

    def next_line_no(self) -> int:
        return self.line_nos[-1] + 1 if self.line_nos else 1

    def relocate(self, offsets: list[int], lengths: list[int]) -> None:
        """After the file was rewritten: every entry at its new place, on line ``i + 1``."""
        self.offsets, self.lengths = offsets, lengths
        self.line_nos = list(range(1, len(self.types) + 1))
        self.set_windows([])

    # --- reading lines ----------------------------------------------------------------------

    def read(self, fd: int, index: int) -> bytes:
        """The bytes of entry ``index``'s line (empty when the file got shorter)."""
        if self.offsets[index] == _scan.NOT_LOCATED:
            self._locate(fd, index)
        length = self.lengths[index]
        data = os.pread(fd, length, self.offsets[index])
        return data if len(data) == length else b""

    def fill_roles(self, fd: int) -> None:
        """Read the roles of windows indexed without them (one regex pass per window)."""
        for window in self.windows:
            _start, _stop, first, count = window
            if any(r is None for r in self.roles[first : first + count]):
                roles = _scan.window_roles(fd, window)
                for k, role in enumerate(roles):
                    if role is not None and self.roles[first + k] is None:
                        self.roles[first + k] = role

    def _locate(self, fd: int, index: int) -> None:
        w = bisect.bisect_right(self._window_firsts, index) - 1
        start, stop, first, count = self.windows[w]
        located = self._located[w]
        if index - located[0] < located[1] - index:
            self._locate_forward(fd, w, index, start, first)
        else:
            self._locate_backward(fd, w, index, start, stop, first, count)

    def _locate_forward(self, fd: int, w: int, target: int, start: int, first: int) -> None:
        located = self._located[w]
        offsets, lengths = self.offsets, self.lengths
        line = located[0]
        pos = offsets[line - 1] + lengths[line - 1] + 1 if line > first else start
        buf, buf_lo = b"", pos
        while line <= target:
            nl = buf.find(b"\n", pos - buf_lo)
            while nl < 0:
                chunk = os.pread(fd, _LOCATE_CHUNK, buf_lo + len(buf))
                if not chunk:  # the file is shorter than when it was opened
                    self._give_up(line, target + 1)
                    located[0] = target + 1
                    return
                buf, buf_lo = buf[pos - buf_lo :] + chunk, pos
                nl = buf.find(b"\n")
            end = buf_lo + nl
            offsets[line], lengths[line] = pos, end - pos
            pos = end + 1
            line += 1
        located[0] = line

    def _locate_backward(self, fd: int, w: int, target: int, start: int, stop: int, first: int, count: int) -> None:
        located = self._located[w]
        offsets, lengths = self.offsets, self.lengths
        line = located[1]
        end = offsets[line] - 1 if line < first + count else stop - 1  # the newline ending line - 1
        buf, buf_lo = b"", end
        while line > target:
            nl = buf.rfind(b"\n", 0, end - buf_lo)
            while nl < 0 and buf_lo > start:
                lo = max(start, buf_lo - _LOCATE_CHUNK)
                chunk = os.pread(fd, buf_lo - lo, lo)
                if len(chunk) != buf_lo - lo:
                    self._give_up(target, line)
                    located[1] = target
                    return
                buf, buf_lo = chunk, lo  # the newline looked for is before the old buffer
                nl = buf.rfind(b"\n")
            line_start = buf_lo + nl + 1 if nl >= 0 else start
            line -= 1
            offsets[line], lengths[line] = line_start, end - line_start
            end = line_start - 1
        located[1] = line

    def _give_up(self, low: int, high: int) -> None:
        """Lines that cannot be found any more read as empty (and so as malformed)."""
        for line in range(low, high):
            if self.offsets[line] == _scan.NOT_LOCATED:
                self.offsets[line], self.lengths[line] = 0, 0

    # --- the tree -------------------------------------------------------------------------

    def path_indices(self, index: int, warn: Callable[[str], None]) -> list[int]:
        """Positions from the root to ``index``."""
        start = index
        parents = self.parents
        out: list[int] = []
        # runs of entries each the child of the one before are taken a block at a time (a
        # slice compare in C); where a block is not such a run, smaller blocks, then one by one
        blocks = (1024, 64, 8)
        while index >= 0:
            for block in blocks:
                low = index - block + 1
                if low > 0 and parents[low : index + 1] == list(range(low - 1, index)):
                    out.extend(range(index, low - 1, -1))
                    index = low - 1
                    break
            else:
                out.append(index)
                if parents[index] >= index:  # a link forwards in the file: only such links close a cycle
                    return self._careful_path(start, warn)
                index = parents[index]
        out.reverse()
        return out

    def _careful_path(self, index: int, warn: Callable[[str], None]) -> list[int]:
        """The walk for files with links forwards: one entry at a time, stopping (with a
        warning) where the path comes back to an entry it holds. Cycles are cut when a file
        is loaded (:func:`heron.session.repair.cut_cycles`), so this is a safety net."""
        parents = self.parents
        out: list[int] = []
        seen: set[int] = set()
        while index >= 0:
            if index in seen:
                warn(f"parent links form a cycle at entry {self.ids[index]}; the path is cut there")
                break
            seen.add(index)
            out.append(index)
            index = parents[index]
        out.reverse()
        return out

    def lineage(self, indices: list[int]) -> tuple[Sequence[str], Sequence[str]]:
        """Ids and types of ``indices``."""
        if not indices:
            return (), ()
        if len(indices) == 1:
            return (self.ids[indices[0]],), (self.types[indices[0]],)
        pick = operator.itemgetter(*indices)
        return pick(self.ids), pick(self.types)

    def children_indices(self) -> list[list[int]]:
        children: list[list[int]] = [[] for _ in self.types]
        for i, parent in enumerate(self.parents):
            if parent >= 0:
                children[parent].append(i)
        return children

    def tree(self, dangling: Sequence[int]) -> SessionTree:
        """Children of every entry, roots, and ``dangling`` (the orphans)."""
        ids = self.ids
        out = SessionTree()
        for i, kids in enumerate(self.children_indices()):
            if kids:
                out.children[ids[i]] = [ids[k] for k in kids]
        out.roots = [ids[i] for i, p in enumerate(self.parents) if p < 0]
        out.orphans = [ids[i] for i in sorted(dangling)]
        return out
