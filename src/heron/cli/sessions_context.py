"""``heron sessions context``: the window of a session file's leaf, as far as the file
tells it - messages by role, summaries, the total, the ledger - in the same lines as the
live ``/context`` (:func:`format_context_breakdown`, shared by both), or as JSON.

Kept apart from :mod:`heron.cli.sessions_cmd`, which registers the sub-commands and runs the
others: imported only when ``context`` runs (or ``/context`` draws).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from heron.coding.runtime import ContextBreakdown
    from heron.session.store import SessionStore


def session_context_breakdown(store: SessionStore, window: int | None = None) -> ContextBreakdown:
    """The window of the leaf as far as a session file tells it: messages by role,
    summaries, the total (last reported usage + estimates after it), and the ledger
    records (``custom`` entries of type ``heron.ledger``) on the leaf's path. The system
    prompt, tools and context files are built when heron runs, so they are 0 here."""
    from heron.agent.messages import CompactionSummaryMessage
    from heron.coding.goal import goal_summary
    from heron.coding.runtime import ContextBreakdown
    from heron.context.compaction.plan import CompactionSettings
    from heron.context.continuity.todos import TODOS_CUSTOM_TYPE, clean_todos
    from heron.context.records.ledger import LEDGER_CUSTOM_TYPE, LedgerRecord
    from heron.context.window.budget import estimate_context_tokens, estimate_message_tokens
    from heron.session.entries import CustomEntry

    messages = store.build_context().messages
    by_role: dict[str, int] = {}
    summaries = 0
    for message in messages:
        tokens = estimate_message_tokens(message)
        if isinstance(message, CompactionSummaryMessage):
            summaries += tokens
        else:
            by_role[message.role] = by_role.get(message.role, 0) + tokens
    ledger: list[LedgerRecord] = []
    todos: list[dict[str, str]] = []
    if store.leaf_id is not None:
        for entry in store.path_to(store.leaf_id):
            if isinstance(entry, CustomEntry) and entry.custom_type == TODOS_CUSTOM_TYPE:
                todos = [{"content": t["content"], "status": t["status"]} for t in clean_todos(entry.data) or []]
            if not isinstance(entry, CustomEntry) or entry.custom_type != LEDGER_CUSTOM_TYPE:
                continue
            if isinstance(entry.data, dict):
                ledger.append(LedgerRecord.from_json_dict(entry.data))
    threshold = 0
    if window:
        threshold = window - CompactionSettings().for_window(window).reserve_tokens
    return ContextBreakdown(
        window=window or 0,
        threshold=threshold,
        system_prompt=0,
        tools=0,
        context_files=0,
        summaries=summaries,
        messages=by_role,
        total=estimate_context_tokens(messages),
        ledger=ledger,
        todos=todos,
        goal=goal_summary(store),
    )


def breakdown_json(breakdown: ContextBreakdown, *, offline: bool = False) -> dict[str, Any]:
    """A breakdown as JSON (``None`` for what is not known offline)."""
    unknown = offline
    return {
        "window": breakdown.window or None,
        "threshold": breakdown.threshold or None,
        "window_source": breakdown.window_source or None,
        "working_budget": breakdown.budget.to_detail() if breakdown.budget else None,
        "system_prompt": None if unknown else breakdown.system_prompt,
        "tools": None if unknown else breakdown.tools,
        "context_files": None if unknown else breakdown.context_files,
        "program_tools": None if unknown else dict(breakdown.program_tools),
        "summaries": breakdown.summaries,
        "messages": dict(breakdown.messages),
        "total": breakdown.total,
        "pruned_results": breakdown.pruned_results,
        "todos": breakdown.todos,
        "goal": breakdown.goal,
        "ledger": [record.to_json_dict() for record in breakdown.ledger],
        "ledger_saved_tokens": _ledger_totals(breakdown),
    }


def _ledger_totals(breakdown: ContextBreakdown) -> dict[str, int]:
    totals: dict[str, int] = {}
    for record in breakdown.ledger:
        totals[record.kind] = totals.get(record.kind, 0) + record.saved_tokens
    return totals


def format_context_breakdown(
    breakdown: ContextBreakdown, *, offline: bool = False, ledger_limit: int = 50, curve: str | None = None
) -> list[str]:
    """The text of ``/context`` and ``heron sessions context``: one line per part of the
    window with its tokens (and share of the window when it is known), then the ledger.
    ``offline``: the breakdown comes from a session file, so the system prompt, tools and
    context files are not known (they are built when heron runs). ``curve``: the context
    curve in one line (:func:`heron.coding.report.sparkline`), shown second."""
    from heron.coding.goal import goal_lines

    window = breakdown.window

    def share(tokens: int) -> str:
        return f"  {tokens / window:6.1%}" if window else ""

    lines: list[str] = []
    if window:
        source = f"; window from: {breakdown.window_source}" if breakdown.window_source else ""
        lines.append(
            f"window {window:,} tokens; compaction above {breakdown.threshold:,}; "
            f"in use {breakdown.total:,} ({breakdown.total / window:.1%}){source}"
        )
    else:
        lines.append(f"in use {breakdown.total:,} tokens (window not known: pass --window to see shares)")
    if breakdown.budget is not None:
        lines.append(breakdown.budget.describe())
    if curve:
        lines.append(curve)
    rows: list[tuple[str, int | None]] = []
    if offline:
        rows.append(("system prompt, tools, context files", None))
    else:
        rows += [
            ("system prompt", breakdown.system_prompt),
            ("  of which context files", breakdown.context_files),  # they are in the system prompt
            ("tools", breakdown.tools),
            *((f"  of which the {name} tool", tokens) for name, tokens in breakdown.program_tools.items()),
        ]
    rows.append(("summaries", breakdown.summaries))
    for role, role_tokens in sorted(breakdown.messages.items(), key=lambda kv: -kv[1]):
        rows.append((f"messages: {role}", role_tokens))
    for name, tokens in rows:
        if tokens is None:
            lines.append(f"  {name:<38} (not known for a session file)")
        else:
            lines.append(f"  {name:<38} {tokens:>9,}{share(tokens)}")
    estimated = breakdown.summaries + sum(breakdown.messages.values())
    lines.append(f"  {'messages estimated at chars/4':<38} {estimated:>9,}")
    lines.append(f"  {'total (last reported usage + after it)':<38} {breakdown.total:>9,}{share(breakdown.total)}")
    if breakdown.pruned_results:
        lines.append(f"  {breakdown.pruned_results} old tool result(s) pruned to stubs in the requests")
    lines.extend(goal_lines(breakdown.goal))
    todos = getattr(breakdown, "todos", None) or []
    if todos:
        lines.append(
            f"task list ({sum(t['status'] == 'completed' for t in todos)}/{len(todos)} completed; "
            "re-injected after every compaction):"
        )
        lines.extend(f"  [{t['status']}] {t['content']}" for t in todos)
    records = breakdown.ledger
    if not records:
        lines.append("ledger: empty (nothing was cut, spilled, pruned or compacted)")
        return lines
    totals = ", ".join(f"{kind} {saved:,}" for kind, saved in _ledger_totals(breakdown).items())
    lines.append(f"ledger: {len(records)} record(s); tokens kept out of view by kind: {totals}")
    shown = records[-ledger_limit:] if ledger_limit > 0 else records
    if len(shown) < len(records):
        lines.append(f"  ... {len(records) - len(shown)} older record(s) not shown")
    lines.extend(f"  {record.describe()}" for record in shown)
    return lines


def run_context(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from heron.coding.report import build_report, sparkline
    from heron.session.paths import resolve_session
    from heron.session.store import SessionStore

    with SessionStore.open(resolve_session(args.file), read_only=True) as store:
        breakdown = session_context_breakdown(store, args.window)
        curve = sparkline(build_report(store, windows=lambda _model: args.window, transcript=False), window=args.window)
        warnings = list(store.warnings)
    if args.json:
        print(json.dumps(breakdown_json(breakdown, offline=True), indent=2, ensure_ascii=False), file=out)
    else:
        for line in format_context_breakdown(breakdown, offline=True, curve=curve):
            print(line, file=out)
    for warning in warnings:
        print(f"warning: {warning}", file=err)
    return 0
