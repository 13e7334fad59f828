"""``heron memory``: review and undo the changes to a project's memory (docs/memory.md).

``log`` lists the changes (date, reason, session, files), ``show REV`` one change with its
patch, ``diff [REV]`` the notes now against a change (default: the last), ``revert REV``
undoes one change as a new change (history is never rewritten). Each reads the memory
history heron keeps for the project's memory directory (:mod:`heron.coding.memory_history`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from heron.ai.models import heron_home
from heron.cli.terminal_text import visible
from heron.coding.memory import memory_dir
from heron.coding.memory_history import MemoryChange, MemoryHistory, MemoryHistoryError
from heron.coding.settings import load_settings


def add_parser(subparsers: Any) -> None:
    """Register ``memory`` on the ``heron`` parser's sub-commands."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "memory", help="review the project memory's history", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--cwd", default=None, help="the project directory (default: the current one)")
    commands = parser.add_subparsers(dest="memory_command", metavar="COMMAND")
    commands.required = True
    log = commands.add_parser("log", help="the changes, newest first: date, reason, session, files")
    log.add_argument("--json", action="store_true", help="print JSON")
    show = commands.add_parser("show", help="one change with its patch (default: the last)")
    show.add_argument("rev", nargs="?", default="HEAD", help="a change (commit id or prefix, HEAD~1, ...)")
    diff = commands.add_parser("diff", help="the notes now against a change (default: the last)")
    diff.add_argument("rev", nargs="?", default=None, help="a change (commit id or prefix, HEAD~1, ...)")
    revert = commands.add_parser("revert", help="undo one change, as a new change")
    revert.add_argument("rev", help="the change to undo (commit id or prefix)")
    for command in (log, show, diff, revert):
        command.add_argument("--cwd", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    parser.set_defaults(handler=run)


def project_history(cwd: str | None) -> MemoryHistory:
    project = Path(cwd or ".").resolve()
    home = heron_home()
    settings = load_settings(project, home).memory
    return MemoryHistory(memory_dir(home, project, settings.directory), home)


def change_line(change: MemoryChange) -> str:
    data = change.to_json()
    session = f"  session {change.session[:8]}" if change.session else ""
    files = ", ".join(change.files) or "-"
    return f"{change.commit[:12]}  {data['date']}  {change.reason:<13}{session}  {files}"


def run(args: argparse.Namespace) -> int:
    history = project_history(args.cwd)
    try:
        code = _run(history, args)
    except MemoryHistoryError as exc:
        print(f"heron memory: {exc}", file=sys.stderr)
        code = 1
    for notice in history.take_notices():
        print(f"heron memory: {notice}", file=sys.stderr)
    return code


def _run(history: MemoryHistory, args: argparse.Namespace) -> int:
    command = args.memory_command
    if history.directory.exists() and not history.directory.is_dir():
        raise MemoryHistoryError(f"the memory directory {history.directory} is a file (see memory.directory)")
    if command == "log":
        changes = history.log()
        if args.json:
            print(json.dumps([c.to_json() for c in changes], indent=1))
        elif not changes:
            print(f"no memory changes recorded for {history.directory}")
        else:
            print("\n".join(visible(change_line(c)) for c in changes))
        return 0
    if not history.exists:
        raise MemoryHistoryError(f"no memory history yet for {history.directory}")
    if command == "show":
        sys.stdout.write(visible(history.show(args.rev)))
    elif command == "diff":
        sys.stdout.write(visible(history.diff(args.rev)))
    elif command == "revert":
        change = history.revert(args.rev)
        print(f"reverted {args.rev} as {change.commit[:12]} ({', '.join(change.files)})")
    return 0
