"""One ACP session: a :class:`CodingSession` for the client's cwd, its MCP servers, and
the state the server keeps for it (the translator, the permission bridge, the run).

Settings, model and trust are resolved per session, from the session's cwd, the way
:func:`heron.cli.app.build_app` does for the other modes; ``--model``, ``--base-url``,
``--api-key``, ``--permission-mode``, ``--allow`` and ``--trust`` apply to every session.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heron.ai.models import ModelRegistry
from heron.cli.acp.permissions import PermissionBridge
from heron.cli.acp.updates import EventTranslator
from heron.coding.mcp.config import ServerConfig, load_config, project_trusted
from heron.coding.mcp.setup import SessionMcp, mcp_tools, timeouts_from_env
from heron.coding.model_choice import resolve_model
from heron.coding.run_limits import apply_max_turns
from heron.coding.runtime import CodingSession
from heron.coding.settings import load_settings
from heron.session.store import SessionStore

log = logging.getLogger(__name__)
CLIENT_SOURCE = Path("<acp client>")


@dataclass
class AcpSession:
    id: str
    session: CodingSession
    translator: EventTranslator
    bridge: PermissionBridge
    mcp: SessionMcp
    run: asyncio.Task[Any] | None = None
    cancelled: bool = False
    unsubscribe: list[Any] = field(default_factory=list)

    def close(self) -> None:
        for undo in self.unsubscribe:
            undo()
        self.mcp.close()


def warn(text: str) -> None:
    """Warnings go to stderr: stdout carries the protocol (editors show stderr in their logs)."""
    print(f"heron: warning: {text}", file=sys.stderr, flush=True)


def client_servers(servers: list[Any] | None) -> tuple[list[ServerConfig], list[str]]:
    """ACP's MCP server descriptions as heron's; kinds heron cannot connect are named."""
    out: list[ServerConfig] = []
    problems: list[str] = []
    for server in servers or []:
        kind = getattr(server, "type", None)
        if kind == "http":
            headers = {h.name: h.value for h in server.headers or []}
            out.append(ServerConfig(server.name, "http", "user", CLIENT_SOURCE, url=server.url, headers=headers))
        elif kind is None and hasattr(server, "command"):
            env = {e.name: e.value for e in server.env or []}
            out.append(
                ServerConfig(
                    server.name,
                    "stdio",
                    "user",
                    CLIENT_SOURCE,
                    command=server.command,
                    args=tuple(server.args or ()),
                    env=env,
                )
            )
        else:
            problems.append(
                f"MCP server {getattr(server, 'name', '?')!r}: transport {kind!r} is not supported (use stdio or http)"
            )
    return out, problems


def start_mcp(cwd: Path, home: Path, trusted: bool, window: int, extra: list[ServerConfig]) -> SessionMcp:
    """The project's and user's configured servers plus the client's, in one manager
    (blocking: called in a worker thread)."""
    config = load_config(cwd, home, trusted=trusted)
    warnings = list(config.warnings)
    names = {s.name for s in extra}
    servers = [*extra, *(s for s in config.servers if s.name not in names)]
    if not servers:
        return SessionMcp(None, [], warnings)
    from heron.coding.mcp.manager import McpManager

    manager = McpManager(servers, timeouts_from_env(warnings), cwd=str(cwd), log_dir=home / "mcp-logs", auth_home=home)
    manager.start()
    for status in manager.statuses():
        if status.state != "connected":
            warnings.append(f"MCP server {status.name!r} is not available: {status.error}")
    tools, search = mcp_tools(manager, window)
    return SessionMcp(manager, tools, warnings, search)


def build_session(
    args: argparse.Namespace,
    registry: ModelRegistry,
    home: Path,
    cwd: Path,
    store: SessionStore | None,
    mcp_servers: list[Any] | None,
) -> tuple[CodingSession, SessionMcp]:
    """A runtime for ``cwd`` (blocking; raises SetupError, ValueError, SessionError)."""
    settings = load_settings(cwd, home)
    for warning in settings.warnings:
        warn(warning)
    resolved = resolve_model(settings, registry, args.model, args.base_url, args.api_key, getattr(args, "api", None))
    extra, problems = client_servers(mcp_servers)
    trusted = project_trusted(cwd, home, bool(getattr(args, "trust", False)))
    mcp = start_mcp(cwd, home, trusted, resolved.model.context_window, extra)
    for problem in [*problems, *mcp.warnings]:
        warn(problem)
    if store is None:
        store = SessionStore.in_memory(cwd) if args.no_session else SessionStore.create(cwd, home=home)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()] if args.tools else None
    session = CodingSession(
        cwd=cwd,
        model=resolved.model,
        api_key=resolved.api_key,
        store=store,
        settings=settings,
        tools=tools,
        thinking_level=args.thinking,
        home=home,
        extra_tools=mcp.tools,
    )
    apply_max_turns(session.agent, settings, getattr(args, "max_turns", None))
    control = session.control
    if getattr(args, "trust", False):
        control.trust()
    if getattr(args, "permission_mode", None):
        control.set_mode(args.permission_mode)
    problems = control.allow(list(getattr(args, "allow", None) or []))
    if problems:
        raise ValueError(problems[0])
    for warning in control.warnings:
        warn(warning)
    mcp.bind(session.agent, store)  # tool_search results compacted away still count (as in -p --continue)
    return session, mcp
