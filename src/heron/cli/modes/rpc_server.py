"""The rpc server: serves parsed commands against a :class:`CodingSession`, writing
responses and the session's events in pi's RPC shapes (docs/rpc.md). Independent of
stdin and stdout (:mod:`heron.cli.modes.rpc_mode` connects them), so tests drive it line
by line.

The server's own jobs are the dispatch of a line to its handler (one response per line,
errors included) and the one task that may run at a time: a prompt's run with its
steering, follow-ups and abort, or a compaction. It holds the rest as parts, each with
one job: :class:`~heron.cli.modes.rpc_presenter.EventPresenter` writes the session's
events, :class:`~heron.cli.modes.rpc_state.StateCommands` and
:class:`~heron.cli.modes.rpc_commands.SessionCommands` serve the commands that read or
change state and sessions, seeing the server only as an
:class:`~heron.cli.modes.rpc_host.RpcHost`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import traceback
from collections.abc import Awaitable
from typing import Any

from heron.ai.types import AssistantMessage, ImageContent, TextContent, UserMessage
from heron.cli.app_state import App
from heron.cli.modes.rpc_commands import SessionCommands
from heron.cli.modes.rpc_events import compaction_result
from heron.cli.modes.rpc_host import Handler
from heron.cli.modes.rpc_permissions import RpcAsker, ask_timeout_ms
from heron.cli.modes.rpc_presenter import EventPresenter
from heron.cli.modes.rpc_protocol import (
    CommandError,
    CommandId,
    LineError,
    Write,
    images_field,
    message_text,
    parse_command,
    string_field,
)
from heron.cli.modes.rpc_state import StateCommands, pending_json
from heron.cli.modes.run_end import run_end_json
from heron.coding.events import CompactionEndEvent, SessionEvent
from heron.coding.idle import idle_keeper
from heron.coding.outcome import decide
from heron.coding.run import Run
from heron.coding.runtime import CodingSession
from heron.coding.warm_up import start_warm_up
from heron.session.store import SessionWriteError


class RpcServer:
    """Parses command lines and serves them against ``app.session``, writing responses and
    events through ``write`` (one JSON object each)."""

    def __init__(self, app: App, write: Write) -> None:
        self.app = app
        self._write = write
        self._task: asyncio.Task[None] | None = None
        self._task_kind: str | None = None  # "prompt" or "compact" while a task runs
        self._warming: concurrent.futures.Future[None] | None = None
        self._aborted = False  # the running prompt was aborted (agent_settled says so)
        self._waiters: set[asyncio.Future[None]] = set()  # abort responses waiting for the run to end
        self.events = EventPresenter(app, write)
        self._unsubscribe = app.session.subscribe(self.events.handle)
        # the commands that read or change state and sessions, each seeing this server as an RpcHost
        self.state = StateCommands(self)
        self.sessions = SessionCommands(self)
        self.asker = RpcAsker(write, ask_timeout_ms(app.session.cwd, app.home))
        app.session.control.asker = self.asker.ask
        self._handlers: dict[str, Handler] = {
            "prompt": self._prompt,
            "steer": self._steer,
            "follow_up": self._follow_up,
            "abort": self._abort,
            "clear_queue": self._clear_queue,
            "compact": self._compact,
            "permission_response": self._permission_response,
            "get_state": self.state.get_state,
            "get_messages": self.state.get_messages,
            "set_model": self.state.set_model,
            "get_available_models": self.state.get_available_models,
            "set_thinking_level": self.state.set_thinking_level,
            "get_available_thinking_levels": self.state.get_thinking_levels,
            "set_steering_mode": self.state.set_queue_mode,
            "set_follow_up_mode": self.state.set_queue_mode,
            "set_auto_compaction": self.state.set_auto_compaction,
            "reset_window": self.state.reset_window,
            "new_session": self.sessions.new_session,
            "switch_session": self.sessions.switch_session,
            "fork": self.sessions.fork,
            "clone": self.sessions.clone,
            "handoff": self.sessions.handoff,
            "get_fork_messages": self.sessions.get_fork_messages,
            "get_last_assistant_text": self.state.get_last_assistant_text,
            "set_session_name": self.sessions.set_session_name,
            "get_session_stats": self.state.get_session_stats,
            "get_partial_message": self.state.get_partial_message,
            "cycle_thinking_level": self.state.cycle_thinking_level,
            "get_entries": self.sessions.get_entries,
            "get_tree": self.sessions.get_tree,
            "get_commands": self.state.get_commands,
            "export_report": self.sessions.export_report,
            "memory_log": self.sessions.memory_log,
        }
        self._run: Run | None = None  # the prompt's run, once started

    @property
    def session(self) -> CodingSession:
        return self.app.session

    @property
    def is_running(self) -> bool:
        """A prompt is being served: the agent loop, or the retry / overflow recovery
        around it (during which the agent itself is idle)."""
        return self._task_kind == "prompt"

    @property
    def is_compacting(self) -> bool:
        return self._task_kind == "compact" or self.events.compacting > 0

    @property
    def partial(self) -> AssistantMessage | None:
        """The answer streaming now (``message_update`` events carry only deltas)."""
        return self.events.partial

    def write(self, out: dict[str, Any]) -> None:
        self._write(out)

    # --- output ---------------------------------------------------------------------------

    def _respond(
        self, cmd_id: CommandId, command: str | None, data: dict[str, Any] | None = None, error: str | None = None
    ) -> None:
        out: dict[str, Any] = {"type": "response", "id": cmd_id, "command": command, "success": error is None}
        if error is None:
            out["data"] = data if data is not None else {}
        else:
            out["error"] = error
        self._write(out)

    # --- input ----------------------------------------------------------------------------

    async def handle_line(self, line: bytes) -> None:
        """Serve one line of input (without or with its LF). Blank lines are skipped; any
        other line gets exactly one response, now or (``compact``, ``abort``) when the work
        is done - except a ``permission_response`` that was accepted, which (like pi's
        ``extension_ui_response``) is answered by the ``permission_resolved`` event."""
        parsed = parse_command(line, ", ".join(self._handlers))
        if parsed is None:
            return
        if isinstance(parsed, LineError):
            self._respond(parsed.id, parsed.command, error=parsed.error)
            return
        cmd_id, kind, command = parsed.id, parsed.type, parsed.fields
        handler = self._handlers.get(kind)
        if handler is None:
            self._respond(cmd_id, kind, error=f"Unknown command: {kind} (commands: {', '.join(self._handlers)})")
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
        """Stop what is running; True if something was. Open permission questions are
        denied; a prompt's run is aborted as every mode aborts one (:meth:`Run.abort`), a
        compaction is cancelled."""
        task = self._task
        if task is None or task.done():
            return False
        self.asker.deny_all("the run was aborted")
        if self._task_kind == "prompt":
            self._aborted = True
            if self._run is not None:
                self._run.abort()
                return True
        task.cancel()
        return True

    async def finish(self) -> None:
        """At EOF: let the current run or compaction end, so its events are written."""
        task = self._task
        if task is not None:
            await asyncio.wait({task})
        if self._waiters:
            await asyncio.wait(set(self._waiters))

    def close(self) -> None:
        idle_keeper(self.session).cancel()
        self._unsubscribe()
        if self.session.control.asker == self.asker.ask:
            self.session.control.asker = None

    def warm_up(self, api: str) -> None:
        """Load what a first turn needs (the model's provider, the transport, the tools'
        schemas, the snapshot code) in a thread now; runs wait for it off the event loop
        instead of importing it on the loop, where it would hold up every command."""
        self._warming = start_warm_up(api, self.session)

    async def _ready(self) -> None:
        await idle_keeper(self.session).stop()  # a warm-up or idle compaction under way ends first
        warming = self._warming
        if warming is not None and not warming.done():
            await asyncio.wrap_future(warming)

    def require_idle(self, what: str) -> None:
        if self._task_kind == "prompt":
            raise CommandError(f"the agent is running; {what} after it ends (or abort it first)")
        if self._task_kind == "compact":
            raise CommandError(f"a compaction is running; {what} after it ends")

    def _start(self, kind: str, work: Awaitable[None]) -> None:
        idle_keeper(self.session).cancel()  # the user is back: no warm-up or idle compaction now
        self._task_kind = kind
        self._task = asyncio.ensure_future(work)

    def _done(self) -> None:
        self._task = None
        self._task_kind = None
        idle_keeper(self.session).start()  # waiting for the next command: the idle policy watches the cache

    # --- running ----------------------------------------------------------------------------

    async def _prompt(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        images = images_field(fields)
        text = string_field(fields, "message", empty=bool(images)) or ""
        if self._task_kind == "prompt":
            behavior = fields.get("streamingBehavior")
            if behavior == "steer" or (behavior is None and self.session.goal_loop.active):  # steers the loop
                return await self._steer(cmd_id, fields)
            if behavior == "followUp":
                return await self._follow_up(cmd_id, fields)
            raise CommandError(
                'the agent is already running: send the prompt with "streamingBehavior": "steer" '
                'or "followUp" (or the steer / follow_up commands), or abort it first'
            )
        self.require_idle("send the prompt")
        self._aborted = False
        self._start("prompt", self._run_prompt(cmd_id, text, images))
        return {"disposition": "started"}

    async def _run_prompt(self, cmd_id: CommandId, text: str, images: list[ImageContent]) -> None:
        """The prompt's run, then its ``run_end`` (the outcome, as json mode's last line)
        and ``agent_settled``. Cancelled while the SDK loads: an aborted run."""
        try:
            await self._ready()
            self._run = Run(self.session, text, images, resolved=self.app.resolved)
            outcome = await self._run.outcome()
        except asyncio.CancelledError:
            outcome = decide([], aborted=True, unsent=[message_text(m) for m in self.session.agent.clear_queues()])
        finally:
            self._run = None
        if outcome.failure is not None:
            traceback.print_exception(outcome.failure, file=sys.stderr)
        self.asker.deny_all("the run ended")
        self._done()
        self.events.queue_changed()
        self._write({"type": "run_end", "id": cmd_id} | run_end_json(outcome))
        self._write({"type": "agent_settled", "aborted": self._aborted or outcome.aborted})

    async def _steer(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        self.session.agent.steer(self._queued_message(fields, "steer"))
        self.events.queue_changed()
        return {"disposition": "queued", **pending_json(self.session)}

    async def _follow_up(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        self.session.agent.follow_up(self._queued_message(fields, "follow up"))
        self.events.queue_changed()
        return {"disposition": "queued", **pending_json(self.session)}

    def _queued_message(self, fields: dict[str, Any], what: str) -> UserMessage:
        """The queued user message: the text (skills and templates expanded, as pi does)
        and the images pi's ``steer`` / ``follow_up`` may carry, checked like a prompt's."""
        images = images_field(fields)
        text = string_field(fields, "message", empty=bool(images)) or ""
        if not self.is_running:
            raise CommandError(f"nothing is running to {what}: send a prompt")
        return UserMessage(content=[TextContent(text=self.session.expand_input(text)), *images])

    async def _clear_queue(self, cmd_id: CommandId, fields: dict[str, Any]) -> dict[str, Any]:
        steering, follow_up = self.events.queues()
        self.session.agent.clear_queues()
        self.events.queue_changed()
        return {"steering": steering, "followUp": follow_up}

    async def _abort(self, cmd_id: CommandId, fields: dict[str, Any]) -> None:
        """As pi's: answered once the session is idle again (the run's last events, its
        ``run_end`` and ``agent_settled``, come first). Other commands are served while
        it waits."""
        task = self._task
        was_running = self.abort()

        async def respond() -> None:
            if task is not None and was_running:
                await asyncio.wait({task})
            self._respond(cmd_id, "abort", {"wasRunning": was_running})

        waiter = asyncio.ensure_future(respond())
        self._waiters.add(waiter)
        waiter.add_done_callback(self._waiters.discard)
        return None

    async def _permission_response(self, cmd_id: CommandId, fields: dict[str, Any]) -> None:
        self.asker.answer(fields)
        return None

    async def _compact(self, cmd_id: CommandId, fields: dict[str, Any]) -> None:
        self.require_idle("compact")
        focus = string_field(fields, "customInstructions", required=False)
        if focus is None:
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
            error = "Compaction aborted"
        except Exception as exc:  # noqa: BLE001 - reported in the response
            traceback.print_exc(file=sys.stderr)
            error = f"compaction failed: {type(exc).__name__}: {exc}"
        finally:
            unsubscribe()
            self.events.compacting = 0
            self._done()
        end = ends[-1] if ends else None
        if error is None and end is not None and end.error:
            error = f"compaction failed: {end.error}"
        if error is None and (end is None or end.entry_id is None):
            why = end.skipped if end is not None and end.skipped else "the session is too short"
            error = f"Nothing to compact: {why}"
        if error is not None or end is None:
            self._respond(cmd_id, "compact", error=error)
        else:
            self._respond(cmd_id, "compact", compaction_result(end, self.events.first_kept(end.entry_id)))
