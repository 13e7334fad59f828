"""``/context``: what the context window holds, as plain text.

The text is the one ``heron sessions context`` prints
(:func:`heron.cli.sessions_context.format_context_breakdown`), so a live session and a
session file read later are described the same way; here the breakdown is live, so the
system prompt, tool definitions and context files are known and shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from heron.coding.runtime import CodingSession, ContextBreakdown

LEDGER_SHOWN = 12  # the newest records listed one by one; older ones are only counted


def context_curve(session: CodingSession) -> str:
    """The session's context curve in one line, against the window heron plans for."""
    from heron.coding.report import build_report, sparkline

    data = build_report(session.store, windows=lambda _model: session.window, transcript=False)
    return sparkline(data, window=session.window)


def format_context(breakdown: ContextBreakdown, *, ledger_limit: int = LEDGER_SHOWN, curve: str | None = None) -> str:
    """The parts of the window in estimated tokens (with their share of the window), the
    total against the window and the compaction threshold, then the ledger: what was
    kept out of the model's view, and how to get it back."""
    from heron.cli.sessions_context import format_context_breakdown

    return "\n".join(format_context_breakdown(breakdown, offline=False, ledger_limit=ledger_limit, curve=curve))
