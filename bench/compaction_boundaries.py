"""Issue 27 figures: where compactions fall in a long session with a task list.

A seeded, deterministic 200-turn session with the faux provider in a 16,384-token window:
each turn the user asks for the next item; on most turns the model reads a file, edits it
two or three times (each edit a separate call), marks the item completed in its task list
(the ``todo`` tool) and answers; on the others it only answers. Summary requests get a
short summary. The same script runs twice: with the soft threshold (the default: compact
at a step boundary past 80% of the threshold when the next step would reach it) and with
the hard threshold alone (``compaction.softThreshold: 1``).

Per run: the compactions, how many fell at a step boundary (a turn's end, a todo item
just completed - :func:`heron.context.compaction.boundaries.step_boundary` on the conversation at
that moment), and how many fell between two edits of the same file (the last edit before
the compaction and the first after it touch the same file). The targets (issue 27): at
least 80% at step boundaries, none between two edits of one file, and no more
compactions than with the threshold alone. ``--quick``: 40 turns.
"""

from __future__ import annotations

import asyncio
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
from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.registry import unregister_provider
from heron.ai.types import Context
from heron.coding.assembly import assemble_session
from heron.coding.events import CompactionEndEvent, CompactionStartEvent
from heron.coding.session_spec import SessionSpec
from heron.coding.settings import settings_from_dict
from heron.context.compaction.boundaries import step_boundary
from heron.context.compaction.summary.summary_text import is_summary_request

WINDOW = 16_384
MAX_TOKENS = 2_048
SEED = 27
FILES = 12
LINES = 40
BLOCK = 8  # items per task list: a new list every BLOCK turns
TARGET_AT_BOUNDARY = 0.80


def make_project(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    for n in range(FILES):
        lines = [f"line {i:03d} of file {n:02d}: value=0 # padding to make the read longer\n" for i in range(LINES)]
        (root / f"src/file_{n:02d}.py").write_text("".join(lines))


@dataclass
class TurnPlan:
    turn: int
    file: int | None  # None: a turn that only answers
    edits: list[int]  # the lines edited, in order
    answer: str


def plan_turns(turns: int, rng: random.Random) -> list[TurnPlan]:
    plans: list[TurnPlan] = []
    previous: int | None = None
    for turn in range(1, turns + 1):
        file: int | None = None
        edits: list[int] = []
        if rng.random() < 0.75:
            file = rng.choice([f for f in range(FILES) if f != previous])  # one file per item
            edits = rng.sample(range(LINES), rng.randint(2, 3))
            previous = file
        answer = f"Turn {turn} done. " + "Here is what changed and why, in some detail. " * rng.randint(2, 16)
        plans.append(TurnPlan(turn=turn, file=file, edits=edits, answer=answer))
    return plans


@dataclass
class Script:
    """The scripted model: the steps of the current turn, then the answer."""

    root: Path
    plan: TurnPlan | None = None
    step: int = 0
    values: dict[tuple[int, int], int] = field(default_factory=dict)  # (file, line) -> value
    timeline: list[tuple[str, Any]] = field(default_factory=list)  # ("edit", file) / ("compaction", at boundary)

    def start(self, plan: TurnPlan) -> None:
        self.plan, self.step = plan, 0

    def todos(self, turn: int) -> list[dict[str, str]]:
        first = (turn - 1) // BLOCK * BLOCK + 1
        return [
            {"content": f"item {n}", "status": "completed" if n <= turn else "pending"}
            for n in range(first, first + BLOCK)
        ]

    def __call__(self, context: Context) -> FauxReply:
        if is_summary_request(context):
            return text("## Goal\nWork through the items.\n## Progress\nSeveral items done.")
        plan = self.plan
        assert plan is not None
        self.step += 1
        if plan.file is None or self.step > len(plan.edits) + 2:
            return text(plan.answer)
        path = f"src/file_{plan.file:02d}.py"
        if self.step == 1:
            return tool_call("read", {"path": path})
        if self.step <= len(plan.edits) + 1:
            line = plan.edits[self.step - 2]
            old = self.values.get((plan.file, line), 0)
            self.values[(plan.file, line)] = old + 1
            prefix = f"line {line:03d} of file {plan.file:02d}: value="
            self.timeline.append(("edit", plan.file))
            args = {"path": path, "old_text": f"{prefix}{old} ", "new_text": f"{prefix}{old + 1} "}
            return tool_call("edit", args, text_before=f"Next, line {line}: " + "the reasoning for it. " * 25)
        return tool_call("todo", {"todos": self.todos(plan.turn)})


@dataclass
class Run:
    name: str
    compactions: int
    at_boundary: int
    between_edits: int
    reasons: dict[str, int]

    @property
    def boundary_share(self) -> float:
        return self.at_boundary / self.compactions if self.compactions else 1.0


def between_same_file_edits(timeline: list[tuple[str, Any]]) -> int:
    """Compactions whose nearest edits before and after touch the same file."""
    count = 0
    for n, (kind, _) in enumerate(timeline):
        if kind != "compaction":
            continue
        before = next((v for k, v in reversed(timeline[:n]) if k == "edit"), None)
        after = next((v for k, v in timeline[n + 1 :] if k == "edit"), None)
        count += before is not None and before == after
    return count


async def run(name: str, turns: int, settings: dict[str, Any]) -> Run:
    tmp = Path(tempfile.mkdtemp(prefix="heron-boundaries-"))
    api = f"faux-boundaries-{name}"
    faux = FauxProvider.install(api)
    old_home = os.environ.get("HERON_HOME")
    try:
        home, root = tmp / "home", tmp / "proj"
        home.mkdir()
        os.environ["HERON_HOME"] = str(home)
        make_project(root)
        script = Script(root=root)
        faux.set_fallback(script)
        spec = SessionSpec(
            cwd=root,
            model=faux.model(context_window=WINDOW, max_tokens=MAX_TOKENS),
            home=home,
            date="2025-01-01",
            settings=settings_from_dict({**settings, "memory": {"enabled": False}}),
        )
        session = assemble_session(spec)
        reasons: dict[str, int] = {}
        pending: list[bool] = []

        def listen(event: Any) -> None:
            if isinstance(event, CompactionStartEvent):
                pending.append(step_boundary(session.agent.state.messages, session.tool_catalog) is not None)
            elif isinstance(event, CompactionEndEvent):
                at = pending.pop() if pending else False
                if event.entry_id is not None:
                    script.timeline.append(("compaction", at))
                    reasons[event.reason] = reasons.get(event.reason, 0) + 1

        session.subscribe(listen)
        for plan in plan_turns(turns, random.Random(SEED)):
            script.start(plan)
            await session.prompt(f"Please do item {plan.turn}.")
        compactions = [at for kind, at in script.timeline if kind == "compaction"]
        return Run(
            name=name,
            compactions=len(compactions),
            at_boundary=sum(1 for at in compactions if at),
            between_edits=between_same_file_edits(script.timeline),
            reasons=reasons,
        )
    finally:
        unregister_provider(api)
        if old_home is None:
            os.environ.pop("HERON_HOME", None)
        else:
            os.environ["HERON_HOME"] = old_home
        shutil.rmtree(tmp, ignore_errors=True)


async def measure(turns: int) -> tuple[Run, Run]:
    soft = await run("soft", turns, {})
    hard = await run("hard", turns, {"compaction": {"softThreshold": 1}})
    return soft, hard


def verdict(soft: Run, hard: Run) -> list[str]:
    """What misses the targets (empty: all met)."""
    missed = []
    if soft.boundary_share < TARGET_AT_BOUNDARY:
        missed.append(f"only {soft.boundary_share:.0%} of compactions at step boundaries")
    if soft.between_edits:
        missed.append(f"{soft.between_edits} compaction(s) between two edits of the same file")
    if soft.compactions > hard.compactions:
        missed.append(f"{soft.compactions} compactions, more than the {hard.compactions} of the threshold alone")
    return missed


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    turns = 40 if args.quick else 200
    soft, hard = asyncio.run(measure(turns))
    rows = [
        [
            r.name,
            r.compactions,
            f"{r.at_boundary} ({r.boundary_share:.0%})",
            r.between_edits,
            ", ".join(f"{k} {v}" for k, v in sorted(r.reasons.items())),
        ]
        for r in (soft, hard)
    ]
    print(f"{turns} turns, {WINDOW:,}-token window")
    print(table(["run", "compactions", "at a step boundary", "between edits of one file", "reasons"], rows))
    missed = verdict(soft, hard)
    print("targets met" if not missed else "targets missed: " + "; ".join(missed))
    data = {
        "turns": turns,
        "window": WINDOW,
        "runs": [
            {
                "name": r.name,
                "compactions": r.compactions,
                "atBoundary": r.at_boundary,
                "betweenEdits": r.between_edits,
                "reasons": r.reasons,
            }
            for r in (soft, hard)
        ],
        "missed": missed,
    }
    print(f"wrote {write_json('compaction_boundaries', data, args.json, args.quick)}")
    if missed and not args.quick:
        sys.exit(1)


if __name__ == "__main__":
    main()
