"""Pruning with hysteresis: nothing until the high-water mark, then one step down to the
low-water mark (oldest results first), a compaction in the same step when pruning alone
cannot get far enough below the marks, and the marks as settings."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from heron.agent.messages import AgentMessage
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.types import (
    AssistantMessage,
    Context,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    now_ms,
)
from heron.coding.runtime import CodingSession
from heron.coding.settings import PruningSettings, load_settings, settings_from_dict
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.context.policy import ContextPolicy, PolicySettings
from heron.context.pruning.prune import PRUNE_HIGH_WATER, PRUNE_KEEP_TURNS, PRUNE_LOW_WATER, prune_step
from heron.context.records.decisions import DECISION_CUSTOM_TYPE
from heron.context.records.ledger import Ledger
from heron.context.view.build import session_messages
from heron.session.entries import CustomEntry
from heron.session.store import SessionStore
from tests.support.tools import BUILTIN

FIXED = 50
OLD = now_ms() - 3_600_000
WINDOW = 16_000  # budget: 16,000 - a quarter of it (4,000) = 12,000 tokens


def read_turn(i: int, size: int, ts: int = OLD) -> list[AgentMessage]:
    call = ToolCall(id=f"c{i}", name="read", arguments={"path": f"f{i}.txt"})
    ask = AssistantMessage(
        api="faux", provider="faux", model="faux-1", content=[call], stop_reason=StopReason.TOOL_USE, timestamp=ts
    )
    result = ToolResultMessage(
        tool_call_id=f"c{i}",
        tool_name="read",
        content=[TextContent(text=f"{i % 10}" * size)],
        details={"path": f"f{i}.txt", "mtime_ns": 1_000 + i, "size": size},
        timestamp=ts,
    )
    return [ask, result]


def answer(ts: int = OLD) -> AssistantMessage:
    return AssistantMessage(
        api="faux",
        provider="faux",
        model="faux-1",
        content=[TextContent(text="done")],
        stop_reason=StopReason.STOP,
        timestamp=ts,
    )


class Session:
    def __init__(self, root: Path, faux: FauxProvider, settings: PolicySettings) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.path = root / "session.jsonl"
        self.model = faux.model(context_window=WINDOW, max_tokens=2_000)
        self.settings = settings
        self.store = SessionStore.create(root, path=self.path)
        self.compactions = 0
        self.policy = self._policy()
        self.settled: Any = None  # what the last prepare settled (heron.context.policy.Settled)

    def _policy(self) -> ContextPolicy:
        return ContextPolicy(
            self.store,
            cwd=self.root,
            settings=self.settings,
            ledger=Ledger(),
            model=lambda: self.model,
            fixed_tokens=lambda: FIXED,
            tools=BUILTIN,
        )

    def add(self, messages: Sequence[AgentMessage]) -> None:
        for message in messages:
            self.store.append_message(message)

    def restart(self) -> None:
        self.store.close()
        self.store = SessionStore.open(self.path)
        self.policy = self._policy()

    def prepare(self) -> list[AgentMessage]:
        messages = session_messages(self.store, self.store.leaf_id)
        pressure = self.policy.pressure(messages, AbortSignal())
        if pressure.compact:  # counted; the compaction writes nothing here
            self.compactions += 1
        self.settled = self.policy.settle(messages, pressure)
        return self.settled.view

    def steps(self) -> list[dict[str, Any]]:
        return [
            e.data
            for e in self.store.path_to(self.store.leaf_id)
            if isinstance(e, CustomEntry) and e.custom_type == DECISION_CUSTOM_TYPE and e.data.get("op") == "prune"
        ]


@pytest.fixture
def make(tmp_path: Path, faux: FauxProvider) -> Iterator[Any]:
    made: list[Session] = []

    def build(**settings: Any) -> Session:
        session = Session(tmp_path / f"s{len(made)}", faux, PolicySettings(**settings))
        made.append(session)
        return session

    yield build
    for session in made:
        session.store.close()


def test_a_step_stops_at_its_target_oldest_results_first() -> None:
    messages: list[Any] = [UserMessage(content="go", timestamp=0)]
    for i in range(6):
        messages += read_turn(i, 4_000)
    stubs, records = prune_step(messages, (), keep_turns=1, target_saving_tokens=1_500, tools=BUILTIN)
    assert sorted(stubs) == ["c0", "c1"]  # 1,000 tokens each minus the stub: two reach 1,500
    assert [r.ref for r in records] == ["c0", "c1"]
    everything, _ = prune_step(messages, (), keep_turns=1, tools=BUILTIN)
    assert sorted(everything) == ["c0", "c1", "c2", "c3", "c4"]  # no target: every candidate
    assert prune_step(messages, (), keep_turns=1, min_saving_tokens=10_000, tools=BUILTIN)[0] == {}  # too small a step


def test_nothing_is_pruned_below_the_high_water_mark(make: Any) -> None:
    s = make(prune_high_water=0.9, prune_low_water=0.3)
    messages: list[AgentMessage] = [UserMessage(content=[TextContent(text="go")], timestamp=OLD)]
    for i in range(10):
        messages += read_turn(i, 4_000)  # 10 x 1,000 tokens: 10,050 < 0.9 x 12,000
    s.add([*messages, answer()])
    s.prepare()
    assert s.steps() == []


def test_one_step_goes_down_to_the_low_water_mark_and_the_next_turns_fit(make: Any) -> None:
    s = make(prune_high_water=0.9, prune_low_water=0.3, prune_keep_turns=2)
    messages: list[AgentMessage] = [UserMessage(content=[TextContent(text="go")], timestamp=OLD)]
    for i in range(11):
        messages += read_turn(i, 4_000)  # 11,050 tokens > 10,800
    s.add([*messages, answer()])
    view = s.prepare()
    (step,) = s.steps()
    low = int(12_000 * 0.3)
    assert s.settled.tokens <= low + 1_000  # within one result of the low-water mark
    # the oldest went first: the most recent results are still whole
    assert "c10" not in step["stubs"] and "c9" not in step["stubs"] and "c0" in step["stubs"]
    sent = {m.tool_call_id: m.text() for m in view if isinstance(m, ToolResultMessage)}
    assert sent["c10"] == "0" * 4_000
    # Hysteresis: the next several turns (1,000 tokens each) fit without another step.
    later = now_ms() + 1_000
    for i in range(11, 16):
        s.add(
            [
                UserMessage(content=[TextContent(text=f"turn {i}")], timestamp=later),
                *read_turn(i, 4_000, later),
                answer(later),
            ]
        )
        s.prepare()
    assert len(s.steps()) == 1
    # A new process derives the same view, stubs and all, and takes no step of its own.
    before = json.dumps([m.to_json_dict() for m in s.prepare()])
    s.restart()
    assert json.dumps([m.to_json_dict() for m in s.prepare()]) == before
    assert len(s.steps()) == 1


def test_the_last_assistant_messages_results_are_kept_even_over_the_mark(make: Any) -> None:
    s = make(prune_high_water=0.5, prune_low_water=0.1, prune_keep_turns=2)
    messages: list[AgentMessage] = [UserMessage(content=[TextContent(text="go")], timestamp=OLD)]
    for i in range(3):
        messages += read_turn(i, 12_000)  # 3 x 3,000 tokens
    s.add(messages)
    s.prepare()
    (step,) = s.steps()
    assert sorted(step["stubs"]) == ["c0"]  # c1 and c2 belong to the last two assistant messages


def test_a_step_that_cannot_get_below_the_marks_compacts_at_once(make: Any) -> None:
    """The history itself (many small messages) fills the budget: pruning the one big
    result leaves the view above the marks' midpoint, so the compaction runs in the same
    step (one prefix break) instead of a string of shallow steps."""
    s = make(prune_high_water=0.9, prune_low_water=0.3, prune_keep_turns=2, keep_recent_tokens=1_000)
    messages: list[AgentMessage] = [UserMessage(content=[TextContent(text="go")], timestamp=OLD)]
    messages += read_turn(0, 16_000)  # 4,000 tokens, prunable
    for i in range(1, 86):  # 85 small exchanges of ~93 tokens each: 11,950 in all, under the 12,000 threshold
        messages += [
            UserMessage(content=[TextContent(text=f"question {i} " + "q" * 300)], timestamp=OLD),
            AssistantMessage(
                api="faux",
                provider="faux",
                model="faux-1",
                content=[TextContent(text="a" * 60)],
                stop_reason=StopReason.STOP,
                timestamp=OLD,
            ),
        ]
    s.add(messages)
    s.prepare()
    assert len(s.steps()) == 1 and s.compactions == 1


def test_a_deep_enough_step_does_not_compact(make: Any) -> None:
    s = make(prune_high_water=0.9, prune_low_water=0.3)
    messages: list[AgentMessage] = [UserMessage(content=[TextContent(text="go")], timestamp=OLD)]
    for i in range(11):
        messages += read_turn(i, 4_000)
    s.add([*messages, answer()])
    s.prepare()
    assert len(s.steps()) == 1 and s.compactions == 0


# --- settings -----------------------------------------------------------------------------------------


def test_the_marks_are_settings_with_documented_defaults() -> None:
    assert PruningSettings() == PruningSettings(True, PRUNE_HIGH_WATER, PRUNE_LOW_WATER, PRUNE_KEEP_TURNS)
    assert (PRUNE_HIGH_WATER, PRUNE_LOW_WATER, PRUNE_KEEP_TURNS) == (1.0, 0.3, 3)
    chosen = settings_from_dict({"pruning": {"highWater": 0.8, "lowWater": 0.4, "keepTurns": 1}}).pruning
    assert (chosen.high_water, chosen.low_water, chosen.keep_turns) == (0.8, 0.4, 1)


def test_bad_marks_are_reported_and_the_defaults_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HERON_HOME", str(home))
    cwd = tmp_path / "project"
    (cwd / ".heron").mkdir(parents=True)
    (cwd / ".heron" / "settings.json").write_text(
        json.dumps({"pruning": {"highWater": 1.5, "lowWater": 0, "keepTurns": -1}})
    )
    s = load_settings(cwd)
    assert s.pruning == PruningSettings()
    text = "\n".join(s.warnings)
    assert "'pruning.highWater' must be a number greater than 0 and at most 1, not number 1.5" in text
    assert "'pruning.lowWater' must be a number greater than 0 and at most 1, not number 0" in text
    assert "'pruning.keepTurns' must be an integer >= 0" in text


def test_a_low_mark_above_the_high_one_is_clamped(make: Any) -> None:
    s = make(prune_high_water=0.5, prune_low_water=0.9)
    assert s.policy.sizes.prune_marks == (6_000, 6_000)


# --- a compaction leaves headroom ---------------------------------------------------------------------


async def test_reinjection_stops_at_the_low_water_mark(
    tmp_path: Path, faux: FauxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files re-injected after a compaction get only the room under the low-water mark, so
    the compacted view has headroom for the next turns instead of being refilled at once."""
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    proj = tmp_path / "proj"
    proj.mkdir()
    for n in range(1, 5):
        (proj / f"f{n}.py").write_text("".join(f"value_{n}_{i} = {i}  # a line of module {n}\n" for i in range(300)))
    script = [*(tool_call("read", {"path": f"f{n}.py"}) for n in range(1, 5)), text("read them all")]

    def reply(context: Context) -> FauxReply:
        return text("## Goal\nsummary") if is_summary_request(context) else script.pop(0)

    faux.set_fallback(reply)

    def session(low: float) -> CodingSession:
        return CodingSession(
            cwd=proj,
            model=faux.model(context_window=32_000, max_tokens=4_096),
            store=SessionStore.create(proj),
            home=tmp_path / "home",
            settings=settings_from_dict({"compaction": {"keepRecentTokens": 100}, "pruning": {"lowWater": low}}),
        )

    wide = session(1.0)
    await wide.prompt("read f1.py to f4.py")
    end = await wide.compact()
    assert end is not None and end.entry_id is not None
    roomy = end.tokens_after  # the re-injection budget (15% of the window) binds
    script[:] = [*(tool_call("read", {"path": f"f{n}.py"}) for n in range(1, 5)), text("read them all")]
    tight = session(0.15)
    await tight.prompt("read f1.py to f4.py")
    end = await tight.compact()
    assert end is not None and end.entry_id is not None
    low = tight.policy.sizes.prune_marks[1]
    assert end.tokens_after <= low < roomy


async def test_an_early_compaction_that_saves_too_little_is_skipped(
    tmp_path: Path, faux: FauxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One the policy asks for below the threshold is not written when it would save less
    than a compaction must, and it never switches automatic compaction off (a threshold
    compaction that saved that little would)."""
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    proj = tmp_path / "proj"
    proj.mkdir()

    def run(early: bool) -> Any:
        script = [text("hello"), text("noted")]

        def reply(context: Context) -> FauxReply:
            return text("## Goal\nsummary") if is_summary_request(context) else script.pop(0)

        faux.set_fallback(reply)
        session = CodingSession(
            cwd=proj,
            model=faux.model(context_window=128_000, max_tokens=4_096),
            store=SessionStore.create(proj),
            home=tmp_path / "home",
            settings=settings_from_dict({"compaction": {"keepRecentTokens": 100}}),
        )

        async def go() -> Any:
            await session.prompt("hi")
            await session.prompt("keep this in mind: " + "x" * 40_000)  # kept: the history is one tiny turn
            end = await session.context_owner.compact(reason="threshold", early=early)
            return session, end if end.entry_id is not None else None

        return go()

    session, end = await run(early=True)
    assert end is None  # nothing written
    assert not [e for e in session.store.entries() if type(e).__name__ == "CompactionEntry"]
    assert session.policy.auto_compaction
    session, end = await run(early=False)  # the same compaction at the threshold switches it off
    assert not session.policy.auto_compaction
