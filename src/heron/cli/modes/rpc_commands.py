"""The rpc commands about sessions and their files: a new session, switching, forking,
cloning, handing off, naming, the entries and their tree, the user messages to fork from,
and the report and memory log, with pi's names, fields and answers (docs/rpc.md). A
handler object the server holds, seeing it only as an
:class:`~heron.cli.modes.rpc_host.RpcHost`: a command that changes the session is
refused while a run or a compaction is under way."""

from __future__ import annotations

import os
from typing import Any

from heron.ai.types import THINKING_LEVELS, UserMessage
from heron.cli.modes.rpc_host import RpcHost
from heron.cli.modes.rpc_protocol import CommandError, CommandId, message_text, string_field
from heron.cli.modes.rpc_state import session_json
from heron.session.entries import MessageEntry, SessionInfoEntry
from heron.session.paths import resolve_session
from heron.session.store import SessionError, SessionStore


class SessionCommands:
    """The session commands (module docstring), for a host."""

    def __init__(self, host: RpcHost) -> None:
        self.host = host

    async def set_session_name(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        name = (string_field(fields, "name", empty=True) or "").strip()
        if not name:
            raise CommandError("Session name cannot be empty")
        self.host.require_idle("rename the session")
        self.host.session.store.append(SessionInfoEntry(name=name))
        self.host.write({"type": "session_info_changed", "name": name})
        return {"sessionName": name}

    async def get_entries(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """Every entry of the session file in append order (all branches), after the entry
        ``since`` when given: an entry id is a cursor that survives restarts."""
        store: SessionStore = self.host.session.store
        entries = [entry.to_json_dict() for entry in store.entries()]
        since = string_field(fields, "since", required=False)
        if since is not None:
            index = next((i for i, e in enumerate(entries) if e.get("id") == since), None)
            if index is None:
                raise CommandError(f"Entry not found: {since}")
            entries = entries[index + 1 :]
        return {"entries": entries, "leafId": store.leaf_id}

    async def get_tree(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """The entries as a tree (``{entry, children, label?}``); an entry whose parent is
        missing is a root of its own, so nothing is left out."""
        store: SessionStore = self.host.session.store
        nodes: dict[str, dict[str, Any]] = {}
        roots: list[dict[str, Any]] = []
        for entry in store.entries():
            node: dict[str, Any] = {"entry": entry.to_json_dict(), "children": []}
            label = store.label_of(entry.id)
            if label:
                node["label"] = label
            nodes[entry.id] = node
            parent = nodes.get(entry.parent_id) if entry.parent_id is not None else None
            (parent["children"] if parent is not None else roots).append(node)
        return {"tree": roots, "leafId": store.leaf_id}

    async def get_fork_messages(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        store: SessionStore = self.host.session.store
        out = []
        for entry_id in store.path_ids():
            if store.role_of(entry_id) != "user":
                continue
            entry = store.get(entry_id)
            if isinstance(entry, MessageEntry):
                out.append({"entryId": entry_id, "text": message_text(entry.message)})
        return {"messages": out}

    def _switch_to(self, store: SessionStore) -> dict[str, Any]:
        """Continue in ``store``; the store left behind is closed (its lock released, so it
        can be switched back to). The thinking level recorded in the new session applies,
        as when heron starts on it; the model stays (``recordedModel`` says which one the
        session used, for a ``set_model``)."""
        old: SessionStore = self.host.session.store
        self.host.session.switch_store(store)
        if old is not store:
            old.close()
        if self.host.app.mcp is not None:
            self.host.app.mcp.switched(self.host.session.agent, store)  # tool_search's tools follow the session
        recorded_model, thinking = store.current_settings()
        if thinking in THINKING_LEVELS and store.leaf_id is not None:
            self.host.session.agent.set_thinking_level(thinking)
        return {
            "cancelled": False,
            **session_json(self.host.session.store),
            "messageCount": len(self.host.session.messages),
            "thinkingLevel": self.host.session.thinking_level,
            "recordedModel": str(recorded_model) if recorded_model is not None else None,
        }

    async def new_session(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        self.host.require_idle("start a new session")
        try:
            store = self.host.app.new_store()
        except (SessionError, OSError) as exc:
            raise CommandError(f"cannot create a session: {exc}") from exc
        return self._switch_to(store)

    async def switch_session(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        name = "sessionPath" if fields.get("sessionPath") is not None or fields.get("session") is None else "session"
        ref = string_field(fields, name) or ""
        self.host.require_idle("switch sessions")
        try:
            path = resolve_session(ref.strip(), home=self.host.app.home)
        except LookupError as exc:
            raise CommandError(str(exc)) from exc
        current: SessionStore = self.host.session.store
        if current.path is not None and _same_file(current.path, path):
            return {
                "cancelled": False,
                **session_json(self.host.session.store),
                "messageCount": len(self.host.session.messages),
                "changed": False,
            }
        try:
            store = self.host.app.open_store(str(path))
        except (SessionError, LookupError, OSError, ValueError) as exc:
            raise CommandError(f"cannot open {path}: {exc}") from exc
        return {**self._switch_to(store), "changed": True}

    async def fork(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """pi's fork: from a user message, into a new session holding what came before it;
        ``text`` is that message, for the client to edit and send again. Given any other
        entry, heron forks *at* it (the new session ends with that entry) and ``text`` is
        null."""
        entry_id = string_field(fields, "entryId", required=False) or string_field(fields, "entry_id", required=False)
        self.host.require_idle("fork")
        store: SessionStore = self.host.session.store
        if entry_id is not None and not store.has(entry_id):
            raise CommandError(f"no entry {entry_id!r} in this session (get_fork_messages lists the user messages)")
        text: str | None = None
        at = entry_id
        entry = store.get(entry_id) if entry_id is not None else None
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
            text = message_text(entry.message)
            at = store.parent_id_of(entry.id)
            if at is None:  # the session's first entry: the fork starts empty
                return {**self._fork_into(None, empty=True), "text": text}
        return {**self._fork_into(at), "text": text}

    async def clone(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        self.host.require_idle("clone")
        if self.host.session.store.leaf_id is None:
            raise CommandError("Cannot clone session: no current entry selected")
        return self._fork_into(None)

    def _fork_into(self, entry_id: str | None, *, empty: bool = False) -> dict[str, Any]:
        store: SessionStore = self.host.session.store
        parent = str(store.path) if store.path is not None else None
        try:
            forked = self.host.app.new_store() if empty else self.host.app.fork_store(entry_id)
        except (SessionError, KeyError, OSError) as exc:
            raise CommandError(f"cannot fork: {exc}") from exc
        return {**self._switch_to(forked), "parentSession": parent, "entryId": entry_id}

    async def handoff(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """A child session started from this one's frontier (heron.coding.handoff); the
        response names its file and the draft first prompt, which is not sent: the client
        edits it and sends a ``prompt``."""
        from heron.coding.handoff import HandoffError, hand_off

        focus = string_field(fields, "focus", required=False, empty=True)
        self.host.require_idle("hand off")
        parent = self.host.session.store
        try:
            made = hand_off(self.host.session, focus)
        except (HandoffError, SessionError, OSError) as exc:
            raise CommandError(f"cannot hand off: {exc}") from exc
        return {
            **self._switch_to(made.child),
            "parentSession": str(parent.path),
            "draft": made.draft,
        }

    async def export_report(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        from heron.cli.modes.rpc_report import export_report

        return await export_report(self.host.session, fields)

    async def memory_log(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        from heron.cli.modes.rpc_report import memory_log

        return await memory_log(self.host.session, fields)


def _same_file(a: Any, b: Any) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
