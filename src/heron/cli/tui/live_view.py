"""The live block: the part of the answer (or thinking) received but not printed yet,
rendered as markdown where the user reads, just above the input line.

The renderer prints settled blocks into the transcript (they scroll into the terminal's
scrollback and are never redrawn); the block still growing is drawn by prompt_toolkit as
part of the input line's prompt, so each chunk shows in place the moment it arrives and
only this block is re-rendered. It is cut to the terminal width by rich (wide and
combining characters counted by their cells) and to its last :data:`LIVE_LINES` lines,
so the area stays small; the settled text above it is not touched.
"""

from __future__ import annotations

import re
from io import StringIO
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from heron.cli.tui.sanitize import visible

if TYPE_CHECKING:
    from heron.cli.tui.render import Renderer

LIVE_LINES = 12
_STYLES = re.compile(r"\x1b\[[0-9;]*m")
_PADDING = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$")  # rich pads lines to the width: not here


def live_block(renderer: Renderer, width: int, max_lines: int = LIVE_LINES) -> str:
    """The live block as text with ANSI styles (empty when nothing is pending), each line
    at most ``width`` cells, the last ``max_lines`` lines."""
    kind, pending = renderer.live_pending()
    if not pending.strip() and renderer.writing_call:  # a tool call's arguments, as they stream
        return f"\x1b[2m{renderer.bullet} {renderer.writing_call} …\x1b[0m"  # cut to the width already
    if not pending.strip():
        return ""
    target = renderer.console
    console = Console(
        file=StringIO(),
        width=max(20, width),
        color_system="standard" if target.color_system else None,
        force_terminal=target.is_terminal,
        no_color=target.no_color,
        highlight=False,
        emoji=False,
    )
    text = visible(pending)
    if kind == "thinking":
        console.print(Text(text, style="dim italic"))
    else:
        if text.count("```") % 2 == 1:
            text += "\n```"  # an open code block renders as one
        console.print(Markdown(text, hyperlinks=False))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    lines = [_PADDING.sub(r"\1", line) for line in out.split("\n")]
    while lines and not _STYLES.sub("", lines[0]).strip():
        lines.pop(0)
    while lines and not _STYLES.sub("", lines[-1]).strip():
        lines.pop()
    return "\n".join(lines[-max_lines:])
