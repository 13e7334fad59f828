"""Background compaction (issue 28): the summary starts past the soft mark beside the
turn, and the automatic compaction splices it in.

A 32k faux model, pruning off (so the compaction falls at the threshold), turns that each
add a 2,000-token answer. Summary requests are told apart from the session's own by the
summariser's system prompt; each test scripts how they answer (at once, slowly, failing).
The test suite runs with ``HERON_BACKGROUND_COMPACTION=0``; these tests turn it back on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from heron.ai.providers.faux import FauxProvider, FauxReply, error, serialise_request, text
from heron.ai.types import Context
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.background import BACKGROUND_ENV, YOUNG_REQUESTS
from heron.context.compaction.summary.summary_text import SHARED_SUMMARY_MARK, SUMMARISER_SYSTEM_PROMPT
from heron.context.records.decisions import DECISION_CUSTOM_TYPE
from heron.context.records.ledger import LedgerRecord
from heron.session.entries import CompactionEntry, CustomEntry, MessageEntry
from heron.session.store import SessionStore

ANSWER = "An answer with every detail spelled out, one line after another. " * 125  # ~8k chars
SUMMARY = "## Goal\nWork through the numbered turns.\n\n## Progress\n- the early turns are done"


@pytest.fixture(autouse=True)
def _background_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BACKGROUND_ENV, raising=False)


def is_summary(context: Context) -> bool:
    """Either kind of summary request: the summariser's own, or one sharing the prefix."""
    shared = bool(context.messages) and SHARED_SUMMARY_MARK in repr(context.messages[-1])
    return context.system_prompt == SUMMARISER_SYSTEM_PROMPT or shared


class Script:
    """The session's turns answer with :data:`ANSWER`; summary requests with ``summary()``."""

    def __init__(self, summary: Callable[[int], FauxReply] | None = None) -> None:
        self.summary = summary or (lambda n: text(SUMMARY))
        self.summaries: list[str] = []  # the summary requests' payloads, in order

    def __call__(self, context: Context) -> FauxReply:
        if is_summary(context):
            self.summaries.append(serialise_request(context))
            return self.summary(len(self.summaries))
        return text(f"done. {ANSWER}")


def open_session(tmp_path: Path, faux: FauxProvider, script: Script, **settings: Any) -> CodingSession:
    faux.set_fallback(script)
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    store = SessionStore.create(project, home=home)
    return resume(tmp_path, faux, store, **settings)


def resume(tmp_path: Path, faux: FauxProvider, store: SessionStore, **settings: Any) -> CodingSession:
    base: dict[str, Any] = {
        "compaction": {"keepRecentTokens": 2_000},
        "pruning": {"enabled": False},
        "retry": {"enabled": False},
        "memory": {"enabled": False},
    }
    for key, value in settings.items():
        base[key] = {**base.get(key, {}), **value}
    return CodingSession(
        cwd=tmp_path / "proj",
        model=faux.model(context_window=32_768, max_tokens=2_048),
        store=store,
        home=tmp_path / "home",
        settings=settings_from_dict(base),
        tools=["read"],
    )


def background_records(s: CodingSession) -> list[LedgerRecord]:
    return [r for r in s.ledger.records if r.kind == "compaction" and "background" in r.detail]


def decisions(s: CodingSession, op: str = "background") -> list[dict[str, Any]]:
    return [
        e.data
        for e in s.store.entries()
        if isinstance(e, CustomEntry) and e.custom_type == DECISION_CUSTOM_TYPE and e.data.get("op") == op
    ]


async def until_started(s: CodingSession, script: Script, turns: int = 20) -> int:
    """Turns until a background summary has been asked for; returns the turns run."""
    for n in range(turns):
        await s.prompt(f"turn {n}: go on")
        if script.summaries:
            return n + 1
    raise AssertionError("no background summary started")


async def test_a_ready_summary_is_spliced_in_without_waiting(tmp_path: Path, faux: FauxProvider) -> None:
    script = Script()
    s = open_session(tmp_path, faux, script)
    started = await until_started(s, script)
    assert not any(isinstance(e, CompactionEntry) for e in s.store.entries())
    assert decisions(s) and "firstKeptEntryId" in decisions(s)[0], "the start is recorded"
    asked = len(script.summaries)
    turn_requests = [c for c in faux.requests if not is_summary(c)]
    assert all("work through the numbered turns" not in serialise_request(c).lower() for c in turn_requests)
    for n in range(started, started + 12):
        await s.prompt(f"turn {n}: go on")
        if any(isinstance(e, CompactionEntry) for e in s.store.entries()):
            break
    entries = [e for e in s.store.entries() if isinstance(e, CompactionEntry)]
    assert len(entries) == 1 and SUMMARY in entries[0].summary
    assert len(script.summaries) == asked, "the compaction asked for no second summary"
    written = [r for r in background_records(s) if r.ref == entries[0].id]
    assert written and written[0].detail["background"] == "ready"
    assert written[0].detail["waited_s"] < 0.5
    # the summary reached a request only once its entry was written: the next request carries it
    last = serialise_request(faux.requests[-1])
    assert "Work through the numbered turns" in last
    assert s.store.leaf_id is not None


async def test_a_running_summary_is_waited_for_not_asked_again(tmp_path: Path, faux: FauxProvider) -> None:
    script = Script(lambda n: FauxReply(content=text(SUMMARY).content, delay=1.5))
    s = open_session(tmp_path, faux, script, compaction={"backgroundAt": 0.9, "softThreshold": 1})
    for n in range(20):
        await s.prompt(f"turn {n}: go on")
        if any(isinstance(e, CompactionEntry) for e in s.store.entries()):
            break
    written = [r for r in background_records(s) if r.ref is not None]
    assert len(written) == 1 and written[0].detail["background"] == "waited"
    assert 0 < written[0].detail["waited_s"] <= written[0].detail["summary_s"] + 0.05
    assert len({p for p in script.summaries}) == len(script.summaries) <= 2  # history (+ turn prefix): once


async def test_a_summary_whose_history_changed_is_discarded_and_recorded(tmp_path: Path, faux: FauxProvider) -> None:
    script = Script(lambda n: FauxReply(content=text(SUMMARY).content, delay=0.3 if n == 1 else 0))
    s = open_session(tmp_path, faux, script)
    await until_started(s, script)
    # move back to the second prompt: everything the summary covers after it is on another branch now
    path = s.store.path_to(s.store.leaf_id)
    prompts = [e.id for e in path if isinstance(e, MessageEntry) and e.message.role == "user"]
    await s.navigate(prompts[1])
    await s.prompt("a new direction")
    discarded = [r for r in background_records(s) if r.detail["background"] == "discarded"]
    assert len(discarded) == 1 and "changed" in discarded[0].detail["reason"]
    assert s.context_owner.background.running is None or s.context_owner.background.running.pending is not None
    assert not any(isinstance(e, CompactionEntry) for e in s.store.entries())


async def test_a_manual_compaction_discards_the_background_summary(tmp_path: Path, faux: FauxProvider) -> None:
    script = Script()
    s = open_session(tmp_path, faux, script)
    await until_started(s, script)
    await s.compact()
    await s.prompt("and on")
    discarded = [r for r in background_records(s) if r.detail["background"] == "discarded"]
    assert len(discarded) == 1


async def until_compacted(s: CodingSession, first: int, turns: int = 14) -> CompactionEntry:
    """Turns from ``first`` until one compacts; that compaction's entry."""
    for n in range(first, first + turns):
        await s.prompt(f"turn {n}: go on")
        entries = [e for e in s.store.entries() if isinstance(e, CompactionEntry)]
        if entries:
            return entries[0]
    raise AssertionError("no compaction")


async def test_an_abort_cancels_the_background_summary_and_only_the_compaction_asks_again(
    tmp_path: Path, faux: FauxProvider
) -> None:
    script = Script(lambda n: FauxReply(content=text(SUMMARY).content, delay=30 if n == 1 else 0))
    s = open_session(tmp_path, faux, script)
    started = await until_started(s, script)
    asked = len(script.summaries)  # the history, and the prefix of the turn its cut splits
    running = s.context_owner.background.running
    assert running is not None and not running.done
    s.abort()
    await asyncio.wait_for(asyncio.wait({running.task}), timeout=2)
    assert running.task.done() and running.aborted
    assert not background_records(s), "an abort is not a discard: the summary is still the one to use"
    assert any(d.get("op") == "background_sent" for d in decisions(s, "background_sent")), "its request went out"
    await s.prompt("next")
    assert len(script.summaries) == asked, "it is not sent again beside the next turn"
    entry = await until_compacted(s, started + 1)
    # sent again once, when the compaction needed it: the same requests
    assert sorted(script.summaries[asked:]) == sorted(script.summaries[:asked])
    assert SUMMARY in entry.summary
    written = [r for r in background_records(s) if r.ref == entry.id]
    assert written and written[0].detail["background"] == "waited"


async def test_a_failed_background_summary_falls_back_to_the_foreground_path(
    tmp_path: Path, faux: FauxProvider
) -> None:
    script = Script(lambda n: error("upstream failed", 500) if n == 1 else text(SUMMARY))
    s = open_session(tmp_path, faux, script)
    started = await until_started(s, script)
    for n in range(started, started + 14):
        await s.prompt(f"turn {n}: go on")
        if any(isinstance(e, CompactionEntry) for e in s.store.entries()):
            break
    # The failure is recorded when the compaction takes the summary (a deterministic
    # moment: a process per turn records it at the same request), and the compaction
    # falls back to a summary asked for in the foreground.
    failed = [r for r in background_records(s) if r.detail["background"] == "failed" and r.ref is None]
    assert len(failed) == 1 and "upstream failed" in failed[0].detail["reason"]
    entries = [e for e in s.store.entries() if isinstance(e, CompactionEntry)]
    assert len(entries) == 1 and SUMMARY in entries[0].summary
    foreground = [r for r in background_records(s) if r.ref == entries[0].id]
    assert foreground and foreground[0].detail["background"] == "failed"  # it fell back
    assert foreground[0].detail["waited_s"] == foreground[0].detail["summary_s"]


async def test_a_new_process_does_not_send_again_what_its_predecessor_sent(tmp_path: Path, faux: FauxProvider) -> None:
    """The first process is gone mid-summary (killed): the next one opening the file sends
    that summary once more only when its compaction needs it, never beside each turn."""
    script = Script(lambda n: FauxReply(content=text(SUMMARY).content, delay=30 if n == 1 else 0))
    s = open_session(tmp_path, faux, script)
    started = await until_started(s, script)
    asked = len(script.summaries)
    first = s.context_owner.background.running
    assert first is not None
    first.cancel()  # what a killed process leaves: the request went out, no answer kept
    path = s.store.path
    assert path is not None
    s.store.close()
    again = resume(tmp_path, faux, SessionStore.open(path))
    await again.prompt("the next turn, in a new process")
    assert len(script.summaries) == asked
    entry = await until_compacted(again, started + 1)
    assert sorted(script.summaries[asked:]) == sorted(script.summaries[:asked])
    assert SUMMARY in entry.summary


async def test_a_process_that_ends_keeps_the_summary_for_the_one_that_compacts(
    tmp_path: Path, faux: FauxProvider
) -> None:
    """A one-shot process waits for its summary after its turn and keeps it in the session:
    the process that compacts later splices it in and asks for nothing."""
    script = Script(lambda n: FauxReply(content=text(SUMMARY).content, delay=0.3))
    s = open_session(tmp_path, faux, script)
    started = await until_started(s, script)
    asked = len(script.summaries)
    await s.context_owner.finish_background()  # what `heron -p` does after printing its answer
    kept = decisions(s, "background_result")
    assert len(kept) == 1 and SUMMARY in kept[0]["result"]["summary"]
    path = s.store.path
    assert path is not None
    s.store.close()
    processes = [resume(tmp_path, faux, SessionStore.open(path))]
    entry: CompactionEntry | None = None
    for n in range(started, started + 14):  # a process per turn, each ending the same way
        current = processes[-1]
        await current.prompt(f"turn {n}: go on")
        await current.context_owner.finish_background()
        entries = [e for e in current.store.entries() if isinstance(e, CompactionEntry)]
        if entries:
            entry = entries[0]
            break
        assert current.store.path is not None
        current.store.close()
        processes.append(resume(tmp_path, faux, SessionStore.open(current.store.path)))
    assert entry is not None and SUMMARY in entry.summary
    assert len(script.summaries) == asked, "no process asked for the kept summary again"
    written = [r for r in background_records(processes[-1]) if r.ref == entry.id]
    assert written and written[0].detail["background"] == "ready"


async def test_a_kept_failure_falls_back_like_one_process(tmp_path: Path, faux: FauxProvider) -> None:
    script = Script(lambda n: error("upstream failed", 500) if n == 1 else text(SUMMARY))
    s = open_session(tmp_path, faux, script)
    started = await until_started(s, script)
    await s.context_owner.finish_background()
    kept = decisions(s, "background_result")
    assert len(kept) == 1 and "upstream failed" in kept[0]["result"]["error"]
    assert s.store.path is not None
    s.store.close()
    again = resume(tmp_path, faux, SessionStore.open(s.store.path))
    entry = await until_compacted(again, started)
    failed = [r for r in background_records(again) if r.detail["background"] == "failed" and r.ref is None]
    assert len(failed) == 1 and "upstream failed" in failed[0].detail["reason"]
    assert SUMMARY in entry.summary  # asked for in the foreground, as one process does


async def test_background_compaction_can_be_turned_off(tmp_path: Path, faux: FauxProvider) -> None:
    script = Script()
    s = open_session(tmp_path, faux, script, compaction={"background": False})
    for n in range(20):
        await s.prompt(f"turn {n}: go on")
        if any(isinstance(e, CompactionEntry) for e in s.store.entries()):
            break
    assert not decisions(s)
    entries = [e for e in s.store.entries() if isinstance(e, CompactionEntry)]
    assert len(entries) == 1
    record = [r for r in background_records(s) if r.ref == entries[0].id]
    assert record[0].detail["background"] == "none"


def threshold_run(tmp_path: Path, faux: FauxProvider, script: Script, resumed: bool) -> Callable[..., Any]:
    """Turns until a compaction is written, the session reopened before every turn when
    ``resumed`` (as ``-p --continue`` does); the session's own requests it sent."""

    async def run() -> tuple[list[str], CodingSession]:
        settings: dict[str, Any] = {"compaction": {"backgroundAt": 0.9, "softThreshold": 1}}
        s = open_session(tmp_path, faux, script, **settings)
        first = len(faux.requests)
        for n in range(20):
            if resumed and n:
                s.context_owner.cancel_background()  # what the end of the process does to it
                path = s.store.path
                assert path is not None
                s.store.close()
                s = resume(tmp_path, faux, SessionStore.open(path), **settings)
            await s.prompt(f"turn {n}: go on")
            if any(isinstance(e, CompactionEntry) for e in s.store.entries()):
                break
        s.context_owner.cancel_background()
        own = [serialise_request(c) for c in faux.requests[first:] if not is_summary(c)]
        return own, s

    return run


async def test_past_the_threshold_the_turn_goes_on_while_the_summary_runs(tmp_path: Path, faux: FauxProvider) -> None:
    """The compaction due at the threshold waits for the background summary while the
    request still fits the window with half the reserve for the answer (and the summary
    is young): those requests are sent as they are, the compaction runs later with the
    summary that had their time - and a process reopening the session before every turn
    defers exactly the same requests."""
    script = Script(lambda n: FauxReply(content=text(SUMMARY).content, delay=0.4))
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    own, s = await threshold_run(tmp_path / "one", faux, script, resumed=False)()
    policy = s.policy
    entries = [e for e in s.store.entries() if isinstance(e, CompactionEntry)]
    assert len(entries) == 1
    deferred = [p for p in own[:-1] if len(p) / 4 > policy.sizes.threshold]
    assert deferred, "a request past the threshold was sent while the summary ran"
    assert all(len(p) / 4 < policy.sizes.window for p in own)
    written = [r for r in background_records(s) if r.ref == entries[0].id]
    assert written and written[0].detail["background"] in ("ready", "waited")
    assert len(script.summaries) <= 2, "no second summary was asked for"
    again, _ = await threshold_run(tmp_path / "two", faux, Script(), resumed=True)()
    moved = [p.replace(str(tmp_path / "two"), str(tmp_path / "one")) for p in again]
    assert moved == own, "a resumed process defers the same requests"


async def test_a_step_boundary_renews_a_weak_summary_and_waits_for_a_young_one(
    tmp_path: Path, faux: FauxProvider
) -> None:
    """At a step boundary (below the threshold) the compaction is not written when the
    summary on its way has had no time yet (fewer than ``YOUNG_REQUESTS`` answers) or is
    too weak to write: that one is given up (recorded) and one with the boundary's own cut
    starts - no summary is asked for in the foreground."""
    script = Script(lambda n: FauxReply(content=text(SUMMARY).content, delay=0.2))
    s = open_session(tmp_path, faux, script, compaction={"backgroundAt": 0.3})
    await until_started(s, script)
    background, policy = s.context_owner.background, s.policy
    messages = s.agent.state.messages
    estimate = policy.sizes.raw_estimate(policy.view(messages))
    assert background.waits_at_boundary(messages, estimate, 1_000), "young: the boundary does not wait for it"
    first = decisions(s)[-1]["firstKeptEntryId"]
    for n in range(YOUNG_REQUESTS):
        await s.prompt(f"more {n}")
    assert not any(isinstance(e, CompactionEntry) for e in s.store.entries())
    messages = s.agent.state.messages
    estimate = policy.sizes.raw_estimate(policy.view(messages))
    assert not background.waits_at_boundary(messages, estimate, 1_000), "it had its time: the compaction runs"
    # after a deep pruning step the view is little more than what the summary leaves verbatim
    assert background.waits_at_boundary(messages, policy.sizes.fixed_tokens() + 1_000, 1_000)
    renewed = decisions(s)
    assert renewed[-2].get("ended") == "discarded" and "weak" in renewed[-2]["reason"]
    assert renewed[-1]["firstKeptEntryId"] != first, "a summary with the boundary's cut started"
    assert any("weak at a step boundary" in str(r.detail.get("reason")) for r in background_records(s))
    s.context_owner.cancel_background()


async def test_the_summary_is_sent_once_the_answer_to_the_request_it_repeats_has_begun(
    tmp_path: Path, faux: FauxProvider
) -> None:
    """It shares that request's prefix, and a provider's cache serves a request only from
    one whose answer has begun: sent beside it, the summary would pay for all of it."""
    arrivals: list[tuple[float, bool]] = []  # (when the provider got it, a summary request)

    def answer(context: Context) -> FauxReply:
        summary = is_summary(context)
        arrivals.append((time.monotonic(), summary))
        if summary:
            return text(SUMMARY)
        return FauxReply(content=text(f"done. {ANSWER}").content, delay=0.3)  # the answer begins 0.3 s later

    script = Script()
    s = open_session(tmp_path, faux, script)
    faux.set_fallback(answer)
    for n in range(20):
        await s.prompt(f"turn {n}: go on")
        if any(summary for _, summary in arrivals):
            break
    first = next(i for i, (_, summary) in enumerate(arrivals) if summary)
    main_before = max(when for when, summary in arrivals[:first] if not summary)
    assert arrivals[first][0] - main_before >= 0.25, "sent before the answer it shares a prefix with began"


def test_a_kept_answer_reads_back_and_a_damaged_one_reads_as_a_failure() -> None:
    from heron.context.compaction.background_record import result_data, result_from
    from heron.context.compaction.summary.shared_summary import SummaryUsage
    from heron.context.compaction.summary.summariser import SummaryResult

    record = LedgerRecord(kind="summary_fallback", chars_before=40, chars_after=10, detail={"step": "separate"})
    usage = SummaryUsage(mode="shared", requests=1, input_tokens=900, cached_tokens=800, reported=True)
    result = SummaryResult(summary=SUMMARY, details={"readFiles": ["a.py"]}, records=[record], usage=usage)
    back = result_from(result_data(result, None))
    assert isinstance(back, SummaryResult)
    assert (back.summary, back.details, back.usage) == (SUMMARY, {"readFiles": ["a.py"]}, usage)
    assert back.records[0].to_json_dict() == record.to_json_dict()
    assert result_from(result_data(None, "upstream failed")) == "upstream failed"
    for damaged in ({}, {"summary": "  "}, {"summary": 3, "error": 4}):
        assert isinstance(result_from(damaged), str)
    odd = result_from({"summary": "kept", "details": "x", "records": "y", "usage": {"requests": -2}})
    assert isinstance(odd, SummaryResult) and odd.details == {} and odd.records == [] and odd.usage.requests == 0
