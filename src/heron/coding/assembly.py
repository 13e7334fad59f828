"""The one place a :class:`CodingSession` is built: from a :class:`SessionSpec`.

The ``heron`` command's modes (print, json, rpc, interactive), the ACP server, batch tasks,
sub-agents and programs embedding heron all describe the session they want as a spec
and call :func:`assemble_session`, so they agree on how settings are loaded, the model is
chosen, the session file is opened, trust and permission flags apply, MCP servers start,
extensions load and sub-agents are attached (docs/sdk.md). :func:`resolve_spec` is the
first half on its own - settings loaded, model resolved - for a caller that must act in
between (``--resume`` asks which session only once the model is known to work).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from heron.ai.models import ModelRegistry, heron_home
from heron.ai.types import Model, UserMessage
from heron.coding.first_prompt import journal_first_prompt
from heron.coding.mcp import any_config
from heron.coding.model_choice import SETUP_POINTER, ResolvedModel, SetupError, resolve_model, setup_help
from heron.coding.model_limits import probe_due, with_limits
from heron.coding.runtime import CodingSession
from heron.coding.session_server import model_ref, recorded_server
from heron.coding.session_spec import ModelChoice, SessionSpec, StoreSpec, chosen_tools
from heron.coding.settings import load_settings
from heron.coding.subagents.definitions import TASK_TOOL
from heron.coding.subagents.manager import attach_subagents
from heron.context.tool_output.spill import remove_old_spills
from heron.session.errors import SessionWriteError
from heron.session.paths import latest_session, resolve_session
from heron.session.store import SessionStore

if TYPE_CHECKING:  # imported when servers start (heron.coding.mcp loads the MCP SDK)
    from heron.coding.mcp.setup import SessionMcp
    from heron.coding.subagents.parent import ParentSession

log = logging.getLogger(__name__)

Warn = Callable[[str], None]


def _log_warning(text: str) -> None:
    log.warning("%s", text)


def resolve_spec(spec: SessionSpec, warn: Warn = _log_warning) -> SessionSpec:
    """``spec`` with its settings loaded and its model resolved (``spec.resolved``);
    a spec already resolved comes back as it is. Raises :class:`SetupError` (with the
    set-up help) when no model can be used."""
    cwd = spec.cwd.expanduser().resolve()
    home = spec.home if spec.home is not None else heron_home()
    settings = spec.settings
    if settings is None:
        settings = load_settings(cwd, home)
        for warning in settings.warnings:
            warn(warning)
    model: Model | ResolvedModel | ModelChoice = spec.model
    registry = spec.registry
    store_spec = spec.store
    if isinstance(model, ModelChoice):
        registry = registry if registry is not None else ModelRegistry.load()
        choice, store_spec = _remembered_server(model, spec.store, cwd, home, registry)
        try:
            model = resolve_model(settings, registry, choice.ref, choice.base_url, choice.api_key, choice.api)
        except SetupError as exc:
            raise _with_models_json_cause(exc, registry) from exc
        for error in registry.errors:
            warn(error)
        if spec.first_prompt is not None and probe_due(home, model.model, choice.context_window):
            store_spec = _journaled(store_spec, cwd, home, model, spec.first_prompt)
        limited = with_limits(
            model.model,
            home,
            model.api_key,
            context_window=choice.context_window,
            max_tokens=choice.max_tokens,
            notice=warn,
        )
        model = dataclasses.replace(model, model=limited)
    elif isinstance(model, Model):
        model = ResolvedModel(model, spec.api_key, "given")
    return dataclasses.replace(
        spec, cwd=cwd, home=home, settings=settings, model=model, registry=registry, store=store_spec
    )


def _journaled(store: StoreSpec, cwd: Path, home: Path, model: ResolvedModel, prompt: UserMessage) -> StoreSpec:
    """The session file opened (created) now, with the first prompt written to it before
    the server is asked for its window (:mod:`heron.coding.first_prompt`)."""
    if store.kind == "memory":
        return store
    opened = open_store(store, cwd, home)
    try:
        journal_first_prompt(opened, model.model, model.api_key, home, prompt)
    except SessionWriteError:  # the run meets it again with its first message, and says so there
        opened.close()
        return store
    return StoreSpec.existing(opened)


def _remembered_server(
    choice: ModelChoice, store: StoreSpec, cwd: Path, home: Path, registry: ModelRegistry
) -> tuple[ModelChoice, StoreSpec]:
    """A resumed session's own server when neither ``--model`` nor ``--base-url`` names
    one (:mod:`heron.coding.session_server`). The file opened to read it is the one the
    session then uses (``StoreSpec.existing``), so it is read once."""
    if choice.ref or choice.base_url or store.kind not in ("continue", "open", "existing"):
        return choice, store
    opened = store.source
    ours = store.kind != "existing"  # opened here: closed here if it is not used
    if ours:
        path = latest_session(cwd, home=home) if store.kind == "continue" else _store_path(store.ref, home)
        if path is None:
            return choice, store
        opened = SessionStore.open(path)
        store = dataclasses.replace(store, kind="existing", source=opened)
    server = recorded_server(opened) if opened is not None else None
    if server is None:
        return choice, store
    try:
        ref, base_url, api = model_ref(server, registry)
    except SetupError:  # a password to give again: the file is not used
        if ours and opened is not None:
            opened.close()
        raise
    return dataclasses.replace(choice, ref=ref, base_url=base_url, api=choice.api or api), store


def _store_path(ref: str | Path | None, home: Path) -> Path:
    if ref is None:
        raise ValueError("StoreSpec.open needs a path or a session id")
    return ref if isinstance(ref, Path) else resolve_session(ref, home=home)


def _with_models_json_cause(exc: SetupError, registry: ModelRegistry) -> SetupError:
    """A broken models.json is usually why no model resolved: say that first (file, line,
    problem), then the resolver's own message, shortened to a pointer when it is the
    whole set-up text."""
    if not registry.errors:
        return exc
    message = str(exc)
    if message == setup_help(registry):
        message = f"no model is configured (models.json could not be used).\n{SETUP_POINTER}"
    causes = "\n".join(f"heron: {error}" for error in registry.errors)
    return SetupError(f"{causes}\n{message}")


def open_store(spec: StoreSpec, cwd: Path, home: Path) -> SessionStore:
    """The session file ``spec`` names, opened or created, with its seed messages appended
    (raises :class:`~heron.session.store.SessionError` for a file that cannot be used)."""
    store: SessionStore
    if spec.kind == "memory":
        store = SessionStore.in_memory(cwd)
    elif spec.kind == "new":
        store = SessionStore.create(
            cwd, path=spec.path, home=home, parent_session=spec.parent_session, fsync=spec.fsync
        )
    elif spec.kind == "continue":
        newest = latest_session(cwd, home=home)
        store = SessionStore.open(newest) if newest is not None else SessionStore.create(cwd, home=home)
    elif spec.kind == "open":
        store = SessionStore.open(_store_path(spec.ref, home))
    elif spec.source is None:
        raise ValueError(f"StoreSpec {spec.kind!r} needs the source store")
    elif spec.kind == "fork":
        store = spec.source.fork(spec.entry_id, home=home)
    else:  # existing
        store = spec.source
    for message in spec.seed:
        store.append_message(message)
    return store


def assemble_session(spec: SessionSpec, warn: Warn = _log_warning) -> CodingSession:
    """The session ``spec`` describes, ready to ``prompt``.

    Warnings (settings, models.json, MCP servers, permission rules, extensions) go to
    ``warn``; a bad ``--allow`` rule or permission mode raises :class:`ValueError`, a
    model that cannot be used :class:`SetupError`, a session file that cannot be used
    :class:`~heron.session.store.SessionError`."""
    spec = resolve_spec(spec, warn)
    cwd, home, settings = spec.cwd, spec.home or heron_home(), spec.settings
    assert settings is not None  # resolve_spec loaded them
    resolved = spec.resolved
    store = open_store(spec.store, cwd, home)
    mcp = None
    if spec.mcp_servers or (spec.mcp and any_config(cwd, home)):  # no config file: no MCP code loaded
        mcp = _start_mcp(spec, cwd, home, resolved.model.context_window, warn)
    names = chosen_tools(spec.tools, settings)
    session = CodingSession(
        cwd=cwd,
        model=resolved.model,
        api_key=resolved.api_key,
        store=store,
        settings=settings,
        tools=names,
        thinking_level=spec.thinking_level,
        system_prompt=spec.system_prompt,
        append_system_prompt=spec.append_system_prompt,
        home=home,
        date=spec.date,
        extra_tools=[*spec.extra_tools, *(mcp.tools if mcp is not None else [])],
        project_prompt=spec.project_prompt,
        whole_system_prompt=spec.whole_system_prompt,
    )
    session.mcp = mcp
    _arrange_tools(spec, session, names)
    if spec.parent is not None:
        share_control(spec.parent.session, session, spec.parent.agent_type)
    else:
        _apply_control(spec, session, warn)
    if spec.extensions and spec.parent is None:
        for warning in session.extensions.load(trusted=session.control.trusted):  # docs/extensions.md
            warn(warning)
    if mcp is not None:
        mcp.bind(session.agent, session.store)  # tool_search results compacted away still count
    _clean_spills(session)
    return session


def _arrange_tools(spec: SessionSpec, session: CodingSession, names: list[str]) -> None:
    """``task`` when the tool list asks for it (the default does), after the others; a
    fork's tools in its parent's order, so its requests keep the parent's cached prefix."""
    tools = list(session.tools)
    if TASK_TOOL in names:
        parent = spec.parent.session if spec.parent is not None else None
        tools.append(attach_subagents(session, assemble_session, parent))
    if spec.tool_order is not None:
        by_name = {tool.name: tool for tool in tools}
        tools = [by_name[name] for name in spec.tool_order if name in by_name]
    if tools != session.tools:
        session.use_tools(tools)


def _apply_control(spec: SessionSpec, session: CodingSession, warn: Warn) -> None:
    """``--trust``, ``--permission-mode``, ``--sandbox``, ``--allow`` (docs/permissions.md)."""
    control = session.control
    if spec.trust:
        control.trust()
    if spec.permission_mode:
        control.set_mode(spec.permission_mode)  # ValueError: a mode heron does not have
    if spec.sandbox:
        control.set_sandbox(spec.sandbox)  # ValueError: likewise
    problems = control.allow(list(spec.allow))
    if problems:
        raise ValueError(problems[0])
    for warning in control.warnings:
        warn(warning)


def share_control(parent: ParentSession, child: CodingSession, agent_type: str) -> None:
    """The child obeys the parent's permissions: the same engine object (so a mode the user
    switches to, ``--allow`` rules and rules allowed always apply to running children too),
    the same trust, and the parent's way of asking the user (none in print mode: denied);
    its stop runs the SubagentStop hooks; the parent's extensions see its tool calls; no goal
    loop of its own."""
    ours, theirs = parent.control, child.control
    theirs.trusted = ours.trusted
    theirs.permissions = ours.permissions
    theirs.hooks = ours.hooks
    theirs.asker = ours.asker
    theirs.sandbox_mode = ours.sandbox_mode
    theirs.as_subagent(ours, agent_type)
    child.extensions.share(parent.extensions)
    # the parent's goal loop drives the work: a child answers its task once; it is offered the
    # goal tool as its parent is, so a fork's requests keep the parent's bytes
    child.goal_loop.enabled = False
    child.goal_loop.max_turns = parent.goal_loop.max_turns


def _start_mcp(spec: SessionSpec, cwd: Path, home: Path, window: int, warn: Warn) -> SessionMcp:
    from heron.coding.mcp.config import project_trusted
    from heron.coding.mcp.setup import start_session_servers

    trusted = project_trusted(cwd, home, spec.trust)
    mcp = start_session_servers(cwd, home, trusted=trusted, window=window, extra=spec.mcp_servers)
    for warning in mcp.warnings:
        warn(warning)
    return mcp


def _clean_spills(session: CodingSession) -> None:
    """Spill files older than ``spill.retentionDays`` removed, in the background - after the
    session's first request, never before it (docs/architecture.md, "The critical path of a turn")."""
    retention = session.settings.spill.retention_days
    session.control.housekeeping.add(remove_old_spills, session.home / "tool-output", retention)
