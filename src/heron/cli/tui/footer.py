"""The footer's figures: the model, the tokens and cost of the session's answers, and how
full the context is (yellow from 75% of the window, red past the compaction threshold).

Kept apart from :mod:`heron.cli.tui.render`, which turns events into output: the footer is
asked for on every redraw of the status bar, from the controller too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from heron.ai.types import AssistantMessage, Usage

WARN_SHARE = 0.75  # context share from which the footer's context figure turns yellow


def format_tokens(n: int) -> str:
    if n < 1_000:
        return str(n)
    if n < 10_000:
        return f"{n / 1000:.1f}k"
    if n < 1_000_000:
        return f"{round(n / 1000)}k"
    return f"{n / 1_000_000:.1f}M"


@dataclass(slots=True)
class Totals:
    """Tokens and cost of the answers seen in this session (the footer's figures)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0

    def add(self, usage: Usage) -> None:
        self.input += usage.input
        self.output += usage.output
        self.cache_read += usage.cache_read
        self.cache_write += usage.cache_write
        self.cost += usage.cost.total

    @classmethod
    def of(cls, messages: Iterable[Any]) -> Totals:
        totals = cls()
        for message in messages:
            if isinstance(message, AssistantMessage):
                totals.add(message.usage)
        return totals


def footer_text(
    model: str,
    totals: Totals,
    context_tokens: int,
    window: int,
    threshold: int,
    thinking: str | None = None,
) -> Text:
    """``model · ↑in ↓out · $cost · ctx 12% of 128k``: the context figure turns yellow
    at 75% of the window and red above the compaction threshold. ``window`` is the one
    heron plans for - a window learned from the server's rejection, when it enforces less
    than the model's configured one (docs/context.md, "Learned windows")."""
    text = Text(style="dim")
    text.append(model, style="bold")
    if thinking and thinking != "off":
        text.append(f" ({thinking})")
    text.append(f" · ↑{format_tokens(totals.input)} ↓{format_tokens(totals.output)}")
    if totals.cache_read or totals.cache_write:
        text.append(f" R{format_tokens(totals.cache_read)} W{format_tokens(totals.cache_write)}")
    text.append(f" · ${totals.cost:.3f} · ")
    share = context_tokens / window if window > 0 else 0.0
    style = "red" if context_tokens > threshold else "yellow" if share >= WARN_SHARE else "dim"
    text.append(f"ctx {share * 100:.0f}% of {format_tokens(window)}", style=style)
    return text


def window_label(window: int, configured: int) -> str:
    """``16k (learned; configured 128k)`` when the server enforces less than the model's
    window, else ``128k``: what the model commands and ``/session`` say of the window."""
    if window < configured:
        return f"{format_tokens(window)} (learned; configured {format_tokens(configured)})"
    return format_tokens(window)
