"""Compaction in detail (docs/context.md, "Compaction"): the region, the cut, split
turns and their concurrent turn-prefix summary, the prompts, the summariser's input, the
lists heron appends itself, the summariser's fallbacks, and re-injected files."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from heron.agent.messages import BashExecutionMessage, ExtensionMessage
from heron.ai.options import StreamOptions
from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.registry import complete
from heron.ai.types import (
    AssistantMessage,
    Context,
    Model,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.plan import (
    USER_REQUEST_CHARS,
    USER_REQUESTS_KEPT,
    CompactionPlan,
    CompactionSettings,
    prepare_compaction,
)
from heron.context.compaction.summary.summariser import SummaryResult, summarise
from heron.context.compaction.summary.summary_chunks import MERGE_PROMPT, parse_summary
from heron.context.compaction.summary.summary_text import (
    FALLBACK_TOOL_RESULT_CHARS,
    FIRST_SUMMARY_PROMPT,
    SUMMARISER_SYSTEM_PROMPT,
    SUMMARY_TOOL_RESULT_CHARS,
    TURN_PREFIX_PROMPT,
    UPDATE_SUMMARY_PROMPT,
    fit_transcript,
    is_summary_request,
    serialise_transcript,
)
from heron.context.records.ledger import LEDGER_CUSTOM_TYPE, LedgerRecord
from heron.context.view.build import DETAIL_REINJECTED, REINJECTED_FILES_TYPE
from heron.session.entries import CompactionEntry, CustomEntry, CustomMessageEntry, MessageEntry
from heron.session.store import SessionStore
from tests.support.tools import BUILTIN

# --- building sessions ------------------------------------------------------------------


async def summarise_direct(plan: CompactionPlan, model: Model, **settings: Any) -> SummaryResult:
    """The summariser on its own: its requests sent straight to the provider, typed options."""

    async def ask(context: Context, max_tokens: int) -> AssistantMessage:
        return await complete(model, context, StreamOptions(max_tokens=max_tokens))

    return await summarise(plan, ask, model=model, **settings)


def user(chars: int = 400, label: str = "") -> UserMessage:
    body = (label + " " if label else "") + "u" * chars
    return UserMessage(content=[TextContent(text=body[: max(chars, len(label))])])


def assistant(chars: int = 400, calls: list[ToolCall] | None = None) -> AssistantMessage:
    content: list[Any] = [TextContent(text="a" * chars), *(calls or [])]
    return AssistantMessage(
        api="faux",
        provider="faux",
        model="faux-1",
        content=content,
        usage=Usage(),
        stop_reason=StopReason.TOOL_USE if calls else StopReason.STOP,
    )


def call(call_id: str, name: str = "read", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments or {"path": f"{call_id}.py"})


def result(call_id: str, chars: int = 400, name: str = "read", body: str | None = None) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name=name, content=[TextContent(text=body or "r" * chars)])


def store_of(*items: Any) -> tuple[SessionStore, list[str]]:
    """A session holding ``items`` in order (messages, or callables taking the store and
    returning an entry); returns it with the ids of the items."""
    store = SessionStore.in_memory("/tmp/project")
    ids = []
    for item in items:
        entry = item(store) if callable(item) else store.append_message(item)
        ids.append(entry.id)
    return store, ids


def plan_of(store: SessionStore, keep: int) -> CompactionPlan | None:
    return prepare_compaction(store.path_to(store.leaf_id), CompactionSettings(keep_recent_tokens=keep), BUILTIN)


def index_of(store: SessionStore, entry_id: str) -> int:
    return [e.id for e in store.path_to(store.leaf_id)].index(entry_id)


def fake_compaction(store: SessionStore, plan: CompactionPlan, summary: str = "summary") -> CompactionEntry:
    details = {"readFiles": plan.read_files, "modifiedFiles": plan.modified_files, "userRequests": plan.user_requests}
    return store.append_compaction(summary, plan.first_kept_entry_id, 1, details)


# --- the region and the cut ---------------------------------------------------------------


def test_region_starts_at_the_previous_compactions_first_kept_entry() -> None:
    """pi starts after the previous compaction entry and so loses what it kept; heron
    summarises those kept messages in the next compaction."""
    store, ids = store_of(user(), assistant(), user(), assistant())
    first = plan_of(store, keep=200)  # 100 tokens each: keeps the last user + assistant
    assert first is not None and first.first_kept_entry_id == ids[2]
    fake_compaction(store, first, "S1")
    later = [store.append_message(m).id for m in (user(), assistant())]
    second = plan_of(store, keep=200)
    assert second is not None
    assert second.region_start == index_of(store, ids[2])
    assert second.previous is not None and second.previous.summary == "S1"
    kept_by_first = [e.message for e in store.path_to(store.leaf_id) if e.id in ids[2:]]  # type: ignore[union-attr]
    assert second.messages_to_summarize == kept_by_first  # summarised now, not lost
    assert second.first_kept_entry_id == later[0]


def test_compaction_entries_are_not_messages_to_summarise() -> None:
    store, _ = store_of(user(), assistant(), user(), assistant())
    first = plan_of(store, keep=200)
    assert first is not None
    fake_compaction(store, first)
    for message in (user(), assistant(), user(), assistant()):
        store.append_message(message)
    second = plan_of(store, keep=200)
    assert second is not None
    assert all(not hasattr(m, "summary") for m in second.messages_to_summarize)
    assert len(second.messages_to_summarize) == 4  # 2 kept by the first compaction + 2 after it


def test_nothing_to_compact() -> None:
    store, _ = store_of(user(), assistant())
    assert plan_of(store, keep=10_000) is None  # everything fits the budget
    plan = plan_of(store, keep=100)
    assert plan is not None
    fake_compaction(store, plan)
    assert plan_of(store, keep=100) is None  # the leaf is a compaction
    assert prepare_compaction([], CompactionSettings()) is None


def _mixed_session() -> tuple[SessionStore, list[str]]:
    items: list[Any] = [user(80)]
    for turn in range(6):
        items.append(assistant(40 + 8 * turn, [call(f"t{turn}a"), call(f"t{turn}b", "bash", command="make")]))
        items += [result(f"t{turn}a", 200 + 40 * turn), result(f"t{turn}b", 120, "bash")]
        if turn % 2:
            items.append(BashExecutionMessage(command="git status", output="clean " * 20))
        items.append(assistant(60))
        items.append(user(40 + turn * 12))
    return store_of(*items)


def test_cut_points_are_never_on_a_tool_result() -> None:
    """For every budget, the kept part starts on a valid cut point and holds no result
    whose call was summarised."""
    store, _ = _mixed_session()
    path = store.path_to(store.leaf_id)
    total = sum(1 for _ in path)
    seen_cuts = set()
    for keep in range(1, 1_500, 7):
        plan = plan_of(store, keep)
        if plan is None:
            continue
        cut = plan.first_kept_index
        seen_cuts.add(cut)
        first = path[cut]
        assert not (isinstance(first, MessageEntry) and isinstance(first.message, ToolResultMessage))
        kept_calls: set[str] = set()
        for entry in path[cut:]:
            if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
                kept_calls.update(c.id for c in entry.message.tool_calls())
            if isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage):
                assert entry.message.tool_call_id in kept_calls
    assert len(seen_cuts) > 10 and total > 30


def test_a_budget_reached_on_a_tool_result_cuts_at_the_next_cut_point() -> None:
    store, ids = store_of(
        user(),
        assistant(40, [call("c1")]),
        result("c1", 400),
        assistant(40, [call("c2")]),
        result("c2", 400),
        assistant(400),
    )
    # walking back: 100 (answer), 200 (c2's result), 210 (c2's call), 310 reached at c1's result
    plan = plan_of(store, keep=300)
    assert plan is not None
    assert plan.first_kept_entry_id == ids[3]  # c2's call, not c1's result
    assert plan.split_turn and plan.turn_start_index == 0
    assert [m.role for m in plan.turn_prefix_messages] == ["user", "assistant", "toolResult"]
    assert plan.messages_to_summarize == []


def test_settings_and_labels_travel_with_the_message_they_precede() -> None:
    store, ids = store_of(
        user(),
        assistant(),
        lambda s: s.append_model_change("faux", "faux-2"),
        lambda s: s.append_thinking_level_change("high"),
        lambda s: s.set_label(s.leaf_id, "before the second question"),
        lambda s: s.append_custom("extension.state", {"x": 1}),
        user(),
        assistant(),
    )
    plan = plan_of(store, keep=200)
    assert plan is not None
    assert plan.first_kept_entry_id == ids[2]  # the model change, with everything after it
    # judged by the user message after them: a clean turn boundary (pi calls it a split)
    assert not plan.split_turn and plan.turn_start_index == -1 and plan.turn_prefix_messages == []
    assert len(plan.messages_to_summarize) == 2
    kept = [e.type for e in store.path_to(store.leaf_id)[plan.first_kept_index :]]
    assert kept == ["model_change", "thinking_level_change", "label", "custom", "message", "message"]
    fake_compaction(store, plan)
    context = store.build_context()
    assert context.thinking_level == "high"
    assert [m.role for m in context.messages] == ["compactionSummary", "user", "assistant"]


def test_the_cut_never_moves_back_past_a_compaction() -> None:
    store, ids = store_of(user(), assistant())
    first = plan_of(store, keep=100)
    assert first is not None
    compaction = fake_compaction(store, first)
    label = store.set_label(ids[0], "first")
    store.append_message(user())
    store.append_message(assistant())
    plan = plan_of(store, keep=200)
    assert plan is not None
    assert plan.first_kept_entry_id == label.id  # moved back onto the label, stopped at the compaction
    assert store.path_to(store.leaf_id)[plan.first_kept_index - 1].id == compaction.id


def test_a_turn_start_at_the_cut_is_not_a_split() -> None:
    """A bash execution the user ran is a turn start and a cut point: cutting there keeps
    the whole turn."""
    store, ids = store_of(user(), assistant(), BashExecutionMessage(command="ls", output="x" * 396), assistant(400))
    plan = plan_of(store, keep=200)
    assert plan is not None and plan.first_kept_entry_id == ids[2]
    assert not plan.split_turn and plan.turn_start_index == -1


# --- the summary requests -------------------------------------------------------------------


def summary_script(
    faux: FauxProvider, history: str = "## Goal\nhistory", prefix: str = "## Original Request\nprefix"
) -> list[Context]:
    seen: list[Context] = []

    def reply(context: Context) -> FauxReply:
        seen.append(context)
        prompt = context.messages[0].text()  # type: ignore[union-attr]
        return text(prefix if TURN_PREFIX_PROMPT in prompt else history)

    faux.set_fallback(reply)
    return seen


def split_store() -> tuple[SessionStore, list[str]]:
    return store_of(
        user(400, "fix the parser"),
        assistant(400),
        user(400, "now the lexer"),
        assistant(40, [call("c1")]),
        result("c1", 400),
        assistant(40, [call("c2")]),
        result("c2", 400),
        assistant(400),
    )


async def test_split_turn_prefix_is_summarised_concurrently(faux: FauxProvider) -> None:
    store, ids = split_store()
    plan = plan_of(store, keep=300)
    assert plan is not None and plan.split_turn
    assert plan.turn_start_index == index_of(store, ids[2])
    assert plan.first_kept_entry_id == ids[5]
    assert [m.role for m in plan.messages_to_summarize] == ["user", "assistant"]
    assert [m.role for m in plan.turn_prefix_messages] == ["user", "assistant", "toolResult"]

    seen = summary_script(faux, history="H" * 400, prefix="P" * 400)
    faux.chunk_delay = 0.002  # 25 chunks each: the two streams overlap only if both are in flight
    in_flight = 0
    peak = 0
    original = faux.stream

    async def counting(*args: Any) -> AsyncIterator[Any]:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            async for event in original(*args):
                yield event
        finally:
            in_flight -= 1

    faux.stream = counting  # type: ignore[method-assign]
    result_ = await summarise_direct(plan, faux.model(), reserve_tokens=16_384)
    assert len(seen) == 2 and peak == 2  # both requests were in flight together
    prompts = [c.messages[0].text() for c in seen]  # type: ignore[union-attr]
    assert sum(TURN_PREFIX_PROMPT in p for p in prompts) == 1
    assert result_.summary.startswith("H" * 400)
    assert "**Turn in progress**" in result_.summary and "P" * 400 in result_.summary
    assert result_.summary.index("H" * 400) < result_.summary.index("P" * 400)
    prefix_prompt = next(p for p in prompts if TURN_PREFIX_PROMPT in p)
    assert "now the lexer" in prefix_prompt and "fix the parser" not in prefix_prompt
    history_prompt = next(p for p in prompts if TURN_PREFIX_PROMPT not in p)
    assert "fix the parser" in history_prompt and "now the lexer" not in history_prompt


async def test_first_summary_and_update_prompts(faux: FauxProvider) -> None:
    seen = summary_script(faux)
    store, _ = store_of(user(400, "build a CLI"), assistant(), user(), assistant())
    plan = plan_of(store, keep=200)
    assert plan is not None and plan.previous is None
    first = await summarise_direct(plan, faux.model(), reserve_tokens=16_384, focus="the argument parser")
    assert seen[-1].system_prompt == SUMMARISER_SYSTEM_PROMPT
    prompt = seen[-1].messages[0].text()  # type: ignore[union-attr]
    assert FIRST_SUMMARY_PROMPT in prompt and "<previous-summary>" not in prompt
    assert UPDATE_SUMMARY_PROMPT not in prompt
    assert "<conversation>\n[User]: build a CLI" in prompt
    assert prompt.endswith("The user asked the summary to focus on: the argument parser")
    for heading in (
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ):
        assert heading in prompt
    store.append_compaction(first.summary, plan.first_kept_entry_id, 1, first.details)
    store.append_message(user())
    store.append_message(assistant())
    second_plan = plan_of(store, keep=200)
    assert second_plan is not None and second_plan.previous is not None
    await summarise_direct(second_plan, faux.model(), reserve_tokens=16_384)
    prompt = seen[-1].messages[0].text()  # type: ignore[union-attr]
    assert UPDATE_SUMMARY_PROMPT in prompt and FIRST_SUMMARY_PROMPT not in prompt
    assert f"<previous-summary>\n{first.summary}\n</previous-summary>" in prompt


def test_tool_results_are_cut_to_2000_chars_for_the_summariser() -> None:
    body = "A" * 1_990 + "B" * 10 + "C" * 3_000
    transcript = serialise_transcript(
        [
            user(20),
            assistant(10, [call("c1", "write", path="x.py", content="W" * 5_000)]),
            result("c1", body=body),
        ]
    )
    assert SUMMARY_TOOL_RESULT_CHARS == 2_000
    assert "A" * 1_990 + "B" * 10 + "\n[... 3000 more characters cut for the summary]" in transcript
    assert "C" not in transcript.replace("characters cut", "")
    assert "W" * 2_000 not in transcript  # long call arguments are cut too
    assert "[Tool result (read)]" in transcript and "[Assistant tool call]: write(" in transcript


async def test_summariser_input_cuts_results_in_the_request(faux: FauxProvider) -> None:
    seen = summary_script(faux)
    store, _ = store_of(
        user(), assistant(10, [call("c1")]), result("c1", body="x" * 9_000), assistant(), user(), assistant()
    )
    plan = plan_of(store, keep=200)
    assert plan is not None
    await summarise_direct(plan, faux.model(), reserve_tokens=16_384)
    prompt = seen[-1].messages[0].text()  # type: ignore[union-attr]
    assert "x" * 2_000 + "\n[... 7000 more characters cut" in prompt and "x" * 2_001 not in prompt


# --- what heron appends itself ------------------------------------------------------------------


async def test_read_and_modified_files_accumulate_across_compactions(faux: FauxProvider) -> None:
    summary_script(faux)
    store, _ = store_of(
        user(),
        assistant(10, [call("c1", "read", path="a.py"), call("c2", "edit", path="b.py", old_text="x", new_text="y")]),
        result("c1"),
        result("c2", name="edit"),
        assistant(),
        user(),
        assistant(),
    )
    plan = plan_of(store, keep=200)
    assert plan is not None and (plan.read_files, plan.modified_files) == (["a.py"], ["b.py"])
    first = await summarise_direct(plan, faux.model(), reserve_tokens=16_384)
    assert first.details["readFiles"] == ["a.py"] and first.details["modifiedFiles"] == ["b.py"]
    assert "<read-files>\na.py\n</read-files>" in first.summary
    assert "<modified-files>\nb.py\n</modified-files>" in first.summary
    store.append_compaction(first.summary, plan.first_kept_entry_id, 1, first.details)
    for message in (
        user(),
        assistant(10, [call("c3", "read", path="c.py"), call("c4", "write", path="a.py", content="z")]),
        result("c3"),
        result("c4", name="write"),
        assistant(),
        user(),
        assistant(),
    ):
        store.append_message(message)
    second_plan = plan_of(store, keep=200)
    assert second_plan is not None
    second = await summarise_direct(second_plan, faux.model(), reserve_tokens=16_384)
    # a.py was read first and then written: it is listed as modified only
    assert second.details["readFiles"] == ["c.py"]
    assert second.details["modifiedFiles"] == ["b.py", "a.py"]
    assert "<read-files>\nc.py\n</read-files>" in second.summary
    assert "<modified-files>\nb.py\na.py\n</modified-files>" in second.summary


async def test_user_requests_accumulate_verbatim_20_most_recent_500_chars(faux: FauxProvider) -> None:
    summary_script(faux)
    items: list[Any] = []
    for n in range(15):
        items += [UserMessage(content=f"request {n:02d}: " + "q" * 600), assistant(40)]
    store, _ = store_of(*items, user(), assistant())
    plan = plan_of(store, keep=200)
    assert plan is not None
    assert len(plan.user_requests) == 15
    assert plan.user_requests[0] == ("request 00: " + "q" * 600)[:USER_REQUEST_CHARS] + "..."
    first = await summarise_direct(plan, faux.model(), reserve_tokens=16_384)
    assert "<user-requests>\n- " + json.dumps(plan.user_requests[0]) in first.summary
    store.append_compaction(first.summary, plan.first_kept_entry_id, 1, first.details)
    for n in range(15, 27):
        store.append_message(UserMessage(content=f"request {n:02d}: short"))
        store.append_message(assistant(400))
    second_plan = plan_of(store, keep=200)
    assert second_plan is not None
    requests = second_plan.user_requests
    assert len(requests) == USER_REQUESTS_KEPT == 20
    # the 20 most recent of everything summarised so far, oldest first: the kept user of
    # the first compaction ("u..."), then requests 15-25 (26 is kept), after 8 older ones
    assert requests[-1] == "request 25: short"
    assert requests[-11] == "request 15: short"
    assert requests[-12] == "u" * 400
    assert requests[0] == ("request 07: " + "q" * 600)[:USER_REQUEST_CHARS] + "..."
    assert all(len(r) <= USER_REQUEST_CHARS + 3 for r in requests)


# --- the summariser's fallbacks -------------------------------------------------------------------


def many_turns(turns: int, result_chars: int) -> tuple[SessionStore, list[str]]:
    items: list[Any] = []
    for n in range(turns):
        items += [
            UserMessage(content=f"turn {n:03d}"),
            assistant(20, [call(f"c{n}")]),
            result(f"c{n}", result_chars),
            assistant(20),
        ]
    return store_of(*items, user(), assistant())


SMALL = {"context_window": 4_096, "max_tokens": 4_096}
# summariser budget for this model: (4,096 - 1,024 output) * 4 - 6,000 chars of overhead
SMALL_BUDGET = (4_096 - 1_024) * 4 - 6_000


async def fallback_steps(faux: FauxProvider, turns: int, result_chars: int) -> tuple[list[str], str]:
    seen = summary_script(faux)
    store, _ = many_turns(turns, result_chars)
    plan = plan_of(store, keep=200)
    assert plan is not None and not plan.split_turn
    full = serialise_transcript(plan.messages_to_summarize)
    assert len(full) > SMALL_BUDGET
    done = await summarise_direct(plan, faux.model(**SMALL), reserve_tokens=1_024)
    prompt = seen[-1].messages[0].text()  # type: ignore[union-attr]
    transcript = prompt.split("<conversation>\n", 1)[1].split("\n</conversation>", 1)[0]
    assert len(transcript) <= SMALL_BUDGET
    for record in done.records:
        assert record.kind == "summary_fallback" and record.recover
        assert record.chars_after < record.chars_before
    return [r.detail["step"] for r in done.records], transcript


async def test_fallback_1_clamps_tool_results_to_500_chars(faux: FauxProvider) -> None:
    steps, transcript = await fallback_steps(faux, turns=4, result_chars=1_900)
    assert steps == ["clamp_tool_results"]
    assert "r" * FALLBACK_TOOL_RESULT_CHARS + "\n[... 1400 more characters cut" in transcript
    assert "turn 000" in transcript and "turn 003" in transcript


async def test_a_history_too_large_is_summarised_in_chunks_then_merged(faux: FauxProvider) -> None:
    """Clamping tool results is not enough: the history is cut into chunks at boundaries
    that keep each tool call with its result, each chunk summarised knowing the one before,
    then the partial summaries merged - instead of dropping the middle."""
    seen = summary_script(faux)
    store, _ = many_turns(14, 1_900)
    plan = plan_of(store, keep=200)
    assert plan is not None
    done = await summarise_direct(plan, faux.model(**SMALL), reserve_tokens=1_024)
    assert done.records[0].detail["step"] == "chunked"
    prompts = [r.messages[0].text() for r in seen]  # type: ignore[union-attr]
    chunks = [p for p in prompts if "<conversation>" in p]
    assert len(chunks) == done.records[0].detail["chunks"] >= 2
    for prompt in chunks:
        transcript = prompt.split("<conversation>\n", 1)[1].split("\n</conversation>", 1)[0]
        assert len(transcript) <= SMALL_BUDGET
    sent = "\n".join(chunks)
    assert all(f"turn {n:03d}" in sent for n in range(14))  # nothing dropped
    assert "<previous-summary>" in chunks[1]  # each chunk knows the summary before it
    assert MERGE_PROMPT in prompts[-1] and '<part index="2">' in prompts[-1]


def test_fallback_2_keeps_head_and_tail_of_one_chunk_too_large() -> None:
    """Inside one chunk that still does not fit (a single huge turn), the older reductions."""
    store, _ = many_turns(14, 1_900)
    plan = plan_of(store, keep=200)
    assert plan is not None
    records: list[LedgerRecord] = []
    transcript = fit_transcript(plan.messages_to_summarize, SMALL_BUDGET, records)
    assert [r.detail["step"] for r in records] == ["clamp_tool_results", "head_tail"]
    assert "characters of the middle of the conversation omitted" in transcript
    assert transcript.startswith("[User]: turn 000") and "turn 013" in transcript
    assert "turn 007" not in transcript


def test_fallback_3_drops_the_oldest_turns_of_one_chunk_too_large() -> None:
    store, _ = many_turns(60, 1_900)
    plan = plan_of(store, keep=200)
    assert plan is not None
    records: list[LedgerRecord] = []
    transcript = fit_transcript(plan.messages_to_summarize, SMALL_BUDGET, records)
    steps = [r.detail["step"] for r in records]
    assert steps[:2] == ["clamp_tool_results", "head_tail"]
    assert set(steps[2:]) == {"drop_oldest_turns"} and len(steps) > 2
    assert "turn 000" not in transcript and "turn 059" in transcript
    assert transcript.startswith("[User]: turn ")  # whole turns were dropped


def test_the_draft_is_stripped_and_the_summary_kept() -> None:
    summary, draft = parse_summary("<analysis>\nturn 1 asked for X\n</analysis>\n<summary>\n## Goal\nX\n</summary>")
    assert (summary, draft) == ("## Goal\nX", "turn 1 asked for X")
    assert parse_summary("## Goal\nno tags") == ("## Goal\nno tags", None)
    assert parse_summary("<analysis>draft only, then</analysis>\n## Goal\nY") == ("## Goal\nY", "draft only, then")
    assert parse_summary("<analysis>cut off mid-draft") == ("", "cut off mid-draft")


async def test_the_draft_goes_to_the_entry_details_not_the_summary(faux: FauxProvider) -> None:
    faux.set_fallback(
        lambda context: text("<analysis>checking every request</analysis><summary>## Goal\nShip it</summary>")
    )
    store, _ = many_turns(3, 100)
    plan = plan_of(store, keep=50)
    assert plan is not None
    done = await summarise_direct(plan, faux.model(), reserve_tokens=4_096)
    assert done.summary.startswith("## Goal\nShip it") and "checking every request" not in done.summary
    assert done.details["analysis"] == "checking every request"


async def test_fallbacks_are_recorded_in_the_session_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, faux: FauxProvider
) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    summary_script(faux)
    store, _ = many_turns(60, 1_900)
    session = CodingSession(
        cwd=tmp_path,
        model=faux.model(**SMALL),
        store=store,
        settings=settings_from_dict({"compaction": {"keepRecentTokens": 200}}),
    )
    end = await session.compact()
    assert end is not None and end.entry_id is not None
    records = [e.data for e in store.entries() if isinstance(e, CustomEntry) and e.custom_type == LEDGER_CUSTOM_TYPE]
    fallbacks = [r["detail"] for r in records if r["kind"] == "summary_fallback"]
    # the history is too long for one request: not one shared prefix, the separate summariser chunks it
    assert fallbacks[0]["step"] == "separate" and "does not fit one request" in fallbacks[0]["reason"]
    assert fallbacks[1]["step"] == "chunked"
    assert [r["kind"] for r in records][-1] == "compaction"


# --- re-injected files ----------------------------------------------------------------------------


def scripted(faux: FauxProvider, script: list[FauxReply]) -> None:
    def reply(context: Context) -> FauxReply:
        if is_summary_request(context):
            return text("## Goal\nsummary")
        return script.pop(0)

    faux.set_fallback(reply)


def coding_session(
    tmp_path: Path, faux: FauxProvider, window: int = 128_000, settings: dict[str, Any] | None = None
) -> CodingSession:
    return CodingSession(
        cwd=tmp_path / "proj",
        model=faux.model(context_window=window, max_tokens=4_096),
        store=SessionStore.create(tmp_path / "proj"),
        home=tmp_path / "home",
        settings=settings_from_dict(settings or {"compaction": {"keepRecentTokens": 100}}),
    )


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    root = tmp_path / "proj"
    root.mkdir()
    for n in range(1, 8):
        (root / f"f{n}.py").write_text(f"# file {n}\n" + f"value_{n} = {n}\n" * 20)
    return root


def reinjected(session: CodingSession) -> str:
    """The block is recorded in the compaction entry and sits right after the summary,
    before every kept message (never after the turn's latest message)."""
    compactions = [e for e in session.store.path_to(session.store.leaf_id) if isinstance(e, CompactionEntry)]
    assert compactions and isinstance(compactions[-1].details, dict)
    content = compactions[-1].details[DETAIL_REINJECTED]
    assert isinstance(content, str)
    # after the summary and the frontier (recent steps): the last injected block
    second = next(m for m in session.messages if getattr(m, "custom_type", None) == REINJECTED_FILES_TYPE)
    assert isinstance(second, ExtensionMessage) and second.content == content
    assert second.custom_type == REINJECTED_FILES_TYPE and second.display is False
    return content


async def test_recently_read_files_are_reinjected_after_compaction(proj: Path, faux: FauxProvider) -> None:
    scripted(faux, [*(tool_call("read", {"path": f"f{n}.py"}) for n in range(1, 8)), text("read them all")])
    session = coding_session(proj.parent, faux)
    await session.prompt("read f1.py to f7.py")
    (proj / "f7.py").write_text("# file 7, changed on disk after it was read\n")
    (proj / "f6.py").unlink()
    end = await session.compact()
    assert end is not None
    content = reinjected(session)
    shown = [line.split('"')[1] for line in content.splitlines() if line.startswith("<file path=")]
    # the 5 most recently read whose reads were summarised, newest first: f7's read is in the
    # kept messages (already in the view), f6 was deleted
    expected = ["f5.py", "f4.py", "f3.py", "f2.py", "f1.py"]
    assert len(shown) >= 4 and shown == expected[: len(shown)]  # as many as the room the summary left
    assert "value_5" in content  # current content, from disk


async def test_reinjection_respects_its_token_budget(proj: Path, faux: FauxProvider) -> None:
    (proj / "big.py").write_text("".join(f"line {i} of a big module\n" for i in range(4_000)))
    scripted(
        faux,
        [
            tool_call("read", {"path": "f1.py"}),
            tool_call("read", {"path": "big.py", "limit": 50}),
            tool_call("read", {"path": "f2.py"}),
            text("ok"),
        ],
    )
    session = coding_session(proj.parent, faux, window=16_384)
    await session.prompt("read three files")
    before = session.estimate_request_tokens(session.messages)
    end = await session.compact()
    content = reinjected(session)
    assert end is not None and end.tokens_after < before  # the block never makes the context grow
    budget_chars = int(16_384 * 0.15) * 4  # 15% of a small window, well under 50,000 tokens
    assert len(content) <= budget_chars + 500
    assert '<file path="big.py">' in content and "[... cut: read big.py with offset/limit for the rest]" in content
    assert "f1.py" not in content  # the budget was used up by the newer file


async def test_no_reinjection_when_nothing_was_read(proj: Path, faux: FauxProvider) -> None:
    scripted(faux, [text("a" * 800), text("b" * 800)])
    session = coding_session(proj.parent, faux)
    await session.prompt("hello")
    await session.prompt("again")
    assert await session.compact() is not None
    assert not [e for e in session.store.entries() if isinstance(e, CustomMessageEntry)]


# --- the runtime: when, and what the rebuilt context holds -----------------------------------------


async def test_manual_compaction_keeps_the_file_append_only(proj: Path, faux: FauxProvider) -> None:
    scripted(faux, [tool_call("read", {"path": "f1.py"}), text("x" * 800), text("y" * 800)])
    session = coding_session(proj.parent, faux)
    await session.prompt("one")
    await session.prompt("two")
    before = [e.to_json_dict() for e in session.store.entries()]
    await session.compact()
    after = [e.to_json_dict() for e in session.store.entries()]
    assert after[: len(before)] == before
    assert isinstance(session.store.entries()[len(before)], CompactionEntry)
    assert session.messages[0].role == "compactionSummary"


def test_settings_scale_with_the_window() -> None:
    assert CompactionSettings().for_window(16_384) == CompactionSettings(4_096, 4_096)
    assert CompactionSettings().for_window(200_000) == CompactionSettings(16_384, 20_000)
    assert CompactionSettings().for_window(65_536) == CompactionSettings(16_384, 16_384)
    assert CompactionSettings(1_000, 2_000).for_window(1_000_000) == CompactionSettings(1_000, 2_000)


async def test_a_kept_tail_over_the_threshold_is_reported_not_looped(proj: Path, faux: FauxProvider) -> None:
    """The newest message alone is larger than ``window - reserve``: compaction summarises
    what it can, says so in the ledger, and later requests do not compact again and again."""
    store = SessionStore.create(proj)
    store.append_message(UserMessage(content="earlier question " + "q" * 4_000))
    store.append_message(assistant(4_000))
    store.append_message(UserMessage(content="paste: " + "p" * 56_000))  # 14,000 tokens > 12,288
    scripted(faux, [text("first"), text("second")])
    session = CodingSession(
        cwd=proj,
        model=faux.model(context_window=16_384, max_tokens=4_096),
        store=store,
        settings=settings_from_dict({}),
    )
    events: list[Any] = []
    session.subscribe(events.append)
    end = await session.compact()
    assert end is not None and end.tokens_after > session.threshold
    records = [e.data for e in store.entries() if isinstance(e, CustomEntry) and e.custom_type == LEDGER_CUSTOM_TYPE]
    over = [r for r in records if r["detail"].get("over_threshold")]
    assert len(over) == 1 and over[0]["recover"] == "the kept recent messages alone exceed the threshold"
    assert over[0]["detail"]["threshold"] == 16_384 - 4_096
    await session.agent.continue_()  # the next request checks the threshold again
    skipped = [e for e in events if e.type == "compaction_end" and e.skipped]
    assert skipped and skipped[-1].skipped == "nothing to compact"
    assert len([e for e in store.entries() if isinstance(e, CompactionEntry)]) == 1
