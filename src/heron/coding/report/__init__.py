"""Session reports: the context curve, every cut, the cost, the tree and the transcript of a session.

``heron sessions report``, rpc ``export_report`` and this library call make the same page::

    from heron.coding.report import write_report
    write_report(store, "report.html", windows={"anthropic/claude-sonnet-4-5": 200_000})

The page is one self-contained HTML file (docs/report.md). :func:`sparkline` draws the same
curve in one terminal line for ``/context`` and ``heron sessions context``.
"""

from __future__ import annotations

import os
from pathlib import Path

from heron.coding.report.data import ReportData, WindowSource, collect
from heron.coding.report.page import render
from heron.coding.report.spark import sparkline
from heron.coding.report.transcript import DEFAULT_BUDGET
from heron.coding.report.tree import branch_rows, child_sessions, parent_session
from heron.session.store import SessionStore


def build_report(
    store: SessionStore,
    *,
    windows: WindowSource = None,
    reserve: int | None = None,
    transcript: bool = True,
) -> ReportData:
    """Everything the report shows, for the current leaf of ``store`` (see :func:`collect`)."""
    data = collect(store, windows=windows, reserve=reserve, transcript=transcript)
    data.branches = branch_rows(store)
    data.children = child_sessions(store)
    data.parent = parent_session(store)
    return data


def render_report(
    store: SessionStore,
    *,
    windows: WindowSource = None,
    reserve: int | None = None,
    full: bool = False,
) -> str:
    """The report page as a string. ``full``: embed the whole transcript, whatever its size."""
    data = build_report(store, windows=windows, reserve=reserve)
    return render(data, transcript_budget=None if full else DEFAULT_BUDGET)


def write_report(
    store: SessionStore,
    target: str | os.PathLike[str],
    *,
    windows: WindowSource = None,
    reserve: int | None = None,
    full: bool = False,
) -> Path:
    """Write the report page to ``target`` (readable by its owner only: it holds the session)."""
    page = render_report(store, windows=windows, reserve=reserve, full=full)
    path = Path(target)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as handle:
        handle.write(page)
    return path


__all__ = ["ReportData", "WindowSource", "build_report", "render_report", "sparkline", "write_report"]
