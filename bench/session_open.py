"""Opening sessions and appending to them (heron.session).

For a generated 100,000-entry session in pi's version-3 format (the shared generator:
realistic message sizes, ~200 compactions, 25 branches, labels; ~189 MB) and for the two
real pi fixtures (version 1, migrated on load):

1. open + build the leaf's context: wall and CPU time, median of several runs, each in a
   fresh process (the file is in the page cache after the first);
2. peak memory of that: the process's ru_maxrss (interpreter and imports included, the
   baseline after imports is reported too) and tracemalloc's peak (a separate run: tracing
   slows Python down);
3. append latency per entry (a message of realistic size, one line, one write), without
   fsync and with fsync, on a copy of the file.

Targets (issue 4): open + context under 1.0 s and under 300 MB; append under 100 us
without fsync. pi 0.73.1 on the same kind of file: opens in 3.66 s, builds the context in
351 ms, peaks at 1,353 MB (../shared/tools/README.md).

``--quick`` uses a 5,000-entry file and fewer runs.
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

from _common import ROOT, parser, shared_path, table, write_json

CACHE = Path(tempfile.gettempdir()) / "heron-bench"


# --- child processes ------------------------------------------------------------------------


def child_open(path: str, trace: bool) -> dict[str, Any]:
    import resource

    t0 = time.perf_counter()
    from heron.context.window.budget import estimate_context_tokens
    from heron.session.store import SessionStore

    import_s = time.perf_counter() - t0
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if trace:
        import tracemalloc

        tracemalloc.start()
    w0, c0 = time.perf_counter(), time.process_time()
    store = SessionStore.open(path, read_only=True)
    w1, c1 = time.perf_counter(), time.process_time()
    context = store.build_context()
    w2, c2 = time.perf_counter(), time.process_time()
    out: dict[str, Any] = {
        "import_s": import_s,
        "open_s": w1 - w0,
        "context_s": w2 - w1,
        "total_s": w2 - w0,
        "open_cpu_s": c1 - c0,
        "total_cpu_s": c2 - c0,
        "baseline_rss_mb": baseline_kb / 1024,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "entries": len(store),
        "context_messages": len(context.messages),
        "context_first_role": context.messages[0].role if context.messages else None,
        "model": str(context.model),
        "thinking_level": context.thinking_level,
        "estimated_context_tokens": estimate_context_tokens(context.messages),
        "warnings": len(store.warnings),
    }
    if trace:
        import tracemalloc

        out["traced_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return out


def child_append(path: str, count: int, fsync: bool) -> dict[str, Any]:
    from heron.ai.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage, Usage, UserMessage
    from heron.session.store import SessionStore

    work = Path(tempfile.mkdtemp(prefix="heron-bench-append-"))
    try:
        copy = work / Path(path).name
        shutil.copy(path, copy)
        store = SessionStore.open(copy, fsync=fsync)
        prose = "the session store appends one line per entry with a single write call " * 20
        output = "src/heron/session/store.py:120: def append(self, entry): ... \n" * 40
        t0 = time.perf_counter()
        store.append_message(UserMessage(content=[TextContent(text="first append after opening")]))
        first_s = time.perf_counter() - t0  # a version-1 file is rewritten in version 3 here
        times: list[float] = []
        for n in range(count):
            kind = n % 3
            if kind == 0:
                message: Any = UserMessage(content=[TextContent(text=prose[:300])])
            elif kind == 1:
                call = ToolCall(id=f"toolu_{n:022d}", name="read", arguments={"path": "src/heron/session/store.py"})
                message = AssistantMessage(
                    api="anthropic-messages",
                    provider="anthropic",
                    model="claude-sonnet-4-5",
                    content=[TextContent(text=prose[:500]), call],
                    usage=Usage(input=3, output=180, cache_read=91_000, cache_write=2_100),
                )
            else:
                message = ToolResultMessage(
                    tool_call_id=f"toolu_{n - 1:022d}", tool_name="read", content=[TextContent(text=output[:2_000])]
                )
            start = time.perf_counter_ns()
            store.append_message(message)
            times.append((time.perf_counter_ns() - start) / 1000)
        store.close()
        times.sort()
        return {
            "appends": count,
            "first_append_ms": first_s * 1000,
            "median_us": statistics.median(times),
            "mean_us": statistics.fmean(times),
            "p99_us": times[min(len(times) - 1, int(len(times) * 0.99))],
            "bytes_per_entry": (copy.stat().st_size - Path(path).stat().st_size) / (count + 1),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def in_child(*args: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, env=env, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --- driver -------------------------------------------------------------------------------------


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


def measure(path: Path, runs: int, appends: int, fsync_appends: int) -> dict[str, Any]:
    opens = [in_child("open", str(path), "0") for _ in range(runs)]
    traced = in_child("open", str(path), "1")
    first = opens[0]
    plain = in_child("append", str(path), str(appends), "0")
    synced = in_child("append", str(path), str(fsync_appends), "1")
    return {
        "file": str(path),
        "bytes": path.stat().st_size,
        "entries": first["entries"],
        "context_messages": first["context_messages"],
        "context_first_role": first["context_first_role"],
        "model": first["model"],
        "thinking_level": first["thinking_level"],
        "estimated_context_tokens": first["estimated_context_tokens"],
        "warnings": first["warnings"],
        "runs": runs,
        "import_s": statistics.median(o["import_s"] for o in opens),
        "open_s": statistics.median(o["open_s"] for o in opens),
        "context_s": statistics.median(o["context_s"] for o in opens),
        "open_context_s": statistics.median(o["total_s"] for o in opens),
        "open_context_min_s": min(o["total_s"] for o in opens),
        "open_context_cpu_s": statistics.median(o["total_cpu_s"] for o in opens),
        "baseline_rss_mb": statistics.median(o["baseline_rss_mb"] for o in opens),
        "peak_rss_mb": max(o["peak_rss_mb"] for o in opens),
        "traced_peak_mb": traced["traced_peak_mb"],
        "append": plain,
        "append_fsync": synced,
    }


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, path = sys.argv[2], sys.argv[3]
        if kind == "open":
            result = child_open(path, trace=sys.argv[4] == "1")
        else:
            result = child_append(path, int(sys.argv[4]), fsync=sys.argv[5] == "1")
        print(json.dumps(result))
        return 0
    p = parser(__doc__.split("\n")[0] if __doc__ else "")
    p.add_argument("--entries", type=int, default=None, help="size of the generated session (default 100,000)")
    p.add_argument("--runs", type=int, default=None, help="fresh-process runs per file (default 5, quick 2)")
    args = p.parse_args()
    entries = args.entries or (5_000 if args.quick else 100_000)
    runs = args.runs or (2 if args.quick else 5)
    appends, fsync_appends = (300, 30) if args.quick else (3_000, 300)
    pi_sessions = ("fixtures", "pi", "sessions")
    files = [
        generated(entries),
        shared_path(*pi_sessions, "large-session.jsonl"),
        shared_path(*pi_sessions, "before-compaction.jsonl"),
    ]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    results = [measure(path, runs, appends, fsync_appends) for path in files]
    rows = []
    for r in results:
        rows.append(
            [
                Path(r["file"]).name,
                f"{r['entries']:,}",
                f"{r['bytes'] / 2**20:.1f} MB",
                f"{r['open_context_s'] * 1000:.0f} ms ({r['open_s'] * 1000:.0f} + {r['context_s'] * 1000:.0f})",
                f"{r['open_context_cpu_s'] * 1000:.0f} ms",
                f"{r['peak_rss_mb']:.0f} MB ({r['baseline_rss_mb']:.0f})",
                f"{r['traced_peak_mb']:.1f} MB",
                f"{r['append']['median_us']:.0f} / {r['append']['p99_us']:.0f} us",
                f"{r['append_fsync']['median_us']:.0f} us",
                f"{r['context_messages']} ({r['context_first_role']})",
            ]
        )
    print(f"load average at start: {load}")
    print(
        table(
            [
                "file",
                "entries",
                "size",
                "open+context (open + ctx)",
                "cpu",
                "peak RSS (after imports)",
                "traced peak",
                "append median / p99",
                "append+fsync",
                "context msgs",
            ],
            rows,
        )
    )
    target = results[0]
    print(
        f"\n{entries:,} entries: open+context {target['open_context_s']:.3f} s (target < 1.0 s), "
        f"peak RSS {target['peak_rss_mb']:.0f} MB (target < 300 MB), "
        f"append {target['append']['median_us']:.0f} us (target < 100 us)"
    )
    out = write_json(
        "session_open", {"entries": entries, "load_average": load, "results": results}, args.json, args.quick
    )
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
