"""The MCP servers of one session: loaded, started, turned into tools, stopped at exit.

The CLI calls :func:`start_session_servers` before it builds the session and passes
``tools`` as the session's extra tools; :meth:`SessionMcp.bind` then lets
``tool_search`` add tools to the running agent. Project servers start only in a trusted
project, since a cloned repository's ``.mcp.json`` names commands to run.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from heron.agent.tools import AgentTool
from heron.ai.types import ToolResultMessage
from heron.coding.mcp.config import ServerConfig, Timeouts, load_config
from heron.session.entries import MessageEntry

if TYPE_CHECKING:  # the SDK is imported only when a server is configured: heron starts fast without
    from heron.coding.mcp.manager import McpManager, ServerStatus
    from heron.coding.mcp.search import ToolSearch
    from heron.session.store import SessionStore


class _Agent(Protocol):
    @property
    def state(self) -> Any: ...

    def set_tools(self, tools: list[AgentTool[Any]]) -> None: ...


@dataclass
class SessionMcp:
    manager: McpManager | None  # None: no server configured
    tools: list[AgentTool[Any]]
    warnings: list[str] = field(default_factory=list)
    search: ToolSearch | None = None

    def bind(self, agent: _Agent, store: SessionStore | None = None) -> None:
        """Tools found by ``tool_search`` are added to ``agent``'s tool list, starting with
        those earlier searches on this branch of the session loaded (``store``: the whole
        branch, so a search whose result was compacted away still counts; without it, the
        agent's messages)."""
        if self.search is None:
            return
        self.search.activate = lambda found: agent.set_tools([*agent.state.tools, *found])
        if store is not None:
            messages = [e.message for e in store.path_to() if isinstance(e, MessageEntry)]
        else:
            messages = list(agent.state.messages)
        self.search.restore(_searched(messages))

    def switched(self, agent: _Agent, store: SessionStore) -> None:
        """The session went on in another file (rpc's ``new_session``, ``switch_session``,
        ``fork``): drop the tools the old session's searches loaded and load those of
        ``store``'s, so the tool list is the one a process started on ``store`` would send."""
        if self.search is None:
            return
        loaded = self.search.loaded
        agent.set_tools([t for t in agent.state.tools if t.name not in loaded])
        self.search.loaded = set()
        self.bind(agent, store)

    def statuses(self) -> list[ServerStatus]:
        return self.manager.statuses() if self.manager is not None else []

    def close(self) -> None:
        if self.manager is not None:
            self.manager.close()


def _searched(messages: list[Any]) -> list[list[str]]:
    """The names each ``tool_search`` result in ``messages`` loaded, oldest first."""
    from heron.coding.mcp.search import ToolSearch

    out: list[list[str]] = []
    for message in messages:
        if isinstance(message, ToolResultMessage) and message.tool_name == ToolSearch.name and not message.is_error:
            loaded = message.details.get("loaded") if isinstance(message.details, dict) else None
            if isinstance(loaded, list):
                out.append([name for name in loaded if isinstance(name, str)])
    return out


def timeouts_from_env(warnings: list[str] | None = None) -> Timeouts:
    """``HERON_MCP_CONNECT_TIMEOUT`` / ``HERON_MCP_CALL_TIMEOUT`` (seconds) over the defaults;
    a value that is not a positive number is named in ``warnings`` and the default kept."""
    out = Timeouts()
    for attr, var in (("connect", "HERON_MCP_CONNECT_TIMEOUT"), ("call", "HERON_MCP_CALL_TIMEOUT")):
        value = os.environ.get(var, "").strip()
        if not value:
            continue
        try:
            seconds = float(value)
        except ValueError:
            seconds = 0.0
        if seconds > 0 and seconds != float("inf"):
            setattr(out, attr, seconds)
        elif warnings is not None:
            warnings.append(f"{var}={value!r} is not a positive number of seconds; using {getattr(out, attr):g}")
    return out


def mcp_tools(manager: McpManager, window: int) -> tuple[list[AgentTool[Any]], ToolSearch | None]:
    """Every connected server's tools, or one ``tool_search`` when they are too large."""
    from heron.coding.mcp.search import ToolSearch, should_defer
    from heron.coding.mcp.tools import McpTool, distinct_name

    declared = {name: c.config.tools for name, c in manager.connections.items()}
    tools = [
        McpTool(manager, s.name, t, declared.get(s.name, {}).get(t.name))
        for s in manager.statuses()
        if s.state in ("connected", "lazy")
        for t in s.tools
    ]
    seen: set[str] = set()
    for tool in tools:  # two remote names can clean up to one heron name ("a.b", "a_b"): the later
        if tool.name in seen:  # ones get a suffix from their own name, so none is lost
            tool.rename(distinct_name(tool.server, tool.remote_name))
        seen.add(tool.name)
    unique = tools
    if should_defer(unique, window):
        search = ToolSearch(unique)
        return [search], search
    return list(unique), None


def _defer_lazy(manager: McpManager, startup: str) -> None:
    from heron.coding.mcp.cache import load_tools

    for name, connection in manager.connections.items():
        lazy = connection.config.lazy if connection.config.lazy is not None else startup == "lazy"
        tools = load_tools(manager.cache_dir, connection.config) if lazy and manager.cache_dir else None
        if tools is not None:
            manager.defer(name, tools)


def start_session_servers(
    cwd: Path,
    home: Path,
    *,
    trusted: bool,
    window: int,
    timeouts: Timeouts | None = None,
    startup: str | None = None,
    extra: Sequence[ServerConfig] = (),
) -> SessionMcp:
    """Start the servers (``startup``: "eager"/"lazy"; None: the ``mcp.startup`` setting).
    A lazy server with a saved tool list is left for its first call; one without a list
    (never started with this entry) starts now, once, so its tools are known. ``extra``
    servers (an ACP client's) come first and win over configured ones of the same name."""
    config = load_config(cwd, home, trusted=trusted)
    warnings = list(config.warnings)
    if config.skipped_untrusted:
        warnings.append(
            f"project MCP servers not started ({', '.join(config.skipped_untrusted)}): "
            "the project is not trusted; run with --trust (docs/mcp.md)"
        )
    names = {server.name for server in extra}
    servers = [*extra, *(server for server in config.servers if server.name not in names)]
    if not servers:
        return SessionMcp(None, [], warnings)
    from heron.coding.mcp.manager import McpManager

    manager = McpManager(
        servers, timeouts or timeouts_from_env(warnings), cwd=str(cwd), log_dir=home / "mcp-logs", auth_home=home
    )
    if startup is None:
        from heron.coding.settings import load_settings

        startup = load_settings(cwd, home).mcp_startup
    _defer_lazy(manager, startup)
    manager.start()
    atexit.register(manager.close)
    for status in manager.statuses():
        if status.state not in ("connected", "lazy"):
            warnings.append(f"MCP server {status.name!r} is not available: {status.error}")
    tools, search = mcp_tools(manager, window)
    return SessionMcp(manager, tools, warnings, search)
