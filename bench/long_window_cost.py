"""Issue 38 figures: what a long session costs on a large window, with and without the
working budget (docs/context.md, "The working budget").

The same seeded session as bench/context_longrun.py (a generated project; each turn the
model reads a file or runs a command printing up to ~200 KB, sometimes edits, then
answers), played in process with the faux provider against a model with a 1M-token and
a 200k-token window, each priced as Claude Sonnet is ($3 input, $3.75 cache write,
$0.30 cache read, $15 output per million tokens). The faux "server" rejects any request
over the window. Summary requests get a structured summary.

For each window, the run with ``compaction.workingBudget: "off"`` (the threshold is the
window less the reserve, as before) and with the default ``"auto"``: input tokens read
over the session (every request's tokens, summary requests included), the largest
request, compactions, and the priced cost with a simulated 5-minute prompt cache
(``_prompt_cache.py``: a request's cached prefix is billed as a cache read, the rest as a
cache write, output at the output price).

A third run per window adds the idle policy (``idle.policy: "auto"``, docs/context.md,
"The idle policy") to the ``"auto"`` budget: in each user pause the real idle keeper
decides and acts at the moment its timer would fire, on the simulated clock
(``_idle_drive.py``); its warm-ups (billed: the prefix as cache reads or writes, one output
token) and idle compactions are counted and priced with the rest. The other runs have the
idle policy off.

Then pi 1.6.0 (when installed: ``_pi.py``) and heron (budget ``"auto"``) play the same
traffic without the edits over HTTP, each window, priced alike (``_window_pi.py``); pi's
rows say "pi: not installed" otherwise. ``--quick``: 30 turns.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import parser, table, write_json
from _idle_drive import idle_actions, idle_pause, timed_figures
from _pi import NOT_INSTALLED
from _prompt_cache import pauses
from _sim_clock import WallClock
from _window_pi import PI, counts, http_run
from context_longrun import SEED, SUMMARY, TurnPlan, edit_arguments, make_project, plan_turn
from heron.ai.providers.faux import FauxProvider, FauxReply, error, serialise_request, text
from heron.ai.registry import unregister_provider
from heron.ai.types import Context, ModelCost, TextContent, ToolCall
from heron.coding.assembly import assemble_session
from heron.coding.events import CompactionEndEvent
from heron.coding.session_spec import SessionSpec
from heron.coding.settings import settings_from_dict
from heron.context.compaction.background import BACKGROUND_ENV
from heron.context.compaction.idle import WARM_OUTPUT_TOKENS
from heron.context.compaction.summary.summary_text import is_summary_request

PRICES = ModelCost(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75)  # dollars per million tokens
MAX_TOKENS = 8_192
ANSWER_TOKENS = 60  # what a step's reply is billed as output, about (the scripted text and call)
SUMMARY_TOKENS = 500
WINDOWS = (1_000_000, 200_000)
TURNS, TURNS_QUICK = 120, 30
GOAL_RATIO = 0.5  # issue 38: on a 1M window, at most half the input tokens the window-only run read
GOAL_WINDOW = 1_000_000
RUNS = (("off", "off"), ("auto", "off"), ("auto", "auto"))  # (compaction.workingBudget, idle.policy)


@dataclass
class Script:
    """Replies computed from the context: the turn plan's steps, then its answer."""

    root: Path
    window: int
    plan: TurnPlan | None = None
    step: int = 0
    rejected: int = 0
    summaries: int = 0
    idle: bool = False  # the idle keeper is acting: a request that is no summary is a warm-up

    def __call__(self, context: Context) -> FauxReply:
        if is_summary_request(context):
            self.summaries += 1
            return text(SUMMARY.format(n=self.summaries))
        if math.ceil(len(serialise_request(context)) / 4) > self.window:  # a server enforcing its window
            self.rejected += 1
            return error(f"prompt is too long: more than {self.window} tokens", 400)
        if self.idle:
            return text("ok")
        plan = self.plan
        assert plan is not None
        if self.step >= len(plan.steps):
            self.step += 1
            return text(plan.answer)
        tool, args, label = plan.steps[self.step]
        if tool == "edit":
            args = edit_arguments(self.root, args["path"], plan.turn)
        call = ToolCall(id=f"t{plan.turn:03d}_{self.step}", name=tool, arguments=args)
        self.step += 1
        return FauxReply(content=[TextContent(text=f"Let me {label}."), call])


@dataclass
class Outcome:
    name: str
    window: int
    budget: str
    idle: str
    threshold: int
    turns: int
    requests: int = 0
    summary_requests: int = 0
    input_tokens: int = 0
    largest_request: int = 0
    compactions: int = 0
    rejected: int = 0
    warm_ups: int = 0  # warm-up requests the idle keeper sent
    idle_compactions: int = 0
    idle_expires: int = 0  # idle periods the keeper let the cache expire in
    cost: dict[str, float] = field(default_factory=dict)


@dataclass
class Played:
    """What a session sent and did, for :func:`measure`."""

    faux: FauxProvider
    script: Script
    threshold: int
    compactions: int
    first_of_turn: dict[int, int]  # payload index -> the turn it starts
    idle_at: dict[int, float]  # payload index of a request the idle keeper sent -> seconds into the pause
    idle_actions: dict[str, int]


async def play(window: int, budget: str, turns: int, idle: str = "off") -> Outcome:
    """One session of ``turns`` turns on a ``window``-token model under ``budget``, the
    idle policy ``idle`` acting in the user's pauses (``_idle_drive``)."""
    rng = random.Random(SEED)
    tmp = Path(tempfile.mkdtemp(prefix="heron-window-cost-"))
    api = f"faux-window-{window}-{budget}-{idle}"
    faux = FauxProvider.install(api)
    old_home = os.environ.get("HERON_HOME")
    try:
        home, root = tmp / "home", tmp / "proj"
        home.mkdir()
        os.environ["HERON_HOME"] = str(home)
        sizes = make_project(root, rng)
        script = Script(root=root, window=window)
        faux.set_fallback(script)
        model = faux.model(context_window=window, max_tokens=MAX_TOKENS, cost=PRICES)
        settings = {
            "memory": {"enabled": False},
            "compaction": {"workingBudget": budget},
            "idle": {"policy": idle},
        }
        spec = SessionSpec(cwd=root, model=model, home=home, date="2025-01-01", settings=settings_from_dict(settings))
        session = assemble_session(spec)
        compactions: list[Any] = []
        session.subscribe(lambda e: compactions.append(e) if isinstance(e, CompactionEndEvent) and e.entry_id else None)
        first_of_turn: dict[int, int] = {}
        idle_at: dict[int, float] = {}
        turn_pauses = pauses(turns, SEED)
        with WallClock() as clock:
            for turn in range(1, turns + 1):
                gap = 15.0 + turn_pauses[turn]  # the simulated cache's gap: one request's time and the pause
                if idle == "off" or turn == 1:
                    clock.advance(gap)
                else:
                    idle_at.update(await idle_pause(session, clock, gap, script, faux))
                first_of_turn[len(faux.payloads)] = turn
                script.plan, script.step = plan_turn(turn, sizes, rng), 0
                await session.prompt(script.plan.prompt)
                assert script.step == len(script.plan.steps) + 1, f"turn {turn} did not finish"
        played = Played(
            faux, script, session.threshold, len(compactions), first_of_turn, idle_at, dict(idle_actions(session))
        )
        return measure(window, budget, idle, turns, played)
    finally:
        unregister_provider(api)
        if old_home is None:
            os.environ.pop("HERON_HOME", None)
        else:
            os.environ["HERON_HOME"] = old_home
        shutil.rmtree(tmp, ignore_errors=True)


def measure(window: int, budget: str, idle: str, turns: int, played: Played) -> Outcome:
    faux = played.faux
    sizes = [math.ceil(len(p) / 4) for p in faux.payloads]
    summary = [is_summary_request(c) for c in faux.requests]
    warm = [j in played.idle_at and not s for j, s in enumerate(summary)]
    sent = [
        (payload.split("\n"), is_summary, played.first_of_turn.get(j))
        for j, (payload, is_summary) in enumerate(zip(faux.payloads, summary, strict=True))
    ]
    cache = timed_figures(sent, pauses(turns, SEED), played.idle_at)
    output = sum(
        SUMMARY_TOKENS if s else WARM_OUTPUT_TOKENS if w else ANSWER_TOKENS for s, w in zip(summary, warm, strict=True)
    )
    cost = priced(cache.cached, cache.uncached, output)
    idle_name = "" if idle == "off" else f" + idle {idle}"
    return Outcome(
        name=f"{window // 1000}k window, budget {budget}{idle_name}",
        window=window,
        budget=budget,
        idle=idle,
        threshold=played.threshold,
        turns=turns,
        requests=len(sizes),
        summary_requests=sum(summary),
        input_tokens=sum(sizes),
        largest_request=max(sizes),
        compactions=played.compactions,
        rejected=played.script.rejected,
        warm_ups=sum(warm),
        idle_compactions=played.idle_actions.get("compact", 0),
        idle_expires=played.idle_actions.get("expire", 0),
        cost=cost,
    )


async def main_async(turns: int) -> list[Outcome]:
    outcomes = []
    for window in WINDOWS:
        for budget, idle in RUNS:
            outcomes.append(await play(window, budget, turns, idle))
    return outcomes


def priced(cached_chars: float, uncached_chars: float, output_tokens: int) -> dict[str, float]:
    """Dollars at :data:`PRICES`: cached input as cache reads, the rest as cache writes."""
    cost = {
        "cache_read": cached_chars / 4 * PRICES.cache_read / 1e6,
        "cache_write": uncached_chars / 4 * PRICES.cache_write / 1e6,
        "output": output_tokens * PRICES.output / 1e6,
    }
    cost["total"] = sum(cost.values())
    return {k: round(v, 2) for k, v in cost.items()}


def http_outcomes(turns: int) -> list[dict[str, Any]]:
    """pi 1.6.0, and heron beside it, over HTTP on each window (``_window_pi``); pi's rows
    are left out when pi is not installed."""
    prices = {"input": PRICES.input, "output": PRICES.output, "cacheRead": PRICES.cache_read}
    prices["cacheWrite"] = PRICES.cache_write
    out = []
    for window in WINDOWS:
        for name in (PI, "heron"):
            run = http_run(name, turns, window, MAX_TOKENS, prices)
            if run is not None:
                figures = counts(run, priced, ANSWER_TOKENS, SUMMARY_TOKENS)
                out.append(
                    {"name": f"{name} over HTTP, {window // 1000}k window", "agent": name, "window": window, **figures}
                )
    return out


def report(turns: int, outcomes: list[Outcome], http: list[dict[str, Any]]) -> dict[str, Any]:
    """Print the table and ratios; the ratios for the JSON."""
    rows = [
        [
            o.name,
            f"{o.threshold:,}",
            f"{o.input_tokens:,}",
            f"{o.largest_request:,}",
            o.requests,
            o.compactions,
            f"{o.warm_ups} / {o.idle_compactions} / {o.idle_expires}",
            o.rejected,
            f"${o.cost['total']:.2f}",
        ]
        for o in outcomes
    ]
    for r in http:
        stopped = f" (stopped: {r['error'][:50]})" if r["error"] else ""
        rows.append(
            [
                r["name"] + stopped,
                "pi default" if r["agent"] == PI else "auto",
                f"{r['input_tokens']:,}",
                f"{r['largest_request']:,}",
                r["requests"],
                f"{r['summary_requests']} summary requests",
                f"{r['warm_ups']} / - / -",
                r["rejected"],
                f"${r['cost']['total']:.2f}",
            ]
        )
    headers = ["run", "threshold", "input tokens", "largest request", "requests", "compactions"]
    headers += ["idle: warm-ups / compactions / expired", "rejected", "cost"]
    print(f"{turns} turns, Sonnet prices, simulated 5-minute cache:")
    print(table(headers, rows))
    if not any(r["agent"] == PI for r in http):
        print(NOT_INSTALLED)
    verdicts: dict[str, Any] = {}
    for window in WINDOWS:
        off, auto, idle = (
            next(o for o in outcomes if o.window == window and (o.budget, o.idle) == run) for run in RUNS
        )
        ratio = auto.input_tokens / off.input_tokens
        verdicts[str(window)] = {
            "input_ratio": round(ratio, 3),
            "cost_ratio": round(auto.cost["total"] / off.cost["total"], 3),
            "idle_cost_ratio": round(idle.cost["total"] / auto.cost["total"], 3),
        }
        goal = (
            f" (goal <= {GOAL_RATIO}: {'met' if ratio <= GOAL_RATIO else 'NOT met'})" if window == GOAL_WINDOW else ""
        )
        print(
            f"{window:,}-token window: auto reads {ratio:.2f}x the input tokens of off{goal}, "
            f"costs {auto.cost['total'] / off.cost['total']:.2f}x; idle auto costs "
            f"{idle.cost['total'] / auto.cost['total']:.2f}x auto alone"
        )
    return verdicts


def main() -> None:
    args = parser(__doc__.split("\n\n")[0]).parse_args()
    os.environ[BACKGROUND_ENV] = "0"  # summaries in the foreground: the same requests in every run
    turns = TURNS_QUICK if args.quick else TURNS
    load_before = os.getloadavg()[0]
    outcomes = asyncio.run(main_async(turns))
    http = http_outcomes(turns)
    verdicts = report(turns, outcomes, http)
    load = os.getloadavg()[0]
    print(f"load average {load_before:.2f} before, {load:.2f} after")
    data = {
        "turns": turns,
        "load": load,
        "load_before": load_before,
        "runs": [o.__dict__ for o in outcomes],
        "http": http,
        "pi": "installed" if any(r["agent"] == PI for r in http) else NOT_INSTALLED,
        "ratios": verdicts,
    }
    target = write_json("long_window_cost", data, args.json, args.quick)
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
