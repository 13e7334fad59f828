"""``/context``: what the context window holds, as plain text.

The text is the one ``heron sessions context`` prints
(:func:`heron.cli.sessions_context.format_context_breakdown`), so a live session and a
session file read later are described the same way; here the breakdown is live, so the
system prompt, tool definitions and context files are known and shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from heron.coding.context_files import ContextFile
    from heron.coding.runtime import ContextBreakdown
    from heron.session.store import SessionStore

LEDGER_SHOWN = 12  # the newest records listed one by one; older ones are only counted


class Curved(Protocol):
    """What the curve reads of a session: its file, and the window heron plans for."""

    @property
    def store(self) -> SessionStore: ...

    @property
    def window(self) -> int: ...


def context_curve(session: Curved) -> str:
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


def _shown_path(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def context_files_line(files: list[ContextFile], cwd: Path) -> str:
    """What start-up says: ``context files: AGENTS.md (~1.2k tokens), ~/.heron/AGENTS.md``."""
    if not files:
        return "context files: none (heron reads AGENTS.md or CLAUDE.md from here up to the repository root)"
    tokens = sum(-(-f.kept_chars // 4) for f in files)
    names = ", ".join(_shown_path(f.path, cwd) + (" (cut)" if f.truncated else "") for f in files)
    return f"context files: {names} (~{tokens:,} tokens in the system prompt)"


def context_file_lines(files: list[ContextFile], cwd: Path) -> list[str]:
    """``/context``'s own section on them: each file, its tokens, whether it was cut."""
    if not files:
        return ["context files: none loaded"]
    lines = ["context files (in the system prompt):"]
    for f in files:
        where = "global" if f.is_global else "project"
        cut = f"; cut from {f.original_chars:,} to {f.kept_chars:,} characters" if f.truncated else ""
        lines.append(f"  {_shown_path(f.path, cwd):<38} {-(-f.kept_chars // 4):>9,}  ({where}{cut})")
    return lines
