"""The report's two charts as inline SVG: the context curve with its markers, and cache and cost.

Drawn on the server side, so the picture is there without running anything: one polyline
point per request (``data-points`` says how many), the window and the compaction threshold
as step lines (they change with model switches and learnt windows), and one circle per
marker (``data-i`` indexes the marker list the page's script reads for the hover text).
Coordinates are rounded to a tenth of a unit: a 50,000-request session stays a few MB.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

from heron.coding.report.data import ReportData

WIDTH, HEIGHT = 1000, 340
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 14, 28
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
MARKER_R = 4.0
MAX_STACK = 8  # markers at one request are stacked upwards this high, then overlap
_KIND_UNSAFE = re.compile(r"[^a-z_]")


def kind_class(kind: str) -> str:
    """A marker kind as a CSS class name (a kind read from a session file may hold anything)."""
    return "k-" + _KIND_UNSAFE.sub("_", kind)


def _x(index: int, count: int) -> float:
    return LEFT + (PLOT_W * index / (count - 1) if count > 1 else PLOT_W / 2)


def _y(value: float, top: float) -> float:
    return TOP + PLOT_H * (1 - min(value, top) / top) if top > 0 else TOP + PLOT_H


def _points(values: Sequence[float | None], top: float) -> str:
    count = len(values)
    return " ".join(f"{_x(i, count):.1f},{_y(v, top):.1f}" for i, v in enumerate(values) if v is not None)


def _steps(values: Sequence[float | None], top: float) -> str:
    """A step line: a point only where the value changes (and at both ends), so a window that
    is the same for 50,000 requests costs two points, not 50,000."""
    count = len(values)
    points: list[str] = []
    previous: float | None = None
    for i, value in enumerate(values):
        if value is None:
            previous = None
            continue
        if previous is None:
            points.append(f"{_x(i, count):.1f},{_y(value, top):.1f}")
        elif value != previous:
            points.append(f"{_x(i, count):.1f},{_y(previous, top):.1f}")
            points.append(f"{_x(i, count):.1f},{_y(value, top):.1f}")
        elif i == count - 1:
            points.append(f"{_x(i, count):.1f},{_y(value, top):.1f}")
        previous = value
    return " ".join(points)


def _axis(top: float, unit: str) -> list[str]:
    parts = [
        f'<line class="axis" x1="{LEFT}" y1="{TOP + PLOT_H}" x2="{WIDTH - RIGHT}" y2="{TOP + PLOT_H}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + PLOT_H}"/>',
    ]
    for share in (0.0, 0.5, 1.0):
        value = top * share
        label = f"{value:,.0f}{unit}" if unit != "$" else f"${value:.4f}"
        parts.append(f'<text class="axis-label" x="{LEFT - 6}" y="{_y(value, top) + 4:.1f}" text-anchor="end">')
        parts.append(f"{escape(label)}</text>")
    return parts


def context_chart(data: ReportData) -> str:
    """Tokens sent per request, window and threshold, and the markers."""
    requests = data.requests
    count = len(requests)
    windows = [p.window for p in requests]
    thresholds = [data.threshold_at(p) for p in requests]
    top = max([p.tokens for p in requests] + [w or 0 for w in windows] + [1]) * 1.05
    parts = [
        f'<svg id="context-chart" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" data-left="{LEFT}" '
        f'data-plot-width="{PLOT_W}" role="img" aria-label="tokens sent per request">',
        *_axis(top, ""),
        f'<text class="axis-label" x="{LEFT}" y="{HEIGHT - 6}">request 1</text>',
        f'<text class="axis-label" x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end">request {count}</text>',
    ]
    if any(w is not None for w in windows):
        values = [float(w) if w is not None else None for w in windows]
        parts.append(f'<polyline class="window-line" points="{_steps(values, top)}"/>')
    if any(t is not None for t in thresholds):
        values = [float(t) if t is not None else None for t in thresholds]
        parts.append(f'<polyline class="threshold-line" points="{_steps(values, top)}"/>')
    tokens = [float(p.tokens) for p in requests]
    parts.append(f'<polyline class="curve" data-points="{count}" points="{_points(tokens, top)}"/>')
    parts.append('<g class="markers">')
    stacked: dict[int, int] = {}  # markers already drawn at a request: the next sits above them
    for n, marker in enumerate(data.markers):
        if not count:
            break
        index = marker.request
        height = min(stacked.get(index, 0), MAX_STACK)
        stacked[index] = height + 1
        x, y = _x(index, count), max(TOP, _y(tokens[index], top) - height * (2 * MARKER_R + 1))
        css = kind_class(marker.kind)
        parts.append(f'<circle class="marker {css}" data-i="{n}" data-kind="{css[2:]}" ')
        parts.append(f'cx="{x:.1f}" cy="{y:.1f}" r="{MARKER_R}"/>')
    parts.append("</g></svg>")
    return "".join(parts)


def cache_chart(data: ReportData) -> str:
    """Cache-hit ratio per request (0-100%) and cost per request (scaled to its maximum)."""
    requests = data.requests
    count = len(requests)
    ratios = [None if p.cache_hit is None else p.cache_hit * 100 for p in requests]
    costs = [p.cost for p in requests]
    top_cost = max([*costs, 0.0])
    parts = [
        f'<svg id="cache-chart" class="chart" viewBox="0 0 {WIDTH} {HEIGHT // 2 + BOTTOM}" role="img" '
        'aria-label="cache-hit ratio and cost per request">'
    ]
    height = PLOT_H / 2
    for n, value in enumerate((0, 50, 100)):
        y = TOP + height * (1 - value / 100)
        parts.append(f'<line class="axis" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>')
        parts.append(f'<text class="axis-label" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{value}%</text>')
        if n == 2 and top_cost:
            parts.append(f'<text class="axis-label" x="{WIDTH - RIGHT}" y="{y - 2:.1f}" text-anchor="end">')
            parts.append(f"cost up to ${top_cost:.4f}</text>")
    ratio_points = " ".join(
        f"{_x(i, count):.1f},{TOP + height * (1 - r / 100):.1f}" for i, r in enumerate(ratios) if r is not None
    )
    parts.append(
        f'<polyline class="cache-curve" data-points="{sum(r is not None for r in ratios)}" points="{ratio_points}"/>'
    )
    if top_cost > 0:
        cost_points = " ".join(
            f"{_x(i, count):.1f},{TOP + height * (1 - c / top_cost):.1f}" for i, c in enumerate(costs)
        )
        parts.append(f'<polyline class="cost-curve" points="{cost_points}"/>')
    parts.append("</svg>")
    return "".join(parts)
