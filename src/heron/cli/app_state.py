"""What a mode is given: :class:`App` - the parsed arguments, the assembled session, and
how to open other session files (rpc's ``new_session`` / ``switch_session`` / ``fork``,
interactive's ``/new``, ``/resume`` and ``/fork``).

The modes import this module, never the command's entry module (:mod:`heron.cli.app`),
which imports the modes to dispatch to them: presenters do not depend on their caller.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from heron.ai.models import ModelRegistry
from heron.cli.terminal_text import visible
from heron.cli.usage import UsageError
from heron.coding.model_choice import ResolvedModel
from heron.coding.session_spec import StoreSpec
from heron.coding.settings import Settings
from heron.session.paths import list_sessions
from heron.session.store import SessionStore

if TYPE_CHECKING:  # the runtime is imported once the arguments are known to be good
    from heron.coding.mcp.setup import SessionMcp
    from heron.coding.runtime import CodingSession


@dataclass
class App:
    """What one heron process runs with, built once at start and handed to the mode that runs:
    the parsed arguments, the resolved model and the session, so no mode re-derives them."""

    args: argparse.Namespace
    cwd: Path
    home: Path
    settings: Settings
    registry: ModelRegistry
    resolved: ResolvedModel
    session: CodingSession
    mcp: SessionMcp | None = None  # the MCP servers of this process (docs/mcp.md)

    def new_store(self) -> SessionStore:
        return self._open(StoreSpec.memory() if self.args.no_session else StoreSpec.new())

    def open_store(self, ref: str) -> SessionStore:
        return self._open(StoreSpec.open(ref))

    def fork_store(self, entry_id: str | None) -> SessionStore:
        return self._open(StoreSpec.fork(self.session.store, entry_id))

    def switch(self, store: SessionStore) -> None:
        """Continue in ``store``; the store left behind is closed (its lock released), the
        MCP servers' tools follow the session as in a new process."""
        old = self.session.store
        self.session.switch_store(store)
        if old is not store:
            old.close()
        if self.mcp is not None:
            self.mcp.switched(self.session.agent, store)

    def _open(self, spec: StoreSpec) -> SessionStore:
        from heron.coding.assembly import open_store  # the way every session's file is opened

        return open_store(spec, self.cwd, self.home)


def store_spec(args: argparse.Namespace, cwd: Path, home: Path) -> StoreSpec:
    """The session file the flags ask for; ``--resume`` asks the user which one."""
    if args.no_session:
        return StoreSpec.memory()
    if args.session:
        return StoreSpec.open(args.session)
    if args.continue_session:
        return StoreSpec.continue_latest()
    if args.resume:
        return StoreSpec.open(pick_session(cwd, home))
    return StoreSpec.new()


def pick_session(cwd: Path, home: Path) -> Path:
    """``--resume``: list this directory's sessions and read a number from the terminal."""
    sessions = list_sessions(cwd, home=home)
    if not sessions:
        raise UsageError(f"no sessions for {cwd} yet; start one with `heron`")
    if not sys.stdin.isatty():
        raise UsageError("--resume needs a terminal to pick from; use --session PATH|ID instead")
    if sys.stdout.isatty():  # the searchable picker; the numbered list below when output is piped
        from heron.cli.tui.pick_items import session_items
        from heron.cli.tui.picker import pick

        items = session_items(sessions, None)
        chosen = asyncio.run(pick("resume which session?", items))
        if chosen is None:
            raise UsageError("no session picked (--resume was cancelled)")
        return chosen
    for number, summary in enumerate(sessions[:30], 1):
        title = summary.name or (summary.first_message or "(empty)").splitlines()[0][:70]
        line = f"{number:>3}. {title}  ({summary.message_count} messages, {summary.id[:8]})"
        print(visible(line), file=sys.stderr)
    answer = input("session number: ").strip()
    if not answer.isdigit() or not 1 <= int(answer) <= min(30, len(sessions)):
        raise UsageError(f"not a session number: {answer!r}")
    return sessions[int(answer) - 1].path
