"""The rpc commands that read the session's state or change its configuration - the
model, the thinking level, auto-compaction, a learnt window - with pi's names, fields and
answers (docs/rpc.md). A handler object the server holds, seeing it only as an
:class:`~heron.cli.modes.rpc_host.RpcHost`; the server's dispatch table names each
handler. The session's state in pi's shapes (``pending``, ``context``, the session's
file) is here too, as functions, for the server and the session commands."""

from __future__ import annotations

from typing import Any

from heron.ai.models import ConfigValueError
from heron.ai.types import THINKING_LEVELS, AssistantMessage, Model
from heron.cli.modes.rpc_catalog import discoverable_commands
from heron.cli.modes.rpc_host import RpcHost
from heron.cli.modes.rpc_protocol import CommandError, CommandId, model_json, string_field
from heron.cli.modes.rpc_stats import session_stats
from heron.coding.breakdown import window_source
from heron.coding.runtime import CodingSession
from heron.coding.settings import SetupError, _key_for
from heron.session.store import SessionStore


def pending_json(session: CodingSession) -> dict[str, Any]:
    """The messages queued now, by kind (``pending`` in several answers)."""
    steering, follow_up = session.agent.queued_counts()
    return {"pending": {"steering": steering, "followUp": follow_up}}


def context_json(session: CodingSession) -> dict[str, Any]:
    """The request's estimated size against the window heron plans for."""
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


def session_json(store: SessionStore) -> dict[str, Any]:
    """The session's file, id and name, as pi names them."""
    out: dict[str, Any] = {
        "sessionFile": str(store.path) if store.path is not None else None,
        "sessionId": store.session_id,
    }
    if store.name is not None:
        out["sessionName"] = store.name
    return out


class StateCommands:
    """State reads and configuration changes (module docstring), for a host."""

    def __init__(self, host: RpcHost) -> None:
        self.host = host

    async def get_state(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        session = self.host.session
        pending = pending_json(self.host.session)
        return {
            "model": model_json(session.model),
            "thinkingLevel": session.thinking_level,
            "isStreaming": self.host.is_running,
            "isCompacting": self.host.is_compacting,
            "steeringMode": "all",
            "followUpMode": "all",
            **session_json(self.host.session.store),
            "autoCompactionEnabled": session.policy.auto_compaction,
            "messageCount": len(session.messages),
            "pendingMessageCount": sum(pending["pending"].values()),
            # heron's additions
            "cwd": str(session.cwd),
            **pending,
            "context": context_json(self.host.session),
        }

    async def get_messages(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        store: SessionStore = self.host.session.store
        path = []
        for entry_id in store.path_ids():
            item: dict[str, Any] = {"id": entry_id, "type": store.type_of(entry_id)}
            role = store.role_of(entry_id)
            if role is not None:
                item["role"] = role
            path.append(item)
        return {"messages": [m.to_json_dict() for m in self.host.session.messages], "path": path}

    async def get_session_stats(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """Over every entry of the session file (all branches: what the session cost), not
        only the current path."""
        context = context_json(self.host.session)
        return {
            **session_json(self.host.session.store),
            **session_stats(self.host.session.store),
            "contextUsage": {key: context[key] for key in ("tokens", "contextWindow", "percent")},
            "context": context,
            "contextMessageCount": len(self.host.session.messages),
        }

    async def get_partial_message(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """The answer as it stands while it streams (``message_update`` events carry only
        deltas); ``null`` between answers."""
        partial = self.host.partial
        return {"message": partial.to_json_dict() if partial is not None else None}

    async def get_last_assistant_text(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        for message in reversed(self.host.session.messages):
            if isinstance(message, AssistantMessage) and message.text().strip():
                return {"text": message.text()}
        return {"text": None}

    async def set_model(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """pi's ``provider`` + ``modelId`` (heron also takes ``"model": "provider/id"``);
        answers with the model object."""
        app = self.host.app
        if fields.get("model") is not None:
            ref = string_field(fields, "model") or ""
            provider, model_id = None, None
        else:
            if fields.get("provider") is None or fields.get("modelId", fields.get("model_id")) is None:
                raise CommandError('set_model needs "provider" and "modelId" (or "model": "provider/id")')
            provider = string_field(fields, "provider") or ""
            model_id = string_field(fields, "modelId" if "modelId" in fields else "model_id") or ""
            ref = f"{provider}/{model_id}"
        current: Model = self.host.session.model
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
        self.host.session.set_model(model, key)  # its window asked of its server when nobody configured it
        if model.api != current.api:
            self.host.warm_up(model.api)
        return model_json(self.host.session.model)

    async def get_available_models(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        models = self.host.app.registry.all()
        if not any(m.ref == self.host.session.model.ref for m in models):
            models = [self.host.session.model, *models]
        return {"models": [model_json(m) for m in models]}

    async def set_thinking_level(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """A model without reasoning takes only ``"off"``: any other level is clamped to it
        (as pi does), so ``get_state`` never shows a level ``get_available_thinking_levels``
        does not list. ``thinking_level_changed`` only when the level really changed."""
        level = string_field(fields, "level")
        if level not in THINKING_LEVELS:
            raise CommandError(f"unknown thinking level {level!r}; levels: {', '.join(THINKING_LEVELS)}")
        if not self.host.session.model.reasoning:
            level = THINKING_LEVELS[0]  # "off"
        if level != self.host.session.thinking_level:
            self.host.session.set_thinking_level(level)
            self.host.write({"type": "thinking_level_changed", "level": level})
        return {"thinkingLevel": level, "modelReasons": self.host.session.model.reasoning}

    async def cycle_thinking_level(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any] | None:
        """The next level the model takes, or ``data: null`` for a model without reasoning."""
        if not self.host.session.model.reasoning:
            self.host.write(
                {"type": "response", "id": cmd_id, "command": "cycle_thinking_level", "success": True, "data": None}
            )
            return None
        levels = list(THINKING_LEVELS)
        current = self.host.session.thinking_level
        level = levels[(levels.index(current) + 1) % len(levels)] if current in levels else levels[0]
        self.host.session.set_thinking_level(level)
        self.host.write({"type": "thinking_level_changed", "level": level})
        return {"level": level}

    async def get_thinking_levels(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        return {"levels": list(THINKING_LEVELS) if self.host.session.model.reasoning else ["off"]}

    async def get_commands(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """What ``prompt`` runs as ``/name``: extension commands, prompt templates and skills
        (``skill:name``), in pi's shape. Built-in interactive commands are not listed (as in pi)."""
        return {"commands": discoverable_commands(self.host.session)}

    async def set_queue_mode(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        mode = string_field(fields, "mode")
        if mode != "all":
            raise CommandError(f'heron delivers every queued message at once: the only mode is "all", got {mode!r}')
        return {}

    async def set_auto_compaction(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        enabled = fields.get("enabled")
        if not isinstance(enabled, bool):
            raise CommandError('"enabled" must be true or false')
        if enabled:
            self.host.session.policy.recorder.enable_auto_compaction("the rpc client asked for it", by_user=True)
        else:
            self.host.session.policy.recorder.disable_auto_compaction("the rpc client asked for it", by_user=True)
        return {"autoCompactionEnabled": self.host.session.policy.auto_compaction}

    async def reset_window(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """Forget a window learnt from a rejection (heron's command; docs/context.md)."""
        self.host.require_idle("reset_window")
        dropped = self.host.session.context_owner.forget_learned_window("the rpc client asked for it")
        return {"dropped": dropped, "window": self.host.session.policy.sizes.window}
