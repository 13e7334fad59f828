"""``heron mcp``: list, show, add and remove MCP servers (docs/mcp.md).

``list`` and ``get`` start the servers to show their status and tools, the way a session
would (with the same timeouts); ``add`` and ``remove`` only edit the file: the user's
``$HERON_HOME/mcp.json`` by default, the project's ``.mcp.json`` with ``--scope project``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from heron.ai.models import heron_home
from heron.coding.mcp.config import (
    McpConfigError,
    ServerConfig,
    load_config,
    parse_server,
    project_config_path,
    project_trusted,
    remove_server,
    user_config_path,
    write_server,
)
from heron.coding.mcp.manager import McpManager, ServerStatus
from heron.coding.mcp.setup import timeouts_from_env


class _IntermixedParser(argparse.ArgumentParser):
    """Options may come after the positionals: ``add NAME CMD -e K=V -- ARGS`` (the form
    docs/mcp.md and Claude Code use). Plain argparse takes ``NAME CMD`` and an empty
    ``ARGS`` in one go, then rejects everything after ``--``; intermixed parsing first
    takes the options, then fills the positionals from what is left."""

    _inside = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._inside:  # parse_known_intermixed_args calls back in here
            return super().parse_known_args(args, namespace)
        self._inside = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inside = False


# ``mcp add``'s own options, recognised anywhere before a ``--``
_ADD_VALUE_OPTIONS = {"--transport", "--env", "-e", "--header", "-H", "--scope", "-s", "--cwd"}
_ADD_FLAGS = {"--lazy", "--no-lazy", "-h", "--help"}


def add_argv(tokens: list[str]) -> list[str]:
    """The arguments of ``mcp add`` (after ``add``) with ``--`` put before the server
    command's own: ``fs python3 -m mod`` works as ``fs python3 -- -m mod`` does. heron's
    options (``-e K=V``, ``--scope project``) stay heron's wherever they are; any other
    option after NAME and COMMAND is the command's, and so is every other word."""
    options: list[str] = []
    positionals: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            rest += tokens[i + 1 :]
            break
        name = token.split("=", 1)[0]
        if token.startswith("-") and name in _ADD_VALUE_OPTIONS:
            taken = 1 if "=" in token else 2
            options += tokens[i : i + taken]
            i += taken
            continue
        if token.startswith("-") and (name in _ADD_FLAGS or len(positionals) < 2):
            options.append(token)  # before COMMAND an unknown option is an error argparse reports
        elif len(positionals) < 2:
            positionals.append(token)
        else:
            rest.append(token)
        i += 1
    return [*options, *positionals, *(["--", *rest] if rest else [])]


def add_parser(commands: Any) -> None:
    mcp = commands.add_parser("mcp", help="MCP servers: list, get, add, remove")
    sub = mcp.add_subparsers(dest="mcp_command", metavar="COMMAND", required=True, parser_class=_IntermixedParser)
    listing = sub.add_parser("list", help="each server with its status and its tools")
    listing.add_argument("--json", action="store_true", help="one JSON document")
    get = sub.add_parser("get", help="one server: its configuration, status and tools with their schemas")
    get.add_argument("name")
    get.add_argument("--json", action="store_true", help="one JSON document")
    for p in (listing, get):
        p.add_argument("--trust", action="store_true", help="also start the project's .mcp.json servers")
        p.add_argument("--cwd", default=None, help="the project directory (default: the current one)")
    add = sub.add_parser("add", help="add a server: NAME COMMAND [ARGS...] or NAME URL --transport http")
    add.add_argument("name")
    add.add_argument("target", help="the command to run, or the URL for --transport http")
    add.add_argument("args", nargs="*", help="the command's arguments (options heron does not know are the command's)")
    add.add_argument("--transport", choices=("stdio", "http"), default=None, help="default: http for a URL")
    add.add_argument("-e", "--env", action="append", default=[], metavar="KEY=VALUE", help="environment (repeat)")
    add.add_argument("-H", "--header", action="append", default=[], metavar="'Name: value'", help="HTTP header")
    add.add_argument(
        "--lazy",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="start the server at the first call of one of its tools (--no-lazy: with the session)",
    )
    remove = sub.add_parser("remove", help="remove a server")
    remove.add_argument("name")
    for p in (add, remove):
        p.add_argument(
            "-s",
            "--scope",
            choices=("user", "project"),
            default="user",
            help="user: $HERON_HOME/mcp.json (default); project: ./.mcp.json",
        )
        p.add_argument("--cwd", default=None, help="the project directory (default: the current one)")
    mcp.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    cwd = Path(args.cwd).expanduser().resolve() if args.cwd else Path.cwd()
    home = heron_home()
    try:
        if args.mcp_command in ("list", "get"):
            return _show(args, cwd, home)
        if args.mcp_command == "add":
            return _add(args, cwd, home)
        return _remove(args, cwd, home)
    except McpConfigError as exc:
        print(f"heron: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"heron mcp {args.mcp_command}: {exc}", file=sys.stderr)
        return 2


def _show(args: argparse.Namespace, cwd: Path, home: Path) -> int:
    trusted = project_trusted(cwd, home, args.trust)
    config = load_config(cwd, home, trusted=trusted)
    for warning in config.warnings:
        print(f"heron: warning: {warning}", file=sys.stderr)
    servers = config.servers
    untrusted = [s for s in load_config(cwd, home, trusted=True).servers if s.name in config.skipped_untrusted]
    if args.mcp_command == "get":
        servers = [s for s in servers if s.name == args.name]
        untrusted = [s for s in untrusted if s.name == args.name]
        if not servers and not untrusted:
            print(f"heron: no MCP server named {args.name!r} (see `heron mcp list`)", file=sys.stderr)
            return 1
    env_warnings: list[str] = []
    timeouts = timeouts_from_env(env_warnings)
    for warning in env_warnings:
        print(f"heron: warning: {warning}", file=sys.stderr)
    manager = McpManager(servers, timeouts, cwd=str(cwd), log_dir=home / "mcp-logs", auth_home=home)
    try:
        statuses = manager.start()
    finally:
        manager.close()
    rows = [_row(s, st) for s, st in zip(servers, statuses, strict=True)]
    rows += [
        {**_config_json(s), "state": "not started", "error": "project not trusted (use --trust)", "tools": []}
        for s in untrusted
    ]
    if args.json:
        print(json.dumps(rows if args.mcp_command == "list" else rows[0], indent=2, ensure_ascii=False))
    elif not rows:
        print(f"No MCP servers configured (add one with `heron mcp add`, or write {user_config_path(home)}).")
    else:
        for row in rows:
            _print_row(row, detail=args.mcp_command == "get")
    return 0


def _config_json(server: ServerConfig) -> dict[str, Any]:
    return {"name": server.name, "scope": server.scope, "source": str(server.source), **server.to_json()}


def _row(server: ServerConfig, status: ServerStatus) -> dict[str, Any]:
    tools = [{"name": t.name, "description": t.description or "", "input_schema": t.input_schema} for t in status.tools]
    return {**_config_json(server), "state": status.state, "error": status.error, "tools": tools}


def _print_row(row: dict[str, Any], detail: bool) -> None:
    target = row.get("url") or " ".join([row.get("command", ""), *row.get("args", [])])
    state = row["state"] + (f": {row['error']}" if row["error"] else "")
    print(f"{row['name']} ({row['scope']}, {row.get('type', 'stdio')}) {target}")
    print(f"  status: {state}")
    for tool in row["tools"]:
        first = (tool["description"].strip().splitlines() or [""])[0]
        print(f"  - mcp__{row['name']}__{tool['name']}: {first[:100]}")
        if detail:
            print("    " + json.dumps(tool["input_schema"], ensure_ascii=False))


def _config_path(scope: str, cwd: Path, home: Path) -> Path:
    return project_config_path(cwd) if scope == "project" else user_config_path(home)


def _add(args: argparse.Namespace, cwd: Path, home: Path) -> int:
    rest = list(args.args)
    transport = args.transport or ("http" if args.target.startswith(("http://", "https://")) else "stdio")
    entry: dict[str, Any]
    if transport == "http":
        if rest or args.env:
            raise ValueError("an http server takes a URL and headers, not arguments or --env")
        headers = {}
        for header in args.header:
            key, sep, value = header.partition(":")
            if not sep or not key.strip():
                raise ValueError(f"--header {header!r}: write it as 'Name: value'")
            headers[key.strip()] = value.strip()
        entry = {"type": "http", "url": args.target, **({"headers": headers} if headers else {})}
    else:
        if args.header:
            raise ValueError("--header is for http servers")
        env = {}
        for item in args.env:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise ValueError(f"--env {item!r}: write it as KEY=VALUE")
            env[key] = value
        entry = {"command": args.target, "args": rest, **({"env": env} if env else {})}
    if args.lazy is not None:
        entry["lazy"] = args.lazy
    path = _config_path(args.scope, cwd, home)
    parse_server(args.name, entry, args.scope, path)  # the same checks as loading: refuse what would be skipped
    write_server(path, args.name, entry)
    print(f"Added MCP server {args.name!r} to {path}")
    return 0


def _remove(args: argparse.Namespace, cwd: Path, home: Path) -> int:
    path = _config_path(args.scope, cwd, home)
    if not remove_server(path, args.name):
        other = "project" if args.scope == "user" else "user"
        print(
            f"heron: no MCP server named {args.name!r} in {path} (is it in the {other} scope? use --scope {other})",
            file=sys.stderr,
        )
        return 1
    print(f"Removed MCP server {args.name!r} from {path}")
    return 0
