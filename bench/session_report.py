"""The session report on a large session: time to write it, its size, time to render it.

For a generated session in pi's version-3 format (the shared generator: 100,000 entries,
~189 MB, ~50,000 requests, ~200 compactions, 25 branches) heron writes the report
(``heron.coding.report.write_report``, the call behind ``heron sessions report``), and
headless Chromium opens it: the time from navigation to the load event and to the first
paint of the page, as the browser's own performance timeline reports them.

Targets (issue 29): the page <= 20 MB and rendered in <= 3 s. ``--quick`` uses a 5,000-entry
file. Without Chromium (Debian's ``chromium``) or Playwright the render rows say so.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, shared_path, table, write_json

CACHE = Path(tempfile.gettempdir()) / "heron-bench"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def session_file(entries: int) -> Path:
    generator = shared_path("tools", "gen_pi_session.py")  # without it: skipped, naming it
    target = CACHE / f"gen-{entries}.jsonl"
    if not target.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, str(generator), "--entries", str(entries), "--out", str(target)]
        subprocess.run(cmd, check=True, capture_output=True)
    return target


def write_times(path: Path, out: Path, runs: int) -> list[float]:
    from heron.coding.report import write_report
    from heron.session.store import SessionStore

    times = []
    for _ in range(runs):
        started = time.perf_counter()
        with SessionStore.open(path, read_only=True) as store:
            write_report(store, out, windows=lambda _model: 200_000, reserve=16_384)
        times.append(time.perf_counter() - started)
    return times


def render_times(page: Path, runs: int) -> list[dict[str, float]] | str:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "playwright is not installed"
    if chromium is None:
        return "chromium is not installed"
    out: list[dict[str, float]] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=FLAGS)
        try:
            for _ in range(runs):
                tab = browser.new_page(viewport={"width": 1280, "height": 1000})
                tab.goto(page.as_uri(), wait_until="load", timeout=120_000)
                timing: dict[str, float] = tab.evaluate(
                    "(() => { const n = performance.getEntriesByType('navigation')[0];"
                    " const p = performance.getEntriesByName('first-contentful-paint')[0];"
                    " return {load: n.loadEventEnd, paint: p ? p.startTime : n.loadEventEnd}; })()"
                )
                out.append(timing)
                tab.close()
        finally:
            browser.close()
    return out


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    entries = 5_000 if args.quick else 100_000
    runs = 1 if args.quick else 3
    path = session_file(entries)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.html"
        writes = write_times(path, out, runs)
        size = out.stat().st_size
        renders = render_times(out, runs)
    rows: list[list[Any]] = [
        ["session", f"{entries:,} entries, {path.stat().st_size / 1e6:.0f} MB", ""],
        ["write the report (median)", f"{statistics.median(writes):.2f} s", ""],
        ["page size", f"{size / 1e6:.1f} MB", "<= 20 MB"],
    ]
    result: dict[str, Any] = {"entries": entries, "write_s": writes, "page_bytes": size}
    if isinstance(renders, str):
        rows.append(["render in Chromium", f"skipped: {renders}", "<= 3 s"])
    else:
        load = statistics.median(r["load"] for r in renders) / 1000
        paint = statistics.median(r["paint"] for r in renders) / 1000
        rows += [
            ["render: first paint (median)", f"{paint:.2f} s", ""],
            ["render: load event", f"{load:.2f} s", "<= 3 s"],
        ]
        result["render"] = renders
    print(table(["figure", "value", "target"], rows))
    print(f"written: {write_json('session_report', result, args.json, args.quick)}")


if __name__ == "__main__":
    main()
