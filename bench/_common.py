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
