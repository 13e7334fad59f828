"""MCP server configuration: the project's ``.mcp.json`` and the user's ``mcp.json``.

The file format is the one Claude Code reads, so a project that already ships a
``.mcp.json`` works unchanged::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "some-server"], "env": {"TOKEN": "${TOKEN}"}},
        "api":   {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${KEY}"}}
    }}

``${VAR}`` and ``${VAR:-default}`` are expanded from the environment in the command,
args, env, url and headers. A broken file or entry becomes a warning naming the file
and the server, never an exception: one bad server must not stop a session.
User-level servers (``$HERON_HOME/mcp.json``) win over project servers of the same
name, since the user wrote them and a repository did not.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from heron.agent.tool_meta import TOOL_KINDS, ToolKind
from heron.coding.mcp import PROJECT_FILE, USER_FILE
from heron.session.private_files import write_private_text

Scope = Literal["user", "project"]
# Provider tool names allow [A-Za-z0-9_-]; a server name is part of every tool's name.
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(slots=True)
class Timeouts:
    """Seconds: to start a server (handshake and tool list), and for one tool call."""

    connect: float = 30.0
    call: float = 300.0


class McpConfigError(ValueError):
    """A config file that cannot be read or written; the message names the file."""


TOOLS_KEY = "heronTools"


@dataclass(frozen=True, slots=True)
class ToolDeclaration:
    """What a server's tool is, as the user declares it in the entry
    (``"heronTools": {"read_text_file": {"kind": "read", "path": "path"}}``): its kind
    (:mod:`heron.agent.tool_meta`) and the argument naming the file it reads or writes."""

    kind: ToolKind
    path: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **({"path": self.path} if self.path else {})}


def parse_declarations(value: Any) -> dict[str, ToolDeclaration]:
    """``heronTools``; :class:`ValueError` says what is wrong with it."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f'"{TOOLS_KEY}" must be an object: tool name -> {{"kind": ..., "path": ...}}')
    out: dict[str, ToolDeclaration] = {}
    for name, item in value.items():
        kind = item.get("kind") if isinstance(item, dict) else None
        path = item.get("path") if isinstance(item, dict) else None
        if kind not in TOOL_KINDS or not (path is None or (isinstance(path, str) and path)):
            raise ValueError(
                f'"{TOOLS_KEY}.{name}" must be {{"kind": one of {", ".join(TOOL_KINDS)}, "path": an argument name}}'
            )
        out[str(name)] = ToolDeclaration(kind, path)
    return out


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One server: ``transport`` "stdio" (``command``, ``args``, ``env``) or "http" (``url``, ``headers``)."""

    name: str
    transport: Literal["stdio", "http"]
    scope: Scope
    source: Path
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    oauth_client_id: str = ""  # a client registered with the server's authorization server beforehand
    oauth_client_secret: str = ""
    lazy: bool | None = None  # "lazy" in the entry: start at first use; None: the mcp.startup setting decides
    # "heronTools" in the entry: what some of the server's tools are (remote name -> declaration)
    tools: dict[str, ToolDeclaration] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The entry as it is written in the file (without name, scope and source)."""
        out = self._entry()
        if self.lazy is not None:
            out["lazy"] = self.lazy
        if self.tools:
            out[TOOLS_KEY] = {name: d.to_json() for name, d in self.tools.items()}
        return out

    def _entry(self) -> dict[str, Any]:
        if self.transport == "http":
            out: dict[str, Any] = {"type": "http", "url": self.url}
            if self.headers:
                out["headers"] = dict(self.headers)
            if self.oauth_client_id:
                out["oauth"] = {
                    "clientId": self.oauth_client_id,
                    **({"clientSecret": self.oauth_client_secret} if self.oauth_client_secret else {}),
                }
            return out
        out = {"command": self.command, "args": list(self.args)}
        if self.env:
            out["env"] = dict(self.env)
        return out


def user_config_path(home: Path) -> Path:
    return home / USER_FILE


def project_config_path(cwd: Path) -> Path:
    return cwd / PROJECT_FILE


def expand(value: str, environ: dict[str, str] | None = None) -> str:
    """``${VAR}`` / ``${VAR:-default}`` from the environment; an unset variable without a
    default becomes empty (the server then reports what is missing)."""
    env = os.environ if environ is None else environ
    return _VAR.sub(lambda m: env.get(m.group(1), m.group(2) if m.group(2) is not None else ""), value)


def unset_variables(entry: Any, environ: dict[str, str] | None = None) -> list[str]:
    """The ``${VAR}`` names (without a default) in ``entry``'s strings that are not set: they
    expand to nothing, and a server started with, say, an empty token fails far from the
    cause, so the loader names them."""
    env = os.environ if environ is None else environ
    if isinstance(entry, str):
        return [m.group(1) for m in _VAR.finditer(entry) if m.group(2) is None and m.group(1) not in env]
    values = entry.values() if isinstance(entry, dict) else entry if isinstance(entry, list) else []
    out: list[str] = []
    for value in values:
        out.extend(name for name in unset_variables(value, environ) if name not in out)
    return out


def _str_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError(f"{what} must be an object of strings")
    return {k: expand(v) for k, v in value.items()}


def parse_server(name: str, entry: Any, scope: Scope, source: Path) -> ServerConfig:
    """One ``mcpServers`` entry; :class:`ValueError` says what is wrong with it."""
    if not _NAME.match(name):
        raise ValueError("the name may use only letters, digits, _ and - (at most 40)")
    if not isinstance(entry, dict):
        raise ValueError("the entry must be an object")
    lazy = entry.get("lazy")
    if lazy is not None and not isinstance(lazy, bool):
        raise ValueError('"lazy" must be true or false')
    tools = parse_declarations(entry.get(TOOLS_KEY))
    return dataclasses.replace(_parse_transport(name, entry, scope, source), lazy=lazy, tools=tools)


def _parse_transport(name: str, entry: dict[str, Any], scope: Scope, source: Path) -> ServerConfig:
    kind = entry.get("type", "http" if "url" in entry else "stdio")
    if kind in ("http", "streamable-http", "streamableHttp"):
        url = entry.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ValueError('an http server needs a "url"')
        url = expand(url)
        if not url.startswith(("http://", "https://")):
            raise ValueError(f'"url" must be an http(s) URL, not {url!r}')
        oauth = _str_map(entry.get("oauth"), '"oauth"')
        unknown = set(oauth) - {"clientId", "clientSecret"}
        if unknown:
            raise ValueError(f'"oauth" takes clientId and clientSecret, not {", ".join(sorted(unknown))}')
        return ServerConfig(
            name,
            "http",
            scope,
            source,
            url=url,
            headers=_str_map(entry.get("headers"), '"headers"'),
            oauth_client_id=oauth.get("clientId", ""),
            oauth_client_secret=oauth.get("clientSecret", ""),
        )
    if kind == "sse":
        raise ValueError('the old "sse" transport is not supported; use "http" (streamable HTTP)')
    if kind != "stdio":
        raise ValueError(f'unknown "type" {kind!r} (use "stdio" or "http")')
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ValueError('a stdio server needs a "command"')
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError('"args" must be a list of strings')
    return ServerConfig(
        name,
        "stdio",
        scope,
        source,
        command=expand(command),
        args=tuple(expand(a) for a in args),
        env=_str_map(entry.get("env"), '"env"'),
    )


def read_file(path: Path) -> dict[str, Any]:
    """The whole document (``{}`` when the file does not exist)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise McpConfigError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise McpConfigError(f"{path}: must hold a JSON object")
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise McpConfigError(f'{path}: "mcpServers" must be an object')
    return data


def load_file(path: Path, scope: Scope, warnings: list[str]) -> list[ServerConfig]:
    try:
        data = read_file(path)
    except McpConfigError as exc:
        warnings.append(str(exc))
        return []
    out: list[ServerConfig] = []
    for name, entry in data.get("mcpServers", {}).items():
        try:
            out.append(parse_server(str(name), entry, scope, path))
        except ValueError as exc:
            warnings.append(f"{path}: server {name!r}: {exc}; skipped")
            continue
        missing = unset_variables(entry)
        if missing:
            warnings.append(
                f"{path}: server {name!r}: "
                + ", ".join(f"${{{v}}}" for v in missing)
                + " not set in the environment; expanded to an empty string"
            )
    return out


@dataclass(slots=True)
class McpConfig:
    servers: list[ServerConfig]
    warnings: list[str]
    skipped_untrusted: list[str] = field(default_factory=list)  # project servers not started


def load_config(cwd: Path, home: Path, *, trusted: bool, include_untrusted: bool = False) -> McpConfig:
    """User servers, then project servers (only when ``trusted``, unless ``include_untrusted``
    for listing); a user server hides a project server of the same name."""
    warnings: list[str] = []
    user = load_file(user_config_path(home), "user", warnings)
    names = {s.name for s in user}
    project = [s for s in load_file(project_config_path(cwd), "project", warnings) if s.name not in names]
    if trusted or include_untrusted:
        return McpConfig([*user, *project], warnings)
    return McpConfig(user, warnings, [s.name for s in project])


def write_server(path: Path, name: str, entry: dict[str, Any]) -> None:
    """Add or replace one server in ``path``, keeping every other key of the file."""
    data = read_file(path)
    servers = dict(data.get("mcpServers", {}))
    servers[name] = entry
    data["mcpServers"] = servers
    _write(path, data)


def remove_server(path: Path, name: str) -> bool:
    """Remove one server; False when the file has no server of that name."""
    data = read_file(path)
    servers = dict(data.get("mcpServers", {}))
    if name not in servers:
        return False
    del servers[name]
    data["mcpServers"] = servers
    _write(path, data)
    return True


def _write(path: Path, data: dict[str, Any]) -> None:
    """Private (0600): a server's entry may carry its headers' tokens."""
    write_private_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def project_trusted(cwd: Path, home: Path, flag: bool) -> bool:
    """``--trust`` on the command line, or a project the user trusted before (the trust
    list of the permission layer, ``$HERON_HOME/trusted-projects.json``)."""
    from heron.coding.permissions.trust import is_trusted

    return flag or is_trusted(cwd, home)
