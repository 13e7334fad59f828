"""One ACP session: a :class:`CodingSession` for the client's cwd, its MCP servers, and
the state the server keeps for it (the translator, the permission bridge, the run).

Settings, model and trust are resolved per session, from the session's cwd, by the
assembly every mode uses (:func:`heron.coding.assembly.assemble_session`); ``--model``,
``--base-url``, ``--api-key``, ``--permission-mode``, ``--allow`` and ``--trust`` apply to
every session.
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
from heron.coding.assembly import assemble_session
from heron.coding.mcp.config import ServerConfig
from heron.coding.mcp.setup import SessionMcp
from heron.coding.run_limits import apply_max_turns
from heron.coding.runtime import CodingSession
from heron.coding.session_spec import ModelChoice, SessionSpec, StoreSpec, tool_names
from heron.session.store import SessionStore

log = logging.getLogger(__name__)
CLIENT_SOURCE = Path("<acp client>")


@dataclass
class AcpSession:
    id: str
    session: CodingSession
    translator: EventTranslator
    bridge: PermissionBridge
    mcp: SessionMcp | None  # None: no MCP configuration and none from the editor
    run: asyncio.Task[Any] | None = None
    cancelled: bool = False
    unsubscribe: list[Any] = field(default_factory=list)

    def close(self) -> None:
        for undo in self.unsubscribe:
            undo()
        if self.mcp is not None:
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


def build_session(
    args: argparse.Namespace,
    registry: ModelRegistry,
    home: Path,
    cwd: Path,
    store: SessionStore | None,
    mcp_servers: list[Any] | None,
) -> tuple[CodingSession, SessionMcp | None]:
    """A runtime for ``cwd`` (blocking; raises SetupError, ValueError, SessionError)."""
    extra, problems = client_servers(mcp_servers)
    for problem in problems:
        warn(problem)
    if store is not None:
        where = StoreSpec.existing(store)
    else:
        where = StoreSpec.memory() if args.no_session else StoreSpec.new()
    spec = SessionSpec(
        cwd=cwd,
        model=ModelChoice(
            args.model,
            args.base_url,
            args.api_key,
            getattr(args, "api", None),
            getattr(args, "context_window", None),
            getattr(args, "max_tokens", None),
        ),
        home=home,
        registry=registry,
        store=where,
        tools=tool_names(args.tools),
        thinking_level=args.thinking,
        trust=bool(getattr(args, "trust", False)),
        permission_mode=getattr(args, "permission_mode", None),
        allow=tuple(getattr(args, "allow", None) or ()),
        mcp=True,
        mcp_servers=tuple(extra),
    )
    session = assemble_session(spec, warn)
    apply_max_turns(session.agent, session.settings, getattr(args, "max_turns", None))
    return session, session.mcp
