"""The interactive commands about the session itself: ``/tree``, ``/fork``, ``/handoff``,
``/new``, ``/resume``, ``/session``, ``/name``, ``/export``, ``/cost``, ``/memory``,
``/agents``, ``/mcp`` and ``/settings``. A handler object the controller holds; it sees
the controller only as a :class:`~heron.cli.tui.command_host.CommandHost` (printing,
notes, the input's prefill, a job), and keeps the one state of its own, the numbered
``/resume`` listing.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from pathlib import Path

from rich.text import Text

from heron.ai.types import TextContent, UserMessage
from heron.cli.sessions_cmd import render_tree
from heron.cli.tui.command_host import CommandHost, Handler
from heron.cli.tui.controller_parts import session_rows
from heron.cli.tui.cost import cost_lines, usage_by_model
from heron.cli.tui.export import default_export_path, write_export
from heron.cli.tui.pick_items import session_items, tree_items
from heron.cli.tui.render import Totals
from heron.cli.tui.settings_view import change_setting, settings_lines
from heron.coding.settings import load_settings
from heron.coding.settings_change import SettingChangeError
from heron.session.entries import MessageEntry
from heron.session.paths import SessionSummary, list_sessions, resolve_session
from heron.session.store import SessionStore

SESSIONS_LISTED = 30
TREE_LINES = 400


class SessionCommands:
    """The handlers of the session commands (see the module docstring), for a host."""

    def __init__(self, host: CommandHost) -> None:
        self.host = host
        self._listing: list[SessionSummary] = []  # what the last bare /resume numbered

    def commands(self) -> dict[str, Handler]:
        return {
            "tree": self._cmd_tree,
            "fork": self._cmd_fork,
            "handoff": self._cmd_handoff,
            "new": self._cmd_new,
            "resume": self._cmd_resume,
            "cost": self._cmd_cost,
            "memory": self._cmd_memory,
            "agents": self._cmd_agents,
            "mcp": self._cmd_mcp,
            "settings": self._cmd_settings,
            "session": self._cmd_session,
            "name": self._cmd_name,
            "export": self._cmd_export,
        }

    # /tree, /fork

    def _entry_target(self, number: str) -> tuple[str | None, str | None, int]:
        """Where entry ``number`` puts the leaf, and the text to edit: choosing a user
        message goes to just before it, with the message back in the input to edit."""
        store: SessionStore = self.host.session.store
        if not number.isdigit():
            raise ValueError(f"not an entry number: {number!r} (/tree shows the numbers)")
        index = int(number)
        ids = store.ids()
        if not 0 <= index < len(ids):
            raise ValueError(f"no entry {index}; the session has entries 0-{len(ids) - 1}")
        entry = store.entry_at(index)
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
            text = (
                "".join(b.text for b in entry.message.content if isinstance(b, TextContent))
                if not isinstance(entry.message.content, str)
                else entry.message.content
            )
            return store.parent_id_of(ids[index]), text, index
        return ids[index], None, index

    async def _cmd_tree(self, args: str) -> None:
        s = self.host.session
        words = args.split()
        store: SessionStore = s.store
        if not words and len(store) == 0:
            self.host.note("the session has no entries yet")
            return
        if not words and self.host.picker is not None:
            width = max(20, self.host.console.width - 40)
            title = "go to which entry? (a prompt: back to just before it, its text to edit)"
            chosen = await self.host.picker(title, tree_items(store, width), toggle="shows every entry")
            if chosen is None:
                return
            words = [str(chosen)]
        if not words:
            lines = render_tree(store, width=max(20, self.host.console.width - 40))
            self.host.renderer.reset_section()
            if len(lines) > TREE_LINES:
                self.host.print_text(Text(f"… {len(lines) - TREE_LINES} earlier lines", style="dim"))
                lines = lines[-TREE_LINES:]
            for line in lines:
                self.host.print_text(Text(line, style="bold" if line.endswith("<- leaf") else ""))
            self.host.print_text(
                Text("/tree N moves to entry N; /tree N --summary also summarises the branch left", style="dim")
            )
            return
        summarize = any(w in ("--summary", "-s") for w in words[1:])
        target, text, index = self._entry_target(words[0])
        if summarize:
            self.host.start_job("tree", self._navigate(target, True, text, index))
        else:
            await self._navigate(target, False, text, index)

    async def _navigate(self, target: str | None, summarize: bool, text: str | None, index: int) -> None:
        summary = await self.host.session.navigate(target, summarize=summarize)
        where = f"entry {index}" if text is None else f"just before entry {index} (its text is in the input)"
        self.host.note(f"moved to {where}; {len(self.host.session.messages)} messages in the context", "green")
        if summary:
            self.host.note("the branch left behind was summarised into the context", "green")
        if text is not None:
            self.host.set_prefill(text)

    def _switch(self, store: SessionStore, what: str) -> None:
        s = self.host.session
        old = s.store
        s.switch_store(store)
        if old is not store:
            old.close()
        if self.host.app.mcp is not None:
            self.host.app.mcp.switched(s.agent, store)  # tool_search's tools follow the session (as a new process)
        self.host.renderer.totals = Totals.of(s.messages)
        where = str(store.path) if store.path is not None else "in memory"
        self.host.note(f"{what}: {where} ({len(s.messages)} messages in the context)", "green")

    async def _pick_fork(self) -> None:
        """``/fork`` in a terminal: choose the entry, as in ``/tree`` (opens on the leaf)."""
        assert self.host.picker is not None
        store: SessionStore = self.host.session.store
        if len(store) == 0:
            self.host.note("the session has no entries yet: nothing to fork")
            return
        title = "fork from which entry? (a prompt: the new session stops just before it, its text to edit)"
        items = tree_items(store, max(20, self.host.console.width - 40))
        chosen = await self.host.picker(title, items, toggle="shows every entry")
        if chosen is not None:
            self._cmd_fork(str(chosen))

    def _cmd_fork(self, args: str) -> Awaitable[None] | None:
        number = args.strip()
        if not number and self.host.picker is not None:
            return self._pick_fork()
        if not number:
            self._switch(self.host.app.fork_store(None), "forked")
            return None
        target, text, _ = self._entry_target(number)
        if target is None:  # before the first entry: nothing to copy
            self._switch(self.host.app.new_store(), "new session")
        else:
            self._switch(self.host.app.fork_store(target), "forked")
        if text is not None:
            self.host.set_prefill(text)
        return None

    def _cmd_handoff(self, args: str) -> None:
        """A child session from the frontier (heron.coding.handoff); the draft first prompt
        goes into the input box, to edit and send (never sent by itself)."""
        from heron.coding.handoff import HandoffError, hand_off

        try:
            made = hand_off(self.host.session, args)
        except (HandoffError, OSError) as exc:
            self.host.error(f"cannot hand off: {exc}")
            return
        self._switch(made.child, "handed off")
        self.host.set_prefill(made.draft)

    def _cmd_new(self, args: str) -> None:
        self._switch(self.host.app.new_store(), "new session")

    async def _pick_session(self) -> None:
        assert self.host.picker is not None
        summaries = list_sessions(self.host.app.cwd, home=self.host.app.home)
        if not summaries:
            self.host.note("no saved sessions for this directory")
            return
        path = await self.host.picker("resume which session?", session_items(summaries, self.host.session.store.path))
        if path is not None:
            self._cmd_resume(str(path))

    def _cmd_resume(self, args: str) -> Awaitable[None] | None:
        ref = args.strip()
        current = self.host.session.store.path
        if not ref and self.host.picker is not None:
            return self._pick_session()
        if not ref:
            self._listing = list_sessions(self.host.app.cwd, home=self.host.app.home)[:SESSIONS_LISTED]
            if not self._listing:
                self.host.note("no saved sessions for this directory")
                return None
            self.host.renderer.reset_section()
            for number, summary in enumerate(self._listing, 1):
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(summary.modified))
                title = summary.name or " ".join((summary.first_message or "(no messages)").split())[:60]
                mark = "*" if current is not None and summary.path == current else " "
                self.host.print_text(
                    Text(f"{mark}{number:>3}. {when}  {summary.id[:8]}  {summary.message_count:>4} msgs  {title}")
                )
            self.host.print_text(Text("/resume N or /resume <id prefix> switches", style="dim"))
            return None
        path: Path | None = None
        if Path(ref).is_absolute() and Path(ref).is_file():  # what the picker gives
            path = Path(ref)
        elif ref.isdigit() and len(ref) <= 3:
            listing = self._listing or list_sessions(self.host.app.cwd, home=self.host.app.home)[:SESSIONS_LISTED]
            if 1 <= int(ref) <= len(listing):
                path = listing[int(ref) - 1].path
        if path is not None and current is not None and path.resolve() == current.resolve():
            self.host.note("that is the current session")
            return None
        if path is not None:
            store = SessionStore.open(path)
        else:
            found = resolve_session(ref, home=self.host.app.home)
            if current is not None and found.resolve() == current.resolve():
                self.host.note("that is the current session")
                return None
            store = SessionStore.open(found)
        self._switch(store, "resumed")
        self.host.recap()
        return None

    # /cost, /settings

    def _cmd_cost(self, args: str) -> None:
        store: SessionStore = self.host.session.store
        types = store.types()
        compactions = sum(1 for i in store.path_indices() if types[i] == "compaction")
        self.host.renderer.reset_section()
        self.host.print_text(Text("Tokens and cost of this session, by model", style="bold"))
        for line in cost_lines(usage_by_model(store), compactions):
            self.host.print_text(Text(line))

    def _cmd_memory(self, args: str) -> None:
        """The project memory's changes, as ``heron memory log`` lists them (docs/memory.md)."""
        from heron.cli.memory_cmd import change_line
        from heron.coding.memory_history import MemoryHistoryError

        history = self.host.session.memory.history
        try:
            changes = history.log()
        except MemoryHistoryError as exc:
            self.host.error(str(exc))
            return
        self.host.renderer.reset_section()
        self.host.print_text(Text(f"Memory changes ({history.directory}), newest first", style="bold"))
        for change in changes:
            self.host.print_text(Text(change_line(change)))
        if not changes:
            self.host.note("none recorded yet")
        self.host.note("heron memory show REV / diff [REV] / revert REV in a shell")

    def _cmd_agents(self, args: str) -> None:
        """The agent definitions the task tool can use, and the files skipped with why."""
        from heron.coding.subagents.definitions import listing_lines, load_definitions

        self.host.renderer.reset_section()
        self.host.print_text(Text("Agent definitions (task tool)", style="bold"))
        for line in listing_lines(load_definitions(self.host.session.cwd, self.host.session.home)):
            self.host.print_text(Text(line))

    def _cmd_mcp(self, args: str) -> None:
        """The MCP servers of this session: state, tools, the reason a failed one gave."""
        mcp = self.host.app.mcp
        statuses = mcp.statuses() if mcp is not None else []
        self.host.renderer.reset_section()
        self.host.print_text(Text("MCP servers", style="bold"))
        if not statuses:
            self.host.print_text(
                Text(
                    "none configured (.mcp.json in the project, or mcp.json in the heron home; "
                    "project servers start with --trust; see docs/mcp.md)"
                )
            )
        for status in statuses:
            names = ", ".join(f"mcp__{status.name}__{tool.name}" for tool in status.tools) or "no tools"
            line = f"{status.name} ({status.scope}, {status.transport}): {status.state}"
            if status.restarts:
                line += f", restarted {status.restarts}x"
            self.host.print_text(Text(line))
            self.host.print_text(Text(f"    {status.error}" if status.error else f"    {names}"))

    def _cmd_settings(self, args: str) -> None:
        app = self.host.app
        words = args.split()
        if words:
            try:
                change = change_setting(words, app.cwd, app.home, app.registry)
            except SettingChangeError as exc:
                self.host.error(f"/settings: {exc}")
                return
            app.settings = load_settings(app.cwd, app.home)
            self.host.note(change.text, "green")
            return
        self.host.renderer.reset_section()
        self.host.print_text(Text("Settings", style="bold"))
        for line in settings_lines(app.settings, app.cwd, app.home):
            self.host.print_text(Text(line))

    def _cmd_session(self, args: str) -> None:
        self.host.renderer.reset_section()
        for key, value in session_rows(self.host.session, self.host.renderer.totals):
            self.host.print_text(Text(f"{key:>11}: {value}"))

    def _cmd_name(self, args: str) -> None:
        store: SessionStore = self.host.session.store
        name = args.strip()
        if not name:
            self.host.note(f"name: {store.name}" if store.name else "the session has no name; /name NAME sets one", "")
            return
        store.set_name(name)
        self.host.note(f"session named {name!r}", "green")

    def _cmd_export(self, args: str) -> None:
        store: SessionStore = self.host.session.store
        raw = args.strip()
        path = Path(raw).expanduser() if raw else default_export_path(self.host.app.cwd, store.session_id)
        if not path.is_absolute():
            path = self.host.app.cwd / path
        written = write_export(store, path, model=self.host.session.model.ref)
        self.host.note(f"exported to {written}", "green")
