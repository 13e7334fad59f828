"""``heron batch`` throughput: tasks per minute against --workers, local and Ray.

Each task is one coding session of two model requests and one ``read`` tool call,
against a scripted OpenAI-compatible server on 127.0.0.1 that holds every reply for
``--latency`` seconds (a model's time to answer; the default 0.25 s). Throughput is
measured from the first to the last model request the server saw, so Ray's start-up
(its local cluster and the actors) is excluded; the wall time of the whole command is
reported beside it. Every run is a real ``heron batch`` subprocess with a fresh
``--out``.

The issue's target: on one machine, ray throughput >= 0.8x local at the same workers.

``--quick``: 8 tasks, workers 1 and 2, for CI (Ray only when installed).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.batch.support import ScriptedServer, batch_args, batch_env, make_project, read_results, write_tasks

from _common import parser, table, write_json


def run_once(executor: str, workers: int, tasks: int, latency: float) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="heron-bench-batch-"))
    server = ScriptedServer(delay=latency)
    try:
        project = make_project(root)
        write_tasks(root / "tasks.jsonl", project, tasks)
        args = batch_args(root / "tasks.jsonl", root / "out", server, "--executor", executor, "--workers", str(workers))
        started = time.monotonic()
        done = subprocess.run(
            args,
            env=batch_env(root),
            cwd=root,
            capture_output=True,
            text=True,
            timeout=1800,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        wall = time.monotonic() - started
        if done.returncode != 0:
            raise SystemExit(f"heron batch failed ({executor}, {workers} workers):\n{done.stderr[-2000:]}")
        results = read_results(root / "out")
        assert len(results) == tasks and all(r["status"] == "ok" for r in results)
        span = (server.times[-1] - server.times[0]) + latency  # the last reply's wait counts too
        return {
            "executor": executor,
            "workers": workers,
            "tasks": tasks,
            "wall_s": round(wall, 2),
            "model_span_s": round(span, 3),
            "tasks_per_min": round(tasks / span * 60, 1),
        }
    finally:
        server.close()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=None, help="tasks per run (default 64, quick 8)")
    p.add_argument("--latency", type=float, default=0.25, help="seconds the server holds each reply")
    p.add_argument("--workers", default=None, help="comma-separated worker counts (default 1,2,4,8)")
    args = p.parse_args()
    tasks = args.tasks or (8 if args.quick else 64)
    counts = [int(n) for n in (args.workers or ("1,2" if args.quick else "1,2,4,8")).split(",")]
    executors = ["local"] + (["ray"] if importlib.util.find_spec("ray") is not None else [])
    runs = [run_once(executor, workers, tasks, args.latency) for workers in counts for executor in executors]
    local = {r["workers"]: r["tasks_per_min"] for r in runs if r["executor"] == "local"}
    rows = []
    for r in runs:
        ratio = r["tasks_per_min"] / local[r["workers"]] if local.get(r["workers"]) else 0.0
        rows.append(
            [
                r["executor"],
                r["workers"],
                r["tasks"],
                r["tasks_per_min"],
                f"{ratio:.2f}x",
                r["model_span_s"],
                r["wall_s"],
            ]
        )
    print(table(["executor", "workers", "tasks", "tasks/min", "vs local", "first-last request s", "wall s"], rows))
    if "ray" not in executors:
        print("(ray not installed: pip install 'heron[ray]' to measure it)")
    path = write_json("batch", {"latency_s": args.latency, "runs": runs}, args.json, args.quick)
    print(f"\nwritten: {path}")


if __name__ == "__main__":
    main()
