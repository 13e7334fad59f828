"""A tool call being written, as the live block shows it while its arguments stream: its
line (``● bash pytest -q``, ``● edit src/app.py``) and under it what the arguments hold
so far: a multi-line command's lines, the new content of a ``write``, and for an edit
its replacements as old → new lines (``- old``, ``+ new``), so the user sees what is
about to change before the call runs (and can press Esc). The tail is shown when there
is more than fits, since that is where the text is arriving.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from heron.agent.tool_meta import ToolMeta
from heron.cli.terminal_text import visible

PREVIEW_LINES = 10  # lines under the call's line, at most


def _text(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    return value if isinstance(value, str) else None


def _replacements(args: dict[str, Any]) -> list[tuple[str | None, str | None]]:
    """The edit's (old, new) pairs received so far (either form of the edit tool)."""
    pairs: list[tuple[str | None, str | None]] = []
    if _text(args, "old_text") is not None or _text(args, "new_text") is not None:
        pairs.append((_text(args, "old_text"), _text(args, "new_text")))
    edits = args.get("edits")
    if isinstance(edits, list):
        pairs += [(_text(e, "old_text"), _text(e, "new_text")) for e in edits if isinstance(e, dict)]
    return pairs


def preview_lines(meta: ToolMeta, args: dict[str, Any]) -> list[tuple[str, str]]:
    """(text, style) lines of what the arguments hold so far (none for a one-line call)."""
    lines: list[tuple[str, str]] = []
    if meta.kind == "edit":
        for old, new in _replacements(args):
            lines += [(f"- {line}", "red") for line in (old or "").splitlines()]
            lines += [(f"+ {line}", "green") for line in (new or "").splitlines()]
    elif meta.kind == "write":
        lines += [(line, "dim") for line in (_text(args, "content") or "").splitlines()]
    elif meta.kind == "execute":
        command = meta.command_of(args) or ""
        if "\n" in command.strip():
            lines += [(line, "dim") for line in command.strip().splitlines()]
    return lines


def call_preview(
    description: str, meta: ToolMeta, args: dict[str, Any], width: int, bullet: str = "●", bar: str = "│"
) -> list[Text]:
    """The call's line, then the last :data:`PREVIEW_LINES` lines of its arguments, each
    cut to ``width`` cells (the model wrote them: control characters are shown, not sent)."""
    head = Text(f"{bullet} ", style="cyan")
    name, _, rest = description.partition(" ")
    head.append(name, style="bold")
    head.append(f" {rest} …" if rest else " …", style="dim")
    out = [head]
    lines = preview_lines(meta, args)
    if len(lines) > PREVIEW_LINES:
        out.append(Text(f"  {bar} … {len(lines) - PREVIEW_LINES} lines above", style="dim italic"))
        lines = lines[-PREVIEW_LINES:]
    for line, style in lines:
        text = Text(f"  {bar} ", style="dim")
        text.append(visible(line), style=style)
        text.truncate(width, overflow="ellipsis")
        out.append(text)
    return out
