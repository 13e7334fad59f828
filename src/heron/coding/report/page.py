"""The report as one self-contained HTML page: inline style, inline SVG, one small inline script.

Nothing is fetched when the page is viewed (no CDN, no font, no image URL). Every string from
the session is untrusted: markup text goes through :func:`html.escape`, and the data the
script reads is JSON inside ``<script type="application/json">`` with ``<``, ``>`` and ``&``
written as ``\\u`` escapes (so no ``</script>`` can end the block) and every non-ASCII
character escaped too (a lone surrogate in a session cannot break the file's encoding).
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from heron.coding.report.assets import SCRIPT, STYLE
from heron.coding.report.chart import cache_chart, context_chart, kind_class
from heron.coding.report.data import ReportData
from heron.coding.report.transcript import DEFAULT_BUDGET, clean, turn_views

KIND_ORDER = ["compaction", "prune", "spill", "truncate", "dedupe", "flush", "memory", "overflow", "model_switch"]


def json_block(element_id: str, value: Any) -> str:
    """Data for the script, safe inside HTML whatever the strings hold."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _t(text: object) -> str:
    return escape(clean(str(text)))


def _cards(data: ReportData) -> str:
    requests = data.requests
    sent = sum(p.input + p.cache_read + p.cache_write for p in requests)
    cached = sum(p.cache_read for p in requests)
    kinds: dict[str, int] = {}
    for marker in data.markers:
        kinds[marker.kind] = kinds.get(marker.kind, 0) + 1
    cards = [
        ("requests", f"{len(requests):,}"),
        ("turns", f"{len(data.turns):,}"),
        ("input tokens", f"{sent:,}"),
        ("cached input", f"{cached:,}"),
        ("cache hit", f"{cached / sent:.1%}" if sent else "—"),
        ("output tokens", f"{sum(p.output for p in requests):,}"),
        ("cost", f"${sum(p.cost for p in requests):.4f}"),
        ("compactions", f"{kinds.get('compaction', 0):,}"),
        ("prune records", f"{kinds.get('prune', 0):,}"),
        ("estimated points", f"{sum(p.estimated for p in requests):,}"),
    ]
    body = "".join(f"<div class='card'><b>{escape(v)}</b><span>{escape(k)}</span></div>" for k, v in cards)
    return f"<div class='cards'>{body}</div>"


def _legend(data: ReportData) -> str:
    present = {m.kind for m in data.markers}
    kinds = [k for k in KIND_ORDER if k in present] + sorted(present - set(KIND_ORDER))
    items = [
        "<span><i style='background:#0969da'></i>tokens sent</span>",
        "<span><i style='background:#cf222e'></i>window</span>",
        "<span><i style='background:#bf8700'></i>compaction threshold</span>",
    ]
    items += [
        f"<span><svg width='10' height='10'><circle class='{kind_class(k)}' cx='5' cy='5' r='5'/></svg> {_t(k)}</span>"
        for k in kinds
    ]
    return f"<div class='legend'>{''.join(items)}</div>"


def _ledger_section(data: ReportData) -> str:
    kinds = sorted({m.kind for m in data.markers})
    options = "".join(f"<option value='{_t(k)}'>{_t(k)}</option>" for k in kinds)
    return (
        "<h2>Ledger</h2><p class='meta'>Every cut heron recorded, and how to get it back.</p>"
        f"<label>kind <select id='ledger-kind'><option value=''>all</option>{options}</select></label>"
        "<div class='pager'><button id='ledger-prev'>previous</button><button id='ledger-next'>next</button>"
        "<span id='ledger-page'></span></div>"
        "<table><thead><tr><th class='num'>request</th><th>kind</th><th>what</th><th>how to get it back</th>"
        "<th>entry</th></tr></thead><tbody id='ledger-body'></tbody></table>"
    )


def _state_section(data: ReportData) -> str:
    parts = ["<h2>Task list and memory</h2>"]
    if data.todos:
        rows = "".join(f"<li>[{_t(t['status'])}] {_t(t['content'])}</li>" for t in data.todos)
        parts.append(f"<ul id='todos'>{rows}</ul>")
    else:
        parts.append("<p class='meta'>No task list.</p>")
    memory = data.memory.strip()
    parts.append(f"<pre id='memory'>{_t(memory)}</pre>" if memory else "<p class='meta'>No memory notes.</p>")
    return "".join(parts)


def _tree_section(data: ReportData) -> str:
    parts = ["<h2>Tree</h2><table id='tree'><thead><tr><th>leaf</th><th class='num'>entries</th>"]
    parts.append(
        "<th>leaves the current path at</th><th>first prompt</th><th>branch summaries</th></tr></thead><tbody>"
    )
    for row in data.branches:
        name = _t(row.leaf_id) + (f" ({_t(row.label)})" if row.label else "")
        mark = " class='current'" if row.current else ""
        summaries = "<br>".join(_t(s[:400]) for s in row.summaries)
        parts.append(
            f"<tr{mark}><td>{name}{' ← current' if row.current else ''}</td><td class='num'>{row.length:,}</td>"
            f"<td>{_t(row.fork_point or '—')}</td><td>{_t(row.first_prompt)}</td><td>{summaries}</td></tr>"
        )
    parts.append("</tbody></table>")
    if data.parent:
        uri = escape(Path(data.parent["path"]).as_uri(), quote=True)
        parts.append(
            f"<h2>Parent session</h2><p id='parent'>{_t(data.parent['kind'])}: "
            f"<a href='{uri}'>{_t(data.parent['path'])}</a></p>"
        )
    if data.children:
        parts.append("<h2>Sub-agent, forked and handed-off sessions</h2><ul id='children'>")
        for child in data.children:
            uri = escape(Path(child["path"]).as_uri(), quote=True)
            started = f"{_t(child['kind'])}, started {_t(child['started'])}"
            parts.append(f"<li><a href='{uri}'>{_t(child['id'])}</a> {started}</li>")
        parts.append("</ul>")
    return "".join(parts)


def _points(data: ReportData) -> list[list[Any]]:
    return [
        [p.tokens, p.turn, int(p.estimated), p.input + p.cache_write, p.cache_read, p.output, round(p.cost, 6)]
        for p in data.requests
    ]


def _markers(data: ReportData) -> list[dict[str, Any]]:
    out = []
    for m in data.markers:
        item: dict[str, Any] = {
            "request": m.request,
            "kind": clean(m.kind),
            "title": clean(m.title),
            "recover": clean(m.recover),
            "entry": m.entry_id,
        }
        if m.summary:
            item["summary"] = clean(m.summary)
        out.append(item)
    return out


def render(data: ReportData, *, transcript_budget: int | None = DEFAULT_BUDGET) -> str:
    """The whole page."""
    title = f"heron session {data.session_id}"
    warnings = "".join(f"<p class='meta'>warning: {_t(w)}</p>" for w in data.warnings[:20])
    warnings += "".join(
        f"<p class='meta'>{_t(model)}: working budget {b['tokens']:,} tokens ({_t(b.get('reason', ''))})</p>"
        for model, b in data.budgets.items()
        if isinstance(b.get("tokens"), int)
    )
    return "".join(
        [
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
            "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'; img-src data:\">",
            f"<meta name='viewport' content='width=device-width'><title>{_t(title)}</title>",
            f"<style>{STYLE}</style></head><body><main>",
            f"<h1>{_t(title)}</h1><p class='meta'>{_t(data.cwd)} · started {_t(data.started)}</p>",
            f"<p class='meta'>{_t(data.path or 'in-memory session')}</p>{warnings}",
            _cards(data),
            "<h2>Context curve</h2><p class='meta'>Tokens sent per request (provider usage; heron's own count where",
            " none was reported). Hover a marker for what was cut and how to get it back.</p>",
            _legend(data),
            context_chart(data),
            "<h2>Cache and cost</h2><p class='meta'>Cache-hit ratio (green) and cost (purple) per request.</p>",
            cache_chart(data),
            _ledger_section(data),
            _state_section(data),
            _tree_section(data),
            "<h2>Transcript</h2><p class='meta'>One turn per row; open a turn to read it as the model saw it.</p>",
            "<div class='pager'><button id='turn-prev'>previous</button><button id='turn-next'>next</button>",
            "<span id='turn-page'></span></div><div id='turns'></div>",
            "<div id='tip'></div>",
            json_block("heron-points", _points(data)),
            json_block("heron-markers", _markers(data)),
            json_block("heron-turns", turn_views(data, budget=transcript_budget)),
            f"<script>{SCRIPT}</script></main></body></html>",
        ]
    )
