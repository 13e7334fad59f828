"""Rewinding: the user turns of a branch with their snapshots, and what restoring one changes."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Literal

from heron.coding.checkpoints.repo import Change, ShadowRepo
from heron.session.entries import MessageEntry, iso_to_ms
from heron.session.store import SessionStore

REWIND_TYPE = "heron.rewind"


@dataclass(frozen=True, slots=True)
class Turn:
    number: int  # from 1, on the current branch
    entry_id: str
    text: str
    checkpoint: str | None  # the commit right before it
    timestamp: str = ""  # of its message (ISO), to tell a pruned snapshot from one never taken

    def age_days(self, now: float | None = None) -> float | None:
        """How old the turn is, in days (None when its timestamp cannot be read)."""
        millis = iso_to_ms(self.timestamp)
        if not millis:
            return None
        return ((now if now is not None else time.time()) - millis / 1000) / 86400


def turns(store: SessionStore, index: dict[str, str]) -> list[Turn]:
    """The user turns of the current branch, each with the snapshot taken right before it:
    the one taken at the nearest entry above its message, back to the previous user message
    (entries such as a model change may be appended between the snapshot and the message)."""
    out: list[Turn] = []
    since_user: list[str] = [""]  # entry ids since the last user message; "" is the empty session
    if store.leaf_id is None:
        return out
    for entry in store.path_to(store.leaf_id):
        if isinstance(entry, MessageEntry) and getattr(entry.message, "role", None) == "user":
            content = getattr(entry.message, "content", "")
            text = content if isinstance(content, str) else " ".join(getattr(b, "text", "") for b in content)
            before = next((index[i] for i in reversed(since_user) if i in index), None)
            out.append(Turn(len(out) + 1, entry.id, text, before, entry.timestamp))
            since_user = []
        since_user.append(entry.id)
    return out


def plan_code_rewind(repo: ShadowRepo, target: str) -> tuple[str, list[Change]]:
    """What restoring ``target`` would change, against the tree as it is now (snapshotted
    first, so the rewind itself can be undone). A file that differs from heron's newest
    snapshot of the project is marked ``external``. Returns (current snapshot, changes)."""
    reference = repo.head()
    current = repo.snapshot("heron: before a rewind\n\nat: rewind\n").commit
    external = {path for _, path in repo.diff(reference, current)} if reference else set()
    changes = [
        Change(path, _action(repo, status, path), path in external) for status, path in repo.diff(target, current)
    ]
    return current, changes


def _action(repo: ShadowRepo, status: str, path: str) -> Literal["restore", "delete", "keep"]:
    if status == "A":
        return "delete"
    target = repo.cwd / path
    # On disk yet in no current snapshot: large or ignored now. A directory in its place is not that case:
    # its files are listed (as "delete") on their own, and the file comes back once they are gone.
    if status == "D" and os.path.lexists(target) and (target.is_symlink() or not target.is_dir()):
        return "keep"
    return "restore"


def rewind_conversation(store: SessionStore, turn: Turn, data: dict[str, Any]) -> None:
    """Move the leaf to just before ``turn`` and record it, so the file reopens there."""
    parent = store.parent_id_of(turn.entry_id)
    if parent is None:
        store.reset_leaf()
    else:
        store.branch(parent)
    store.append_custom(REWIND_TYPE, data)
