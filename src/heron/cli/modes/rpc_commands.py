"""The rpc commands that read or change state, the model and sessions, with pi's names,
fields and answers (docs/rpc.md). A mixin of :class:`~heron.cli.modes.rpc_server.RpcServer`,
which owns the runs; kept apart so each module stays small."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from heron.ai.models import ConfigValueError
from heron.ai.types import THINKING_LEVELS, AssistantMessage, Model, UserMessage
from heron.cli.app_state import App
from heron.cli.modes.rpc_catalog import discoverable_commands
from heron.cli.modes.rpc_protocol import CommandError, CommandId, Write, message_text, model_json, string_field
from heron.cli.modes.rpc_stats import session_stats
from heron.coding.breakdown import window_source
from heron.coding.runtime import CodingSession
from heron.coding.settings import SetupError, _key_for
from heron.session.entries import MessageEntry, SessionInfoEntry
from heron.session.paths import resolve_session
from heron.session.store import SessionError, SessionStore

Handler = Callable[[CommandId, dict[str, Any]], Awaitable[dict[str, Any] | None]]


class SessionCommands:
    app: App
    _partial: AssistantMessage | None
    _write: Write

    # provided by RpcServer
    @property
    def session(self) -> CodingSession:
        raise NotImplementedError

    @property
    def is_running(self) -> bool:
        raise NotImplementedError

    @property
    def is_compacting(self) -> bool:
        raise NotImplementedError

    def _require_idle(self, what: str) -> None:
        raise NotImplementedError

    def warm_up(self, api: str) -> None:
        raise NotImplementedError

    def session_handlers(self) -> dict[str, Handler]:
        return {
            "get_state": self._get_state,
            "get_messages": self._get_messages,
            "set_model": self._set_model,
            "get_available_models": self._get_available_models,
            "set_thinking_level": self._set_thinking_level,
            "get_available_thinking_levels": self._get_thinking_levels,
            "set_steering_mode": self._set_queue_mode,
            "set_follow_up_mode": self._set_queue_mode,
            "set_auto_compaction": self._set_auto_compaction,
            "reset_window": self._reset_window,
            "new_session": self._new_session,
            "switch_session": self._switch_session,
            "fork": self._fork,
            "clone": self._clone,
            "handoff": self._handoff,
            "get_fork_messages": self._get_fork_messages,
            "get_last_assistant_text": self._get_last_assistant_text,
            "set_session_name": self._set_session_name,
            "get_session_stats": self._get_session_stats,
            "get_partial_message": self._get_partial_message,
            "cycle_thinking_level": self._cycle_thinking_level,
            "get_entries": self._get_entries,
            "get_tree": self._get_tree,
            "get_commands": self._get_commands,
            "export_report": self._export_report,
            "memory_log": self._memory_log,
        }

    # --- state --------------------------------------------------------------------------------

    def _pending(self) -> dict[str, Any]:
        steering, follow_up = self.session.agent.queued_counts()
        return {"pending": {"steering": steering, "followUp": follow_up}}

    def _context(self) -> dict[str, Any]:
        session = self.session
        tokens = session.estimate_request_tokens(session.messages)
        window = session.window  # the one heron plans for: a learned one when the server taught it
        return {
            "tokens": tokens,
            "contextWindow": window,
            "windowSource": window_source(session),
            "threshold": session.threshold,
            "workingBudget": session.policy.sizes.budget.to_detail(),
            "percent": round(100 * tokens / window, 1) if window else None,
        }

    def _session_json(self) -> dict[str, Any]:
        store: SessionStore = self.session.store
        out: dict[str, Any] = {
            "sessionFile": str(store.path) if store.path is not None else None,
            "sessionId": store.session_id,
        }
        if store.name is not None:
            out["sessionName"] = store.name
        return out

    async def _get_state(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        session = self.session
        pending = self._pending()
        return {
            "model": model_json(session.model),
            "thinkingLevel": session.thinking_level,
            "isStreaming": self.is_running,
            "isCompacting": self.is_compacting,
            "steeringMode": "all",
            "followUpMode": "all",
            **self._session_json(),
            "autoCompactionEnabled": session.policy.auto_compaction,
            "messageCount": len(session.messages),
            "pendingMessageCount": sum(pending["pending"].values()),
            # heron's additions
            "cwd": str(session.cwd),
            **pending,
            "context": self._context(),
        }

    async def _get_messages(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        store: SessionStore = self.session.store
        path = []
        for entry_id in store.path_ids():
            item: dict[str, Any] = {"id": entry_id, "type": store.type_of(entry_id)}
            role = store.role_of(entry_id)
            if role is not None:
                item["role"] = role
            path.append(item)
        return {"messages": [m.to_json_dict() for m in self.session.messages], "path": path}

    async def _get_session_stats(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """Over every entry of the session file (all branches: what the session cost), not
        only the current path."""
        context = self._context()
        return {
            **self._session_json(),
            **session_stats(self.session.store),
            "contextUsage": {key: context[key] for key in ("tokens", "contextWindow", "percent")},
            "context": context,
            "contextMessageCount": len(self.session.messages),
        }

    async def _get_partial_message(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """The answer as it stands while it streams (``message_update`` events carry only
        deltas); ``null`` between answers."""
        partial = self._partial
        return {"message": partial.to_json_dict() if partial is not None else None}

    async def _get_last_assistant_text(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        for message in reversed(self.session.messages):
            if isinstance(message, AssistantMessage) and message.text().strip():
                return {"text": message.text()}
        return {"text": None}

    # --- configuration --------------------------------------------------------------------------

    async def _set_model(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """pi's ``provider`` + ``modelId`` (heron also takes ``"model": "provider/id"``);
        answers with the model object."""
        app = self.app
        if fields.get("model") is not None:
            ref = string_field(fields, "model") or ""
            provider, model_id = None, None
        else:
            if fields.get("provider") is None or fields.get("modelId", fields.get("model_id")) is None:
                raise CommandError('set_model needs "provider" and "modelId" (or "model": "provider/id")')
            provider = string_field(fields, "provider") or ""
            model_id = string_field(fields, "modelId" if "modelId" in fields else "model_id") or ""
            ref = f"{provider}/{model_id}"
        current: Model = self.session.model
        if ref.strip() == current.ref or (provider is None and ref.strip() == current.id):
            return model_json(current)
        try:
            found = app.registry.get(provider, model_id) if provider and model_id else None
            model = found if found is not None else app.registry.find(ref)
        except LookupError as exc:
            raise CommandError(f"Model not found: {ref} ({exc})") from exc
        cli_key = getattr(app.args, "api_key", None) if model.provider == app.resolved.model.provider else None
        try:
            key = _key_for(model, app.registry, cli_key)
        except (SetupError, ConfigValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.session.set_model(model, key)  # its window asked of its server when nobody configured it
        if model.api != current.api:
            self.warm_up(model.api)
        return model_json(self.session.model)

    async def _get_available_models(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        models = self.app.registry.all()
        if not any(m.ref == self.session.model.ref for m in models):
            models = [self.session.model, *models]
        return {"models": [model_json(m) for m in models]}

    async def _set_thinking_level(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """A model without reasoning takes only ``"off"``: any other level is clamped to it
        (as pi does), so ``get_state`` never shows a level ``get_available_thinking_levels``
        does not list. ``thinking_level_changed`` only when the level really changed."""
        level = string_field(fields, "level")
        if level not in THINKING_LEVELS:
            raise CommandError(f"unknown thinking level {level!r}; levels: {', '.join(THINKING_LEVELS)}")
        if not self.session.model.reasoning:
            level = THINKING_LEVELS[0]  # "off"
        if level != self.session.thinking_level:
            self.session.set_thinking_level(level)
            self._write({"type": "thinking_level_changed", "level": level})
        return {"thinkingLevel": level, "modelReasons": self.session.model.reasoning}

    async def _cycle_thinking_level(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any] | None:
        """The next level the model takes, or ``data: null`` for a model without reasoning."""
        if not self.session.model.reasoning:
            self._respond_null(cmd_id, "cycle_thinking_level")
            return None
        levels = list(THINKING_LEVELS)
        current = self.session.thinking_level
        level = levels[(levels.index(current) + 1) % len(levels)] if current in levels else levels[0]
        self.session.set_thinking_level(level)
        self._write({"type": "thinking_level_changed", "level": level})
        return {"level": level}

    async def _get_commands(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """What ``prompt`` runs as ``/name``: extension commands, prompt templates and skills
        (``skill:name``), in pi's shape. Built-in interactive commands are not listed (as in pi)."""
        return {"commands": discoverable_commands(self.session)}

    def _respond_null(self, cmd_id: CommandId, command: str) -> None:
        self._write({"type": "response", "id": cmd_id, "command": command, "success": True, "data": None})

    async def _get_thinking_levels(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        return {"levels": list(THINKING_LEVELS) if self.session.model.reasoning else ["off"]}

    async def _set_queue_mode(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        mode = string_field(fields, "mode")
        if mode != "all":
            raise CommandError(f'heron delivers every queued message at once: the only mode is "all", got {mode!r}')
        return {}

    async def _set_auto_compaction(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        enabled = fields.get("enabled")
        if not isinstance(enabled, bool):
            raise CommandError('"enabled" must be true or false')
        if enabled:
            self.session.policy.recorder.enable_auto_compaction("the rpc client asked for it", by_user=True)
        else:
            self.session.policy.recorder.disable_auto_compaction("the rpc client asked for it", by_user=True)
        return {"autoCompactionEnabled": self.session.policy.auto_compaction}

    async def _reset_window(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """Forget a window learnt from a rejection (heron's command; docs/context.md)."""
        self._require_idle("reset_window")
        dropped = self.session.context_owner.forget_learned_window("the rpc client asked for it")
        return {"dropped": dropped, "window": self.session.policy.sizes.window}

    async def _set_session_name(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        name = (string_field(fields, "name", empty=True) or "").strip()
        if not name:
            raise CommandError("Session name cannot be empty")
        self._require_idle("rename the session")
        self.session.store.append(SessionInfoEntry(name=name))
        self._write({"type": "session_info_changed", "name": name})
        return {"sessionName": name}

    async def _get_entries(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """Every entry of the session file in append order (all branches), after the entry
        ``since`` when given: an entry id is a cursor that survives restarts."""
        store: SessionStore = self.session.store
        entries = [entry.to_json_dict() for entry in store.entries()]
        since = string_field(fields, "since", required=False)
        if since is not None:
            index = next((i for i, e in enumerate(entries) if e.get("id") == since), None)
            if index is None:
                raise CommandError(f"Entry not found: {since}")
            entries = entries[index + 1 :]
        return {"entries": entries, "leafId": store.leaf_id}

    async def _get_tree(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """The entries as a tree (``{entry, children, label?}``); an entry whose parent is
        missing is a root of its own, so nothing is left out."""
        store: SessionStore = self.session.store
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

    # --- sessions ---------------------------------------------------------------------------------

    def _switch_to(self, store: SessionStore) -> dict[str, Any]:
        """Continue in ``store``; the store left behind is closed (its lock released, so it
        can be switched back to). The thinking level recorded in the new session applies,
        as when heron starts on it; the model stays (``recordedModel`` says which one the
        session used, for a ``set_model``)."""
        old: SessionStore = self.session.store
        self.session.switch_store(store)
        if old is not store:
            old.close()
        if self.app.mcp is not None:
            self.app.mcp.switched(self.session.agent, store)  # tool_search's tools follow the session
        recorded_model, thinking = store.current_settings()
        if thinking in THINKING_LEVELS and store.leaf_id is not None:
            self.session.agent.set_thinking_level(thinking)
        return {
            "cancelled": False,
            **self._session_json(),
            "messageCount": len(self.session.messages),
            "thinkingLevel": self.session.thinking_level,
            "recordedModel": str(recorded_model) if recorded_model is not None else None,
        }

    async def _new_session(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        self._require_idle("start a new session")
        try:
            store = self.app.new_store()
        except (SessionError, OSError) as exc:
            raise CommandError(f"cannot create a session: {exc}") from exc
        return self._switch_to(store)

    async def _switch_session(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        name = "sessionPath" if fields.get("sessionPath") is not None or fields.get("session") is None else "session"
        ref = string_field(fields, name) or ""
        self._require_idle("switch sessions")
        try:
            path = resolve_session(ref.strip(), home=self.app.home)
        except LookupError as exc:
            raise CommandError(str(exc)) from exc
        current: SessionStore = self.session.store
        if current.path is not None and _same_file(current.path, path):
            return {
                "cancelled": False,
                **self._session_json(),
                "messageCount": len(self.session.messages),
                "changed": False,
            }
        try:
            store = self.app.open_store(str(path))
        except (SessionError, LookupError, OSError, ValueError) as exc:
            raise CommandError(f"cannot open {path}: {exc}") from exc
        return {**self._switch_to(store), "changed": True}

    async def _fork(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """pi's fork: from a user message, into a new session holding what came before it;
        ``text`` is that message, for the client to edit and send again. Given any other
        entry, heron forks *at* it (the new session ends with that entry) and ``text`` is
        null."""
        entry_id = string_field(fields, "entryId", required=False) or string_field(fields, "entry_id", required=False)
        self._require_idle("fork")
        store: SessionStore = self.session.store
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

    async def _clone(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        self._require_idle("clone")
        if self.session.store.leaf_id is None:
            raise CommandError("Cannot clone session: no current entry selected")
        return self._fork_into(None)

    def _fork_into(self, entry_id: str | None, *, empty: bool = False) -> dict[str, Any]:
        store: SessionStore = self.session.store
        parent = str(store.path) if store.path is not None else None
        try:
            forked = self.app.new_store() if empty else self.app.fork_store(entry_id)
        except (SessionError, KeyError, OSError) as exc:
            raise CommandError(f"cannot fork: {exc}") from exc
        return {**self._switch_to(forked), "parentSession": parent, "entryId": entry_id}

    async def _handoff(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """A child session started from this one's frontier (heron.coding.handoff); the
        response names its file and the draft first prompt, which is not sent: the client
        edits it and sends a ``prompt``."""
        from heron.coding.handoff import HandoffError, hand_off

        focus = string_field(fields, "focus", required=False, empty=True)
        self._require_idle("hand off")
        parent = self.session.store
        try:
            made = hand_off(self.session, focus)
        except (HandoffError, SessionError, OSError) as exc:
            raise CommandError(f"cannot hand off: {exc}") from exc
        return {
            **self._switch_to(made.child),
            "parentSession": str(parent.path),
            "draft": made.draft,
        }

    async def _get_fork_messages(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        store: SessionStore = self.session.store
        out = []
        for entry_id in store.path_ids():
            if store.role_of(entry_id) != "user":
                continue
            entry = store.get(entry_id)
            if isinstance(entry, MessageEntry):
                out.append({"entryId": entry_id, "text": message_text(entry.message)})
        return {"messages": out}

    async def _export_report(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        from heron.cli.modes.rpc_report import export_report

        return await export_report(self.session, fields)

    async def _memory_log(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        from heron.cli.modes.rpc_report import memory_log

        return await memory_log(self.session, fields)


def _same_file(a: Any, b: Any) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
