"""The idle policy in a session (heron.coding.idle): an idle session warms its prompt
cache once shortly before it expires, with the last request's exact prefix and a
one-token answer that never enters the conversation; the decision is recorded, so a new
process on the same file sends the same next request as the process that never stopped;
the timer runs on its own in the event loop and is cancelled by the user coming back."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.ai.options import StreamOptions
from heron.ai.providers.faux import FauxProvider, text
from heron.ai.types import Context
from heron.coding.events import IdleEvent
from heron.coding.idle import idle_keeper
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.context.pruning.cold_cache import cache_cold
from heron.context.records.decisions import DECISION_CUSTOM_TYPE
from heron.session.entries import CustomEntry
from heron.session.store import SessionStore
from tests.coding.test_request_path import recording


class Clock:
    """The wall clock shifted by ``offset`` seconds (``time.time``/``time_ns``: every
    timestamp of the session file), as bench/_sim_clock.py shifts it for the benchmarks."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.offset = 0.0
        real, real_ns = time.time, time.time_ns
        monkeypatch.setattr(time, "time", lambda: real() + self.offset)
        monkeypatch.setattr(time, "time_ns", lambda: real_ns() + int(self.offset * 1e9))

    def advance(self, seconds: float) -> None:
        self.offset += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    yield Clock(monkeypatch)


def session_on(tmp_path: Path, store: SessionStore, model: Any = None, **settings: Any) -> CodingSession:
    return CodingSession(
        cwd=tmp_path / "proj",
        model=model or FAUX_MODEL,
        store=store,
        home=tmp_path / "home",
        settings=settings_from_dict({"pruning": {"cacheTtlSeconds": 300}, **settings}),
    )


FAUX_MODEL: Any = None


def body(context: Context) -> str:
    """What the provider receives, serialised: the system prompt, the tools, the messages
    (without the new prompt's own time, which no provider is sent)."""
    tools = [t.name for t in context.tools or []]
    messages = [{k: v for k, v in m.to_json_dict().items() if k != "timestamp"} for m in context.messages]
    return json.dumps([context.system_prompt, tools, messages])


def idle_records(store: SessionStore) -> list[dict[str, Any]]:
    return [
        e.data
        for e in store.path_to(store.leaf_id)
        if isinstance(e, CustomEntry) and e.custom_type == DECISION_CUSTOM_TYPE and e.data.get("op") == "idle"
    ]


@pytest.fixture
def setup(tmp_path: Path, faux: FauxProvider) -> tuple[Path, list[tuple[Context, StreamOptions]]]:
    global FAUX_MODEL
    (tmp_path / "proj").mkdir()
    FAUX_MODEL = faux.model(context_window=32_000, max_tokens=2_000)
    faux.set_fallback(lambda context: text("ok"))
    return tmp_path, recording(faux)


async def test_an_idle_session_warms_once_before_expiry_and_a_new_process_agrees(
    setup: tuple[Path, list[tuple[Context, StreamOptions]]], clock: Clock
) -> None:
    tmp_path, seen = setup
    store = SessionStore.create(tmp_path / "proj", home=tmp_path / "home")
    session = session_on(tmp_path, store)
    events: list[Any] = []
    session.subscribe(events.append)
    await session.prompt("first question")
    (turn,) = seen
    assert idle_keeper(session).due_in() == pytest.approx(270, abs=2)  # 30 s before the 300 s lifetime
    assert await idle_keeper(session).step() is None  # not due yet: nothing sent
    clock.advance(275)
    assert idle_keeper(session).due_in() == 0
    decision = await idle_keeper(session).step()
    assert decision is not None and decision.action == "warm"
    warm_context, warm_options = seen[-1]
    assert len(seen) == 2 and body(warm_context) == body(turn[0])  # the last request's exact prefix
    assert warm_options.max_tokens == 1
    assert [m.role for m in session.agent.state.messages] == ["user", "assistant"]  # its answer is not kept
    (record,) = idle_records(store)
    assert record["action"] == "warm" and record["costs"]["warm"] < record["costs"]["expire"]
    assert [e.action for e in events if isinstance(e, IdleEvent)] == ["warm"]
    assert idle_keeper(session).due_in() == pytest.approx(270, abs=2)  # the next one counts from the warm-up
    assert await idle_keeper(session).step() is None  # once per lifetime
    # Past the answer's lifetime but within the warm-up's: the cache is warm, not cold.
    clock.advance(100)
    messages = session.agent.state.messages
    assert cache_cold(messages, 300) is not None  # judged from the answer alone it would be cold
    assert cache_cold(messages, 300, warmed_ms=session.policy.decisions.warmed_ms) is None
    # A new process on a copy of the file sends the same next request as this one.
    copy = tmp_path / "copy.jsonl"
    assert store.path is not None
    shutil.copy(store.path, copy)
    await session.prompt("second question")
    one_process = body(seen[-1][0])
    resumed = session_on(tmp_path, SessionStore.open(copy))
    assert idle_keeper(resumed).period() is not None and idle_keeper(resumed).period().warms == 1  # type: ignore[union-attr]
    await resumed.prompt("second question")
    assert body(seen[-1][0]) == one_process
    assert "second question" in one_process and len(seen) == 4


async def test_a_resumed_idle_session_counts_the_warm_ups_of_its_idle_period(
    setup: tuple[Path, list[tuple[Context, StreamOptions]]], clock: Clock
) -> None:
    tmp_path, seen = setup
    store = SessionStore.create(tmp_path / "proj", home=tmp_path / "home")
    session = session_on(tmp_path, store)
    await session.prompt("first question")
    for _ in range(3):  # MAX_WARMS
        clock.advance(275)
        assert (await idle_keeper(session).step()).action == "warm"  # type: ignore[union-attr]
    clock.advance(275)
    assert store.path is not None
    resumed = session_on(tmp_path, SessionStore.open(store.path, read_only=True))
    assert idle_keeper(resumed).period().warms == 3  # type: ignore[union-attr]
    late = await idle_keeper(session).step()
    assert late is not None and late.action == "expire" and "away" in late.reason
    assert len(seen) == 4  # the turn and three warm-ups
    assert idle_keeper(session).due_in() is None  # the idle period ended
    clock.advance(1_000)
    assert idle_keeper(session).due_in() is None


async def test_the_timer_runs_in_the_loop_and_the_user_coming_back_cancels_it(
    setup: tuple[Path, list[tuple[Context, StreamOptions]]],
) -> None:
    """A real timer with a lifetime of 2 s: the warm-up goes out 0.2 s before its end."""
    tmp_path, seen = setup
    store = SessionStore.create(tmp_path / "proj", home=tmp_path / "home")
    session = session_on(tmp_path, store, pruning={"cacheTtlSeconds": 2})
    await session.prompt("first question")
    idle_keeper(session).start()
    deadline = time.monotonic() + 60  # generous: the machine is loaded
    while len(idle_records(store)) < 1 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert [r["action"] for r in idle_records(store)] == ["warm"]
    idle_keeper(session).cancel()  # the user is back
    await idle_keeper(session).wait_done()
    count = len(seen)
    await asyncio.sleep(2.5)  # a second warm-up would have been due by now
    assert len(seen) == count
    off = session_on(tmp_path, SessionStore.create(tmp_path / "proj", home=tmp_path / "home"), idle={"policy": "off"})
    await off.prompt("first question")
    idle_keeper(off).start()
    assert idle_keeper(off)._task is None  # idle.policy off: no timer at all


async def test_an_idle_compaction_is_written_like_any_other_and_a_new_process_agrees(
    setup: tuple[Path, list[tuple[Context, StreamOptions]]], faux: FauxProvider, clock: Clock
) -> None:
    """``idle.policy: compact``: before the cache expires the session compacts (reason
    ``idle``), the period ends there, and a new process sends the same next request."""
    tmp_path, seen = setup
    faux.set_fallback(lambda context: text("## Goal\nthe summary") if is_summary_request(context) else text("ok " * 60))
    store = SessionStore.create(tmp_path / "proj", home=tmp_path / "home")
    session = session_on(tmp_path, store, idle={"policy": "compact"}, compaction={"keepRecentTokens": 50})
    events: list[Any] = []
    session.subscribe(events.append)
    for i in range(4):
        await session.prompt(f"question {i} " + "words " * 200)
    clock.advance(275)
    decision = await idle_keeper(session).step()
    assert decision is not None and decision.action == "compact"
    assert [e.reason for e in events if getattr(e, "type", "") == "compaction_end"] == ["idle"]
    assert any(getattr(e, "type", "") == "compaction_end" and e.entry_id for e in events)
    assert idle_keeper(session).due_in() is None  # the period ended with the compaction
    assert store.path is not None
    copy = tmp_path / "copy.jsonl"
    shutil.copy(store.path, copy)
    await session.prompt("after the pause")
    one_process = body(seen[-1][0])
    resumed = session_on(
        tmp_path, SessionStore.open(copy), idle={"policy": "compact"}, compaction={"keepRecentTokens": 50}
    )
    await resumed.prompt("after the pause")
    assert body(seen[-1][0]) == one_process and "the summary" in one_process


def test_the_interactive_mode_shows_each_decision() -> None:
    from heron.cli.tui.render import Renderer
    from tests.cli.tui_helpers import output, recording_console

    renderer = Renderer(recording_console(width=200))
    renderer.handle(IdleEvent(action="warm", reason="auto: cheapest of warm $0.0300, expire $0.3450"))
    renderer.handle(IdleEvent(action="warm", reason="idle.policy is warm", failed="connection refused"))
    shown = output(renderer.console)
    assert "idle: warmed the prompt cache; auto: cheapest of warm $0.0300" in shown
    assert "idle: warmed the prompt cache (failed: connection refused)" in shown


def reads_then_answers(files: list[str]) -> Any:
    """A model that reads ``files`` one a turn (one ``read`` call, then an answer)."""
    from heron.ai.providers.faux import FauxReply
    from heron.ai.types import ToolCall, ToolResultMessage

    def reply(context: Context) -> Any:
        if is_summary_request(context):
            return text("## Goal\nthe summary")
        last = context.messages[-1]
        if isinstance(last, ToolResultMessage):
            return text("read it")
        turn = sum(1 for m in context.messages if m.role == "user")
        if turn > len(files):
            return text("ok")
        return FauxReply(content=[ToolCall(id=f"r{turn}", name="read", arguments={"path": files[turn - 1]})])

    return reply


async def test_expire_is_priced_from_the_pruned_cold_request_and_the_next_request_is_that_one(
    setup: tuple[Path, list[tuple[Context, StreamOptions]]], faux: FauxProvider, clock: Clock
) -> None:
    """Old file reads fill the context: once the cache has expired, cold-cache pruning
    stubs them, so the request after the pause is small. The idle decision plans that
    step (recording nothing), finds expiring cheaper than a warm-up that re-reads it all,
    lets the cache expire - and the next request is the pruned one it priced; a new
    process on the same file sends the same bytes."""
    tmp_path, seen = setup
    files = [f"big{i}.txt" for i in range(4)]
    for i, name in enumerate(files):
        (tmp_path / "proj" / name).write_text("".join(f"line {n} of file {i} " * 3 + "\n" for n in range(1_500)))
    faux.set_fallback(reads_then_answers(files))
    model = faux.model(context_window=200_000, max_tokens=2_000)
    store = SessionStore.create(tmp_path / "proj", home=tmp_path / "home")
    session = session_on(tmp_path, store, model)
    for i in range(len(files)):
        await session.prompt(f"read {files[i]}")
        clock.advance(20)
    prunes_before = len(session.policy.decisions.stubs)
    clock.advance(250)
    decision = await idle_keeper(session).step()
    assert decision is not None and decision.action == "expire", decision
    (record,) = idle_records(store)
    assert record["coldTokens"] < record["contextTokens"] / 4  # the planned cold step sheds the reads
    assert record["costs"]["expire"] < record["costs"]["warm"]
    assert "once the cache has expired" in record["reason"]
    assert len(session.policy.decisions.stubs) == prunes_before  # planned only: no stub recorded
    sent = len(seen)
    assert store.path is not None
    copy = tmp_path / "copy.jsonl"
    shutil.copy(store.path, copy)
    clock.advance(600)  # the user comes back after the cache expired
    await session.prompt("and now?")
    one_process = body(seen[sent][0])
    assert "line 10 of file 0" not in one_process  # the cold request carries stubs, not the reads
    assert session.request_plan.tokens <= record["coldTokens"] + 200  # about the size priced
    resumed = session_on(tmp_path, SessionStore.open(copy), model)
    await resumed.prompt("and now?")
    assert len(seen) == sent + 2 and body(seen[-1][0]) == one_process
