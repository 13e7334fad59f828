"""``heron sessions search QUERY``: full-text search over recorded sessions.

By default the sessions of the current directory's project are searched; ``--session``
names one session (file or id prefix), ``--all`` searches every session. The recall
index (``$HERON_HOME/index/recall.sqlite3``) catches up with the session files first.
``--json`` prints an array of hits. Exit status as grep's: 0 with matches, 1 without,
2 for a query FTS5 rejects. Standard library only at the top: it is imported to
register the sub-command.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, TextIO


def add_parser(commands: Any) -> None:
    """Register ``search`` on the ``heron sessions`` sub-commands."""
    search = commands.add_parser(
        "search", help="full-text search of session history (default: this directory's sessions)"
    )
    search.add_argument("query", help='words to find; FTS5 syntax ("phrase", AND/OR/NOT, NEAR, prefix*) as written')
    where = search.add_mutually_exclusive_group()
    where.add_argument("--session", default=None, metavar="PATH|ID", help="search one session (file or id prefix)")
    where.add_argument("--all", action="store_true", help="search every session")
    search.add_argument("--limit", type=int, default=20, metavar="N", help="most matches to show (default 20)")
    search.add_argument("--json", action="store_true", help="print a JSON array of hits")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from heron.session.naming import encode_cwd, session_id_of
    from heron.session.paths import resolve_session
    from heron.session.recall import QueryError, RecallError, RecallIndex, Scope

    scope: Scope = "project"
    session_id: str | None = None
    files: list[str] = []
    if args.session is not None:
        path = resolve_session(args.session)
        scope, session_id, files = "session", _header_id(path) or session_id_of(path), [str(path)]
    elif args.all:
        scope = "all"
    if args.limit < 1:
        print("heron sessions search: --limit must be positive", file=err)
        return 2
    try:
        with RecallIndex() as index:
            result = index.search(
                args.query,
                scope=scope,
                session_id=session_id,
                project=encode_cwd(os.path.abspath(os.getcwd())),
                limit=args.limit,
                files=files,
            )
    except QueryError as exc:
        print(f"heron sessions search: {exc}", file=err)
        return 2
    except RecallError as exc:
        print(f"heron sessions search: {exc}", file=err)
        return 1
    for note in result.notes:
        print(f"heron sessions search: {note}", file=err)
    if args.json:
        keys = ("session", "entry_id", "role", "tool", "timestamp", "snippet", "source", "path", "line")
        hits = [{k: hit.to_json()[k] for k in keys} for hit in result.hits]
        print(json.dumps(hits, ensure_ascii=False, indent=2), file=out)
    else:
        _print_hits(result.hits, out)
    return 0 if result.hits else 1


def _header_id(path: os.PathLike[str] | str) -> str | None:
    """The session id in a file's header line (the file name may not carry it)."""
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.readline())
    except (OSError, ValueError):
        return None
    value = data.get("id") if isinstance(data, dict) and data.get("type") == "session" else None
    return value if isinstance(value, str) and value else None


def _print_hits(hits: list[Any], out: TextIO) -> None:
    if not hits:
        print("no matches", file=out)
        return
    for hit in hits:
        what = hit.role or "entry"
        if hit.tool:
            what += f" ({hit.tool})"
        where = f"entry {hit.entry_id}" if hit.entry_id else ""
        if hit.source == "spill":
            where = f"{where}  {hit.path}:{hit.line}".strip()
        print(f"{hit.session[:8]}  {hit.timestamp or '-'}  {what}  {where}".rstrip(), file=out)
        print(f"    {hit.snippet}", file=out)
