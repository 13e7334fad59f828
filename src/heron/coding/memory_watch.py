"""Commits of project memory around a session's turns (docs/memory.md, "History").

heron commits the memory directory after each turn whose tool calls wrote inside it
(``write``/``edit`` and any tool that declares the paths it changes), naming the session
and the entry the change followed; before the first such write of a process, changes made
outside heron since the last commit are committed as such, so they are never attributed
to the model. Otherwise those outside changes are committed once the first answer is
arriving (the session's housekeeping), never before the first request: a session start
runs no git command.

A prompt whose run ended in an error or an abort leaves what it wrote marked tentative
(:mod:`heron.coding.memory_notes`) until a later change or a reflection confirms it.

It also starts the reflection pass (:mod:`heron.coding.memory_reflect`) the ``memory.reflect``
setting asks for: ``compaction``, a background task after each compaction (never awaited by
a turn); ``end``, when the process ends a session in which heron changed memory
(:meth:`MemoryWatch.finish`, after the last answer is out).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from heron.agent.agent import Agent
from heron.agent.tool_meta import ToolCatalog
from heron.ai.types import AssistantMessage, StopReason
from heron.coding.events import ContextWarningEvent
from heron.context.records.ledger import Ledger, LedgerRecord
from heron.session.store import SessionStore

if TYPE_CHECKING:
    from heron.agent.tools import AgentTool
    from heron.ai.types import Model
    from heron.coding.memory import MemoryKeeper
    from heron.coding.requests import RequestPath
    from heron.context.policy import ContextPolicy


class WatchedSession(Protocol):
    """What the watch uses of its session: the agent's and the session's events and the
    ledger's records it follows, the memory it commits, the store its commits name, and
    what a reflection it starts uses (:class:`heron.coding.memory_reflect.ReflectHost`,
    restated here: that module is loaded only when a pass runs)."""

    @property
    def memory(self) -> MemoryKeeper: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def ledger(self) -> Ledger: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def tool_catalog(self) -> ToolCatalog: ...

    @property
    def cwd(self) -> Path: ...

    @property
    def policy(self) -> ContextPolicy: ...

    @property
    def model(self) -> Model: ...

    @property
    def tools(self) -> list[AgentTool[Any]]: ...

    @property
    def requests(self) -> RequestPath: ...

    def subscribe(self, listener: Callable[[Any], None]) -> Callable[[], None]: ...

    def emit(self, event: Any) -> None: ...


class MemoryWatch:
    def __init__(self, session: WatchedSession) -> None:
        self.session = session
        self._pending = False  # a tool call of this turn wrote in the memory directory
        self._reflections: set[asyncio.Task[Any]] = set()
        self._later: list[LedgerRecord] = []  # the start-up job's records (a thread), added on the loop
        self._warned: set[str] = set()  # each memory warning said once a process
        self._terminated = False  # the process was told to end (SIGTERM): no end pass starts
        session.agent.subscribe(self._on_event)
        session.subscribe(self._on_session_event)
        session.ledger.subscribe(self._on_record)

    def _on_record(self, record: LedgerRecord) -> None:
        """A memory record the user must hear of (a repair, a notice, a history that could
        not be written, a dropped reflection) is also a warning: the ledger alone is not
        seen by someone running ``heron -p``."""
        detail = record.detail
        loud = detail.get("notice") or detail.get("failed") or detail.get("dropped")
        if record.kind == "memory" and loud and record.recover not in self._warned:
            self._warned.add(record.recover)
            self.session.emit(ContextWarningEvent(kind="memory", message=f"memory: {record.recover}"))

    def sync_outside(self) -> None:
        """The housekeeping job: outside changes committed, off the critical path."""
        memory = self.session.memory
        if memory.settings.enabled and memory.directory.is_dir() and not memory.history.outside_synced:
            memory.sync_outside(self.session.store, self._later)

    def _writes_memory(self, name: str, args: dict[str, Any]) -> bool:
        session = self.session
        meta = session.tool_catalog.meta(name)
        if not meta.changes_files or not session.memory.settings.enabled:
            return False
        top = session.memory.directory.resolve()
        return any(Path(use.resolved(session.cwd)).resolve().is_relative_to(top) for use in meta.uses(args))

    def _on_event(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind in ("turn_start", "turn_end", "agent_end"):
            self._add_later()  # between messages, never inside one being streamed
        memory, store = self.session.memory, self.session.store
        if kind == "tool_execution_start" and self._writes_memory(event.tool_name, event.args):
            memory.on_loop(self.session.ledger, lambda records: memory.sync_outside(store, records))
            self._pending = True
        elif kind == "turn_end" and self._pending:
            self._commit()
        elif kind == "agent_end":
            if self._pending:
                self._commit()
            last = next((m for m in reversed(event.messages) if isinstance(m, AssistantMessage)), None)
            failed = last is not None and last.stop_reason in (StopReason.ERROR, StopReason.ABORTED)
            self.session.memory.end_run(self.session.store, failed=failed)

    def _add_later(self) -> None:
        while self._later:
            self.session.ledger.add(self._later.pop(0))

    def _commit(self) -> None:
        self._pending = False
        memory, store = self.session.memory, self.session.store
        memory.on_loop(self.session.ledger, lambda records: memory.commit("tool call", store, records))

    # --- reflection ----------------------------------------------------------------------------

    def _on_session_event(self, event: Any) -> None:
        memory = self.session.memory
        compacted = getattr(event, "type", None) == "compaction_end" and event.entry_id is not None
        if compacted and memory.settings.enabled and memory.settings.reflect == "compaction":
            self.start_reflection("compaction")

    def start_reflection(self, trigger: str) -> asyncio.Task[Any] | None:
        """A background pass (one at a time); None when one is running already."""
        if self._reflections:
            return None
        from heron.coding.memory_reflect import reflect

        task = asyncio.ensure_future(reflect(self.session, trigger))
        self._reflections.add(task)
        task.add_done_callback(self._reflections.discard)
        return task

    @property
    def reflecting(self) -> bool:
        return bool(self._reflections)

    @property
    def end_pass_due(self) -> bool:
        """Whether :meth:`finish` will start (or wait for) a pass: what a front end says
        before the process waits at its end."""
        memory = self.session.memory
        due = memory.settings.enabled and memory.settings.reflect == "end" and memory.changed_here
        return (due and not self._terminated) or self.reflecting

    def cancel(self) -> None:
        """An abort (Ctrl+C while a process waits for its ``end`` pass, rpc ``abort``): a
        running pass is cut short, which drops it with a ledger record and puts its writes back."""
        for task in list(self._reflections):
            task.cancel()

    def terminate(self) -> None:
        """The process was told to end (SIGTERM): an ``end`` pass that has not started never
        starts, and a running pass is cut short as by an abort (:meth:`cancel`)."""
        self._terminated = True
        self.cancel()

    async def finish(self) -> None:
        """The process is ending: the ``end`` pass when heron changed memory here, and any
        pass still running, waited for (each bounded by its time limit; an abort ends it)."""
        self._add_later()
        memory = self.session.memory
        if self.end_pass_due and not self.reflecting:
            memory.changed_here = False
            self.start_reflection("end")
        for task in list(self._reflections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
