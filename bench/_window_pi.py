"""pi 1.6.0 on the long-window cost benchmark's traffic (bench/long_window_cost.py), and
heron on the same HTTP traffic beside it.

pi runs out of process, so it plays the script over HTTP against ``_longrun_http``'s
scripted OpenAI-compatible server, as bench/context_longrun.py plays it: the same seeded
project, prompts and tool calls, without the file edits (their arguments differ between
the two tools). pi compacts at its default threshold (the window less its reserve) and its
cache warming is off. heron plays the same traffic in its rpc mode with the model priced as
in the in-process runs (so ``compaction.workingBudget: "auto"`` has prices to choose from)
and told the simulated cache's 5-minute lifetime (a local server is otherwise taken to
keep its cache); its wall clock lives through the user's pauses (``_sim_clock``). The
figures come from the request bodies each agent sent, served by the same simulated
5-minute cache.
"""

from __future__ import annotations

import functools
import json
import random
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _longrun_http import AgentRun, ScriptServer, body_parts, drive, heron_agent, pi_agent
from _pi import pi_command
from _prompt_cache import pauses
from context_longrun import SEED, SUMMARY, make_project, plan_turn

PI = "pi 1.6.0"


def http_run(name: str, turns: int, window: int, max_tokens: int, prices: dict[str, float]) -> AgentRun | None:
    """``name`` (:data:`PI` or "heron") through ``turns`` turns on a ``window``-token model
    over HTTP; None when pi is not installed."""
    if name == PI and pi_command() is None:
        return None
    rng = random.Random(SEED)
    tmp = Path(tempfile.mkdtemp(prefix="heron-window-http-"))
    try:
        project = tmp / "project"
        sizes = make_project(project, rng)
        plans = [plan_turn(turn, sizes, rng) for turn in range(1, turns + 1)]
        steps = {p.turn: [step for step in p.steps if step[0] != "edit"] for p in plans}
        script = ScriptServer(steps, {p.turn: p.answer for p in plans}, window, SUMMARY.format(n=0))
        agent = pi_agent if name == PI else functools.partial(_priced_heron, prices=prices)
        return drive(
            name,
            agent,
            project=project,
            work=tmp,
            prompts=[p.prompt for p in plans],
            script=script,
            window=window,
            max_tokens=max_tokens,
            turn_pauses=pauses(turns, SEED),
            live_pauses=name != PI,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _priced_heron(
    home: Path, base_url: str, window: int, max_tokens: int, prices: dict[str, float]
) -> tuple[list[str], dict[str, str]]:
    settings = {"pruning": {"cacheTtlSeconds": 300}, "compaction": {"workingBudget": "auto"}, "idle": {"policy": "off"}}
    command, env = heron_agent(home, base_url, window, max_tokens, settings=settings)
    models = json.loads((home / "models.json").read_text())
    for provider in models["providers"].values():
        for model in provider["models"]:
            model["cost"] = prices
    (home / "models.json").write_text(json.dumps(models))
    return command, env


def counts(
    run: AgentRun, price: Callable[[float, float, int], dict[str, float]], answer: int, summary: int
) -> dict[str, Any]:
    """The run's figures as the benchmark reports them (tokens: characters / 4)."""
    accepted = [r for r in run.received if r.kind in ("turn", "summary", "warm")]
    tokens = [sum(len(p) + 1 for p in body_parts(r.body)) / 4 for r in accepted]
    output = sum(summary if r.kind == "summary" else 1 if r.kind == "warm" else answer for r in accepted)
    five = run.cache["5min"]
    return {
        "requests": len(accepted),
        "summary_requests": run.count("summary"),
        "warm_ups": run.count("warm"),
        "rejected": run.count("rejected"),
        "input_tokens": round(sum(tokens)),
        "largest_request": round(max(tokens, default=0)),
        "turns_done": len({r.new_turn for r in run.received if r.new_turn is not None}),
        "seconds": round(run.seconds, 1),
        "error": run.error,
        "cost": price(five.cached, five.uncached, output),
    }
