"""The ACP agent: heron's answers to the requests an editor sends (docs/editors.md).

Every session the client opens or loads is an :class:`AcpSession` here, keyed by heron's
session id (the id of the session file, so ``session/load`` after a restart finds it).
Requests naming a session this process does not have get an invalid-params error; the
server keeps serving.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    CloseSessionResponse,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from heron import __version__
from heron.ai.models import ModelRegistry
from heron.cli.acp import client_fs, commands, options, terminal
from heron.cli.acp.permissions import PermissionBridge
from heron.cli.acp.prompting import (
    Outbox,
    PromptError,
    goal_meta,
    prompt_content,
    stop_reason,
    turn_usage,
    usage_update,
)
from heron.cli.acp.replay import replay
from heron.cli.acp.sessions import AcpSession, build_session
from heron.cli.acp.updates import EventTranslator, terminal_shown
from heron.coding.compact_command import compact_focus
from heron.coding.idle import idle_keeper
from heron.coding.outcome import decide
from heron.coding.run import Run
from heron.coding.settings import ResolvedModel, SetupError
from heron.coding.skills import SkillNotFoundError
from heron.session.paths import list_sessions, resolve_session
from heron.session.store import SessionError, SessionStore

# How long a cancelled run may take to stop by itself before its task is cancelled.
CANCEL_GRACE_SECONDS = 3.0


def _invalid(message: str, **data: Any) -> RequestError:
    return RequestError.invalid_params({"message": message, **data})


def _directory(cwd: str) -> Path:
    """The session's working directory, which ACP requires to be absolute (and heron, to exist)."""
    path = Path(cwd)
    if not path.is_absolute() or not path.is_dir():
        raise _invalid(f"cwd {cwd!r} is not an absolute path of a directory", cwd=cwd)
    return path


class HeronAgent:
    def __init__(self, args: argparse.Namespace, registry: ModelRegistry, home: Path) -> None:
        self.args = args
        self.registry = registry
        self.home = home
        self.conn: Any = None
        self.client_capabilities: Any = None
        self.sessions: dict[str, AcpSession] = {}
        self.outboxes: dict[str, Outbox] = {}
        self._watchdogs: set[asyncio.Future[None]] = set()  # background tasks kept alive until done
        self._turns: dict[str, asyncio.Future[None]] = {}  # per session: done once its last prompt was answered
        self._runs: dict[str, Run] = {}  # per session: its last prompt's run (not a /compact)
        self._models: dict[str, ResolvedModel] = {}  # per session: the model session/set_model chose

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # --- initialize ----------------------------------------------------------------------

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        self.client_capabilities = client_capabilities
        capabilities = AgentCapabilities(
            load_session=True,
            prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
            mcp_capabilities=McpCapabilities(http=True, sse=False),
            session_capabilities=SessionCapabilities(
                list=SessionListCapabilities(),
                close=SessionCloseCapabilities(),
                fork=SessionForkCapabilities(),
                resume=SessionResumeCapabilities(),
            ),
        )
        # heron speaks one version: the one asked for when it is that one, else its own
        # (the client decides whether it can go on with it); never a version it does not speak.
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=capabilities,
            agent_info=Implementation(name="heron", title="heron", version=__version__),
        )

    # --- sessions --------------------------------------------------------------------------

    async def _open(self, cwd: str, store: SessionStore | None, mcp_servers: Any) -> AcpSession:
        path = _directory(cwd)
        try:
            session, mcp = await asyncio.to_thread(
                build_session, self.args, self.registry, self.home, path.resolve(), store, mcp_servers
            )
        except SetupError as exc:
            raise RequestError.internal_error({"message": str(exc)}) from exc
        except (ValueError, SessionError, OSError) as exc:
            raise _invalid(str(exc)) from exc
        sid = session.store.session_id
        state = AcpSession(
            sid,
            session,
            EventTranslator(session.cwd, session.tool_catalog),
            PermissionBridge(sid, session.cwd, self._ask),
            mcp,
        )
        session.control.asker = state.bridge
        client_fs.attach(session, self.conn, sid, self.client_capabilities)
        outbox = Outbox(lambda update: self.conn.session_update(sid, update))

        async def announce(update: Any) -> None:
            outbox.put(update)
            await outbox.flush()

        state.bridge.subagents, state.bridge.announce = state.translator.subagents, announce

        def show(call_id: str, terminal_id: str) -> None:
            state.translator.terminals[call_id] = terminal_id
            outbox.put(terminal_shown(call_id, terminal_id))

        tools = terminal.attach(session.agent.state.tools, session.env, self.conn, sid, show, self.client_capabilities)
        if tools is not None:
            session.agent.set_tools(tools)
        state.unsubscribe.append(session.subscribe(lambda event: self._on_event(state, outbox, event)))
        old, old_outbox = self.sessions.pop(sid, None), self.outboxes.pop(sid, None)
        if old is not None:
            idle_keeper(old.session).cancel()
            old.close()
        if old_outbox is not None:
            old_outbox.close()
        self.sessions[sid] = state
        self.outboxes[sid] = outbox
        return state

    def _on_event(self, state: AcpSession, outbox: Outbox, event: Any) -> None:
        for update in state.translator.translate(event):
            outbox.put(update)

    async def _ask(self, session_id: str, tool_call: Any, choices: Any) -> Any:
        return await self.conn.request_permission(session_id=session_id, tool_call=tool_call, options=choices)

    def _get(self, session_id: str) -> AcpSession:
        state = self.sessions.get(session_id)
        if state is None:
            raise _invalid(
                f"unknown session {session_id!r}: create it with session/new or load it with session/load",
                sessionId=session_id,
            )
        return state

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        state = await self._open(cwd, None, mcp_servers)
        commands.advertise_later(self.outboxes[state.id].put, state.session, self._watchdogs)
        return NewSessionResponse(
            session_id=state.id,
            modes=options.modes(state.session),
            config_options=options.config(state.session, self.registry),
        )

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> LoadSessionResponse:
        _directory(cwd)
        state = self.sessions.get(session_id)
        if state is not None and state.run is not None and not state.run.done():
            raise RequestError.invalid_request({"message": f"session {session_id!r} is running a prompt"})
        if state is None:
            state = await self._load(cwd, session_id, mcp_servers)
        for update in replay(state.session.store, state.session.cwd, state.session.tool_catalog):
            await self.conn.session_update(state.id, update)
        commands.advertise_later(self.outboxes[state.id].put, state.session, self._watchdogs)
        return LoadSessionResponse(
            modes=options.modes(state.session), config_options=options.config(state.session, self.registry)
        )

    async def _load(self, cwd: str, session_id: str, mcp_servers: Any) -> AcpSession:
        """The session file with this id, opened (a session open here already is reused:
        its file has one writer). The file is released again if the session cannot be opened."""
        store = await self._open_store(session_id)
        try:
            return await self._open(cwd, store, mcp_servers)
        except BaseException:
            store.close()
            raise

    async def _open_store(self, session_id: str) -> SessionStore:
        try:
            path = resolve_session(session_id, home=self.home)
            store = await asyncio.to_thread(SessionStore.open, path)
        except (SessionError, LookupError, ValueError, OSError) as exc:
            raise _invalid(f"no session {session_id!r}: {exc}", sessionId=session_id) from exc
        if store.session_id != session_id:
            store.close()
            raise _invalid(
                f"no session {session_id!r} (an id prefix matched {store.session_id!r}; give the whole id)",
                sessionId=session_id,
            )
        return store

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> ResumeSessionResponse:
        """session/load without the replay: the client still shows the conversation."""
        _directory(cwd)
        state = self.sessions.get(session_id)
        if state is None:
            state = await self._load(cwd, session_id, mcp_servers)
        commands.advertise_later(self.outboxes[state.id].put, state.session, self._watchdogs)
        return ResumeSessionResponse(
            modes=options.modes(state.session), config_options=options.config(state.session, self.registry)
        )

    async def fork_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> ForkSessionResponse:
        """A new session holding the given one's conversation (its current branch); the
        original is left as it is. A session open here must not be running a prompt."""
        _directory(cwd)  # before anything is written: a refused fork leaves no file
        state = self.sessions.get(session_id)
        if state is not None and state.run is not None and not state.run.done():
            raise RequestError.invalid_request({"message": f"session {session_id!r} is running a prompt"})
        source = state.session.store if state is not None else await self._open_store(session_id)
        try:
            store = await asyncio.to_thread(source.fork, None, home=self.home)
        except (SessionError, ValueError, OSError) as exc:
            raise _invalid(f"cannot fork session {session_id!r}: {exc}", sessionId=session_id) from exc
        finally:
            if state is None:
                source.close()
        forked = await self._open(cwd, store, mcp_servers)
        commands.advertise_later(self.outboxes[forked.id].put, forked.session, self._watchdogs)
        return ForkSessionResponse(
            session_id=forked.id,
            modes=options.modes(forked.session),
            config_options=options.config(forked.session, self.registry),
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """Frees the session: a running prompt is cancelled, its MCP servers stopped, its
        file released; the id is unknown here afterwards (session/load opens it again)."""
        state = self._get(session_id)
        run = state.run
        if run is not None and not run.done():
            await self.cancel(session_id)
            await asyncio.wait([run], timeout=CANCEL_GRACE_SECONDS + 2)
        idle_keeper(state.session).cancel()
        self.sessions.pop(session_id, None)
        self._runs.pop(session_id, None)
        self._models.pop(session_id, None)
        outbox = self.outboxes.pop(session_id, None)
        if outbox is not None:
            await outbox.flush()
            outbox.close()
        await asyncio.to_thread(state.close)
        state.session.store.close()
        return CloseSessionResponse()

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        if cwd is not None and not Path(cwd).is_absolute():
            raise _invalid(f"cwd {cwd!r} is not an absolute path", cwd=cwd)
        found = await asyncio.to_thread(list_sessions, cwd, all_cwds=cwd is None, home=self.home)
        infos = [
            SessionInfo(
                session_id=s.id,
                cwd=s.cwd,
                title=_title(s.name, s.first_message),
                updated_at=_dt.datetime.fromtimestamp(s.modified, _dt.UTC).isoformat(),
            )
            for s in found
        ]
        return ListSessionsResponse(sessions=infos)

    # --- configuration ---------------------------------------------------------------------

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        state = self._get(session_id)
        await self._set_mode(state, mode_id)
        await self._config_changed(state)
        return SetSessionModeResponse()

    async def _set_mode(self, state: AcpSession, mode_id: str) -> None:
        try:
            state.session.control.set_mode(mode_id)
        except ValueError as exc:
            raise _invalid(str(exc), modeId=mode_id) from exc
        await self.conn.session_update(
            state.id, CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id)
        )

    async def _config_changed(self, state: AcpSession) -> None:
        """The ``mode`` and ``model`` selects after a change made without session/set_config_option
        (whose response carries them), so a client showing them is not left with old values."""
        await self.conn.session_update(
            state.id,
            ConfigOptionUpdate(
                session_update="config_option_update", config_options=options.config(state.session, self.registry)
            ),
        )

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        state = self._get(session_id)
        if config_id == "model" and isinstance(value, str):
            self._set_model(state, value)
        elif config_id == "mode" and isinstance(value, str):
            await self._set_mode(state, value)
        else:
            raise _invalid(f"unknown config option {config_id!r} (heron has: model, mode)", configId=config_id)
        return SetSessionConfigOptionResponse(config_options=options.config(state.session, self.registry))

    async def set_session_model(self, session_id: str, model_id: str, **kwargs: Any) -> dict[str, Any]:
        state = self._get(session_id)
        self._set_model(state, model_id)
        await self._config_changed(state)
        return {}

    def _set_model(self, state: AcpSession, model_id: str) -> None:
        try:
            resolved = options.resolve(self.args, self.registry, state.session, model_id)
        except (SetupError, LookupError, ValueError) as exc:
            raise _invalid(f"model {model_id!r}: {exc}", modelId=model_id) from exc
        state.session.set_model(resolved.model, resolved.api_key)
        self._models[state.id] = resolved

    # --- prompts ---------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        state = self._get(session_id)
        await self._after_cancelled(state)
        try:
            text, images = prompt_content(prompt)
        except PromptError as exc:
            raise _invalid(str(exc)) from exc
        if not text.strip() and not images:
            raise _invalid("the prompt is empty")
        await idle_keeper(state.session).stop()  # the user is back: no warm-up or idle compaction now
        state.cancelled = False
        focus = compact_focus(text)
        if focus is not None:
            self._runs.pop(session_id, None)
            state.run = asyncio.ensure_future(state.session.compact(focus or None))
        else:
            run = Run(state.session, text, images, resolved=self._resolved(state))
            self._runs[session_id] = run
            state.run = run.task
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._turns[session_id] = turn
        try:
            return await self._finish(state, state.run)
        finally:
            turn.set_result(None)
            idle_keeper(state.session).start()  # waiting for the next prompt: the idle policy watches the cache

    async def _finish(self, state: AcpSession, task: asyncio.Task[Any]) -> PromptResponse:
        """The prompt's answer once its run ended: the last updates sent, then the stop
        reason (or the error) of the run's outcome."""
        run = self._runs.get(state.id)
        if run is not None and run.task is task:
            outcome = await run.outcome()
            if isinstance(outcome.failure, SkillNotFoundError):  # /skill:name for a skill this session lacks
                raise _invalid(str(outcome.failure))
        else:  # /compact: not a run of the model
            try:
                await task
            except asyncio.CancelledError:
                if not state.cancelled:
                    raise
            outcome = decide([], aborted=state.cancelled)
        cancelled = state.cancelled  # read now: a prompt waiting for this one resets it
        session = state.session
        outbox = self.outboxes[state.id]
        for update in state.translator.unfinished("cancelled" if cancelled else "the turn ended before it finished"):
            outbox.put(update)
        outbox.put(usage_update(session.messages, session.estimate_request_tokens(session.messages), session.window))
        await outbox.flush()
        reason, error = stop_reason(outcome, cancelled)
        if error is not None:
            raise RequestError.internal_error(error)
        return PromptResponse(
            stop_reason=reason,  # type: ignore[arg-type]
            usage=turn_usage(outcome),
            field_meta=goal_meta(outcome),
        )

    def _resolved(self, state: AcpSession) -> ResolvedModel | None:
        """How the session's model and key were chosen (what a refused key is explained
        from): as chosen by session/set_model, else as ``--model`` resolves here."""
        chosen = self._models.get(state.id)
        if chosen is not None:
            return chosen
        try:
            return options.resolve(self.args, self.registry, state.session, self.args.model)
        except (SetupError, LookupError, ValueError):
            return None

    async def _after_cancelled(self, state: AcpSession) -> None:
        """A prompt may come while the one before it runs only if that one was cancelled
        (editors send the user's next message right after session/cancel, without waiting
        for the cancelled prompt's answer): it starts once the cancelled prompt has been
        answered, so no update of the new turn comes before that answer."""
        run = state.run
        if run is None or run.done():
            return
        if not state.cancelled:
            raise RequestError.invalid_request(
                {"message": "a prompt is already running in this session; cancel it first"}
            )
        turn = self._turns.get(state.id)
        await asyncio.wait([run], timeout=CANCEL_GRACE_SECONDS + 2)
        if turn is not None:
            await asyncio.wait([turn], timeout=2)
        await asyncio.sleep(0)  # the SDK queues the cancelled prompt's answer when its handler returns
        if (state.run is not run) or not run.done():  # another prompt came first, or the run does not stop
            raise RequestError.invalid_request({"message": "a prompt is already running in this session"})

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """The run is aborted as every mode aborts one (:meth:`Run.abort`, which cancels
        it when it has not stopped within the grace period); a compaction is cancelled."""
        state = self.sessions.get(session_id)
        if state is None or state.run is None or state.run.done():
            return
        state.cancelled = True
        state.bridge.cancel_all()
        run = self._runs.get(session_id)
        if run is not None and run.task is state.run:
            run.abort(CANCEL_GRACE_SECONDS)
        else:
            state.session.abort()
            state.run.cancel()

    def close(self) -> None:
        for state in self.sessions.values():
            idle_keeper(state.session).cancel()
            state.close()
        for outbox in self.outboxes.values():
            outbox.close()


def _title(name: str | None, first: str | None) -> str | None:
    if name:
        return name
    if first:
        lines = first.strip().splitlines()
        return lines[0][:100] if lines else None
    return None
