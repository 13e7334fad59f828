"""What the sandbox costs a bash call (issue 24's target: at most 20 ms more per call).

The same commands run through ``BashTool`` with the sandbox off and on (workspace-write,
no network, the default), interleaved so that the machine's load falls on both alike; the
figure is the median wall time of a call, from ``execute`` to its result. Commands: ``true``
(the fixed cost alone), ``git status`` in a small repository and ``ls -R`` of the project
(ordinary work). The machine's load average is printed with the table.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # this checkout, not an installed heron

from _common import median, parser, table, write_json
from heron.ai.abort import AbortSignal
from heron.coding.sandbox import Sandbox, sandbox_policy
from heron.coding.sandbox.bwrap import availability
from heron.coding.tools.bash import BashTool
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.params import BashParams

COMMANDS = {"true": "true", "git status": "git status --short", "ls -R": "ls -R > /dev/null"}
TARGET_MS = 20.0


def project(root: Path) -> Path:
    repo = root / "proj"
    for i in range(50):
        (repo / f"pkg{i % 5}").mkdir(parents=True, exist_ok=True)
        (repo / f"pkg{i % 5}" / f"m{i}.py").write_text(f"x = {i}\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def tools(repo: Path, home: Path) -> dict[str, BashTool]:
    plain = BashTool(ToolEnv(cwd=repo, home=home))
    env = ToolEnv(cwd=repo, home=home)
    policy = sandbox_policy([], [], project=repo, home=home, trusted=False)
    env.confine = Sandbox(lambda: policy).confine
    return {"off": plain, "on": BashTool(env)}


async def call(tool: BashTool, command: str) -> float:
    start = time.perf_counter()
    result = await tool.execute("b", BashParams(command=command), AbortSignal(), lambda _: None)
    elapsed = time.perf_counter() - start
    if result.is_error:
        raise SystemExit(f"{command!r} failed: {result.content}")
    return elapsed


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    state = availability()
    if not state.ok:
        print(f"the sandbox cannot run here: {state.reason}")
        write_json("sandbox_cost", {"available": False, "reason": state.reason}, args.json, args.quick)
        return
    repeats = 5 if args.quick else 40
    with tempfile.TemporaryDirectory(prefix="heron-bench-sandbox-") as tmp:
        repo, home = project(Path(tmp)), Path(tmp) / "home"
        home.mkdir()
        by_mode = tools(repo, home)
        samples: dict[str, dict[str, list[float]]] = {c: {"off": [], "on": []} for c in COMMANDS}
        for command_name, command in COMMANDS.items():
            asyncio.run(call(by_mode["on"], command))  # warm-up: imports, the one-time probe
            for _ in range(repeats):
                for mode in ("off", "on"):
                    samples[command_name][mode].append(asyncio.run(call(by_mode[mode], command)))
    rows, results = [], {}
    for name, by in samples.items():
        off, on = median(by["off"]) * 1000, median(by["on"]) * 1000
        results[name] = {"off_ms": off, "on_ms": on, "added_ms": on - off}
        rows.append([name, f"{off:.1f}", f"{on:.1f}", f"+{on - off:.1f}", "yes" if on - off <= TARGET_MS else "NO"])
    load = os.getloadavg()[0]
    print(table(["command", "sandbox off (ms)", "on (ms)", "added", f"<= {TARGET_MS:.0f} ms"], rows))
    print(f"median of {repeats} calls each; load average {load:.2f}")
    data: dict[str, Any] = {"available": True, "repeats": repeats, "load": load, "commands": results}
    print(write_json("sandbox_cost", data, args.json, args.quick))


if __name__ == "__main__":
    main()
