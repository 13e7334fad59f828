"""The runtime's side of checkpoints: a snapshot before and after each user turn.

Nothing is added to the session file (what a session sends is the same with or without
checkpoints); each snapshot's commit message names the session and its leaf instead.
Opening a session also starts the daily prune of old snapshots (``prune.py``) when due.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from heron.coding.checkpoints.base import CheckpointError
from heron.coding.checkpoints.prune import DEFAULT_KEEP_DAYS, schedule_prune
from heron.coding.checkpoints.repo import ShadowRepo
from heron.session.store import SessionStore

log = logging.getLogger(__name__)


class Checkpoints:
    """Snapshots around each turn (used by the runtime through ``Control``)."""

    def __init__(self, cwd: Path, home: Path, enabled: bool = True, keep_days: int = DEFAULT_KEEP_DAYS) -> None:
        self.repo = ShadowRepo(cwd, home)
        # Not a project: the home directory or the root would be snapshotted whole.
        self.enabled = enabled and self.repo.available and self.repo.cwd not in (Path.home().resolve(), Path("/"))
        if enabled and not self.repo.available:
            log.warning("neither git nor dulwich is installed: no checkpoints, so `heron rewind` cannot restore code")
        if self.enabled:
            schedule_prune(home, keep_days)

    async def before_turn(self, store: SessionStore) -> None:
        await self._take(store, "before")

    async def after_turn(self, store: SessionStore) -> None:
        await self._take(store, "after")

    async def _take(self, store: SessionStore, at: str) -> None:
        if not self.enabled or store.path is None:  # an in-memory session (--no-session) cannot be rewound
            return
        message = f"heron checkpoint\n\nsession: {store.session_id}\nleaf: {store.leaf_id or ''}\nat: {at}\n"
        try:
            snap = await asyncio.to_thread(self.repo.snapshot, message)
        except CheckpointError as exc:
            log.warning("checkpoint not taken: %s", exc)
            return
        if snap.skipped_large:
            log.info("checkpoint left out %d file(s) over 2 MB", len(snap.skipped_large))
