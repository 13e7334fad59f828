"""Recall index: index a large generated session from scratch, catch up, and search it.

A 100,000-entry session (``../shared/tools/gen_pi_session.py``, ~189 MB) is put in a fresh
``HERON_HOME`` and indexed from nothing (``RecallIndex.catch_up``); then 100 entries are
appended and the catch-up repeated (the incremental path a live session takes); then a
set of queries is run, each many times, through ``RecallIndex.search`` (which includes
the no-op catch-up every search does). Figures: index time, index size on disk, the
incremental catch-up, and query latency p50/p99 (target: a query <= 50 ms).
``--quick``: a 2,000-entry session (CI).
"""

from __future__ import annotations

import json
import os
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
MARKER = "MARKER-bench-9c1d"
QUERIES = [
    ("rare marker", MARKER),
    ("identifier", "createAgentSession"),
    ("common word", "the"),
    ("two words", "registry promise"),
    ("phrase", '"leaf memory"'),
    ("file path", "src/tui/tui.ts"),
    ("boolean", "adapter NOT socket"),
    ("prefix", "comp*"),
]


def generated(entries: int) -> Path:
    generator = shared_path("tools", "gen_pi_session.py")  # without it: skipped, naming it
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"s{entries}.jsonl"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        subprocess.run(
            [sys.executable, str(generator), "--entries", str(entries), "--out", str(tmp)],
            check=True,
            capture_output=True,
        )
        tmp.replace(path)
    return path


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def append_entries(path: Path, count: int) -> str:
    """``count`` user messages at the end of the file, the first with the marker; returns its id."""
    from heron.session.store import SessionStore

    with SessionStore.open(path) as store:
        first = None
        for i in range(count):
            from heron.ai.types import UserMessage

            entry = store.append_message(UserMessage(content=f"{MARKER if i == 0 else 'appended'} entry {i}"))
            first = first or entry.id
    return str(first)


def measure(source: Path, runs: int) -> dict[str, Any]:
    from heron.session.recall import RecallIndex

    home = Path(tempfile.mkdtemp(prefix="heron-recall-bench-"))
    try:
        folder = home / "sessions" / "--home-dev-project--"
        folder.mkdir(parents=True)
        header = json.loads(source.open("rb").readline())
        path = folder / f"2026-01-05T09-00-00-000Z_{header['id']}.jsonl"
        shutil.copyfile(source, path)
        with RecallIndex(home) as index:
            start = time.perf_counter()
            full = index.catch_up("all")
            index_s = time.perf_counter() - start
            index._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            size = index.stats()["bytes"]
            marker_id = append_entries(path, 100)
            start = time.perf_counter()
            incremental = index.catch_up("all")
            incremental_s = time.perf_counter() - start
            start = time.perf_counter()
            index.catch_up("all")
            noop_s = time.perf_counter() - start
            queries: list[dict[str, Any]] = []
            all_ms: list[float] = []
            for label, query in QUERIES:
                times: list[float] = []
                hits = 0
                for _ in range(runs):
                    start = time.perf_counter()
                    result = index.search(query, scope="session", session_id=header["id"], limit=10)
                    times.append((time.perf_counter() - start) * 1000)
                    hits = len(result.hits)
                if label == "rare marker":
                    assert result.hits and result.hits[0].entry_id == marker_id, "the marker entry is found"
                all_ms.extend(times)
                queries.append(
                    {
                        "label": label,
                        "query": query,
                        "hits": hits,
                        "p50_ms": statistics.median(times),
                        "p99_ms": percentile(times, 0.99),
                    }
                )
        return {
            "entries": full.rows_added,
            "file_bytes": source.stat().st_size,
            "index_s": index_s,
            "index_bytes": size,
            "incremental_rows": incremental.rows_added,
            "incremental_ms": incremental_s * 1000,
            "noop_catch_up_ms": noop_s * 1000,
            "queries": queries,
            "query_p50_ms": statistics.median(all_ms),
            "query_p99_ms": percentile(all_ms, 0.99),
        }
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> int:
    args = parser(__doc__ or "").parse_args()
    entries = 2_000 if args.quick else 100_000
    runs = 5 if args.quick else 30
    result = measure(generated(entries), runs)
    mb = 1024 * 1024
    print(
        f"recall index: {entries:,}-entry session, {result['file_bytes'] / mb:.1f} MB, "
        f"{result['entries']:,} rows indexed"
    )
    print(
        table(
            ["index from scratch", "index size", "catch-up +100 entries", "no-op catch-up", "query p50", "query p99"],
            [
                [
                    f"{result['index_s']:.2f} s",
                    f"{result['index_bytes'] / mb:.1f} MB",
                    f"{result['incremental_ms']:.1f} ms",
                    f"{result['noop_catch_up_ms']:.2f} ms",
                    f"{result['query_p50_ms']:.1f} ms",
                    f"{result['query_p99_ms']:.1f} ms",
                ]
            ],
        )
    )
    print()
    print(
        table(
            ["query", "text", "hits", "p50", "p99"],
            [
                [q["label"], q["query"], q["hits"], f"{q['p50_ms']:.1f} ms", f"{q['p99_ms']:.1f} ms"]
                for q in result["queries"]
            ],
        )
    )
    target = write_json(
        "recall_index",
        {"entries_generated": entries, "runs": runs, "cpus": os.cpu_count(), **result},
        args.json,
        args.quick,
    )
    print(f"\nwrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
