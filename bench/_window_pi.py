"""pi 1.6.0 on the long-window cost benchmark's traffic (bench/long_window_cost.py).

pi runs out of process, so it plays the script over HTTP against ``_longrun_http``'s
scripted OpenAI-compatible server, as bench/context_longrun.py plays it: the same seeded
project, prompts and tool calls, without the file edits (their arguments differ between
the two tools). pi compacts at its default threshold (the window less its reserve) and its
cache warming is off. The figures come from the request bodies pi sent, served by the
same simulated 5-minute cache and priced at the same prices as heron's runs.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from _longrun_http import ScriptServer, drive, pi_agent
from _pi import pi_command
from _prompt_cache import pauses
from context_longrun import SEED, SUMMARY, make_project, plan_turn


def pi_run(turns: int, window: int, max_tokens: int) -> tuple[dict[str, Any], Any] | None:
    """pi through ``turns`` turns on a ``window``-token model: (counts, the run); None
    when pi is not installed."""
    if pi_command() is None:
        return None
    rng = random.Random(SEED)
    tmp = Path(tempfile.mkdtemp(prefix="heron-window-pi-"))
    try:
        project = tmp / "project"
        sizes = make_project(project, rng)
        plans = [plan_turn(turn, sizes, rng) for turn in range(1, turns + 1)]
        steps = {p.turn: [step for step in p.steps if step[0] != "edit"] for p in plans}
        script = ScriptServer(steps, {p.turn: p.answer for p in plans}, window, SUMMARY.format(n=0))
        run = drive(
            "pi 1.6.0",
            pi_agent,
            project=project,
            work=tmp,
            prompts=[p.prompt for p in plans],
            script=script,
            window=window,
            max_tokens=max_tokens,
            turn_pauses=pauses(turns, SEED),
        )
        if run is None:
            return None
        accepted = [r for r in run.received if r.kind in ("turn", "summary", "warm")]
        sizes_tokens = [sum(len(p) + 1 for p in _parts(r.body)) / 4 for r in accepted]
        counts = {
            "requests": len(accepted),
            "summary_requests": run.count("summary"),
            "warm_ups": run.count("warm"),
            "rejected": run.count("rejected"),
            "input_tokens": round(sum(sizes_tokens)),
            "largest_request": round(max(sizes_tokens, default=0)),
            "turns_done": len({r.new_turn for r in run.received if r.new_turn is not None}),
            "seconds": round(run.seconds, 1),
            "error": run.error,
        }
        return counts, run
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _parts(body: dict[str, Any]) -> list[str]:
    from _longrun_http import body_parts

    return body_parts(body)
