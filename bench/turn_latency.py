"""Issue 23: what heron costs between a prompt and its request, as a session grows.

One ``heron --mode rpc`` process per run, against a scripted local server (the audit
harness's plan server, OpenAI chat-completions or Anthropic Messages wire). Two scenarios:

- **growth**: a model with a 1,000,000-token window (nothing is pruned or compacted), each
  turn one ``read`` of 30 lines (~2.5 KB) then an answer. Figure: from writing the
  ``prompt`` command to heron's stdin to the moment the server has the turn's first request
  (both clocks are this process's ``perf_counter``): turns 1-10 and turns 141-150
  (medians). Goal: at most 5 ms, and turn 150 within 1.5x of turns 1-10.
- **longrun**: a 32,000-token window that the server enforces, 200 turns that read
  slices of 120 KB files or print ~100 KB from bash, so pruning and compaction run.
  Figure: the mean wall time of a turn (prompt to ``agent_settled``), tools included.

pi 1.6.0 runs the same scenarios over its own rpc mode (same prompts, same scripted server,
its compaction's summary requests answered outside the plan) when it is installed
(``bench/_pi.py``; ``--no-pi`` leaves it out); its rows say "pi: not installed" otherwise.
The "requests" column checks that each run did the work: requests, compaction summaries,
and requests rejected as too long. The load average is printed at the start and the end.

``--baseline REF`` runs the same scenarios with ``src/`` of a git ref (extracted to a
temporary directory, first on ``PYTHONPATH``) in the same run, side by side.
Last, in-process and without I/O: the context work of one request (view, count, read
index; the invariant checks) at turns 1-10 and at the last turn, incremental vs from
scratch.

``--profile DIR`` runs heron under cProfile and writes one ``.prof`` per run.
``HERON_CHECK_CONTEXT`` is unset: the normal run's path (``--check`` sets it to ``warn``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.cli.audit_harness import (
    AnthropicPlanServer,
    PlanServer,
    Step,
    bash_100k,
    heron,
    make_project,
    prompt,
    read,
    text_of,
)
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.summaries import is_summary_body

from _common import median, parser, table, write_json
from _pi import NOT_INSTALLED, pi_command, pi_env, pi_model
from _rpc_client import RpcProcess
from heron.agent.tool_meta import ToolCatalog
from heron.ai.types import (
    AssistantMessage,
    Context,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from heron.coding.tools import builtin_meta
from heron.context.records.decisions import ContextDecisions
from heron.context.rules.invariants import IncrementalCheck, RequestSnapshot, check_request
from heron.context.view.build import ViewBuilder
from heron.context.window.budget import request_tokens, tail_pressure

ROOT = Path(__file__).resolve().parents[1]
GOAL_MS = 5.0
GOAL_RATIO = 1.5
PI = "pi 1.6.0"
# The first words of the system prompt of pi's compaction request.
PI_SUMMARY_MARK = "You are a context summarization assistant."
APIS = {"openai": ("openai-completions", PlanServer), "anthropic": ("anthropic-messages", AnthropicPlanServer)}


class TimedPlan:
    """The plan server, noting when the first request of each turn arrived; request
    bodies are not kept (a 150-turn session would hold hundreds of MB of them).

    The plan server knows turns by the counter the driver sets before each prompt, which
    holds for pi's requests as for heron's (one prompt at a time, each waited for). pi's
    compaction asks for its summary with its own system prompt: answered with a summary
    here, outside the plan (the plan server knows heron's summary request itself)."""

    def __init__(self, plan: PlanServer) -> None:
        self.plan = plan
        self.first: dict[int, float] = {}
        self.requests = 0  # every request, summaries included (a check that the run did what it should)
        self.summaries = 0  # compaction summaries (heron's or pi's)

    def __call__(self, request: Recorded) -> Reply:
        arrived = time.perf_counter()
        body = self.plan.decode(request)
        head = text_of(body["messages"][0]) if body["messages"] else ""
        self.requests += 1
        if head.startswith(PI_SUMMARY_MARK):
            self.summaries += 1
            return self.plan.text("## Goal\nFollow the plan.\n\n## Progress\n- earlier turns done", 1_000)
        if is_summary_body(body):
            self.summaries += 1  # the plan server answers heron's (either kind)
        else:
            self.first.setdefault(self.plan.turn, arrived)
        reply = self.plan(request)
        self.plan.bodies.clear()
        self.plan.raw.clear()
        return reply


def growth_plans(turns: int) -> dict[int, list[Step]]:
    return {n: [read(f"data/file{n % 4}.txt", offset=1 + (n * 37) % 1400, limit=30)] for n in range(turns)}


def longrun_plans(turns: int) -> dict[int, list[Step]]:
    plans: dict[int, list[Step]] = {}
    for n in range(turns):
        kind = n % 5
        if kind == 0:
            plans[n] = [bash_100k(f"turn {n}")]
        elif kind == 4:
            plans[n] = []  # a turn answered without tools
        else:
            plans[n] = [read(f"data/file{n % 4}.txt", offset=1 + (n * 53) % 1200, limit=200)]
    return plans


@dataclass
class Run:
    label: str
    scenario: str
    api: str
    turns: int
    first_ms: list[float] = field(default_factory=list)  # prompt -> first request, per turn
    turn_ms: list[float] = field(default_factory=list)  # prompt -> agent_settled, per turn
    requests: int = 0  # what the server received: requests, compaction summaries, rejected as too long
    summaries: int = 0
    rejected: int = 0

    def summary(self) -> dict[str, Any]:
        early = self.first_ms[:10]
        late = self.first_ms[-10:]
        return {
            "label": self.label,
            "scenario": self.scenario,
            "api": self.api,
            "turns": self.turns,
            "first_request_turns_1_10_ms": round(median(early), 2),
            "first_request_last_10_ms": round(median(late), 2),
            "ratio": round(median(late) / max(1e-9, median(early)), 2),
            "turn_mean_ms": round(sum(self.turn_ms) / len(self.turn_ms), 1),
            "requests": self.requests,
            "summaries": self.summaries,
            "rejected": self.rejected,
            "first_ms": [round(x, 2) for x in self.first_ms],
        }


def source_tree(ref: str, into: Path) -> Path:
    """``src/`` of git ``ref``, extracted under ``into``."""
    archive = subprocess.run(["git", "archive", ref, "src"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def drive(scenario: str, api: str, turns: int, src: Path | None, label: str, profile: Path | None, check: bool) -> Run:
    """One rpc process (heron's, or pi's when ``label`` is :data:`PI`) through ``turns``
    prompts of ``scenario`` against a fresh scripted server."""
    wire, server_class = APIS[api]
    window = 1_000_000 if scenario == "growth" else 32_000
    model = {"id": "big", "contextWindow": window, "maxTokens": 4_096}
    plans = growth_plans(turns) if scenario == "growth" else longrun_plans(turns)
    plan = server_class(plans, {"big": window})
    timed = TimedPlan(plan)
    server = LocalServer(responder=timed)
    run = Run(label, scenario, api, turns)
    with tempfile.TemporaryDirectory(prefix="heron-turns-") as tmp:
        cwd, env = make_project(Path(tmp), server.url, [model], api=wire)
        if label == PI:
            process = _pi_rpc(Path(tmp), cwd, server.url, wire, window)
        else:
            process = _heron_rpc(cwd, env, src, check, profile, f"{scenario}-{api}-{label.replace(' ', '-')}.prof")
        try:
            for n in range(turns):
                plan.turn = n
                start = time.perf_counter()
                process.prompt(prompt(n))
                end = time.perf_counter()
                run.first_ms.append((timed.first[n] - start) * 1000)
                run.turn_ms.append((end - start) * 1000)
        finally:
            process.close()
            server.close()
    run.requests, run.summaries, run.rejected = timed.requests, timed.summaries, plan.rejected
    return run


RPC_ARGS = ["--model", "local/big", "--mode", "rpc"]


def _heron_rpc(
    cwd: Path, env: dict[str, str], src: Path | None, check: bool, profile: Path | None, name: str
) -> RpcProcess:
    env.pop("HERON_CHECK_CONTEXT")
    if check:
        env["HERON_CHECK_CONTEXT"] = "warn"
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), str(ROOT), env.get("PYTHONPATH", "")]))
    command = [*heron(), *RPC_ARGS]
    if profile is not None:
        command = [sys.executable, "-m", "cProfile", "-o", str(profile / name), "-m", "heron.cli.main", *RPC_ARGS]
    return RpcProcess(command, cwd, env, "heron")


def _pi_rpc(tmp: Path, cwd: Path, url: str, wire: str, window: int) -> RpcProcess:
    command = pi_command()
    assert command is not None, NOT_INSTALLED
    base = url + "/v1" if wire == "openai-completions" else url
    env = pi_env(tmp / "pi-agent", base, api=wire, context_window=window)
    return RpcProcess([*command, "--mode", "rpc", "--model", pi_model()], cwd, env, "pi")


def synthetic_turn(n: int, cwd: Path) -> list[Any]:
    """One turn as the growth scenario makes it: prompt, a read call, its ~2.5 KB result, an answer."""
    call = ToolCall(id=f"c{n}", name="read", arguments={"path": f"data/file{n % 4}.txt", "offset": n, "limit": 30})
    ts = 1_000 + 10 * n

    def reply(content: list[Any], reason: StopReason, at: int) -> AssistantMessage:
        usage = Usage(input=1_000 + 700 * n)
        return AssistantMessage(
            api="x", provider="local", model="big", content=content, stop_reason=reason, usage=usage, timestamp=at
        )

    text = "".join(f"{i:06d} a line of ordinary source text, long enough to look real ...\n" for i in range(30))
    return [
        UserMessage(content=[TextContent(text=f"turn {n}")], timestamp=ts),
        reply([call], StopReason.TOOL_USE, ts + 1),
        ToolResultMessage(
            tool_call_id=call.id,
            tool_name="read",
            content=[TextContent(text=text)],
            details={"mtime_ns": n, "size": len(text)},
            timestamp=ts + 2,
        ),
        reply([TextContent(text=f"done with turn {n}")], StopReason.STOP, ts + 3),
    ]


def context_path_table(turns: int) -> tuple[list[list[str]], dict[str, Any]]:
    """In-process, no I/O: the context work of one request (view, count, load, read index;
    then the invariant checks) at turns 1-10 and at the last turn, incremental vs from
    scratch (a new builder and the whole check, which is what every request did before)."""
    cwd = Path("/tmp/project")
    decisions = ContextDecisions()
    tools = ToolCatalog(fallback=builtin_meta)  # the built-in tools, as a session has them
    kept, checks = ViewBuilder(cwd, tools), IncrementalCheck()
    messages: list[Any] = []
    timing: dict[str, list[float]] = {"view, incremental": [], "view, from scratch": [], "checks, incremental": []}
    timing["checks, whole"] = []
    for n in range(turns):
        messages += synthetic_turn(n, cwd)
        for label, builder in (("view, incremental", kept), ("view, from scratch", ViewBuilder(cwd, tools))):
            start = time.perf_counter()
            view = builder.apply(messages, decisions)
            tally = view.tally if builder is kept else None
            tokens = request_tokens(view, 2_000, model=("local", "big"), tally=tally)
            tokens += tail_pressure(view, 2_000, model=("local", "big"), tally=tally)
            _ = view.reads
            timing[label].append((time.perf_counter() - start) * 1000)
        shot = RequestSnapshot(
            view=view,
            context=Context(system_prompt="s", messages=list(view)),
            max_tokens=4_096,
            window=1_000_000,
            reserve=16_384,
            stubs={},
            cwd=cwd,
            turn_prompt=view[-4],
            model=("local", "big"),
            tools=tools,
        )
        for label, run in (("checks, incremental", checks.check), ("checks, whole", check_request)):
            start = time.perf_counter()
            assert run(shot) == [], "the synthetic session breaks a rule"
            timing[label].append((time.perf_counter() - start) * 1000)
    rows = [
        [label, f"{median(v[:10]):.3f}", f"{median(v[-10:]):.3f}", f"{median(v[-10:]) / median(v[:10]):.1f}x"]
        for label, v in timing.items()
    ]
    return rows, {k: [round(x, 4) for x in v] for k, v in timing.items()}


def ms(value: float) -> str:
    return f"{value:.1f}"


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--baseline", default=None, help="a git ref whose src/ runs side by side (e.g. main)")
    p.add_argument("--turns", type=int, default=150, help="turns of the growth scenario")
    p.add_argument("--longrun", type=int, default=200, help="turns of the longrun scenario (0: skip)")
    p.add_argument("--api", choices=sorted(APIS), action="append", help="wire(s) to run (default both)")
    p.add_argument("--profile", type=Path, default=None, help="write a cProfile .prof per run to this folder")
    p.add_argument("--no-rpc", action="store_true", help="only the in-process table")
    p.add_argument("--check", action="store_true", help="HERON_CHECK_CONTEXT=warn (invariants on, as a setting)")
    p.add_argument("--no-pi", action="store_true", help="leave out pi 1.6.0 (run by default when installed)")
    args = p.parse_args()
    turns = 12 if args.quick else args.turns
    longrun = min(12, args.longrun) if args.quick else args.longrun
    apis = [] if args.no_rpc else args.api or sorted(APIS)
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="heron-baseline-") as tmp:
        trees: list[tuple[str, Path | None]] = [("this tree", None)]
        if args.baseline:
            trees.insert(0, (args.baseline, source_tree(args.baseline, Path(tmp))))
        with_pi = not args.no_pi and pi_command() is not None
        if with_pi:
            trees.append((PI, None))
        for api in apis:
            for label, src in trees:
                runs.append(drive("growth", api, turns, src, label, args.profile, args.check))
                if longrun:
                    runs.append(drive("longrun", api, longrun, src, label, args.profile, args.check))
    rows = []
    for r in runs:
        s = r.summary()
        sent = f"{r.requests} ({r.summaries} summaries, {r.rejected} too long)"
        if r.scenario == "growth":
            early, late = ms(s["first_request_turns_1_10_ms"]), ms(s["first_request_last_10_ms"])
            rows.append(
                [r.api, r.label, f"growth {r.turns}", early, late, f"{s['ratio']:.2f}x", ms(s["turn_mean_ms"]), sent]
            )
        else:
            rows.append([r.api, r.label, f"longrun {r.turns}", "", "", "", ms(s["turn_mean_ms"]), sent])
    if apis and not with_pi:
        rows.append(["", PI, NOT_INSTALLED if not args.no_pi else "left out (--no-pi)", "", "", "", "", ""])
    end_load = os.getloadavg()
    headers = ["wire", "code", "scenario", "prompt->request t1-10 ms", "last 10 ms", "ratio", "per turn ms", "requests"]
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"load average at end:   {end_load[0]:.2f} {end_load[1]:.2f} {end_load[2]:.2f}")
    print(table(headers, rows))
    data = {
        "load": load,
        "load_end": end_load,
        "goal_ms": GOAL_MS,
        "goal_ratio": GOAL_RATIO,
        "runs": [r.summary() for r in runs],
    }
    path_rows, path_data = context_path_table(turns)
    print(f"context work per request, in-process (ms; turns 1-10 vs {turns - 9}-{turns}):")
    print(table(["step", "turns 1-10", "last 10", "ratio"], path_rows))
    data["context_path_ms"] = path_data
    print(f"results: {write_json('turn_latency', data, args.json, args.quick)}")
    if shutil.which("uptime"):
        print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
