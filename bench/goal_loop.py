"""The goal loop's cost: the requests it adds per step, and what it does to the prompt cache.

A scripted model (``tests/support/goal_model.py``) needs N steps - a ``bash`` call and a
short answer each, two requests - and then reports the goal met. Driven through the real
``heron`` against a local OpenAI-compatible server, three ways:

- ``loop``: one ``heron -p --goal G "start"``; the model calls ``goal`` with ``complete``
  after step N, and answers once more;
- ``loop + evaluator``: the model never calls ``goal``; an evaluator model on the same
  server (``goal.evaluator``) judges each step and says "met" after step N;
- ``by hand``: the same work typed by a user - ``heron -p`` then ``heron -p --continue "go
  on"`` N-1 times, the loop off (``goal.maxTurns`` 0) and the model answering its last
  step instead of reporting.

For each: the requests, those the work itself needs (2 per step), the extra ones per step,
the characters a continuation and the ``goal`` tool's definition add, the share of the
request characters a provider's prompt cache would serve (simulated, no expiry:
``bench/_prompt_cache.py``), and the wall time. pi 1.6.0 has no goal loop, so there is no
pi column. Writes JSON. ``--quick``: 3 steps only.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.cli.audit_harness import heron, make_project
from tests.support.goal_model import GoalModel
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_reply

from _common import parser, table, write_json
from _prompt_cache import SimulatedCache
from heron.context.continuity.goal_loop import CONTINUATION_TEXT

GOAL = "Run every step of the release checklist."
TIMEOUT = 600


def parts(body: dict[str, Any]) -> list[str]:
    """A request as a provider renders it for its cache: tools, then each message."""
    tools = json.dumps(body.get("tools") or [], sort_keys=True)
    return [tools, *(json.dumps(m, sort_keys=True) for m in body["messages"])]


def cached_share(bodies: list[dict[str, Any]]) -> float:
    cache = SimulatedCache(ttl=None)
    served = [cache.serve(parts(body), float(n)) for n, body in enumerate(bodies)]
    total = sum(s.chars for s in served)
    return sum(s.cached for s in served) / total if total else 0.0


def goal_tool_chars(bodies: list[dict[str, Any]]) -> int:
    tools = bodies[0].get("tools") or []
    return sum(len(json.dumps(t)) for t in tools if t["function"]["name"] == "goal")


def run(cwd: Path, env: dict[str, str], model: str, *args: str) -> None:
    done = subprocess.run(
        [*heron(), "--model", model, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def drive(variant: str, steps: int, root: Path) -> dict[str, Any]:
    worker = GoalModel(steps=steps, complete=variant == "loop")
    judged: list[dict[str, Any]] = []

    def respond(request: Recorded) -> Reply:
        body = request.json()
        if body["model"] != "judge":
            return worker(request)
        judged.append(body)
        met = len(judged) >= steps
        return openai_reply(json.dumps({"met": met, "reason": "all steps ran" if met else "steps are left"}))

    server = LocalServer(respond)
    models = [{"id": "m", "contextWindow": 128_000, "maxTokens": 4_096}, {"id": "judge"}]
    settings: dict[str, Any] = {"loop": {}, "loop + evaluator": {"goal": {"evaluator": "local/judge"}}}.get(
        variant, {"goal": {"maxTurns": 0}}
    )
    try:
        cwd, env = make_project(root, server.url, models, settings)
        env.pop("HERON_CHECK_CONTEXT", None)  # the rules are the tests' business: time the product
        start = time.perf_counter()
        if variant == "by hand":
            run(cwd, env, "local/m", "-p", "--goal", GOAL, "start")
            for _ in range(steps - 1):
                run(cwd, env, "local/m", "-p", "--continue", "go on")
        else:
            run(cwd, env, "local/m", "-p", "--goal", GOAL, "start")
        seconds = time.perf_counter() - start
    finally:
        server.close()
    bodies = worker.bodies
    work = 2 * steps
    requests = len(bodies) + len(judged)
    return {
        "variant": variant,
        "steps": steps,
        "requests": requests,
        "work": work,
        "extra": requests - work,
        "extraPerStep": (requests - work) / steps,
        "evaluatorRequests": len(judged),
        "continuationChars": len(CONTINUATION_TEXT) if variant != "by hand" else 0,
        "goalToolChars": goal_tool_chars(bodies),
        "cachedShare": cached_share(bodies),
        "seconds": seconds,
    }


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    results = []
    for steps in [3] if args.quick else [3, 10]:
        for variant in ("loop", "loop + evaluator", "by hand"):
            root = Path(tempfile.mkdtemp(prefix="heron-goal-loop-"))
            try:
                results.append(drive(variant, steps, root))
            finally:
                shutil.rmtree(root, ignore_errors=True)
    headers = [
        "variant",
        "steps",
        "requests",
        "the work's",
        "extra",
        "extra / step",
        "continuation chars",
        "goal tool chars",
        "cached share (sim.)",
        "wall s",
    ]
    rows = [
        [
            r["variant"],
            r["steps"],
            r["requests"],
            r["work"],
            r["extra"],
            f"{r['extraPerStep']:.2f}",
            r["continuationChars"],
            r["goalToolChars"],
            f"{r['cachedShare']:.1%}",
            f"{r['seconds']:.1f}",
        ]
        for r in results
    ]
    print(table(headers, rows))
    print(f"wrote {write_json('goal_loop', {'results': results}, args.json, args.quick)}")


if __name__ == "__main__":
    main()
