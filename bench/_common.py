"""Shared helpers for the benchmark scripts: argument parsing, tables, JSON output."""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
# The exit status of a benchmark that cannot run here because data it needs is missing:
# `.ci/run` reports it as skipped, with the reason the script printed.
SKIPPED = 77


def shared_path(*parts: str) -> Path:
    """A path in the shared data beside the repository (``../shared``, or wherever
    ``HERON_SHARED`` points), resolved where the tests resolve it
    (``tests.support.fixtures``); when it is absent the benchmark ends with
    :data:`SKIPPED`, naming the path, instead of crashing half-way."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.support.fixtures import SHARED, missing_reason

    path = SHARED.joinpath(*parts)
    reason = missing_reason(path)
    if reason is not None:
        print(f"skipped: {reason}", file=sys.stderr)
        raise SystemExit(SKIPPED)
    return path


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="tiny sizes: prove the script works (CI)")
    p.add_argument("--json", type=Path, default=None, help="where to write the results (default bench/results/)")
    return p


def median(values: list[float]) -> float:
    return statistics.median(values)


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def write_json(name: str, data: dict[str, Any], path: Path | None, quick: bool) -> Path:
    target = path or RESULTS / (f"{name}.quick.json" if quick else f"{name}.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    data = {"benchmark": name, "python": sys.version.split()[0], "machine": platform.machine(), **data}
    target.write_text(json.dumps(data, indent=2) + "\n")
    return target
