"""CodingSession end to end with the faux provider: persistence, pruning, compaction
before every request (also between the tool turns of one run), overflow recovery."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from heron.ai.providers.faux import FauxProvider, FauxReply, error, serialise_request, text, tool_call
from heron.ai.types import AssistantMessage, Context, StopReason, TextContent, ToolResultMessage, UserMessage
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.context.records.ledger import LEDGER_CUSTOM_TYPE
from heron.session.entries import CompactionEntry, CustomEntry, MessageEntry
from heron.session.store import SessionStore


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HERON_HOME", str(home))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "big.txt").write_text("".join(f"line {i} of a long file with some text\n" for i in range(1, 4001)))
    (proj / "small.py").write_text("def f():\n    return 1\n")
    return proj


def scripted(faux: FauxProvider, script: list[FauxReply], summary: str = "## Goal\nRead the file") -> list[Context]:
    """Replies in order; summary requests (recognised by their system prompt) get ``summary``."""
    summaries: list[Context] = []

    def reply(context: Context) -> FauxReply:
        if is_summary_request(context):
            summaries.append(context)
            return text(summary)
        return script.pop(0)

    faux.set_fallback(reply)
    return summaries


def session(
    project: Path, faux: FauxProvider, window: int = 128_000, settings: dict[str, object] | None = None
) -> CodingSession:
    store = SessionStore.create(project)
    model = faux.model(context_window=window, max_tokens=min(8_192, window // 4))
    return CodingSession(cwd=project, model=model, store=store, settings=settings_from_dict(settings or {}))


def request_tokens(context: Context) -> int:
    return len(serialise_request(context)) // 4


async def test_prompt_runs_tools_and_persists_everything(project: Path, faux: FauxProvider) -> None:
    scripted(faux, [tool_call("read", {"path": "small.py"}), text("It returns 1.")])
    s = session(project, faux)
    await s.prompt("what does f return?")
    assert isinstance(s.messages[-1], AssistantMessage) and s.messages[-1].text() == "It returns 1."
    result = next(m for m in s.messages if isinstance(m, ToolResultMessage))
    assert "return 1" in result.text()
    reopened = SessionStore.open(s.store.path, read_only=True)  # type: ignore[arg-type]
    roles = [e.message.role for e in reopened.entries() if isinstance(e, MessageEntry)]
    assert roles == ["user", "assistant", "toolResult", "assistant"]


async def test_compaction_is_checked_between_tool_turns(project: Path, faux: FauxProvider) -> None:
    """A single long run on a 16k window: heron compacts mid-run, and no request it sends
    exceeds window - reserve (pi only checks after the run and overflows)."""
    # pages cut to the per-result cap (15% of the window); pruning off, so that only a
    # compaction between the tool turns keeps the run within the window
    script = [tool_call("read", {"path": "big.txt", "offset": 1 + i * 450, "limit": 450}) for i in range(8)]
    summaries = scripted(faux, [*script, text("done reading")])
    settings = {"pruning": {"enabled": False}, "toolLimits": {"windowShare": 0.15}}
    s = session(project, faux, window=16_384, settings=settings)
    events: list[str] = []
    s.subscribe(lambda e: events.append(e.type))
    await s.prompt("read big.txt in pages of 450 lines")
    assert s.messages[-1].text() == "done reading"  # type: ignore[union-attr]
    assert "compaction_end" in events
    first_compaction = events.index("compaction_start")
    assert "turn_start" in events[first_compaction:]  # the run went on after compacting
    assert summaries, "the summariser was called"
    for context in faux.requests:
        if not is_summary_request(context):
            assert request_tokens(context) <= s.threshold
    entries = s.store.entries()
    assert any(isinstance(e, CompactionEntry) for e in entries)
    ledger = [e for e in entries if isinstance(e, CustomEntry) and e.custom_type == LEDGER_CUSTOM_TYPE]
    assert {e.data["kind"] for e in ledger} >= {"compaction"}


async def test_pruning_stubs_old_results_in_memory_only(project: Path, faux: FauxProvider) -> None:
    script = [tool_call("read", {"path": "big.txt", "offset": 1 + i * 200, "limit": 200}) for i in range(8)]
    scripted(faux, [*script, text("ok")])
    s = session(project, faux, window=16_384, settings={"compaction": {"enabled": False}})
    await s.prompt("page through big.txt")
    last_request = faux.requests[-1]
    stubs = [m for m in last_request.messages if isinstance(m, ToolResultMessage) and "[Pruned" in m.text()]
    assert stubs, "old results were pruned in the request"
    stored = [e.message for e in s.store.entries() if isinstance(e, MessageEntry)]
    assert not any(isinstance(m, ToolResultMessage) and "[Pruned" in m.text() for m in stored)
    # the oldest results are the ones stubbed, each naming how to read its text again; the
    # newest go out whole, and every call of the file still has its result in the request
    sent = [m for m in last_request.messages if isinstance(m, ToolResultMessage)]
    kept = [m for m in stored if isinstance(m, ToolResultMessage)]
    assert [m.tool_call_id for m in sent] == [m.tool_call_id for m in kept] and len(sent) == 8
    assert sent[: len(stubs)] == stubs and len(stubs) < len(sent)
    for index, stub in enumerate(stubs):
        assert f"Read big.txt with offset={1 + index * 200} " in stub.text() and len(stub.text()) < 300
    assert sent[-1].text().startswith("line 1401 of a long file")
    assert all(m.text().startswith(f"line {1 + i * 200} of a long file") for i, m in enumerate(kept))


async def test_overflow_error_compacts_and_retries_once(project: Path, faux: FauxProvider) -> None:
    script = [tool_call("read", {"path": "big.txt", "offset": 1 + i * 300, "limit": 300}) for i in range(4)]
    overflow = error("prompt is too long: 140000 tokens > 128000 maximum", 400)
    scripted(faux, [*script, overflow, text("recovered")])
    # keep little, so there is something to summarise at this small size
    s = session(project, faux, window=128_000, settings={"compaction": {"keepRecentTokens": 2_000}})
    await s.prompt("read it all")
    assert s.messages[-1].text() == "recovered"  # type: ignore[union-attr]
    retried = faux.requests[-1]
    # the retried request still has the current turn's prompt and its latest call and result
    assert any(isinstance(m, ToolResultMessage) for m in retried.messages)
    assert any(isinstance(m, UserMessage) and "compacted" in m.text() for m in retried.messages)
    entries = s.store.entries()
    failed = [
        e
        for e in entries
        if isinstance(e, MessageEntry)
        and isinstance(e.message, AssistantMessage)
        and e.message.stop_reason == StopReason.ERROR
    ]
    assert len(failed) == 1  # kept in the file...
    path_ids = {e.id for e in s.store.path_to(s.store.leaf_id)}
    assert failed[0].id not in path_ids  # ...but off the path the retry continued from
    compaction = next(e for e in entries if isinstance(e, CompactionEntry))
    assert compaction.id in path_ids


async def test_second_overflow_is_reported_not_looped(project: Path, faux: FauxProvider) -> None:
    overflow: Callable[[], FauxReply] = lambda: error("prompt is too long", 400)  # noqa: E731
    script = [tool_call("read", {"path": "big.txt", "offset": 1 + i * 300, "limit": 300}) for i in range(3)]
    scripted(faux, [*script, overflow(), overflow(), text("never")])
    s = session(project, faux, settings={"compaction": {"keepRecentTokens": 1_000}})
    await s.prompt("go")
    last = s.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == StopReason.ERROR


async def test_manual_compact_with_focus(project: Path, faux: FauxProvider) -> None:
    script = [tool_call("read", {"path": "big.txt", "offset": 1 + i * 300, "limit": 300}) for i in range(3)]
    summaries = scripted(faux, [*script, text("done")], summary="## Goal\nfocused summary")
    s = session(project, faux, settings={"compaction": {"keepRecentTokens": 500}})
    await s.prompt("read")
    end = await s.compact(focus="the database schema")
    assert end is not None and end.entry_id is not None
    assert "the database schema" in summaries[-1].messages[-1].text()  # type: ignore[union-attr]
    assert "focused summary" in s.messages[0].summary  # type: ignore[union-attr]


async def test_navigate_with_branch_summary(project: Path, faux: FauxProvider) -> None:
    scripted(
        faux,
        [text("first answer"), tool_call("read", {"path": "small.py"}), text("second answer")],
        summary="## Tried\nread small.py",
    )
    s = session(project, faux)
    await s.prompt("first question")
    first_answer = s.store.leaf_id
    await s.prompt("second question")
    summary = await s.navigate(first_answer, summarize=True)
    assert summary is not None and "read small.py" in summary
    assert [m.role for m in s.messages] == ["user", "assistant", "branchSummary"]
    branch = s.store.get(s.store.leaf_id)  # type: ignore[arg-type]
    assert branch is not None and branch.type == "branch_summary"
    assert branch.parent_id == first_answer
    await s.navigate(first_answer)  # without a summary: just move
    assert [m.role for m in s.messages] == ["user", "assistant"]


async def test_stream_broken_mid_answer_is_retried_by_the_session(project: Path, faux: FauxProvider) -> None:
    broken = FauxReply(
        content=[TextContent(text="half an answer that breaks")],
        error=error("connection reset", 503).error,
        error_after_chunks=1,
    )
    scripted(faux, [broken, text("a whole answer")])
    s = session(project, faux, settings={"retry": {"baseDelayMs": 1, "maxDelayMs": 5}})
    events: list[str] = []
    s.subscribe(lambda e: events.append(e.type))
    await s.prompt("hi")
    assert s.messages[-1].text() == "a whole answer"  # type: ignore[union-attr]
    assert events.count("retry_start") == 1 and events.count("retry_end") == 1
    assert len([c for c in faux.requests if not is_summary_request(c)]) == 2
