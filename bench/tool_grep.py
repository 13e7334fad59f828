"""grep over a generated tree of 50,000 small files: the rg path and the Python path.

The tree (in /tmp, removed afterwards) is a git repository of nested directories with
small source-like files, a gitignored ``build/`` directory in every package and
gitignored ``*.log`` files, so both paths do the ignore work they do on a real project.

Each query runs through ``GrepTool.execute`` (what the agent calls), once to warm the
page cache, then ``--repeat`` times; the table shows the median per query for each
backend and their ratio. Both backends' outputs are compared too: a fast wrong answer
would be worthless. Target: the Python path within 10x of rg. ``find`` (fd against the
Python walk) is reported alongside for information.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, parser, table, write_json
from heron.ai.abort import AbortSignal
from heron.ai.types import TextContent
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.find import FindTool
from heron.coding.tools.grep import GrepTool
from heron.coding.tools.listing import find_program
from heron.coding.tools.params import FindParams, GrepParams

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "value",
    "result",
    "index",
    "count",
    "buffer",
    "stream",
    "parse",
    "token",
    "config",
    "handler",
    "request",
    "response",
    "client",
    "server",
    "cache",
    "store",
    "record",
    "entry",
    "update",
    "create",
]

QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("rare literal (12 files)", {"pattern": "needle_rare_marker", "literal": True}),
    ("no match (full scan)", {"pattern": "zq_no_such_token_zq"}),
    ("regex, limit hit early", {"pattern": r"def \w+_\d+\("}),
    ("case-insensitive word", {"pattern": "TODO: fix", "ignore_case": True}),
    ("glob *.py + regex", {"pattern": r"return \w+\[\d+\]$", "glob": "*.py"}),
    ("context=2, rare", {"pattern": "needle_rare_marker", "context": 2}),
]


def build_tree(root: Path, files: int, seed: int = 7) -> dict[str, int]:
    """Nested packages of small files; about 1 in 12 files is gitignored."""
    rng = random.Random(seed)
    (root / ".git").mkdir(parents=True)
    (root / ".gitignore").write_text("*.log\nbuild/\n__pycache__/\n")
    per_dir = 40
    made = ignored = 0
    rare_every = max(1, files // 12)
    n = 0
    while made < files:
        a, b = divmod(n, 25)
        pkg = root / f"pkg{a:03d}" / f"mod{b:02d}"
        pkg.mkdir(parents=True, exist_ok=True)
        for k in range(per_dir):
            if made >= files:
                break
            lines = []
            for line_no in range(rng.randint(10, 40)):
                w = rng.sample(WORDS, 3)
                kind = line_no % 5
                if kind == 0:
                    lines.append(f"def {w[0]}_{rng.randint(0, 999)}({w[1]}, {w[2]}):")
                elif kind == 1:
                    lines.append(f"    {w[0]} = {w[1]}.{w[2]}({rng.randint(0, 99)})")
                elif kind == 2:
                    lines.append(f"    return {w[0]}[{rng.randint(0, 9)}]")
                elif kind == 3 and rng.random() < 0.02:
                    lines.append(f"    # todo: fix {w[0]}")
                else:
                    lines.append(f"    # {' '.join(w)}")
            if made % rare_every == 0:
                lines.insert(rng.randint(0, len(lines)), "    needle_rare_marker = True")
            text = "\n".join(lines) + "\n"
            if k % 12 == 11:
                (pkg / "build").mkdir(exist_ok=True)
                (pkg / "build" / f"gen{k}.py").write_text(text + "needle_rare_marker\n")
                ignored += 1
            elif k % 12 == 5:
                (pkg / f"run{k}.log").write_text(text + "needle_rare_marker\n")
                ignored += 1
            else:
                (pkg / f"file{k:02d}.{'py' if k % 3 else 'txt'}").write_text(text)
            made += 1
        n += 1
    return {"files": made, "ignored": ignored}


async def run(tool: Any, params: Any) -> str:
    result = await tool.execute("bench", params, AbortSignal(), lambda _update: None)
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def time_query(tool: Any, params: Any, repeat: int) -> tuple[float, str]:
    out = await run(tool, params)  # warm-up (page cache, imports)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await run(tool, params)
        samples.append(time.perf_counter() - start)
    return median(samples), out


async def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--files", type=int, default=None, help="files in the tree (default 50,000; --quick 2,000)")
    p.add_argument("--repeat", type=int, default=None, help="timed runs per query (default 5; --quick 3)")
    args = p.parse_args()
    files = args.files or (2_000 if args.quick else 50_000)
    repeat = args.repeat or (3 if args.quick else 5)
    if find_program("rg") is None:
        sys.exit("rg is not installed: nothing to compare against")

    tmp = Path(tempfile.mkdtemp(prefix="heron-bench-grep-", dir="/tmp"))
    try:
        start = time.perf_counter()
        shape = build_tree(tmp / "tree", files)
        build_s = time.perf_counter() - start
        env = ToolEnv(cwd=tmp / "tree", home=tmp / "home")  # tool processes are marked there, not in ~/.heron
        rows: list[list[Any]] = []
        results: list[dict[str, Any]] = []
        worst = 0.0
        for label, kwargs in QUERIES:
            params = GrepParams(**kwargs)
            rg_s, rg_out = await time_query(GrepTool(env, "external"), params, repeat)
            py_s, py_out = await time_query(GrepTool(env, "python"), params, repeat)
            same = rg_out == py_out
            ratio = py_s / rg_s if rg_s else float("inf")
            worst = max(worst, ratio)
            rows.append([label, f"{rg_s * 1000:.0f}", f"{py_s * 1000:.0f}", f"{ratio:.1f}x", "yes" if same else "NO"])
            results.append(
                {"query": label, "params": kwargs, "rg_s": rg_s, "python_s": py_s, "ratio": ratio, "same_output": same}
            )
        find_row: dict[str, Any] | None = None
        if find_program("fd", "fdfind") is not None:
            params_f = FindParams(pattern="*.py")
            fd_s, fd_out = await time_query(FindTool(env, "external"), params_f, repeat)
            pyf_s, pyf_out = await time_query(FindTool(env, "python"), params_f, repeat)
            rows.append(
                [
                    "find *.py (fd vs Python walk)",
                    f"{fd_s * 1000:.0f}",
                    f"{pyf_s * 1000:.0f}",
                    f"{pyf_s / fd_s:.1f}x",
                    "yes" if fd_out == pyf_out else "NO",
                ]
            )
            find_row = {"fd_s": fd_s, "python_s": pyf_s, "ratio": pyf_s / fd_s, "same_output": fd_out == pyf_out}

        print(
            f"tree: {shape['files']:,} files ({shape['ignored']:,} gitignored), built in {build_s:.1f}s; "
            f"median of {repeat} runs per query"
        )
        print(table(["query", "rg ms", "python ms", "python/rg", "same output"], rows))
        print(f"worst grep ratio: {worst:.1f}x (target: within 10x)")
        target = write_json(
            "tool_grep",
            {
                "files": shape["files"],
                "ignored_files": shape["ignored"],
                "repeat": repeat,
                "queries": results,
                "worst_ratio": worst,
                "target_ratio": 10,
                "find": find_row,
            },
            args.json,
            args.quick,
        )
        print(f"wrote {target}")
        if not all(r["same_output"] for r in results):
            sys.exit("the backends disagree")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
