"""A fold over the leaf's path, kept up to date one entry at a time.

Some state is read before every request from the entries of the path (the goal on it,
the goal loop's state): reading the whole path each time costs a long session a
few milliseconds per request (docs/benchmarks.md, "The critical path of a turn").
Entries never change, so what was folded up to the last leaf read stands; when the path
runs through that leaf, only the entries added since are folded in. Otherwise - another
branch, another store, a long way from the last leaf - the whole path is read again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from heron.session.store import SessionStore

S = TypeVar("S")
NEAR = 256  # entries walked back from the leaf looking for the last one read, before reading the whole path

# the whole path folded: the state and the path's length
Full = Callable[[SessionStore], tuple[S, int]]
# one more entry: the state, the store, the entry's id and its index on the path
Step = Callable[[S, SessionStore, str, int], S]


class PathFold(Generic[S]):
    """``get(store)``: the fold of ``store``'s leaf path, ``full`` when it must be read whole,
    ``step`` for each entry added since the last call."""

    def __init__(self, full: Full[S], step: Step[S]) -> None:
        self._full = full
        self._step = step
        self._scanned: tuple[SessionStore | None, int, str | None, S | None] = (None, 0, None, None)

    def get(self, store: SessionStore) -> S:
        scanned, known, last, state = self._scanned
        leaf = store.leaf_id
        newer: list[str] = []
        at = leaf
        while scanned is store and at is not None and at != last and len(newer) < NEAR:
            newer.append(at)
            at = store.parent_id_of(at)
        if scanned is store and at == last and state is not None:
            for entry_id in reversed(newer):  # the oldest first
                state = self._step(state, store, entry_id, known)
                known += 1
        else:
            state, known = self._full(store)
        self._scanned = (store, known, leaf, state)
        return state

    def forget(self) -> None:
        """Read the whole path next time (a caller that changed what the fold depends on)."""
        self._scanned = (None, 0, None, None)
