"""The live block: the part of the answer (or thinking) received but not printed yet,
rendered as markdown where the user reads, just above the input line.

The renderer prints finished blocks, and the settled lines of the block still growing
(:mod:`heron.cli.tui.settled`), into the transcript (they scroll into the terminal's
scrollback and are never redrawn); the rest of the growing block is drawn by
prompt_toolkit as part of the input line's prompt, so each chunk shows in place the
moment it arrives and only this block is re-rendered. It is cut to the terminal width by rich (wide and
combining characters counted by their cells) and to its last :data:`LIVE_LINES` lines,
so the area stays small; the settled text above it is not touched.
"""

from __future__ import annotations

from io import StringIO
from typing import TYPE_CHECKING

from rich.console import Console
from rich.segment import Segment, Segments

from heron.cli.tui.call_preview import call_preview

if TYPE_CHECKING:
    from heron.cli.tui.render import Renderer

LIVE_LINES = 12


def live_block(renderer: Renderer, width: int, max_lines: int = LIVE_LINES) -> str:
    """The live block as text with ANSI styles (empty when nothing is pending): the lines
    of the growing block not printed yet, as the renderer renders them (at its console's
    width; ``width`` is the terminal's, the same), the last ``max_lines`` of them; or the
    tool call being written, with what its arguments hold so far (:mod:`call_preview`)."""
    live = renderer.live_pending()
    call = renderer.writing
    if not live.pending.strip() and call is not None and renderer.writing_call:  # arguments, as they stream
        meta = renderer.tools.meta(call.name)
        texts = call_preview(renderer.writing_call, meta, call.arguments or {}, width, renderer.bullet, renderer.bar)
        return _ansi(renderer, width, [segments for text in texts for segments in renderer.text_lines(text)])
    if not live.pending.strip() and not live.held:
        return ""
    # the renderer's own rendering of the block, so the lines on the screen already are skipped
    # exactly; lines printed but not on the screen yet stay here until they are
    growing = renderer.block_lines(live.kind, live.pending)[live.shown :] if live.pending.strip() else []
    return _ansi(renderer, width, [*live.held, *growing][-max_lines:])


def _ansi(renderer: Renderer, width: int, lines: list[list[Segment]]) -> str:
    """Rendered lines as text with the ANSI styles the renderer's console would write."""
    target = renderer.console
    sink = StringIO()
    console = Console(
        file=sink,
        width=max(20, width),
        color_system="standard" if target.color_system else None,
        force_terminal=target.is_terminal,
        no_color=target.no_color,
        highlight=False,
        emoji=False,
    )
    segments: list[Segment] = []
    for line in lines:
        segments.extend(line)
        segments.append(Segment.line())
    console.print(Segments(segments), end="")
    return sink.getvalue().rstrip("\n")
