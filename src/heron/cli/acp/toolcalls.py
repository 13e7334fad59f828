"""Heron tool calls described the way ACP clients show them: kind, title, files, diffs.

One set of functions serves both the live stream and the replay of a stored session, so
an editor that reloads a session sees the same tool calls it saw while they ran.
"""

from __future__ import annotations

import enum
import json
import os
from pathlib import Path
from typing import Any

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolKind,
)

from heron.ai.types import TextContent

# What an editor does with each kind: `read` and `search` are shown folded, `edit` opens
# a diff, `execute` a command. Tools not named here are `other`.
KINDS: dict[str, ToolKind] = {
    "read": "read",
    "ls": "read",
    "json_query": "read",
    "edit": "edit",
    "write": "edit",
    "bash": "execute",
    "grep": "search",
    "find": "search",
    "search_history": "search",
    "tool_search": "search",
    "task": "other",
}
# The longest tool output sent back to the client for display (the model's copy is not affected).
MAX_SHOWN_CHARS = 20_000
# The largest file whose old text a write's diff carries (a bigger one gets no diff).
MAX_OLD_BYTES = 1_000_000


class Old(enum.Enum):
    """Where a write's old text comes from when it is not given: the file as it is now
    (before the call ran), or nowhere (not known: no diff, rather than one claiming a new file)."""

    DISK = "disk"
    UNKNOWN = "unknown"


Before = str | None | Old  # a write's old text: the text, None for a new file, or an Old


def write_before(args: dict[str, Any], cwd: Path) -> Before:
    """The old text of the file a write call names, read now (before the call runs)."""
    path = _abs(args.get("path"), cwd)
    return old_text(path) if path is not None else Old.UNKNOWN


def old_text(path: str) -> str | Old | None:
    """The text of the file a write is about to replace (None: there is none)."""
    try:
        if not os.path.lexists(path):
            return None
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_OLD_BYTES:
            return Old.UNKNOWN
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return Old.UNKNOWN


def tool_kind(name: str) -> ToolKind:
    return KINDS.get(name, "other")


def _abs(raw: Any, cwd: Path) -> str | None:
    if not isinstance(raw, str) or not raw.strip():
        return None
    text = raw.strip().removeprefix("@")
    path = Path(os.path.expanduser(text))
    return os.path.normpath(path if path.is_absolute() else cwd / path)


def _shown(path: str, cwd: Path) -> str:
    try:
        return str(Path(path).relative_to(cwd))
    except ValueError:
        return path


def locations(name: str, args: dict[str, Any], cwd: Path) -> list[ToolCallLocation]:
    """The files a call names: ``path`` of read/edit/write/grep/find/ls (read with its line)."""
    path = _abs(args.get("path"), cwd)
    if path is None:
        return []
    line = args.get("offset") if name == "read" and isinstance(args.get("offset"), int) else None
    return [ToolCallLocation(path=path, line=line)]


def title(name: str, args: dict[str, Any], cwd: Path) -> str:
    path = _abs(args.get("path"), cwd)
    shown = _shown(path, cwd) if path else ""
    if name == "read" and shown:
        offset, limit = args.get("offset"), args.get("limit")
        if isinstance(offset, int) or isinstance(limit, int):
            start = offset if isinstance(offset, int) else 1
            end = f"{start + limit - 1}" if isinstance(limit, int) else ""
            return f"Read {shown} ({start}-{end})"
        return f"Read {shown}"
    if name in ("edit", "write") and shown:
        return f"{name.capitalize()} {shown}"
    if name == "bash" and isinstance(args.get("command"), str):
        first = args["command"].strip().splitlines()[0] if args["command"].strip() else ""
        return f"`{first[:200]}`"
    if name in ("grep", "find") and isinstance(args.get("pattern"), str):
        return f"{name} {args['pattern'][:200]}" + (f" in {shown}" if shown else "")
    if name == "ls":
        return f"List {shown or '.'}"
    return name


def diffs(name: str, args: dict[str, Any], cwd: Path, before: Before = Old.DISK) -> list[FileEditToolCallContent]:
    """The change an edit or write makes, as ACP diff content.

    An edit gives each replaced piece (old and new text); a write gives the whole new
    content and the file's text before it (``before``; no old text only for a new file,
    which is what clients take a missing old text to mean)."""
    path = _abs(args.get("path"), cwd)
    if path is None:
        return []
    if name == "write" and isinstance(args.get("content"), str):
        old = old_text(path) if before is Old.DISK else before
        if isinstance(old, Old):
            return []
        return [FileEditToolCallContent(type="diff", path=path, new_text=args["content"], old_text=old)]
    if name != "edit":
        return []
    pairs: list[tuple[Any, Any]] = []
    if isinstance(args.get("edits"), list):
        pairs = [(e.get("old_text"), e.get("new_text")) for e in args["edits"] if isinstance(e, dict)]
    else:
        pairs = [(args.get("old_text"), args.get("new_text"))]
    return [
        FileEditToolCallContent(type="diff", path=path, old_text=old, new_text=new)
        for old, new in pairs
        if isinstance(old, str) and isinstance(new, str)
    ]


def start(call_id: str, name: str, args: dict[str, Any], cwd: Path, before: Before = Old.DISK) -> ToolCallStart:
    """The ``tool_call`` update announcing a call the model made (status pending)."""
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=title(name, args, cwd),
        kind=tool_kind(name),
        status="pending",
        locations=locations(name, args, cwd),
        content=list(diffs(name, args, cwd, before)) or None,
        raw_input=args,
    )


def running(call_id: str) -> ToolCallProgress:
    return ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, status="in_progress")


def finished(
    call_id: str,
    name: str,
    args: dict[str, Any] | None,
    blocks: list[Any],
    is_error: bool,
    details: Any,
    cwd: Path,
    before: Before = Old.UNKNOWN,
) -> ToolCallProgress:
    """The final ``tool_call_update``: status, the output text, and the edit's diff again
    (so a client that missed the start still shows it; a write's with ``before``, its
    file's old text, which the file no longer has)."""
    text = "".join(b.text for b in blocks if isinstance(b, TextContent))
    if len(text) > MAX_SHOWN_CHARS:
        text = text[:MAX_SHOWN_CHARS] + f"\n[... {len(text) - MAX_SHOWN_CHARS} more characters]"
    content: list[ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent] = []
    if args is not None and not is_error:
        content.extend(diffs(name, args, cwd, before))
    if text:
        content.append(ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text)))
    found = locations(name, args or {}, cwd)
    line = details.get("first_changed_line") if isinstance(details, dict) else None
    if found and name == "edit" and isinstance(line, int):
        found = [ToolCallLocation(path=found[0].path, line=line)]
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        status="failed" if is_error else "completed",
        content=content,
        locations=found or None,
        raw_output=raw_output(text, is_error, details),
    )


def raw_output(text: str, is_error: bool, details: Any) -> dict[str, Any]:
    """The call's result as data (ACP's ``rawOutput``): the text shown, whether it failed,
    and the tool's details when they are small JSON (a big or odd one is left out)."""
    out: dict[str, Any] = {"output": text, "isError": is_error}
    if isinstance(details, dict):
        try:
            if len(json.dumps(details)) <= MAX_SHOWN_CHARS:
                out["details"] = details
        except (TypeError, ValueError):
            pass
    return out
