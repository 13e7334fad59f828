"""The bash tool under a flood of output.

A command printing 200 MB (``--quick``: 20 MB) runs through ``BashTool``; reported per
workload, each in a fresh worker process so that the high-water marks are its own:

* peak memory of the heron process: ``ru_maxrss`` growth over the run, and the
  tracemalloc peak of a second run (traced separately: tracing slows allocation down);
  target under 100 MB, whatever the output size;
* wall time through the tool versus the same command redirected to ``/dev/null``
  (the overhead of reading, cleaning, counting, keeping the tail and writing the spill
  file).

Workloads: ``yes`` (2-byte lines, the worst case for line counting), base64 (77-byte
lines, typical log/compiler output), and coloured CRLF output with progress redraws
(every read takes the slow path: escape stripping and carriage-return handling).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # this checkout, not an installed heron

from _common import median, parser, table, write_json

WORKLOADS = {
    "yes (2-byte lines)": "yes | head -c {n}",
    "base64 (77-byte lines)": "head -c {raw} /dev/urandom | base64 -w 76 | head -c {n}",
    "ANSI colour + CRLF + \\r redraws": r"yes $'\e[32mok\e[0m step 1/3\r\e[Kstep 3/3 \e[1mdone\e[0m\r\n' | head -c {n}",
}


def command_for(workload: str, size: int) -> str:
    return WORKLOADS[workload].format(n=size, raw=size * 57 // 77 + 64)


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


async def through_tool(command: str, home: Path) -> tuple[float, dict[str, Any], str]:
    from heron.ai.abort import AbortSignal
    from heron.coding.tools.bash import BashTool
    from heron.coding.tools.env import ToolEnv
    from heron.coding.tools.params import BashParams

    tool = BashTool(ToolEnv(cwd=home, home=home, session_id="bench"))
    updates = 0

    def on_update(_: object) -> None:
        nonlocal updates
        updates += 1

    start = time.perf_counter()
    result = await tool.execute("bench", BashParams(command=command), AbortSignal(), on_update)
    elapsed = time.perf_counter() - start
    text = result.content[0].text  # type: ignore[union-attr]
    details = dict(result.details)
    details["updates"] = updates
    details["shown_bytes"] = len(text.encode())
    path = details.get("full_output_path")
    if path:
        details["spill_bytes"] = Path(path).stat().st_size
        Path(path).unlink()
    return elapsed, details, text.rsplit("\n\n", 1)[-1]


def worker(workload: str, size: int) -> dict[str, Any]:
    """One workload in this (fresh) process: timed run, then a traced run."""
    import heron.coding.tools.bash  # noqa: F401 - imports are not part of the measure

    command = command_for(workload, size)
    with tempfile.TemporaryDirectory(prefix="heron-bench-bash-") as tmp:
        home = Path(tmp)
        rss_before = maxrss_mb()
        elapsed, details, notice = asyncio.run(through_tool(command, home))
        rss_growth = maxrss_mb() - rss_before
        tracemalloc.start()
        asyncio.run(through_tool(command, home))
        _, traced_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return {
        "elapsed_s": elapsed,
        "maxrss_growth_mb": rss_growth,
        "maxrss_mb": maxrss_mb(),
        "tracemalloc_peak_mb": traced_peak / 1e6,
        "notice": notice,
        "total_bytes": (details.get("truncation") or {}).get("total_bytes"),
        "total_lines": (details.get("truncation") or {}).get("total_lines"),
        "spill_bytes": details.get("spill_bytes"),
        "shown_bytes": details["shown_bytes"],
        "updates": details["updates"],
    }


def devnull_seconds(command: str, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(["/bin/bash", "-c", f"{{ {command}; }} > /dev/null"], check=True)
        times.append(time.perf_counter() - start)
    return median(times)


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--size", type=int, default=None)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.size)))
        return

    size = 20_000_000 if args.quick else 200_000_000
    repeats = 3
    rows = []
    results: dict[str, Any] = {}
    for workload in WORKLOADS:
        command = command_for(workload, size)
        baseline = devnull_seconds(command, repeats)
        out = subprocess.run(
            [sys.executable, __file__, "--worker", workload, "--size", str(size)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        measured = json.loads(out)
        measured["devnull_s"] = baseline
        results[workload] = measured
        overhead = measured["elapsed_s"] - baseline
        rows.append(
            [
                workload,
                f"{size / 1e6:.0f} MB",
                f"{baseline:.2f}",
                f"{measured['elapsed_s']:.2f}",
                f"+{overhead:.2f} ({measured['elapsed_s'] / baseline:.1f}x)",
                f"{size / 1e6 / measured['elapsed_s']:.0f}",
                f"{measured['maxrss_growth_mb']:.1f}",
                f"{measured['tracemalloc_peak_mb']:.2f}",
                "< 100 MB",
            ]
        )
    print(
        table(
            [
                "workload",
                "output",
                "/dev/null s",
                "tool s",
                "overhead s",
                "MB/s",
                "maxrss growth MB",
                "tracemalloc peak MB",
                "target",
            ],
            rows,
        )
    )
    for workload, measured in results.items():
        print(
            f"{workload}: {measured['notice']}  (spill {measured['spill_bytes']} bytes, "
            f"shown {measured['shown_bytes']} bytes, {measured['updates']} updates)"
        )
    write_json("tool_bash", {"output_bytes": size, "workloads": results}, args.json, args.quick)


if __name__ == "__main__":
    main()
