"""Issue 27 figures: how much of where the agent is survives compaction, restarts,
overflow recovery and pruning - the classes heron promises today.

The real ``heron`` command against a local OpenAI-compatible server that plays a
scripted model (``tests/cli/audit_harness.py``'s plan server). Turn 0 plants the needles:
a user constraint in the prompt, a task list with a unique item (the ``todo`` tool), an
exact error string in a command's output. Then turns of big reads and command output
push the session through pruning steps and automatic compactions; the server enforces a
limit below the configured window, so the first request over it is rejected and heron
recovers (learns the window, compacts). The last turn has the model call
``search_history`` for each needle. The summariser is deliberately lossy: the server's
summaries never mention a needle, so what survives is what heron guarantees.

Classes:

- ``goal`` (set with ``/goal`` first), ``plan`` (turn 0 runs in plan mode, in a process of
  its own: its answer is the plan), ``skill`` (a ``SKILL.md`` the model reads in turn 1),
  ``user request`` and ``todo``: promised **verbatim**, so checked in every main request
  after an event (a compaction, a pruning step, a restart - the first request of each
  ``-p --continue`` process -, an overflow rejection): is the needle in the request body?
- ``last step``: after each compaction, the main argument of the last tool call the
  model made before it is in the recent steps the next request carries.
- ``error string`` (recall): **findable**: does ``search_history`` at the end return it?

Two windows (16k, 32k) x two modes (``print``: one process per turn with ``--continue``;
``rpc``: one process). Prints the survival table per class, mode and window, the events
seen, and the memory flushes (sent, recorded - a flush that would not fit is skipped and
recorded) against the compactions; writes JSON.
``--quick``: the 16k window, fewer turns.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.cli import audit_harness as harness
from tests.cli.audit_harness import FLUSH_MARK, PRUNED, SUMMARY_REPLY, PlanServer, Rpc, Step, text_of
from tests.support.http_server import LocalServer
from tests.support.summaries import is_summary_body

from _common import parser, table, write_json
from heron.context.continuity.recent_steps import HEADER as STEPS_HEADER

USER_NEEDLE = "NEEDLE-USER-keep-the-public-api-of-parser.py-unchanged"
TODO_NEEDLE = "NEEDLE-TODO-migrate-the-config-loader"
ERROR_NEEDLE = "NEEDLE-ERROR-E4711-checksum-mismatch-in-block-42"
GOAL_NEEDLE = "NEEDLE-GOAL-ship-the-v2-parser-behind-a-flag"
SKILL_NEEDLE = "NEEDLE-SKILL-always-run-make-check-before-a-commit"
SKILL_PATH = ".heron/skills/release-check/SKILL.md"
SKILL_TEXT = f"---\nname: release-check\ndescription: what to check before a release\n---\n\n{SKILL_NEEDLE}\n"
PLAN_NEEDLE = "done with turn 0"  # the scripted model's answer to turn 0, run in plan mode
VERBATIM = {
    "goal": GOAL_NEEDLE,
    "plan": PLAN_NEEDLE,
    "skill": SKILL_NEEDLE,
    "user request": USER_NEEDLE,
    "todo": TODO_NEEDLE,
}
CLASSES = (*VERBATIM, "last step", "error string")


def plans(turns: int) -> dict[int, list[Step]]:
    todos = {
        "todos": [
            {"content": TODO_NEEDLE, "status": "in_progress"},
            {"content": "write the report", "status": "pending"},
        ]
    }
    plan: dict[int, list[Step]] = {
        0: [],  # plan mode: the answer is the plan
        1: [("read", {"path": SKILL_PATH}), ("todo", todos), ("bash", {"command": f"echo 'error: {ERROR_NEEDLE}'"})],
    }
    for n in range(2, turns - 1):
        plan[n] = [harness.read(f"data/file{n % 4}.txt"), harness.bash_100k(f"turn {n}")]
    plan[turns - 1] = [("search_history", {"query": ERROR_NEEDLE})]
    return plan


@dataclass
class Result:
    mode: str
    window: int
    events: dict[str, int] = field(default_factory=dict)  # event -> requests checked after it
    kept: dict[str, dict[str, int]] = field(default_factory=dict)  # class -> event -> requests with the needle
    found: bool = False  # search_history returned the error string
    flushes: int = 0  # memory flush turns sent
    flush_records: int = 0  # flush decisions in the session (sent, or skipped: would not fit)
    compactions: int = 0  # compactions (summary requests since the previous main request)

    steps: list[bool] = field(default_factory=list)  # per compaction: the last step before it is carried

    def survival(self, name: str) -> str:
        if name == "error string":
            return "100%" if self.found else "0%"
        if name == "last step":
            return f"{sum(self.steps) / len(self.steps):.0%}" if self.steps else "-"
        checked = sum(self.events.values())
        if not checked:
            return "-"
        return f"{sum(self.kept.get(name, {}).values()) / checked:.0%}"


def _events(server: PlanServer, firsts: set[int]) -> list[tuple[int, list[str]]]:
    """(body index, the events just before it) for each main request after turn 1: a
    compaction (the request carries a summary, and the first message kept after it changed:
    a summary request alone is no compaction - heron may prepare one in the background and
    apply it later, or never), a pruning step (more pruned stubs than before), a restart (a
    process's first request), an overflow (the previous request was rejected)."""
    out: list[tuple[int, list[str]]] = []
    pruned = 0
    rejected = False
    kept_head: str | None = None
    for index, body in enumerate(server.bodies):
        messages = body["messages"]
        if is_summary_body(body) or not messages or text_of(messages[-1]).startswith(FLUSH_MARK):
            continue
        head = _kept_head(messages)
        summarised = head is not None and head != kept_head
        kept_head = head
        stubs = json.dumps(body).count(PRUNED)
        seen = [
            name
            for name, happened in (
                ("compaction", summarised),
                ("pruning", stubs > pruned),
                ("restart", index in firsts),
                ("overflow", rejected),
            )
            if happened
        ]
        pruned, rejected = stubs, not server.accepted[index]
        if server.turns[index] > 1 and seen:  # after turn 1, which plants the needles
            out.append((index, seen))
    return out


def _kept_head(messages: list[dict[str, Any]]) -> str | None:
    """The first message after the compaction summary the server wrote (None: no summary in
    the request): a new one means a compaction cut the history again."""
    summary = json.dumps(SUMMARY_REPLY, ensure_ascii=False)[1:-1]  # as it appears in a message's JSON
    at = next((i for i, m in enumerate(messages) if summary in json.dumps(m, ensure_ascii=False)), None)
    if at is None:
        return None
    return json.dumps(messages[at + 1 : at + 2], sort_keys=True)


def _flush_records(home: Path) -> int:
    """The memory flush decisions recorded in the session files under ``home``."""
    count = 0
    for path in home.rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            entry = json.loads(line) if line.strip() else {}
            data = entry.get("data") if entry.get("customType") == "heron.context" else None
            count += isinstance(data, dict) and data.get("op") == "flush"
    return count


def _print_goal(cwd: Path, env: dict[str, str]) -> None:
    """The goal, set in the session's first process (``/goal`` asks no model)."""
    args = [*harness.heron(), "--model", "local/m", "-p", f"/goal {GOAL_NEEDLE}"]
    done = subprocess.run(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def _plan_turn(cwd: Path, env: dict[str, str], server: PlanServer) -> None:
    """Turn 0 in plan mode, in a process of its own: its answer is the session's plan."""
    server.turn = 0
    args = [*harness.heron(), "--model", "local/m", "--permission-mode", "plan", "-c", "-p", harness.prompt(0)]
    done = subprocess.run(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and PLAN_NEEDLE in done.stdout, done.stderr[-2000:]


class ContinuedRpc(Rpc):
    """rpc mode on the session the earlier processes started (``--continue``)."""

    def __init__(self, cwd: Path, env: dict[str, str], model: str) -> None:
        self.child = subprocess.Popen(
            [*harness.heron(), "--model", model, "--mode", "rpc", "--continue"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.ids = 0


def _last_step_carried(server: PlanServer, index: int) -> bool:
    """Whether the request at ``index`` (the first after a compaction) carries, among its
    recent steps, the main argument of the last tool call made before the compaction."""
    calls = [
        call
        for body in server.bodies[:index]
        for message in body["messages"]
        for call in message.get("tool_calls") or []
    ]
    if not calls:
        return True
    arguments = json.loads(calls[-1]["function"]["arguments"])
    main = next((v for k in ("path", "command", "query") if isinstance(v := arguments.get(k), str)), "")
    text = json.dumps(server.bodies[index]["messages"], ensure_ascii=False)
    block = text.split(STEPS_HEADER, 1)[1] if STEPS_HEADER in text else ""
    return bool(main) and json.dumps(" ".join(main.split()[:8]), ensure_ascii=False)[1:-1] in block


def drive(mode: str, window: int, turns: int, root: Path) -> Result:
    limit = int(window * 0.65)  # the server enforces less than the configured window (and the threshold)
    server = PlanServer(plans(turns), {"m": limit})
    local = LocalServer(responder=server)
    try:
        model = {"id": "m", "contextWindow": window, "maxTokens": 2_048}
        harness.PROMPT_EXTRA.clear()
        harness.PROMPT_EXTRA[0] = f". Constraint: {USER_NEEDLE}"
        cwd, env = harness.make_project(
            # the goal leads every request; its loop (which would go on after each answer) is off,
            # so the traffic is the scripted turns' alone
            root,
            local.url,
            [model],
            {"defaultTools": ["read", "bash", "todo", "search_history"], "goal": {"maxTurns": 0}},
        )
        env.pop("HERON_CHECK_CONTEXT", None)
        (cwd / SKILL_PATH).parent.mkdir(parents=True)
        (cwd / SKILL_PATH).write_text(SKILL_TEXT)
        firsts: set[int] = set()
        _print_goal(cwd, env)
        _plan_turn(cwd, env, server)
        if mode == "print":
            for n in range(1, turns):
                firsts.add(len(server.bodies))
                harness.run_print(cwd, env, server, n, "local/m", first=False)
        else:
            rpc = ContinuedRpc(cwd, env, "local/m")
            try:
                for n in range(1, turns):
                    rpc.turn(server, n)
            finally:
                rpc.close()
        result = Result(mode=mode, window=window)
        for index, seen in _events(server, firsts):
            text = json.dumps(server.bodies[index])
            for event in seen:
                result.events[event] = result.events.get(event, 0) + 1
                for name, needle in VERBATIM.items():
                    counts = result.kept.setdefault(name, {})
                    counts[event] = counts.get(event, 0) + (needle in text)
        result.steps = [
            _last_step_carried(server, index) for index, seen in _events(server, set()) if "compaction" in seen
        ]
        result.compactions = len(result.steps)
        result.flushes = sum(
            1 for b in server.bodies if b["messages"] and text_of(b["messages"][-1]).startswith(FLUSH_MARK)
        )
        result.flush_records = _flush_records(root / "home")
        last = json.dumps(server.bodies[-1])
        result.found = ERROR_NEEDLE in last.split('"search_history"', 1)[-1]
        return result
    finally:
        local.close()
        harness.PROMPT_EXTRA.clear()


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    windows = [16_384] if args.quick else [16_384, 32_768]
    turns = 5 if args.quick else 10
    results: list[Result] = []
    for window in windows:
        for mode in ("print", "rpc"):
            root = Path(tempfile.mkdtemp(prefix="heron-continuity-"))
            try:
                results.append(drive(mode, window, turns, root))
            finally:
                shutil.rmtree(root, ignore_errors=True)
    rows = []
    for r in results:
        events = ", ".join(f"{k} {v}" for k, v in sorted(r.events.items()))
        flushes = f"{r.flushes} / {r.flush_records} / {r.compactions}"
        rows.append([f"{r.window // 1024}k", r.mode, *(r.survival(c) for c in CLASSES), flushes, events])
    print(f"{turns} turns per session; survival: share of the requests after an event carrying the needle")
    print(table(["window", "mode", *CLASSES, "flushes sent / recorded / compactions", "requests checked after"], rows))
    data = {
        "turns": turns,
        "results": [
            {
                "window": r.window,
                "mode": r.mode,
                "events": r.events,
                "kept": r.kept,
                "found": r.found,
                "flushes": r.flushes,
                "flushRecords": r.flush_records,
                "compactions": r.compactions,
                "survival": {c: r.survival(c) for c in CLASSES},
            }
            for r in results
        ],
    }
    print(f"wrote {write_json('continuity', data, args.json, args.quick)}")


if __name__ == "__main__":
    main()
