"""``heron sessions``: list session files, describe one, draw its tree.

Imported by ``heron.cli.main`` to register the sub-command, so this module imports only
the standard library at the top; the session store is imported when a command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
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
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    from heron.session.paths import AmbiguousSessionError, SessionNotFoundError

    try:
        if args.sessions_command == "list":
            return _list(args, out)
        if args.sessions_command == "info":
            return _info(args, out, err)
        if args.sessions_command == "tree":
            return _tree(args, out, err)
    except BrokenPipeError:  # `heron sessions tree … | head`: stop quietly
        if out is sys.stdout:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (SessionNotFoundError, AmbiguousSessionError, OSError) as exc:
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
    return 0


# --- info ---------------------------------------------------------------------------------


def session_info(store: SessionStore) -> dict[str, Any]:
    """The facts ``heron sessions info`` prints (indices are 0-based, header excluded)."""
    from heron.context.budget import estimate_context_tokens
    from heron.session.store import count_by

    types = store.types()
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
        "entries": len(types),
        "by_type": count_by(types),
        "by_role": count_by([r for r, t in zip(store.roles(), types, strict=True) if t == "message"]),
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


def _open(ref: str) -> SessionStore:
    from heron.session.paths import resolve_session
    from heron.session.store import SessionStore

    return SessionStore.open(resolve_session(ref), read_only=True)


def _info(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with _open(args.file) as store:
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
    with _open(args.file) as store:
        print(f"{store.path}  (session {store.header.id}, {len(store)} entries)", file=out)
        for line in render_tree(store):
            print(line, file=out)
        for warning in store.warnings:
            print(f"warning: {warning}", file=err)
    return 0


def render_tree(store: SessionStore, width: int = 72) -> list[str]:
    """One line per entry: a run of entries each the only child of the one before stays
    at one indentation; where an entry has several children each starts a branch
    (``├─`` / ``└─``), the last one continuing at the same indentation. ``<- leaf`` marks
    the leaf; labels are shown in brackets."""
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
            # the last child carries on at this indentation (so the main line does not drift
            # right at every branch point); the others are drawn as branches off it
            for n, kid in reversed(list(enumerate(kids))):
                last = n == len(kids) - 1
                stack.append((kid, prefix + ("└─ " if last else "├─ "), prefix if last else prefix + "│  "))
    return lines


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _describe(entry: Entry, width: int) -> str:
    from heron.agent.messages import BashExecutionMessage
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
            return f"toolResult {message.tool_name}{error}: {_one_line(message.text(), width)}"
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
        return f"custom_message {entry.custom_type}: {_one_line(text, width)}"
    if isinstance(entry, CustomEntry):
        return f"custom {entry.custom_type}"
    return entry.type
