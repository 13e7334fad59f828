"""The rpc server: serves parsed commands against a :class:`CodingSession`, writing
responses and the session's events (docs/rpc.md). Independent of stdin and stdout
(:mod:`heron.cli.modes.rpc_mode` connects them), so tests drive it line by line."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

from heron.agent.events import MessageEndEvent, MessageUpdateEvent
from heron.agent.messages import AgentMessage
from heron.ai.models import ConfigValueError
from heron.ai.types import THINKING_LEVELS, AssistantMessage, ImageContent, Model, StopReason
from heron.cli.app import App
from heron.cli.events_json import event_json
from heron.cli.modes.rpc_io import warm_up
from heron.cli.modes.rpc_protocol import (
    CommandError,
    CommandId,
    LineError,
    Write,
    images_field,
    message_text,
    model_json,
    parse_command,
    string_field,
)
from heron.cli.modes.rpc_stats import session_stats
from heron.cli.notices import explain_error
from heron.coding.events import CompactionEndEvent, CompactionStartEvent, SessionEvent
from heron.coding.runtime import CodingSession
from heron.coding.settings import SetupError, _key_for
from heron.session.paths import resolve_session
from heron.session.store import SessionError, SessionStore, SessionWriteError

# --- the server ---------------------------------------------------------------------------------


class RpcServer:
    """Parses command lines and serves them against ``app.session``, writing responses and
    events through ``write`` (one JSON object each). Independent of stdin and stdout, so
    tests drive it line by line."""

    def __init__(self, app: App, write: Write) -> None:
        self.app = app
        self._write = write
        self._task: asyncio.Task[None] | None = None
        self._task_kind: str | None = None  # "prompt" or "compact" while a task runs
        self._compacting = 0  # compaction_start seen without its compaction_end
        self._warming: concurrent.futures.Future[None] | None = None
        self._unsubscribe = app.session.subscribe(self._on_event)
        self._handlers: dict[str, Callable[[CommandId, dict[str, Any]], Awaitable[dict[str, Any] | None]]] = {
            "prompt": self._prompt,
            "steer": self._steer,
            "follow_up": self._follow_up,
            "abort": self._abort,
            "get_state": self._get_state,
            "get_messages": self._get_messages,
            "set_model": self._set_model,
            "set_thinking_level": self._set_thinking_level,
            "compact": self._compact,
            "new_session": self._new_session,
            "switch_session": self._switch_session,
            "fork": self._fork,
            "get_session_stats": self._get_session_stats,
            "get_partial_message": self._get_partial_message,
        }
        self._partial: AssistantMessage | None = None  # the answer streaming now, if any

    @property
    def session(self) -> CodingSession:
        return self.app.session

    @property
    def is_running(self) -> bool:
        """A prompt is being served: the agent loop, or the retry / overflow recovery
        around it (during which the agent itself is idle)."""
        return self._task_kind == "prompt"

    # --- output ---------------------------------------------------------------------------

    def _on_event(self, event: SessionEvent) -> None:
        if isinstance(event, MessageUpdateEvent):
            self._partial = event.message
        elif isinstance(event, MessageEndEvent):
            self._partial = None
        if isinstance(event, CompactionStartEvent):
            self._compacting += 1
        elif isinstance(event, CompactionEndEvent):
            self._compacting = max(0, self._compacting - 1)
        self._write(event_json(event))

    def _respond(self, cmd_id: CommandId, command: str | None, data: dict[str, Any] | None = None,
                 error: str | None = None) -> None:
        out: dict[str, Any] = {"type": "response", "id": cmd_id, "command": command, "success": error is None}
        if error is None:
            out["data"] = data if data is not None else {}
        else:
            out["error"] = error
        self._write(out)

    # --- input ----------------------------------------------------------------------------

    async def handle_line(self, line: bytes) -> None:
        """Serve one line of input (without or with its LF). Blank lines are skipped; any
        other line gets exactly one response, now or (``compact``) when the work is done."""
        parsed = parse_command(line, ", ".join(self._handlers))
        if parsed is None:
            return
        if isinstance(parsed, LineError):
            self._respond(parsed.id, parsed.command, error=parsed.error)
            return
        cmd_id, kind, command = parsed.id, parsed.type, parsed.fields
        handler = self._handlers.get(kind)
        if handler is None:
            self._respond(cmd_id, kind, error=f"unknown command {kind!r}; commands: {', '.join(self._handlers)}")
            return
        try:
            data = await handler(cmd_id, command)
        except (CommandError, SessionWriteError) as exc:
            self._respond(cmd_id, kind, error=str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a bug in one command must not end the server
            traceback.print_exc(file=sys.stderr)
            self._respond(cmd_id, kind, error=f"internal error: {type(exc).__name__}: {exc}")
            return
        if data is not None:
            self._respond(cmd_id, kind, data)

    # --- lifetime ---------------------------------------------------------------------------

    def abort(self) -> bool:
        """Stop what is running; True if something was. The agent's own abort ends the run
        cleanly (tool calls get results, the partial answer is kept as aborted); outside
        the agent loop (retry back-off, compaction) the task is cancelled."""
        task = self._task
        if task is None or task.done():
            return False
        if self.session.agent.is_running:
            self.session.abort()
        else:
            task.cancel()
        return True

    async def finish(self) -> None:
        """At EOF: let the current run or compaction end, so its events are written."""
        task = self._task
        if task is not None:
            await asyncio.wait({task})

    def close(self) -> None:
        self._unsubscribe()

    def warm_up(self, api: str) -> None:
        """Load the provider's SDK in a thread now; runs wait for it off the event loop
        instead of importing it on the loop, where it would hold up every command."""
        self._warming = warm_up(api)

    async def _ready(self) -> None:
        warming = self._warming
        if warming is not None and not warming.done():
            await asyncio.wrap_future(warming)

    def _require_idle(self, what: str) -> None:
        if self._task_kind == "prompt":
            raise CommandError(f"the agent is running; {what} after it ends (or abort it first)")
        if self._task_kind == "compact":
            raise CommandError(f"a compaction is running; {what} after it ends")

    def _start(self, kind: str, work: Awaitable[None]) -> None:
        self._task_kind = kind
        self._task = asyncio.ensure_future(work)

    def _done(self) -> None:
        self._task = None
        self._task_kind = None

    # --- running ----------------------------------------------------------------------------

    async def _prompt(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        if self._task_kind == "prompt":
            raise CommandError("the agent is already running: send steer (delivered after the current tool "
                               "calls) or follow_up (delivered when it would stop), or abort it first")
        self._require_idle("send the prompt")
        images = images_field(fields)
        text = string_field(fields, "message", empty=bool(images)) or ""
        self._start("prompt", self._run_prompt(cmd_id, text, images))
        return {"accepted": True}

    async def _run_prompt(self, cmd_id: CommandId, text: str, images: list[ImageContent]) -> None:
        messages = self.session.messages
        before = messages[-1] if messages else None
        added: list[AgentMessage] | None = None
        failure: str | None = None
        cancelled = False
        try:
            await self._ready()
            added = await self.session.prompt(text, images)
        except asyncio.CancelledError:
            cancelled = True
        except Exception as exc:  # noqa: BLE001 - reported in run_end; the server keeps serving
            traceback.print_exc(file=sys.stderr)
            failure = f"internal error: {type(exc).__name__}: {exc}"
        self._done()
        unsent = [message_text(m) for m in self.session.agent.clear_queues()]
        if added is None:  # cancelled: what the agent kept of the run, if anything
            messages = self.session.messages
            added = [messages[-1]] if messages and messages[-1] is not before else []
        self._write({"type": "run_end", "id": cmd_id, **self._outcome(added, failure, cancelled), "unsent": unsent})

    def _outcome(self, added: list[AgentMessage], failure: str | None, cancelled: bool) -> dict[str, Any]:
        """``stop_reason``, ``error`` and ``answer`` of a finished run. A refused key's
        error says which key was sent and how to give one, as in the other modes."""
        last = next((m for m in reversed(added) if isinstance(m, AssistantMessage)), None)
        answer: str | None = None
        error: str | None = None
        if failure is not None:
            stop_reason, error = str(StopReason.ERROR), failure
        elif last is None:
            stop_reason = str(StopReason.ABORTED) if cancelled else str(StopReason.ERROR)
            error = None if cancelled else "the run produced no answer"
        else:
            stop_reason = str(last.stop_reason)
            if last.stop_reason == StopReason.ERROR:
                error = explain_error(last, self.app.resolved)
            elif last.stop_reason in (StopReason.STOP, StopReason.LENGTH):
                answer = last.text()
        write_error = self.session.store.write_error
        if write_error is not None:  # the run was stopped because the session cannot be saved
            stop_reason, error = str(StopReason.ERROR), str(write_error)
        return {"stop_reason": stop_reason, "error": error, "answer": answer}

    async def _get_partial_message(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """The answer as it stands while it streams (``message_update`` events carry only
        deltas); ``null`` between answers."""
        partial = self._partial
        return {"message": partial.to_json_dict() if partial is not None else None}

    async def _steer(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        text = string_field(fields, "message") or ""
        if not self.is_running:
            raise CommandError("nothing is running to steer: send a prompt")
        self.session.steer(self.session.expand_input(text))
        return {"queued": "steering", **self._pending()}

    async def _follow_up(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        text = string_field(fields, "message") or ""
        if not self.is_running:
            raise CommandError("nothing is running to follow up: send a prompt")
        self.session.follow_up(self.session.expand_input(text))
        return {"queued": "follow_up", **self._pending()}

    async def _abort(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        return {"was_running": self.abort()}

    async def _compact(self, cmd_id: CommandId, fields: dict[str, Any]) -> None:
        self._require_idle("compact")
        focus = string_field(fields, "focus", required=False)
        self._start("compact", self._run_compact(cmd_id, focus))
        return None  # answered when the summary is written

    async def _run_compact(self, cmd_id: CommandId, focus: str | None) -> None:
        ends: list[CompactionEndEvent] = []

        def capture(event: SessionEvent) -> None:
            if isinstance(event, CompactionEndEvent):
                ends.append(event)

        unsubscribe = self.session.subscribe(capture)
        error: str | None = None
        try:
            await self._ready()
            await self.session.compact(focus=focus, reason="manual")
        except asyncio.CancelledError:
            error = "compaction aborted"
        except Exception as exc:  # noqa: BLE001 - reported in the response
            traceback.print_exc(file=sys.stderr)
            error = f"compaction failed: {type(exc).__name__}: {exc}"
        finally:
            unsubscribe()
            self._compacting = 0
            self._done()
        end = ends[-1] if ends else None
        if error is None and end is not None and end.error:
            error = f"compaction failed: {end.error}"
        if error is not None:
            self._respond(cmd_id, "compact", error=error)
        elif end is None or end.entry_id is None:
            skipped = end.skipped if end is not None and end.skipped else "nothing to compact"
            self._respond(cmd_id, "compact", {"compacted": False, "reason": skipped})
        else:
            self._respond(cmd_id, "compact", {
                "compacted": True,
                "entry_id": end.entry_id,
                "tokens_before": end.tokens_before,
                "tokens_after": end.tokens_after,
                "summary": end.summary,
            })

    # --- state --------------------------------------------------------------------------------

    def _pending(self) -> dict[str, Any]:
        # The agent keeps its queues private; the counts are read only.
        queues = self.session.agent._queues
        return {"pending": {"steering": len(queues.steering), "follow_up": len(queues.follow_up)}}

    def _context(self) -> dict[str, Any]:
        session = self.session
        tokens = session.estimate_request_tokens(session.messages)
        window = session.model.context_window
        return {"tokens": tokens, "window": window, "threshold": session.threshold,
                "percent": round(100 * tokens / window, 1) if window else None}

    def _session_json(self) -> dict[str, Any]:
        store: SessionStore = self.session.store
        return {
            "session_file": str(store.path) if store.path is not None else None,
            "session_id": store.session_id,
            "session_name": store.name,
        }

    async def _get_state(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        session = self.session
        return {
            "model": model_json(session.model),
            "thinking_level": session.thinking_level,
            "is_running": self.is_running,
            "is_compacting": self._task_kind == "compact" or self._compacting > 0,
            **self._session_json(),
            "cwd": str(session.cwd),
            "message_count": len(session.messages),
            **self._pending(),
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
        return {
            **self._session_json(),
            **session_stats(self.session.store),
            "context": self._context(),
            "context_message_count": len(self.session.messages),
        }

    # --- configuration --------------------------------------------------------------------------

    async def _set_model(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        app = self.app
        if fields.get("model") is not None:
            ref = string_field(fields, "model") or ""
            provider, model_id = None, None
        else:
            if fields.get("provider") is None or fields.get("model_id", fields.get("modelId")) is None:
                raise CommandError('set_model needs "model": "provider/id", or "provider" and "model_id"')
            provider = string_field(fields, "provider") or ""
            model_id = string_field(fields, "model_id" if "model_id" in fields else "modelId") or ""
            ref = f"{provider}/{model_id}"
        current: Model = self.session.model
        if ref.strip() == current.ref or (provider is None and ref.strip() == current.id):
            return {"model": model_json(current), "changed": False}
        try:
            found = app.registry.get(provider, model_id) if provider and model_id else None
            model = found if found is not None else app.registry.find(ref)
        except LookupError as exc:
            raise CommandError(str(exc)) from exc
        cli_key = getattr(app.args, "api_key", None) if model.provider == app.resolved.model.provider else None
        try:
            key = _key_for(model, app.registry, cli_key)
        except (SetupError, ConfigValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.session.set_model(model, key)
        if model.api != current.api:
            self.warm_up(model.api)
        return {"model": model_json(model), "changed": True}

    async def _set_thinking_level(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        level = string_field(fields, "level")
        if level not in THINKING_LEVELS:
            raise CommandError(f"unknown thinking level {level!r}; levels: {', '.join(THINKING_LEVELS)}")
        self.session.set_thinking_level(level)
        return {"thinking_level": level, "model_reasons": self.session.model.reasoning}

    # --- sessions ---------------------------------------------------------------------------------

    def _switch_to(self, store: SessionStore) -> dict[str, Any]:
        """Continue in ``store``; the store left behind is closed (its lock released, so it
        can be switched back to). The thinking level recorded in the new session applies,
        as when heron starts on it; the model stays (``recorded_model`` says which one the
        session used, for a ``set_model``)."""
        old: SessionStore = self.session.store
        self.session.switch_store(store)
        if old is not store:
            old.close()
        recorded_model, thinking = store.current_settings()
        if thinking in THINKING_LEVELS and store.leaf_id is not None:
            self.session.agent.set_thinking_level(thinking)
        return {
            **self._session_json(),
            "message_count": len(self.session.messages),
            "thinking_level": self.session.thinking_level,
            "recorded_model": str(recorded_model) if recorded_model is not None else None,
        }

    async def _new_session(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        self._require_idle("start a new session")
        try:
            store = self.app.new_store()
        except (SessionError, OSError) as exc:
            raise CommandError(f"cannot create a session: {exc}") from exc
        return self._switch_to(store)

    async def _switch_session(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        ref = string_field(fields, "session") or ""
        self._require_idle("switch sessions")
        try:
            path = resolve_session(ref.strip(), home=self.app.home)
        except LookupError as exc:
            raise CommandError(str(exc)) from exc
        current: SessionStore = self.session.store
        if current.path is not None and _same_file(current.path, path):
            return {**self._session_json(), "message_count": len(self.session.messages), "changed": False}
        try:
            store = self.app.open_store(str(path))
        except (SessionError, LookupError, OSError, ValueError) as exc:
            raise CommandError(f"cannot open {path}: {exc}") from exc
        return {**self._switch_to(store), "changed": True}

    async def _fork(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        entry_id = string_field(fields, "entry_id", required=False)
        self._require_idle("fork")
        store: SessionStore = self.session.store
        if entry_id is not None and not store.has(entry_id):
            raise CommandError(f"no entry {entry_id!r} in this session (get_messages lists the path's entry ids)")
        parent = str(store.path) if store.path is not None else None
        try:
            forked = self.app.fork_store(entry_id)
        except (SessionError, KeyError, OSError) as exc:
            raise CommandError(f"cannot fork: {exc}") from exc
        data = self._switch_to(forked)
        return {**data, "path": data["session_file"], "parent_session": parent, "entry_id": entry_id}


def _same_file(a: Any, b: Any) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
