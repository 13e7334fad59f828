"""Import cost of heron.ai (no SDK) next to the provider SDKs, from ``python -X importtime``.

Each figure is the median over several fresh interpreters of the cumulative import time
of the named top-level module, as ``-X importtime`` reports it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from _common import median, parser, table, write_json

TARGETS = [
    ("heron.ai", "import heron.ai"),
    ("heron (package)", "import heron"),
    ("anthropic", "import anthropic"),
    ("openai", "import openai"),
    ("google.genai", "from google import genai"),
]


def cumulative_us(statement: str, module: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement], capture_output=True, text=True, env=env, check=True
    ).stderr
    for line in out.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return float(parts[1])
    raise RuntimeError(f"{module} not found in importtime output")


def wall_ms(statement: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], env=env, check=True)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    runs = 3 if args.quick else 11
    rows = []
    results = {}
    for label, statement in TARGETS:
        module = statement.split()[-1] if statement.startswith("import") else "google.genai"
        cumulative_us(statement, module)  # warm the bytecode cache
        ms = median([cumulative_us(statement, module) / 1000 for _ in range(runs)])
        results[label] = round(ms, 1)
        rows.append([label, f"{ms:.1f}"])
    baseline = median([wall_ms("pass") for _ in range(runs)])
    with_ai = median([wall_ms("import heron.ai") for _ in range(runs)])
    rows.append(["python -c pass (wall)", f"{baseline:.1f}"])
    rows.append(["python -c 'import heron.ai' (wall)", f"{with_ai:.1f}"])
    results["python_pass_wall_ms"] = round(baseline, 1)
    results["import_heron_ai_wall_ms"] = round(with_ai, 1)
    print(table(["import", "median ms"], rows))
    write_json("ai_import", {"runs": runs, "median_ms": results, "target_heron_ai_ms": 60}, args.json, args.quick)


if __name__ == "__main__":
    main()
