"""A background summary's answer as the session file keeps it for a later process.

A ``heron -p`` process whose turn started a background summary waits for that summary
after the turn and, when its compaction has not used it yet, writes what came back into
the session (a ``heron.context`` entry ``op: "background_result"``): the summary and its
details, ledger records and request usage, or the error it failed with. The process that
later compacts splices it in without asking again (docs/context.md, "Background
compaction"). The summary request was sent once; nothing about it reaches a request
until the compaction entry is written, exactly as in a process that never stopped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from heron.context.records.ledger import LedgerRecord

if TYPE_CHECKING:  # the summariser loads with the first summary
    from heron.context.compaction.summary.summariser import SummaryResult


def result_data(result: SummaryResult | None, error: str | None) -> dict[str, Any]:
    """What is written: the summary (with what the compaction needs of it), or the error."""
    if result is None:
        return {"error": error or "unknown error"}
    usage = result.usage
    return {
        "summary": result.summary,
        "details": dict(result.details),
        "records": [record.to_json_dict() for record in result.records],
        "usage": {
            "mode": usage.mode,
            "requests": usage.requests,
            "inputTokens": usage.input_tokens,
            "cachedTokens": usage.cached_tokens,
            "reported": usage.reported,
        },
    }


def result_from(data: dict[str, Any]) -> SummaryResult | str:
    """The kept answer: the summary result, or the error text (a malformed record reads as
    an error: the compaction then asks for the summary itself, as after a failure)."""
    from heron.context.compaction.summary.shared_summary import SummaryUsage
    from heron.context.compaction.summary.summariser import SummaryResult

    summary = data.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        error = data.get("error")
        return error if isinstance(error, str) and error else "the kept background summary is unreadable"
    details = data.get("details")
    records = data.get("records")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    return SummaryResult(
        summary=summary,
        details=dict(details) if isinstance(details, dict) else {},
        records=[LedgerRecord.from_json_dict(r) for r in records if isinstance(r, dict)]
        if isinstance(records, list)
        else [],
        usage=SummaryUsage(
            mode=str(usage.get("mode", "separate")),
            requests=_count(usage.get("requests")),
            input_tokens=_count(usage.get("inputTokens")),
            cached_tokens=_count(usage.get("cachedTokens")),
            reported=usage.get("reported") is True,
        ),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
