"""``heron --mode rpc``: heron driven by another program over stdin and stdout.

A client (an editor plugin, a test harness, another agent) writes one JSON command per
line on stdin and reads one JSON object per line on stdout: the response to each command
(``"type": "response"``, with the command's ``id``) and, interleaved, the session's
events exactly as ``--mode json`` prints them. The protocol is described in docs/rpc.md.

Framing is LF only: stdin is split on the byte ``\\n`` and nothing else, so text holding
U+2028, U+2029 or NEL stays inside its line (``str.splitlines`` would cut it there). A
CR before the LF needs no special case: it is JSON whitespace. On output those three
separators are written as ``\\u`` escapes, so clients that split on them do not break.

Runs (and ``compact``) execute as background tasks: the reader keeps serving, so
``steer``, ``abort`` and ``get_state`` are answered while the model streams or a tool
runs. A malformed line gets an error response and the process keeps serving; EOF on
stdin lets the current run finish (its events are still written), then heron exits 0.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import contextlib
import importlib
import json
import math
import os
import signal
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

from heron.agent.events import MessageEndEvent, MessageUpdateEvent
from heron.agent.messages import AgentMessage
from heron.ai.models import ConfigValueError
from heron.ai.registry import get_provider
from heron.ai.types import (
    THINKING_LEVELS,
    AssistantMessage,
    ImageContent,
    Model,
    StopReason,
    TextContent,
)
from heron.cli.app import IMAGE_TYPES, App
from heron.cli.events_json import dumps, event_json
from heron.coding.events import CompactionEndEvent, CompactionStartEvent, SessionEvent
from heron.coding.runtime import CodingSession
from heron.coding.settings import SetupError, _key_for
from heron.context.ledger import LEDGER_CUSTOM_TYPE, LedgerRecord
from heron.session.entries import CustomEntry, MessageEntry
from heron.session.paths import resolve_session
from heron.session.store import SessionError, SessionStore, SessionWriteError

Write = Callable[[dict[str, Any]], None]
CommandId = str | int | float | None

# Characters some line readers treat as line ends although they may sit inside a JSON
# string unescaped (the control characters below U+0020 are always escaped by json).
_SEPARATORS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


class CommandError(Exception):
    """A command that cannot be served; the message goes back in the error response."""


def encode_line(data: dict[str, Any]) -> bytes:
    """One output line. Lone surrogates (a client may send ``"\\ud800"``) become their
    ``\\u`` escape instead of making the UTF-8 encoding fail."""
    text = dumps(data).translate(_SEPARATORS)
    return text.encode("utf-8", "backslashreplace") + b"\n"


# --- reading the fields of a command ----------------------------------------------------------


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _string(fields: dict[str, Any], name: str, *, required: bool = True, empty: bool = False) -> str | None:
    value = fields.get(name)
    if value is None:
        if required:
            raise CommandError(f'missing "{name}" (a string)')
        return None
    if not isinstance(value, str):
        raise CommandError(f'"{name}" must be a string, got {_type_name(value)}')
    if not empty and not value.strip():
        raise CommandError(f'"{name}" is empty')
    return value


def _images(fields: dict[str, Any]) -> list[ImageContent]:
    raw = fields.get("images")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise CommandError(f'"images" must be an array, got {_type_name(raw)}')
    images: list[ImageContent] = []
    for number, item in enumerate(raw):
        where = f"images[{number}]"
        if not isinstance(item, dict):
            raise CommandError(f"{where} must be an object, got {_type_name(item)}")
        data, mime = item.get("data"), item.get("mimeType", item.get("mime_type"))
        if not isinstance(data, str) or not data:
            raise CommandError(f'{where}: "data" must be a non-empty base64 string')
        if mime not in IMAGE_TYPES:
            raise CommandError(f'{where}: "mimeType" must be one of {", ".join(sorted(IMAGE_TYPES))}, got {mime!r}')
        try:
            base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise CommandError(f'{where}: "data" is not base64 ({exc})') from exc
        images.append(ImageContent(data=data, mime_type=mime))
    return images


def _model_json(model: Model) -> dict[str, Any]:
    return {
        "provider": model.provider,
        "id": model.id,
        "ref": model.ref,
        "name": model.name or model.id,
        "api": model.api,
        "context_window": model.context_window,
        "max_tokens": model.max_tokens,
        "reasoning": model.reasoning,
    }


def _message_text(message: AgentMessage) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


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
        if not line.strip():
            return
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._respond(None, None, error=f"the line is not UTF-8 ({exc.reason} at byte {exc.start})")
            return
        try:
            command = json.loads(text)
        except json.JSONDecodeError as exc:
            self._respond(None, None, error=f"invalid JSON: {exc.msg} (column {exc.colno})")
            return
        except RecursionError:
            self._respond(None, None, error="invalid JSON: nested too deeply")
            return
        if not isinstance(command, dict):
            self._respond(None, None, error=f"a command is a JSON object, got {_type_name(command)}")
            return
        cmd_id = command.get("id")
        if isinstance(cmd_id, bool) or not isinstance(cmd_id, str | int | float | None):
            self._respond(None, None, error=f'"id" must be a string or a number, got {_type_name(cmd_id)}')
            return
        if isinstance(cmd_id, float) and not math.isfinite(cmd_id):
            # 1e999 parses as infinity, which JSON cannot write back: echoing it would
            # put "Infinity" on stdout and break every client's parser.
            self._respond(None, None, error='"id" must be a finite number (1e999 and the like cannot be echoed)')
            return
        kind = command.get("type")
        if not isinstance(kind, str):
            what = "missing" if kind is None else f"must be a string, got {_type_name(kind)}"
            self._respond(cmd_id, None, error=f'"type" {what}; commands: {", ".join(self._handlers)}')
            return
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
        images = _images(fields)
        text = _string(fields, "message", empty=bool(images)) or ""
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
        unsent = [_message_text(m) for m in self.session.agent.clear_queues()]
        if added is None:  # cancelled: what the agent kept of the run, if anything
            messages = self.session.messages
            added = [messages[-1]] if messages and messages[-1] is not before else []
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
                error = last.error_message or "the request failed"
            elif last.stop_reason in (StopReason.STOP, StopReason.LENGTH):
                answer = last.text()
        write_error = self.session.store.write_error
        if write_error is not None:  # the run was stopped because the session cannot be saved
            stop_reason, error = str(StopReason.ERROR), str(write_error)
        self._write({"type": "run_end", "id": cmd_id, "stop_reason": stop_reason, "error": error,
                     "answer": answer, "unsent": unsent})

    async def _get_partial_message(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        """The answer as it stands while it streams (``message_update`` events carry only
        deltas); ``null`` between answers."""
        partial = self._partial
        return {"message": partial.to_json_dict() if partial is not None else None}

    async def _steer(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        text = _string(fields, "message") or ""
        if not self.is_running:
            raise CommandError("nothing is running to steer: send a prompt")
        self.session.steer(self.session.expand_input(text))
        return {"queued": "steering", **self._pending()}

    async def _follow_up(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        text = _string(fields, "message") or ""
        if not self.is_running:
            raise CommandError("nothing is running to follow up: send a prompt")
        self.session.follow_up(self.session.expand_input(text))
        return {"queued": "follow_up", **self._pending()}

    async def _abort(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        return {"was_running": self.abort()}

    async def _compact(self, cmd_id: CommandId, fields: dict[str, Any]) -> None:
        self._require_idle("compact")
        focus = _string(fields, "focus", required=False)
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
            "model": _model_json(session.model),
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
        store: SessionStore = self.session.store
        types = store.types()
        roles = store.roles()
        counts = {"user": 0, "assistant": 0, "tool_result": 0, "other": 0}
        tokens = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "total": 0}
        cost = 0.0
        tool_calls = 0
        ledger_tokens: dict[str, int] = {}
        ledger_records = 0
        for index, kind in enumerate(types):
            role = roles[index]
            if kind == "message":
                key = {"user": "user", "assistant": "assistant", "toolResult": "tool_result"}.get(role or "", "other")
                counts[key] += 1
                if role != "assistant":
                    continue
                entry = store.entry_at(index, cache=False)
                if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
                    usage = entry.message.usage
                    tokens["input"] += usage.input
                    tokens["output"] += usage.output
                    tokens["cache_read"] += usage.cache_read
                    tokens["cache_write"] += usage.cache_write
                    tokens["total"] += usage.total_tokens or usage.context_tokens()
                    cost += usage.cost.total
                    tool_calls += len(entry.message.tool_calls())
            elif kind == "custom":
                entry = store.entry_at(index, cache=False)
                if isinstance(entry, CustomEntry) and entry.custom_type == LEDGER_CUSTOM_TYPE \
                        and isinstance(entry.data, dict):
                    try:
                        record = LedgerRecord.from_json_dict(entry.data)
                    except (KeyError, TypeError, ValueError):
                        continue
                    ledger_records += 1
                    ledger_tokens[record.kind] = ledger_tokens.get(record.kind, 0) + record.saved_tokens
        return {
            **self._session_json(),
            "messages": {**counts, "total": sum(counts.values())},
            "tool_calls": tool_calls,
            "tokens": tokens,
            "cost": round(cost, 6),
            "compactions": types.count("compaction"),
            "ledger": {"records": ledger_records, "saved_tokens": ledger_tokens,
                       "total_saved_tokens": sum(ledger_tokens.values())},
            "context": self._context(),
            "context_message_count": len(self.session.messages),
        }

    # --- configuration --------------------------------------------------------------------------

    async def _set_model(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        app = self.app
        if fields.get("model") is not None:
            ref = _string(fields, "model") or ""
            provider, model_id = None, None
        else:
            if fields.get("provider") is None or fields.get("model_id", fields.get("modelId")) is None:
                raise CommandError('set_model needs "model": "provider/id", or "provider" and "model_id"')
            provider = _string(fields, "provider") or ""
            model_id = _string(fields, "model_id" if "model_id" in fields else "modelId") or ""
            ref = f"{provider}/{model_id}"
        current: Model = self.session.model
        if ref.strip() == current.ref or (provider is None and ref.strip() == current.id):
            return {"model": _model_json(current), "changed": False}
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
        return {"model": _model_json(model), "changed": True}

    async def _set_thinking_level(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        level = _string(fields, "level")
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
        ref = _string(fields, "session") or ""
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
        entry_id = _string(fields, "entry_id", required=False)
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


# --- stdin and stdout ---------------------------------------------------------------------------


class _Output:
    """stdout as JSON lines, flushed one by one. When the reader has gone (broken pipe),
    further output is dropped and ``on_close`` stops the server."""

    def __init__(self, stream: BinaryIO, on_close: Callable[[], None]) -> None:
        self.stream = stream
        self.on_close = on_close
        self.closed = False

    def write(self, data: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            self.stream.write(encode_line(data))
            self.stream.flush()
        except (OSError, ValueError):
            self.closed = True
            # Point fd 1 at /dev/null so the interpreter's last flush at exit stays quiet.
            with contextlib.suppress(OSError, ValueError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self.stream.fileno())
                os.close(devnull)
            self.on_close()


def split_lines(buffer: bytearray, chunk: bytes) -> list[bytes]:
    """Add ``chunk`` to ``buffer`` and take out the complete lines, each with its LF. The
    only separator is the byte ``\\n``: never U+2028 and friends, never a lone CR."""
    buffer += chunk
    if b"\n" not in chunk:  # a long line arriving in pieces is not rescanned
        return []
    *lines, rest = bytes(buffer).split(b"\n")
    buffer[:] = rest
    return [line + b"\n" for line in lines]


def _read_lines(fd: int, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[bytes | None]) -> None:
    """In a thread: stdin may be a pipe, a file or a terminal, and a blocking read works on
    all of them (asyncio's pipe transports do not take files). ``os.read`` on the raw fd,
    not ``sys.stdin``, so an exit while this thread waits never trips over the buffered
    reader's lock; and no length limit on a line (a prompt may carry images). A last line
    without its LF still counts at EOF."""
    buffer = bytearray()
    try:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except InterruptedError:
                continue
            if not chunk:
                break
            for line in split_lines(buffer, chunk):
                loop.call_soon_threadsafe(queue.put_nowait, line)
        if buffer:
            loop.call_soon_threadsafe(queue.put_nowait, bytes(buffer))
    except (OSError, RuntimeError):  # stdin unreadable, or the loop is gone
        pass
    finally:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            loop.call_soon_threadsafe(queue.put_nowait, None)


# The provider SDKs are imported on first use; that import (a second or more for some)
# would freeze the event loop - and so get_state, steer and abort - at the first request.
_SDKS = {
    "openai-chat": "openai",
    "openai-completions": "openai",
    "openai-responses": "openai",
    "anthropic-messages": "anthropic",
    "google-gemini": "google.genai",
    "google-generative-ai": "google.genai",
}


def warm_up(api: str) -> concurrent.futures.Future[None]:
    """Import the model's provider and its SDK in a thread; the returned future is done
    when that is over. Best effort: any failure is left for the request to report."""
    done: concurrent.futures.Future[None] = concurrent.futures.Future()

    def load() -> None:
        try:
            get_provider(api)
            sdk = _SDKS.get(api)
            if sdk is not None:
                importlib.import_module(sdk)
        except Exception:  # noqa: BLE001 - the request will say what is wrong
            pass
        finally:
            done.set_result(None)

    threading.Thread(target=load, name="heron-warm-up", daemon=True).start()
    return done


async def run_rpc(app: App) -> int:
    """Serve commands from stdin until EOF (or Ctrl+C while nothing runs); 0 then, 1 if
    stdout was closed under heron or the session could not be saved (one line on stderr)."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[bytes | None] = asyncio.Queue()
    server: RpcServer | None = None

    def output_closed() -> None:
        print("heron: stdout closed; stopping", file=sys.stderr)
        if server is not None:
            server.abort()
        lines.put_nowait(None)

    def interrupt() -> None:
        if server is not None and not server.abort():
            lines.put_nowait(None)  # nothing to abort: Ctrl+C ends heron like EOF

    def stop_unsaved(event: Any) -> None:
        """A session that cannot be saved ends the server once the run it stopped ended:
        commands after it would work on a session that is not kept."""
        if getattr(event, "type", None) == "agent_end" and app.session.store.write_error is not None:
            lines.put_nowait(None)

    unsubscribe = app.session.subscribe(stop_unsaved)
    output = _Output(sys.stdout.buffer, output_closed)
    server = RpcServer(app, output.write)
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, interrupt)
    stdin_fd = sys.stdin.fileno() if sys.stdin is not None else -1  # no stdin at all: EOF at once
    reader = threading.Thread(target=_read_lines, args=(stdin_fd, loop, lines), name="heron-rpc-stdin", daemon=True)
    reader.start()
    server.warm_up(app.session.model.api)
    try:
        while True:
            line = await lines.get()
            if line is None or output.closed:
                break
            await server.handle_line(line)
            await asyncio.sleep(0)  # a run just accepted takes its first step before the next command
            if app.session.store.write_error is not None:
                break
        await server.finish()
    finally:
        server.close()
        unsubscribe()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
    write_error = app.session.store.write_error
    if write_error is not None:
        print(f"heron: {write_error}", file=sys.stderr)
        return 1
    return 1 if output.closed else 0
