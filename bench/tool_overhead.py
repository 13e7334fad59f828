"""Fixed overhead per request, and peak concurrent processes for 200 bash calls.

1. Characters every request carries before its first message -- the system prompt plus
   the tool definitions (name, description, JSON schema) -- for the default tool set and
   for all seven tools, built the way the runtime builds them. pi 1.6 sends 5,154 for the
   default set; heron sent 6,187 before the tools' full descriptions stopped being
   repeated in the prompt.
2. One answer with 200 ``bash`` calls (each registers itself in a folder for 0.3 s and
   logs how many are registered), run through the agent loop and the real bash tool:
   the peak number of commands running at once, without a limit and with the default
   ``tools.maxParallel`` of 8. (``--quick``: 60 calls.)
"""

from __future__ import annotations

import asyncio
import datetime
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import parser, table, write_json
from heron.agent import Agent
from heron.ai.providers.faux import FauxProvider, FauxReply, text
from heron.ai.registry import unregister_provider
from heron.ai.types import ToolCall
from heron.coding.prompt import build_system_prompt, request_overhead_chars
from heron.coding.tools import ALL_TOOLS, ToolEnv, create_tools
from heron.coding.tools.bash import BashTool

PI_DEFAULT_CHARS = 5_154
COUNTING = 'touch "$D/$$"; ls "$D" | wc -l >> "$D.log"; sleep 0.3; rm "$D/$$"'


def overhead(names: tuple[str, ...] | None) -> tuple[int, int, int]:
    cwd = Path("/home/user/project")
    tools = create_tools(ToolEnv(cwd=cwd), names)
    specs = [(t.name, t.description) for t in tools]
    prompt = build_system_prompt(cwd=cwd, date=datetime.date(2025, 1, 1), tools=specs)
    definitions = [t.definition() for t in tools]
    total = request_overhead_chars(prompt, definitions)
    return len(prompt), total - len(prompt), total


async def peak(calls: int, max_parallel: int) -> tuple[int, float]:
    faux = FauxProvider.install("faux-bench-parallel")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            running = root / "running"
            running.mkdir()
            command = COUNTING.replace("$D", str(running))
            reply = FauxReply(
                content=[ToolCall(id=f"c{i}", name="bash", arguments={"command": command}) for i in range(calls)]
            )
            faux.queue(reply, text("done"))
            env = ToolEnv(cwd=root, home=root / "home", session_id="bench")
            agent = Agent(model=faux.model(), tools=[BashTool(env)], max_parallel=max_parallel)
            start = time.monotonic()
            await agent.prompt("go")
            elapsed = time.monotonic() - start
            counts = [int(line) for line in Path(f"{running}.log").read_text().split()]
            return max(counts), elapsed
    finally:
        unregister_provider("faux-bench-parallel")


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    rows: list[list[Any]] = []
    data: dict[str, Any] = {"pi_default_chars": PI_DEFAULT_CHARS, "overhead": {}, "parallel": {}}
    for label, names in (("default (read, bash, edit, write)", None), ("all seven tools", ALL_TOOLS)):
        prompt, tools, total = overhead(names)
        rows.append([label, prompt, tools, total, f"{total / PI_DEFAULT_CHARS:.2f}" if names is None else "-"])
        data["overhead"][label] = {"prompt_chars": prompt, "tool_chars": tools, "total_chars": total}
    print(table(["tool set", "system prompt chars", "tool definition chars", "total", "vs pi 1.6 (5,154)"], rows))

    calls = 60 if args.quick else 200
    prow: list[list[Any]] = []
    for label, limit in (("no limit (before)", 10**6), ("tools.maxParallel = 8 (default)", 8)):
        most, elapsed = asyncio.run(peak(calls, limit))
        prow.append([label, calls, most, f"{elapsed:.2f}"])
        data["parallel"][label] = {"calls": calls, "peak_processes": most, "elapsed_s": elapsed}
    print(table(["bash calls in one answer", "calls", "peak concurrent commands", "wall s"], prow))
    print(f"wrote {write_json('tool_overhead', data, args.json, args.quick)}")


if __name__ == "__main__":
    main()
