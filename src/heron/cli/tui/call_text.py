"""How a tool call and its result are put into words for the terminal: the call's one
line (``read src/app.py:10-59``, ``bash pytest -q``) by what its tool declares, the head
of a result with every truncation notice and outcome line kept, an edit's changed lines.
The renderer, the recap of a resumed session, the permission prompt and the live block
all describe calls here, so they describe them the same way."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from heron.agent.tool_meta import ToolMeta
from heron.ai.types import ImageContent, TextContent
from heron.cli.terminal_text import visible

RESULT_LINES = 4  # lines of a tool result shown under its call
CALL_WIDTH = 160  # a tool call line is cut to this (or the console width)

NOTICE = re.compile(r"^\[.*\]$")
# Lines the bash tool appends after the output: the outcome, always worth showing.
STATUS = re.compile(
    r"^(Command (exited with code|timed out after|aborted|terminated by signal)|Background processes still)"
)


def _one_line(text: str, width: int) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    more = len(text.strip().splitlines()) > 1
    if len(first) > width:
        return first[: max(1, width - 1)] + "…"
    return first + (" …" if more else "")


def _str(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    return value if isinstance(value, str) and value else None


def describe_call(name: str, meta: ToolMeta, args: dict[str, Any], width: int = CALL_WIDTH) -> str:
    """``read src/app.py:10-59``, ``bash pytest -q``: what the call does, on one line, by
    what its tool declares (the model wrote the arguments: control characters are shown,
    not sent)."""
    return visible(_describe_call(name, meta, args, width))


def _lines_of(content: Any) -> int:
    if not isinstance(content, str) or not content:
        return 0
    return content.count("\n") + (0 if content.endswith("\n") else 1)


def _describe_call(name: str, meta: ToolMeta, args: dict[str, Any], width: int) -> str:
    uses = meta.uses(args)
    first = uses[0] if uses else None
    path = first.path.removeprefix("@") if first is not None else None
    command = meta.command_of(args)
    pattern = _str(args, "pattern")
    detail: str
    if meta.kind == "read" and first is not None and path:
        detail = path
        offset, limit = first.offset, first.limit
        if offset is not None and limit is not None:
            detail += f":{offset}-{offset + limit - 1}"
        elif offset is not None:
            detail += f":{offset}"
        elif limit is not None:
            detail += f":1-{limit}"
    elif meta.kind == "write" and path:
        lines = _lines_of(args.get("content"))
        detail = f"{path} ({lines} line{'s' if lines != 1 else ''})"
    elif meta.kind == "edit" and path:
        edits = args.get("edits")
        detail = path + (f" ({len(edits)} edits)" if isinstance(edits, list) and len(edits) > 1 else "")
    elif meta.kind == "execute" and command:
        detail = _one_line(command, width)
        timeout = args.get("timeout")
        if isinstance(timeout, int | float) and not isinstance(timeout, bool):
            detail += f" (timeout {timeout:g}s)"
    elif meta.kind == "search" and first is not None and pattern:
        detail = pattern if first.listing else json.dumps(pattern, ensure_ascii=False)  # a regex: quoted
        where = _str(args, "path")
        if where:
            detail += f" in {where.removeprefix('@')}"
        glob = _str(args, "glob")
        if glob:
            detail += f" ({glob})"
    elif meta.kind == "search" and first is not None and first.listing:
        detail = path or "."
    else:
        detail = json.dumps(args, ensure_ascii=False, separators=(",", ":")) if args else ""
    return _one_line(f"{name} {detail}".strip(), width)


@dataclass(slots=True)
class PreviewLine:
    text: str
    kind: str  # "body", "more" (the "… N more lines" line), "notice", "status"


def result_preview(text: str, max_lines: int = RESULT_LINES) -> list[PreviewLine]:
    """The first ``max_lines`` lines of a result, a count of the rest, then every notice
    (``[Showing lines …]``, ``[Output too large …]``) and outcome line, never cut."""
    lines = text.rstrip("\n").splitlines() if text.strip() else []
    if not lines:
        return [PreviewLine("(no output)", "more")]
    special = [i for i, line in enumerate(lines) if NOTICE.match(line.strip()) or STATUS.match(line.strip())]
    special_set = set(special)
    body = [i for i in range(len(lines)) if i not in special_set]
    # blank lines before a notice are separators, not content
    while body and not lines[body[-1]].strip():
        body.pop()
    out = [PreviewLine(lines[i], "body") for i in body[:max_lines]]
    hidden = len(body) - max_lines
    if hidden > 0:
        out.append(PreviewLine(f"… {hidden} more line{'s' if hidden != 1 else ''}", "more"))
    for i in special:
        kind = "notice" if NOTICE.match(lines[i].strip()) else "status"
        out.append(PreviewLine(lines[i].strip(), kind))
    return out


def result_text(content: Iterable[Any]) -> str:
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(visible(block.text))
        elif isinstance(block, ImageContent):
            parts.append(f"(image, {block.mime_type})")
    return "\n".join(parts)


def notices_of(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if NOTICE.match(line.strip())]


def diff_lines(diff: str, limit: int = 8) -> tuple[list[str], int, int]:
    """The changed lines of a unified diff (first ``limit``), and the counts of added and
    removed lines."""
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    added = sum(1 for line in changed if line.startswith("+"))
    return changed[:limit], added, len(changed) - added
