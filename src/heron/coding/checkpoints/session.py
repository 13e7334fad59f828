"""The runtime's side of checkpoints: a snapshot before each user turn, and one after it when
a tool could have changed files.

The snapshot before a turn is off the critical path: its commit message is fixed when the
prompt arrives, and it starts in a thread once the turn's first answer begins to arrive (the
request is out), or ``START_AFTER_S`` after the prompt if that comes first, or as soon as
anything waits for it. Started with the prompt, its thread took the interpreter from the
event loop while the request was being written. A tool call that can change
files (anything but the read-only tools) waits for it first, so the snapshot always holds the
tree as it was before the turn. A snapshot that fails, or takes long, never delays a request.
A turn whose tool calls only read takes no snapshot after it
(the next turn's ``before`` snapshot records the tree anyway).

Nothing is added to the session file (what a session sends is the same with or without
checkpoints); each snapshot's commit message names the session and its leaf instead. The
shadow-repository code (``repo.py`` and a backend) is imported only when a snapshot is taken,
in the snapshot's thread; the daily prune of old snapshots (``prune.py``) is started by the
session's housekeeping, after its first request (:meth:`Checkpoints.housekeeping`).
A tool held up more than ``SLOW_SECONDS`` by a snapshot, or a snapshot that failed, is
reported once per session.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from heron.agent.tool_meta import ToolKind

if TYPE_CHECKING:
    from heron.coding.checkpoints.base import Snapshot
    from heron.coding.checkpoints.repo import ShadowRepo
    from heron.session.store import SessionStore

log = logging.getLogger(__name__)

# Kinds of tool that cannot change the project's files (what each tool declares it is,
# heron.agent.tool_meta): a turn that calls only these takes no snapshot after it.
READ_ONLY_KINDS: frozenset[ToolKind] = frozenset({"read", "search", "todo", "compact"})
SLOW_SECONDS = 2.0  # a tool held up longer than this by a snapshot is reported (once)
# The latest start of the snapshot before a turn, after its prompt: a request that takes
# longer to go out (a compaction first) or an answer slow to begin does not hold it back.
START_AFTER_S = 0.05


def may_change_files(kind: ToolKind) -> bool:
    """Whether a call of a tool of ``kind`` could change the project's files (a tool that
    declares nothing is ``other``, and could)."""
    return kind not in READ_ONLY_KINDS


def _disk_full(exc: BaseException) -> bool:
    return (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "No space left on device" in str(exc)


class Checkpoints:
    """Snapshots around each turn (used by the runtime through ``Control``)."""

    def __init__(
        self,
        cwd: Path,
        home: Path,
        enabled: bool = True,
        keep_days: int = 30,
        exclude: tuple[str, ...] = (),
    ) -> None:
        self.cwd, self.home, self.keep_days, self.exclude = cwd, home, keep_days, exclude
        # Not a project: the home directory or the root would be snapshotted whole.
        self.enabled = enabled and cwd.resolve() not in (Path.home().resolve(), Path("/"))
        self._repo: ShadowRepo | None = None
        self._pending: asyncio.Task[None] | None = None
        self._waiting: str | None = None  # the commit message of a snapshot noted but not started
        self._timer: asyncio.TimerHandle | None = None
        self._dirty = False  # a tool that could change files ran since the last snapshot
        self._reported = False

    @property
    def repo(self) -> ShadowRepo:
        """The project's shadow repository (made, and its code imported, on first use)."""
        if self._repo is None:
            from heron.coding.checkpoints.repo import ShadowRepo

            self._repo = ShadowRepo(self.cwd, self.home, exclude=self.exclude)
            if not self._repo.available:
                self.enabled = False
                log.warning(
                    "neither git nor dulwich is installed: no checkpoints, so `heron rewind` cannot restore code"
                )
        return self._repo

    def housekeeping(self) -> None:
        """Start the daily prune of old snapshots when it is due (a detached process); only in a
        session that took a snapshot, so a run without checkpoints loads none of their code."""
        if self.enabled and self._repo is not None:
            from heron.coding.checkpoints.prune import schedule_prune

            schedule_prune(self.home, self.keep_days)

    def start_before_turn(self, store: SessionStore) -> None:
        """Note the snapshot of the tree as the turn finds it, and return at once: it starts
        at :meth:`release`, at the latest ``START_AFTER_S`` from now."""
        message = self._message(store, "before")
        if message is not None:
            self.release()  # one still noted (never the case in a turn) is not lost
            self._waiting = message
            self._timer = asyncio.get_running_loop().call_later(START_AFTER_S, self.release)

    def release(self) -> None:
        """Start the noted snapshot, if any: the answer is arriving, or something waits for it."""
        message, self._waiting = self._waiting, None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if message is not None:
            previous = self._pending
            self._pending = asyncio.get_running_loop().create_task(self._take(message, previous))

    async def before_change(self, tool: str, kind: ToolKind) -> None:
        """Called before a tool runs: one that could change files waits for the pending snapshot."""
        if may_change_files(kind):
            self._dirty = True
            start = time.monotonic()
            await self.settled()
            waited = time.monotonic() - start
            if waited > SLOW_SECONDS:
                self._report(f"{tool} waited {waited:.1f} s for the checkpoint snapshot of this turn")

    def note_change(self) -> None:
        """Something other than a tool (a hook's command) may have changed files this turn."""
        self._dirty = True

    async def settled(self) -> None:
        """Wait for the snapshot in flight, if any (its failure is already reported)."""
        self.release()
        if self._pending is not None:
            await asyncio.shield(self._pending)

    async def after_turn(self, store: SessionStore) -> None:
        """Wait for the turn's snapshot; take one of the result when a tool could have changed files."""
        await self.settled()
        if not self._dirty:
            return
        self._dirty = False
        message = self._message(store, "after")
        if message is not None:
            await self._take(message, None)

    # kept for callers that snapshot in line (a sub-agent's Control, tests)
    async def before_turn(self, store: SessionStore) -> None:
        self.start_before_turn(store)
        await self.settled()

    def _message(self, store: SessionStore, at: str) -> str | None:
        if not self.enabled or store.path is None:  # an in-memory session (--no-session) cannot be rewound
            return None
        return f"heron checkpoint\n\nsession: {store.session_id}\nleaf: {store.leaf_id or ''}\nat: {at}\n"

    async def _take(self, message: str, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await asyncio.shield(previous)
        start = time.monotonic()
        try:
            snap = await asyncio.to_thread(self._snapshot, message)
        except Exception as exc:  # noqa: BLE001 - CheckpointError, or a backend broke: the turn goes on
            if _disk_full(exc):
                # what it wrote is gone again (checkpoints/undo.py); trying again each turn would
                # take back the space the user frees, so no more snapshots in this session
                self.enabled = False
                self._reported = False
                self._report(f"checkpoints off for the rest of this session, the disk is full: {exc}")
                return
            self._report(f"checkpoint not taken: {exc}")
            return
        log.debug("checkpoint snapshot took %.2f s", time.monotonic() - start)
        if snap is not None and snap.skipped_large:
            log.info("checkpoint left out %d file(s) over 2 MB", len(snap.skipped_large))

    def _snapshot(self, message: str) -> Snapshot | None:
        repo = self.repo
        if not self.enabled:
            return None
        return repo.snapshot(message)

    def _report(self, text: str) -> None:
        """Once per session at warning level (later ones at info): a user needs to know, not to be told each turn."""
        log.log(logging.INFO if self._reported else logging.WARNING, "%s", text)
        self._reported = True
