"""The context curve in one terminal line, for ``/context`` and ``heron sessions context``.

The same data as the HTML report's curve (:mod:`heron.coding.report.data`), bucketed into a
fixed number of characters: each shows the largest request in its bucket against the window
(``▁`` to ``█``), a bucket in which a compaction happened shows ``▾``, and the line ends with
where the last request stands against the window.
"""

from __future__ import annotations

from heron.coding.report.data import ReportData

BARS = "▁▂▃▄▅▆▇█"
COMPACTION_MARK = "▾"


def sparkline(data: ReportData, width: int = 48, window: int | None = None) -> str:
    """``context ▁▂▃▅▇▾▂▃▄ 9,876 / 16,384 tokens (60%) · ▾ compaction`` (no requests: a short note)."""
    requests = data.requests
    if not requests:
        return "context curve: no requests yet"
    width = max(1, min(width, len(requests)))
    top = window or max((p.window or 0) for p in requests) or max(p.tokens for p in requests)
    compacted = {m.request for m in data.markers if m.kind == "compaction"}
    chars: list[str] = []
    for bucket in range(width):
        start = bucket * len(requests) // width
        end = max(start + 1, (bucket + 1) * len(requests) // width)
        if any(i in compacted for i in range(start, end)):
            chars.append(COMPACTION_MARK)
            continue
        peak = max(p.tokens for p in requests[start:end])
        level = min(len(BARS) - 1, int(peak / top * len(BARS))) if top else 0
        chars.append(BARS[level])
    last = requests[-1]
    limit = window or last.window
    where = f"{last.tokens:,} / {limit:,} tokens ({last.tokens / limit:.0%})" if limit else f"{last.tokens:,} tokens"
    legend = f" · {COMPACTION_MARK} compaction" if compacted else ""
    return f"context {''.join(chars)} {where} over {len(requests):,} request(s){legend}"
