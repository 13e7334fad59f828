"""CPU per streamed chunk of the interactive renderer, at 200 and 80 columns.

A 2,000-word markdown answer (paragraphs with bold and code spans, lists, a fenced code
block) is fed to :class:`heron.cli.tui.render.Renderer` one word per ``text_delta`` event,
as a provider streams it. After every chunk the live block is rendered too
(:func:`heron.cli.tui.live_view.live_block`), which is what the input line's redraw does.
Reported: CPU time (``time.process_time``) per chunk, median and 99th percentile, and
the output written to the transcript (settled blocks only: nothing printed is redrawn).
Target: <= 5 ms per chunk at 200 columns. (``--quick``: 200 words.)
"""

from __future__ import annotations

import sys
import time
from io import StringIO
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rich.console import Console

from _common import median, parser, table, write_json
from heron.ai.events import TextDeltaEvent, TextEndEvent, TextStartEvent
from heron.ai.types import AssistantMessage, TextContent
from heron.cli.tui.live_view import live_block
from heron.cli.tui.render import Renderer

TARGET_MS = 5.0


def answer(words: int) -> list[str]:
    """The answer as chunks of one word each (with the spaces and newlines around it)."""
    out: list[str] = []
    n = 0
    while n < words:
        paragraph = [f"word{n + i}" for i in range(60)]
        paragraph[5] = "**important**"
        paragraph[20] = "`code_span()`"
        out += [w + " " for w in paragraph]
        out.append("\n\n")
        out += [f"- item number {n + i}\n" for i in range(8)]
        out.append("\n```python\n")
        out += [f"x{n + i} = compute({i})\n" for i in range(10)]
        out.append("```\n\n")
        n += 60 + 8 * 3 + 10 * 3
    return out


def measure(words: int, width: int) -> dict[str, Any]:
    sink = StringIO()
    console = Console(file=sink, width=width, force_terminal=True, color_system="standard", highlight=False)
    renderer = Renderer(console)
    message = AssistantMessage(api="bench", provider="bench", model="bench")
    renderer.handle(_update(message, TextStartEvent(content_index=0, partial=message)))
    costs: list[float] = []
    chunks = answer(words)
    for chunk in chunks:
        start = time.process_time()
        renderer.handle(_update(message, TextDeltaEvent(content_index=0, delta=chunk, partial=message)))
        live_block(renderer, width)
        costs.append((time.process_time() - start) * 1000)
    renderer.handle(_update(message, TextEndEvent(content_index=0, content=TextContent(text=""), partial=message)))
    costs.sort()
    return {
        "width": width,
        "chunks": len(chunks),
        "median_ms": round(median(costs), 3),
        "p99_ms": round(costs[int(len(costs) * 0.99) - 1], 3),
        "transcript_chars": len(sink.getvalue()),
    }


def _update(message: AssistantMessage, inner: Any) -> Any:
    from heron.agent.events import MessageUpdateEvent

    return MessageUpdateEvent(message=message, event=inner)


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    words = 200 if args.quick else 2_000
    results = [measure(words, width) for width in (200, 80)]
    rows = [
        [f"{r['width']} columns: CPU per chunk, median / p99 (ms)", f"{r['median_ms']} / {r['p99_ms']}", "<= 5"]
        for r in results
    ]
    rows += [
        [f"{r['width']} columns: chunks, transcript characters", f"{r['chunks']}, {r['transcript_chars']}", ""]
        for r in results
    ]
    print(table(["measure", "value", "target"], rows))
    write_json("tui_stream", {"words": words, "results": results}, args.json, args.quick)
    if results[0]["median_ms"] > TARGET_MS:
        raise SystemExit(f"over the target: {results[0]['median_ms']} ms per chunk at 200 columns")


if __name__ == "__main__":
    main()
