"""``heron sessions``: list session files, describe one, draw its tree, show the window
of its leaf (``context``), what a compaction would do to it (``compact-plan``), and
delete one with its spilled tool output (``delete``).

Imported by ``heron.cli.main`` to register the sub-command, so this module imports only
the standard library at the top; the session store is imported when a command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from heron.session.entries import Entry
    from heron.session.store import SessionStore


def add_parser(subparsers: Any) -> None:
    """Register ``sessions`` on the ``heron`` parser's sub-commands."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sessions", help="list and inspect session files", description="List and inspect session files."
    )
    commands = parser.add_subparsers(dest="sessions_command", metavar="COMMAND")
    commands.required = True
    listing = commands.add_parser("list", help="sessions of a directory (default: the current one), newest first")
    listing.add_argument("--cwd", default=None, help="the directory whose sessions to list")
    listing.add_argument("--all", action="store_true", help="sessions of every directory")
    info = commands.add_parser("info", help="counts, leaf, restored model and context size of one session")
    info.add_argument("file", help="a session file, or a unique prefix of a session id")
    info.add_argument("--json", action="store_true", help="print JSON")
    tree = commands.add_parser("tree", help="draw a session's entry tree")
    tree.add_argument("file", help="a session file, or a unique prefix of a session id")
    plan = commands.add_parser(
        "compact-plan",
        help="dry run: where a compaction of the leaf would cut (nothing is written, no model is called)",
    )
    plan.add_argument("file", help="a session file, or a unique prefix of a session id")
    plan.add_argument(
        "--keep-recent-tokens",
        type=_positive,
        default=None,
        metavar="N",
        help="tokens of recent messages kept verbatim (default 20000)",
    )
    plan.add_argument(
        "--reserve-tokens",
        type=_positive,
        default=None,
        metavar="N",
        help="tokens reserved for the answer and the summary (default 16384)",
    )
    plan.add_argument("--json", action="store_true", help="print JSON")
    context = commands.add_parser("context", help="what the leaf's context window holds, by tokens, and the ledger")
    context.add_argument("file", help="a session file, or a unique prefix of a session id")
    context.add_argument(
        "--window",
        type=_positive,
        default=None,
        metavar="TOKENS",
        help="the model's context window, to show shares and the compaction threshold",
    )
    context.add_argument("--json", action="store_true", help="print JSON")
    delete = commands.add_parser("delete", help="delete a session file and its spilled tool output")
    delete.add_argument("file", help="a session file, or a unique prefix of a session id")
    delete.add_argument("--yes", "-y", action="store_true", help="do not ask (needed without a terminal)")
    from heron.cli import report_cmd, search_cmd

    search_cmd.add_parser(commands)
    report_cmd.add_parser(commands)
    parser.set_defaults(handler=run)


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {value}")
    return number


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run a ``heron sessions`` command. What it prints holds session text (titles, the
    messages of ``tree``, search hits, file names): both streams show its control
    characters as text, so a session cannot drive the terminal (:mod:`heron.cli.terminal_text`)."""
    from heron.cli.terminal_text import visible_stream

    stdout = out or sys.stdout
    out = visible_stream(stdout, json_output=bool(getattr(args, "json", False)))
    err = visible_stream(err or sys.stderr)
    from heron.session.errors import SessionError
    from heron.session.paths import AmbiguousSessionError, SessionNotFoundError

    try:
        if args.sessions_command == "list":
            return _list(args, out)
        if args.sessions_command == "info":
            return _info(args, out, err)
        if args.sessions_command == "tree":
            return _tree(args, out, err)
        if args.sessions_command == "compact-plan":
            return _compact_plan(args, out, err)
        if args.sessions_command == "context":
            from heron.cli.sessions_context import run_context

            return run_context(args, out, err)
        if args.sessions_command == "delete":
            return _delete(args, out, err)
        if args.sessions_command == "search":
            from heron.cli import search_cmd

            return search_cmd.run(args, out, err)
        if args.sessions_command == "report":
            from heron.cli import report_cmd

            return report_cmd.run(args, out, err)
    except BrokenPipeError:  # `heron sessions tree … | head`: stop quietly
        if stdout is sys.stdout:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (SessionNotFoundError, AmbiguousSessionError, SessionError, OSError) as exc:
        print(f"heron sessions: {exc}", file=err)
        return 1
    print(f"heron sessions: unknown command {args.sessions_command!r}", file=err)
    return 2


# --- list ---------------------------------------------------------------------------------


def _list(args: argparse.Namespace, out: TextIO) -> int:
    from heron.session.paths import list_sessions

    sessions = list_sessions(args.cwd, all_cwds=args.all)
    if not sessions:
        print("no sessions", file=out)
        return 0
    for s in sessions:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.modified))
        title = s.name or _one_line(s.first_message or "(no messages)", 60)
        where = f"  {s.cwd}" if args.all else ""
        print(f"{when}  {s.id[:8]}  {s.message_count:>5} msgs  {title}{where}", file=out)
        print(f"    {s.path}", file=out)
        if s.parent_session:
            print(f"    from {s.parent_session}", file=out)
    return 0


# --- delete -------------------------------------------------------------------------------


def spill_folder(session_id: str) -> Path | None:
    """Where the tools spilled this session's oversized output (None for an id that
    cannot name a folder safely)."""
    from heron.coding.tools.env import ToolEnv
    from heron.session.paths import safe_session_id

    if not safe_session_id(session_id):
        return None
    return ToolEnv(cwd=Path.cwd(), session_id=session_id).spill_dir()


def _delete(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from heron.session.paths import delete_session, resolve_session

    path = resolve_session(args.file)
    with open_session(str(path)) as store:
        session_id = store.header.id
    spills = spill_folder(session_id)
    spill_files = sum(1 for p in spills.rglob("*") if p.is_file()) if spills is not None and spills.is_dir() else 0
    what = f"{path}" + (f" and {spill_files} spill file(s) in {spills}" if spill_files else "")
    if not args.yes:
        if not sys.stdin.isatty():
            print(f"heron sessions: deleting {what} needs --yes (no terminal to ask)", file=err)
            return 2
        if input(f"delete {what}? [y/N] ").strip().lower() not in ("y", "yes"):
            print("nothing deleted", file=out)
            return 1
    removed = delete_session(path, folders=[spills] if spills is not None else [])
    for item in removed:
        print(f"deleted {item}", file=out)
    if spills is None:
        print(f"warning: session id {session_id!r} cannot name a folder; spill files were not looked for", file=err)
    return 0


# --- info ---------------------------------------------------------------------------------


def session_info(store: SessionStore) -> dict[str, Any]:
    """The facts ``heron sessions info`` prints (indices are 0-based, header excluded)."""
    from heron.context.window.budget import estimate_context_tokens
    from heron.session.stats import session_stats

    stats = session_stats(store)
    context = store.build_context()
    messages = context.messages
    return {
        "path": str(store.path) if store.path is not None else None,
        "id": store.header.id,
        "cwd": store.header.cwd,
        "name": store.name,
        "version": store.header.version,
        "source_version": store.source_version,
        "parent_session": store.header.parent_session,
        "entries": stats.entries,
        "by_type": stats.by_type,
        "by_role": stats.by_role,
        "leaf_index": store.leaf_index,
        "leaf_id": store.leaf_id,
        "path_length": len(store.path_indices()) if store.leaf_id is not None else 0,
        "context_messages": len(messages),
        "context_first_role": messages[0].role if messages else None,
        "compaction_id": context.compaction_id,
        "model": str(context.model) if context.model is not None else None,
        "thinking_level": context.thinking_level,
        "estimated_context_tokens": estimate_context_tokens(messages),
        "labels": len(store.labels),
        "warnings": list(store.warnings),
    }


def open_session(ref: str) -> SessionStore:
    from heron.session.paths import resolve_session
    from heron.session.store import SessionStore

    return SessionStore.open(resolve_session(ref), read_only=True)


def _info(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_session(args.file) as store:
        info = session_info(store)
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False), file=out)
        return 0
    for key, value in info.items():
        if key == "warnings":
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in sorted(value.items(), key=lambda kv: -kv[1]))
        print(f"{key:>26}: {value}", file=out)
    for warning in info["warnings"]:
        print(f"warning: {warning}", file=err)
    return 0


# --- tree ---------------------------------------------------------------------------------


def _tree(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_session(args.file) as store:
        print(f"{store.path}  (session {store.header.id}, {len(store)} entries)", file=out)
        for line in render_tree(store):
            print(line, file=out)
        for warning in store.warnings:
            print(f"warning: {warning}", file=err)
    return 0


def render_tree(store: SessionStore, width: int = 72) -> list[str]:
    """One line per entry: a run of entries each the only child of the one before stays
    at one indentation; where an entry has several children each starts a branch
    (``├─`` / ``└─``) whose entries are indented under it. ``<- leaf`` marks the leaf;
    labels are shown in brackets."""
    children = store.children_indices()
    ids = store.ids()
    labels = store.labels
    leaf = store.leaf_index
    roots = [i for i in range(len(ids)) if store.parent_id_of(ids[i]) is None]
    lines: list[str] = []
    stack: list[tuple[int, str, str]] = [(r, "", "") for r in reversed(roots)]
    while stack:
        index, line_prefix, prefix = stack.pop()
        entry = store.entry_at(index, cache=False)
        text = _describe(entry, width) if entry is not None else "(malformed)"
        label = labels.get(ids[index])
        mark = f" [{label}]" if label else ""
        mark += "  <- leaf" if index == leaf else ""
        lines.append(f"{line_prefix}[{index}] {ids[index]} {text}{mark}")
        kids = children[index]
        if len(kids) == 1:
            stack.append((kids[0], prefix, prefix))
        elif kids:
            # every child starts a branch, and what follows a branch is indented under it -
            # under the last one too (with blanks where the others have the rail), so a
            # branch's entries never line up with the entries above the branch point
            for n, kid in reversed(list(enumerate(kids))):
                last = n == len(kids) - 1
                stack.append((kid, prefix + ("└─ " if last else "├─ "), prefix + ("   " if last else "│  ")))
    return lines


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _describe(entry: Entry, width: int) -> str:
    from heron.agent.messages import BashExecutionMessage
    from heron.agent.tools import inner_calls_summary
    from heron.ai.types import AssistantMessage, TextContent, ToolResultMessage, UserMessage
    from heron.session.entries import (
        BranchSummaryEntry,
        CompactionEntry,
        CustomEntry,
        CustomMessageEntry,
        LabelEntry,
        MessageEntry,
        ModelChangeEntry,
        SessionInfoEntry,
        ThinkingLevelChangeEntry,
    )

    if isinstance(entry, MessageEntry):
        message = entry.message
        if isinstance(message, UserMessage):
            return f"user: {_one_line(message.text(), width)}"
        if isinstance(message, AssistantMessage):
            calls = ", ".join(c.name for c in message.tool_calls())
            body = _one_line(message.text(), width)
            return f"assistant: {body}" + (f" -> {calls}" if calls else "")
        if isinstance(message, ToolResultMessage):
            error = " (error)" if message.is_error else ""
            inner = inner_calls_summary(message.details)  # a script's calls, recorded in its details
            return f"toolResult {message.tool_name}{error}{inner}: {_one_line(message.text(), width)}"
        if isinstance(message, BashExecutionMessage):
            return f"bashExecution: {_one_line(message.command, width)}"
        return f"{message.role}"
    if isinstance(entry, ModelChangeEntry):
        return f"model_change {entry.provider}/{entry.model_id}"
    if isinstance(entry, ThinkingLevelChangeEntry):
        return f"thinking_level_change {entry.thinking_level}"
    if isinstance(entry, CompactionEntry):
        return f"compaction (tokens before {entry.tokens_before}, first kept {entry.first_kept_entry_id})"
    if isinstance(entry, BranchSummaryEntry):
        return f"branch_summary from {entry.from_id}: {_one_line(entry.summary, width)}"
    if isinstance(entry, LabelEntry):
        return f"label {entry.target_id} = {entry.label!r}"
    if isinstance(entry, SessionInfoEntry):
        return f"session_info name={entry.name!r}"
    if isinstance(entry, CustomMessageEntry):
        content = entry.content
        text = content if isinstance(content, str) else "".join(b.text for b in content if isinstance(b, TextContent))
        link = _handoff_link(entry.custom_type, entry.details, "parentSession", "handed off from")
        return f"custom_message {entry.custom_type}{link}: {_one_line(text, width)}"
    if isinstance(entry, CustomEntry):
        return f"custom {entry.custom_type}" + _handoff_link(entry.custom_type, entry.data, "child", "handed off to")
    return entry.type


def _handoff_link(custom_type: str, data: Any, key: str, words: str) -> str:
    """A handoff names the other session in ``/tree`` and ``heron sessions tree``: the
    parent's record its child, the child's frontier message its parent."""
    from heron.coding.handoff_link import HANDOFF_CUSTOM_TYPE

    target = data.get(key) if custom_type == HANDOFF_CUSTOM_TYPE and isinstance(data, dict) else None
    return f" ({words} {target})" if isinstance(target, str) else ""


# --- compact-plan -------------------------------------------------------------------------


def compact_plan(
    store: SessionStore, *, keep_recent_tokens: int | None = None, reserve_tokens: int | None = None
) -> dict[str, Any]:
    """What compacting the leaf would do, computed with :func:`prepare_compaction` (the
    runtime's own cut-point search) and nothing else: no entry is written, no model is
    called. Indices are 0-based positions in the file's entry list without the header."""
    from heron.agent.tool_meta import ToolCatalog
    from heron.coding.tools import builtin_meta
    from heron.context.compaction.plan import CompactionSettings, prepare_compaction
    from heron.context.records.decisions import ContextDecisions
    from heron.context.window.budget import estimate_context_tokens

    defaults = CompactionSettings()
    settings = CompactionSettings(
        reserve_tokens=reserve_tokens if reserve_tokens is not None else defaults.reserve_tokens,
        keep_recent_tokens=keep_recent_tokens if keep_recent_tokens is not None else defaults.keep_recent_tokens,
    )
    leaf = store.leaf_id
    indices = store.path_indices() if leaf is not None else []
    path = store.path_to(leaf) if leaf is not None else []
    tokens_before = estimate_context_tokens(store.build_context().messages)
    shown = ContextDecisions.from_entries(path).call_args  # calls the session's requests show shortened
    plan = prepare_compaction(path, settings, ToolCatalog(fallback=builtin_meta), shown)  # the built-in tools' calls
    out: dict[str, Any] = {
        "path": str(store.path) if store.path is not None else None,
        "leaf_index": store.leaf_index,
        "path_length": len(path),
        "keep_recent_tokens": settings.keep_recent_tokens,
        "reserve_tokens": settings.reserve_tokens,
        "tokens_before": tokens_before,
    }
    if plan is None:
        reason = (
            "the leaf is a compaction"
            if path and path[-1].type == "compaction"
            else ("the session is empty" if not path else "everything fits in the keep-recent budget")
        )
        out.update(
            compact=False,
            reason=reason,
            first_kept_index=None,
            first_kept_entry_id=None,
            turn_start_index=-1,
            split_turn=False,
            region_start_index=None,
            messages_to_summarize=0,
            turn_prefix_messages=0,
            read_files=[],
            modified_files=[],
            user_requests=0,
            previous_summary=any(e.type == "compaction" for e in path),
        )
        return out
    out.update(
        compact=True,
        reason=None,
        first_kept_index=indices[plan.first_kept_index],
        first_kept_entry_id=plan.first_kept_entry_id,
        turn_start_index=indices[plan.turn_start_index] if plan.split_turn else -1,
        split_turn=plan.split_turn,
        region_start_index=indices[plan.region_start],
        messages_to_summarize=len(plan.messages_to_summarize),
        turn_prefix_messages=len(plan.turn_prefix_messages),
        read_files=list(plan.read_files),
        modified_files=list(plan.modified_files),
        user_requests=len(plan.user_requests),
        previous_summary=plan.previous is not None,
    )
    return out


def _compact_plan(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with open_session(args.file) as store:
        data = compact_plan(store, keep_recent_tokens=args.keep_recent_tokens, reserve_tokens=args.reserve_tokens)
        warnings = list(store.warnings)
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False), file=out)
    else:
        for key, value in data.items():
            if isinstance(value, list):
                value = ", ".join(value) if value else "(none)"
            print(f"{key:>22}: {value}", file=out)
    for warning in warnings:
        print(f"warning: {warning}", file=err)
    return 0
