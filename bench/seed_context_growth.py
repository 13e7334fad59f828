"""Seed 000's experiment: what reaches the model with and without transform_context.

20 turns; each turn the user asks, the model calls one tool, the tool answers, the model
replies; one UI-only note is added per turn. Configuration A: ``convert_to_llm`` only
(visibility). Configuration B: the same plus a ``transform_context`` that keeps the last
8 messages and prepends a one-line rolling summary, never orphaning a tool result.
Characters are those of the request as the faux provider's wire form serialises it
(system prompt + tools + messages), taken from the last request of each turn.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import RESULTS, parser, table, write_json
from heron.agent import Agent, AgentMessage, FunctionTool, ToolParams, ToolResult, UINote
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.ai.types import TextContent, ToolResultMessage, UserMessage

SYSTEM = "You are a helpful assistant."
WINDOW = 8


class LookupParams(ToolParams):
    query: str


async def lookup(call_id: str, params: LookupParams, signal: AbortSignal, on_update: object) -> ToolResult:
    return ToolResult.text(f"Result for {params.query}: 3 matching records, latest updated today, status ok.")


async def keep_recent(messages: list[AgentMessage], signal: AbortSignal) -> list[AgentMessage]:
    """Last 8 messages plus a one-line summary; a window opening on a tool result takes
    its call along (principle 4: a result never leaves its call)."""
    if len(messages) <= WINDOW:
        return messages
    start = len(messages) - WINDOW
    while start > 0 and isinstance(messages[start], ToolResultMessage):
        start -= 1
    dropped = start
    summary = UserMessage(content=[TextContent(text=f"[Summary] {dropped} earlier messages folded.")])
    return [summary, *messages[start:]]


async def run(configuration: str, turns: int) -> list[int]:
    faux = FauxProvider.install(f"faux-seed-{configuration}")
    tool = FunctionTool("lookup", "Look up records", LookupParams, lookup)
    agent = Agent(
        model=faux.model(),
        system_prompt=SYSTEM,
        tools=[tool],
        transform_context=keep_recent if configuration == "B" else None,
    )
    sizes = []
    for turn in range(1, turns + 1):
        faux.queue(
            tool_call("lookup", {"query": f"item {turn}"}, call_id=f"call_{turn}"),
            text(f"Item {turn} has 3 matching records; all are up to date."),
        )
        agent.messages.append(UINote(text=f"rendered card for turn {turn} " + "x" * 200))
        await agent.prompt(f"Turn {turn}: what do we know about item {turn}?")
        sizes.append(len(faux.payloads[-1]))
    return sizes


def plot(a: list[int], b: list[int], target: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    turns = list(range(1, len(a) + 1))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(turns, a, marker="o", label="A: convert_to_llm only")
    ax.plot(turns, b, marker="s", label="B: + transform_context (last 8 + summary)")
    ax.set_xlabel("turn")
    ax.set_ylabel("characters sent to the model")
    ax.set_title("Seed 000: context growth over 20 turns")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    plt.close(fig)


async def ui_note_cost() -> int:
    """Characters a UI note adds to the request (must be 0)."""
    faux = FauxProvider.install("faux-seed-note")
    agent = Agent(model=faux.model(), system_prompt=SYSTEM)
    faux.queue(text("ok"), text("ok"))
    await agent.prompt("q")
    without = len(faux.payloads[-1])
    agent.messages.pop()  # drop the answer, replay the same request with a note added
    agent.messages.insert(0, UINote(text="x" * 500))
    await agent.continue_()
    return len(faux.payloads[-1]) - without


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    turns = 20
    a = asyncio.run(run("A", turns))
    b = asyncio.run(run("B", turns))
    note_delta = asyncio.run(ui_note_cost())
    rows = [[t, a[t - 1], b[t - 1], f"{100 * (1 - b[t - 1] / a[t - 1]):.1f}%"] for t in range(1, turns + 1)]
    print(table(["turn", "A chars", "B chars", "B saves"], rows))
    print(f"UI note adds {note_delta} characters to a request")
    png = RESULTS / ("seed_context_growth.quick.png" if args.quick else "seed_context_growth.png")
    png.parent.mkdir(parents=True, exist_ok=True)
    plot(a, b, png)
    write_json(
        "seed_context_growth",
        {
            "turns": turns,
            "a_chars": a,
            "b_chars": b,
            "saved_at_last_turn": 1 - b[-1] / a[-1],
            "ui_note_chars": note_delta,
            "plot": str(png.name),
        },
        args.json,
        args.quick,
    )


if __name__ == "__main__":
    main()
