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

from heron.agent.tool_meta import ToolMeta, arg_str
from heron.ai.types import TextContent

# What an editor does with each kind a tool declares: `read` and `search` are shown folded,
# `edit` opens a diff, `execute` a command; the rest is `other`.
KINDS: dict[str, ToolKind] = {
    "read": "read",
    "edit": "edit",
    "write": "edit",
    "execute": "execute",
    "search": "search",
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


def write_before(meta: ToolMeta, args: dict[str, Any], cwd: Path) -> Before:
    """The old text of the file a ``write``-kind call names, read now (before the call runs)."""
    written = [use for use in meta.uses(args) if use.access == "write"]
    return old_text(written[0].resolved(cwd)) if written else Old.UNKNOWN


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


def tool_kind(meta: ToolMeta) -> ToolKind:
    return KINDS.get(meta.kind, "other")


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


def locations(meta: ToolMeta, args: dict[str, Any], cwd: Path) -> list[ToolCallLocation]:
    """The files a call touches, as its tool declares them (a read with its first line)."""
    return [ToolCallLocation(path=use.resolved(cwd), line=use.offset) for use in meta.uses(args)]


def title(name: str, meta: ToolMeta, args: dict[str, Any], cwd: Path) -> str:
    uses = meta.uses(args)
    first = uses[0] if uses else None
    shown = _shown(first.resolved(cwd), cwd) if first is not None else ""
    if meta.kind == "read" and first is not None:
        if first.offset is not None or first.limit is not None:
            start = first.offset if first.offset is not None else 1
            end = f"{start + first.limit - 1}" if first.limit is not None else ""
            return f"Read {shown} ({start}-{end})"
        return f"Read {shown}"
    if meta.kind in ("edit", "write") and first is not None:
        return f"{meta.kind.capitalize()} {shown}"
    command = meta.command_of(args)
    if meta.kind == "execute" and command is not None:
        line = command.strip().splitlines()[0] if command.strip() else ""
        return f"`{line[:200]}`"
    pattern = arg_str(args, "pattern")
    if meta.kind == "search" and pattern is not None:
        where = f" in {_shown(_abs(args.get('path'), cwd) or '', cwd)}" if arg_str(args, "path") else ""
        return f"{name} {pattern[:200]}{where}"
    if meta.kind == "search" and first is not None and first.listing:
        return f"List {shown}"
    return name


def diffs(meta: ToolMeta, args: dict[str, Any], cwd: Path, before: Before = Old.DISK) -> list[FileEditToolCallContent]:
    """The change an edit or write makes, as ACP diff content.

    An ``edit``-kind tool gives each replaced piece (``old_text``/``new_text``, or a list of
    them in ``edits``); a ``write``-kind tool the whole new ``content`` and the file's text
    before it (``before``; no old text only for a new file, which is what clients take a
    missing old text to mean)."""
    written = [use for use in meta.uses(args) if use.access == "write"]
    if not written:
        return []
    path = written[0].resolved(cwd)
    if meta.kind == "write" and isinstance(args.get("content"), str):
        old = old_text(path) if before is Old.DISK else before
        if isinstance(old, Old):
            return []
        return [FileEditToolCallContent(type="diff", path=path, new_text=args["content"], old_text=old)]
    if meta.kind != "edit":
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


def start(
    call_id: str, name: str, meta: ToolMeta, args: dict[str, Any], cwd: Path, before: Before = Old.DISK
) -> ToolCallStart:
    """The ``tool_call`` update announcing a call the model made (status pending)."""
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=title(name, meta, args, cwd),
        kind=tool_kind(meta),
        status="pending",
        locations=locations(meta, args, cwd),
        content=list(diffs(meta, args, cwd, before)) or None,
        raw_input=args,
    )


def running(call_id: str) -> ToolCallProgress:
    return ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, status="in_progress")


def finished(
    call_id: str,
    meta: ToolMeta,
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
        content.extend(diffs(meta, args, cwd, before))
    if text:
        content.append(ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text)))
    found = locations(meta, args or {}, cwd)
    line = details.get("first_changed_line") if isinstance(details, dict) else None
    if found and meta.kind == "edit" and isinstance(line, int):
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
