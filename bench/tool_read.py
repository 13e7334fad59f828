"""read near the end of a 2 GB text file: time and peak memory.

Targets (issue "Coding tools"): under 0.2 s and under 50 MB.

The file is real data (no sparse holes), written in big blocks to /tmp and deleted at the
end; it is read right after being written, so it sits in the page cache (a warm read;
a cold read adds the disk's sequential read time to the first row).

The exact line count the notice needs is a full sequential scan of the file (one
``bytes.count`` per 1 MB block). That scan is the cost of the *first* read of a file
version; the tool keeps the per-block newline counts keyed by (path, mtime_ns, size), so
every later read of the same version only reads two blocks. Both rows are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _common import parser, table, write_json
from heron.agent.tools import ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.types import TextContent
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.read import ReadParams, ReadTool

LINES_PER_BLOCK = 50_000
TIME_TARGET_S = 0.2
MEMORY_TARGET_MB = 50.0


def make_line(i: int) -> bytes:
    return b"%05d 2024-05-01T12:00:00Z INFO worker-3 processed request id=%08d status=200 in 12ms\n" % (i, i * 7)


def generate(path: Path, target_bytes: int) -> tuple[int, int]:
    """Write whole copies of one ~4 MB block of lines until ``target_bytes``; returns
    (bytes, lines)."""
    block = b"".join(make_line(i) for i in range(LINES_PER_BLOCK))
    blocks = max(1, target_bytes // len(block))
    with path.open("wb") as f:
        for _ in range(blocks):
            f.write(block)
    return blocks * len(block), blocks * LINES_PER_BLOCK


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


async def read(tool: ReadTool, path: Path, offset: int, limit: int | None = None) -> ToolResult:
    return await tool.execute("bench", ReadParams(path=str(path), offset=offset, limit=limit), AbortSignal(),
                              lambda _: None)


def check(result: ToolResult, first_line: int) -> None:
    block = result.content[0]
    assert isinstance(block, TextContent) and not result.is_error, block
    expected = make_line((first_line - 1) % LINES_PER_BLOCK).decode().rstrip("\n")
    assert block.text.split("\n", 1)[0] == expected, block.text[:200]


async def timed(tool: ReadTool, path: Path, offset: int, limit: int | None = None) -> tuple[float, float]:
    """(seconds, ru_maxrss growth in MB) of one read."""
    rss = maxrss_mb()
    start = time.perf_counter()
    result = await read(tool, path, offset, limit)
    elapsed = time.perf_counter() - start
    check(result, offset)
    return elapsed, maxrss_mb() - rss


async def traced(tool: ReadTool, path: Path, offset: int, limit: int | None = None) -> float:
    """tracemalloc peak in MB of one read (run apart from the timing: tracing slows it)."""
    tracemalloc.start()
    try:
        result = await read(tool, path, offset, limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    check(result, offset)
    return peak / 1e6


async def measure(env: ToolEnv, path: Path, near_end: int) -> tuple[float, float, float, float, float, float]:
    """All reads in one event loop, so loop and thread-pool start-up are not counted."""
    await asyncio.to_thread(lambda: None)  # start the worker pool before timing
    fresh = ReadTool(env)
    first_s, first_rss = await timed(fresh, path, near_end)
    repeats = [await timed(fresh, path, near_end - 5_000 * (k + 1), 200) for k in range(5)]
    repeat_s = sorted(r[0] for r in repeats)[len(repeats) // 2]
    repeat_rss = max(r[1] for r in repeats)

    traced_tool = ReadTool(env)
    first_peak = await traced(traced_tool, path, near_end - 1)
    repeat_peak = await traced(traced_tool, path, near_end - 2, 200)
    return first_s, first_rss, repeat_s, repeat_rss, first_peak, repeat_peak


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--size-mb", type=int, default=None, help="file size in MiB (default 2048, or 20 with --quick)")
    p.add_argument("--generate", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    size_mb = args.size_mb or (20 if args.quick else 2048)
    if args.generate is not None:
        size, lines = generate(args.generate, size_mb * 1024 * 1024)
        print(size, lines)
        return

    with tempfile.TemporaryDirectory(prefix="heron-bench-read-", dir="/tmp") as tmp:
        path = Path(tmp) / "big.log"
        t0 = time.perf_counter()
        # In a child process, so that this process's peak RSS reflects the reads alone.
        out = subprocess.run(
            [sys.executable, __file__, "--generate", str(path), "--size-mb", str(size_mb)],
            check=True, capture_output=True, text=True,
        ).stdout.split()
        size, lines = int(out[0]), int(out[1])
        generate_s = time.perf_counter() - t0
        baseline_rss = maxrss_mb()
        env = ToolEnv(cwd=Path(tmp), home=Path(tmp) / "home")
        near_end = lines - 1_000  # a page that ends at the file's last line
        try:
            first_s, first_rss, repeat_s, repeat_rss, first_peak, repeat_peak = asyncio.run(
                measure(env, path, near_end)
            )
        finally:
            path.unlink(missing_ok=True)

    def verdict(seconds: float, peak: float, rss: float) -> str:
        ok_time = seconds < TIME_TARGET_S
        ok_mem = max(peak, rss) < MEMORY_TARGET_MB
        return "yes" if ok_time and ok_mem else ("memory only" if ok_mem else "no")

    rows = [
        ["first read (scan builds the line index)", f"{first_s:.3f}", f"{first_peak:.2f}", f"{first_rss:.1f}",
         verdict(first_s, first_peak, first_rss)],
        ["repeated read, same file version (median of 5)", f"{repeat_s:.4f}", f"{repeat_peak:.2f}",
         f"{repeat_rss:.1f}", verdict(repeat_s, repeat_peak, repeat_rss)],
    ]
    print(f"file: {size / 2**30:.2f} GiB, {lines:,} lines, written in {generate_s:.1f} s (page cache warm); "
          f"read at offset {near_end:,}")
    print(f"first-read scan rate: {size / first_s / 1e9:.2f} GB/s; process peak RSS {baseline_rss:.1f} MB before "
          f"the reads, {maxrss_mb():.1f} MB after")
    print(table(["case", "time (s)", "tracemalloc peak (MB)", "ru_maxrss growth (MB)",
                 f"meets < {TIME_TARGET_S} s and < {MEMORY_TARGET_MB:.0f} MB"], rows))
    target = write_json(
        "tool_read",
        {
            "file_bytes": size,
            "file_lines": lines,
            "offset": near_end,
            "peak_rss_before_reads_mb": round(baseline_rss, 2),
            "peak_rss_after_reads_mb": round(maxrss_mb(), 2),
            "first_read_s": round(first_s, 4),
            "first_read_tracemalloc_peak_mb": round(first_peak, 3),
            "first_read_maxrss_growth_mb": round(first_rss, 2),
            "first_read_scan_gb_per_s": round(size / first_s / 1e9, 3),
            "repeated_read_s": round(repeat_s, 5),
            "repeated_read_tracemalloc_peak_mb": round(repeat_peak, 3),
            "repeated_read_maxrss_growth_mb": round(repeat_rss, 2),
            "targets": {"seconds": TIME_TARGET_S, "memory_mb": MEMORY_TARGET_MB},
        },
        args.json,
        args.quick,
    )
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
