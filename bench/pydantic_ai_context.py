"""A pydantic-ai agent's long run behind a 16k window: no context management, pydantic-ai's
own compaction capability, and heron's (heron.context.pydantic_ai.HeronContext).

The same traffic for each (tests/support/pydantic_agent.py): pydantic-ai's ``Agent`` with
its ``OpenAIChatModel`` against a scripted chat-completions server that rejects any
request over the window (tests/support/chat_window.py), one run per turn given the
history so far, each turn one ``bash`` call printing a long log and a long answer - and
the same with terse turns (a one-sentence prompt and answer around each log), run three
times as long, to show when compaction comes where little of each turn is kept.
pydantic-ai 2.x ships one compaction capability, ``NativeCompaction``: it compacts with
the serving model's own compaction API (OpenAI Responses, Anthropic) when the model has
one, after a context-overflow rejection or on request; it is measured as a user of a
chat-completions server would add it. Prints a table, writes
bench/results/pydantic_ai_context.json. ``--quick``: fewer turns.

Needs pydantic-ai (``pip install "heron[pydantic-ai]"``); without it the script ends with
status 77 and says so.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, SKIPPED, parser, table, write_json
from _prompt_cache import SimulatedCache

WINDOW = 16_384


def _parts(body: dict[str, Any]) -> list[str]:
    """A chat-completions request as a provider renders it: tool definitions, then messages."""
    return [json.dumps(body.get("tools", []))] + [json.dumps(m) for m in body["messages"]]


def _arm(name: str, turns: int, capabilities: Any, terse: bool = False) -> dict[str, Any]:
    from tests.support.chat_window import ChatWindowServer, request_tokens, unanswered_calls
    from tests.support.pydantic_agent import make_agent, run_turns
    from tests.support.summaries import is_summary_body

    server = ChatWindowServer(WINDOW, terse=terse)
    made = capabilities()
    start = time.perf_counter()
    done, error, first_compaction = 0, "", 0
    history: list[Any] = []
    try:
        agent = make_agent(server.base_url, made)
        for turn in range(1, turns + 1):
            try:
                history = run_turns(agent, range(turn, turn + 1), history, terse)
            except Exception as exc:  # noqa: BLE001 - the failure is the figure
                error = f"{type(exc).__name__} at turn {turn}"
                break
            done = turn
            if not first_compaction and sum(getattr(c, "compactions", 0) for c in made):
                first_compaction = turn
    finally:
        server.close()
    sizes = [request_tokens(b) for b in server.bodies]
    cache = SimulatedCache(ttl=None)
    served = [cache.serve(_parts(b), float(i)) for i, b in enumerate(server.bodies)]
    chars = sum(s.chars for s in served)
    compactions = sum(getattr(c, "compactions", 0) for c in made)
    return {
        "arm": name,
        "turnsOk": done,
        "turns": turns,
        "requests": len(server.bodies),
        "summaryRequests": sum(1 for b in server.bodies if is_summary_body(b)),
        "rejected": len(server.rejected),
        "compactions": compactions,
        "firstCompactionTurn": first_compaction or "-",
        "unanswered": sum(len(unanswered_calls(b)) for b in server.bodies),
        "peakTokens": max(sizes, default=0),
        "inputTokens": sum(sizes),
        "cachedShare": round(sum(s.cached for s in served) / chars, 3) if chars else 0.0,
        "seconds": round(time.perf_counter() - start, 2),
        "error": error,
    }


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    try:
        import pydantic_ai  # noqa: F401
    except ImportError:
        print('skipped: pydantic-ai is not installed (pip install "heron[pydantic-ai]")', file=sys.stderr)
        raise SystemExit(SKIPPED) from None
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from pydantic_ai.capabilities import NativeCompaction

    from heron.context.pydantic_ai import HeronContext

    turns = 8 if args.quick else 30
    with tempfile.TemporaryDirectory() as tmp:
        arms = [
            _arm("none", turns, lambda: []),
            _arm("pydantic-ai NativeCompaction", turns, lambda: [NativeCompaction()]),
            _arm("heron HeronContext", turns, lambda: [HeronContext(window=WINDOW, store=Path(tmp) / "shared")]),
            _arm(
                "heron HeronContext, separate summaries",
                turns,
                lambda: [HeronContext(window=WINDOW, store=Path(tmp) / "separate", shared_summary=False)],
            ),
            _arm("none, terse turns", turns, lambda: [], terse=True),
            _arm(
                "heron HeronContext, terse turns",
                3 * turns,
                lambda: [HeronContext(window=WINDOW, store=Path(tmp) / "terse")],
                terse=True,
            ),
        ]
    headers = [
        "arm",
        "turns ok",
        "requests served",
        "of them summaries",
        "rejected",
        "compactions",
        "first compaction at turn",
        "unanswered calls",
        "peak tokens",
        "input tokens",
        "cached share (sim.)",
        "seconds",
        "ended by",
    ]
    keys = [
        "requests",
        "summaryRequests",
        "rejected",
        "compactions",
        "firstCompactionTurn",
        "unanswered",
        "peakTokens",
        "inputTokens",
        "cachedShare",
        "seconds",
    ]
    rows = [[a["arm"], f"{a['turnsOk']}/{a['turns']}", *(a[k] for k in keys), a["error"] or "-"] for a in arms]
    print(f"window {WINDOW} tokens; one bash call of a 40,000-character log per turn")
    print(table(headers, rows))
    print(f"wrote {write_json('pydantic_ai_context', {'window': WINDOW, 'arms': arms}, args.json, args.quick)}")


if __name__ == "__main__":
    main()
