"""The view is derived from the session: injections after the summary, recorded stubs,
de-dup stubs only while their content is in the view, decisions read from the path."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from heron.agent.messages import AgentMessage, CompactionSummaryMessage, ExtensionMessage
from heron.ai.types import AssistantMessage, StopReason, TextContent, ToolCall, ToolResultMessage, UserMessage
from heron.context.continuity.frontier import FrontierSettings
from heron.context.records.decisions import (
    DECISION_CUSTOM_TYPE,
    ContextDecisions,
    LearnedWindow,
    auto_compaction_data,
    prune_data,
    window_data,
)
from heron.context.view.build import (
    DETAIL_KEPT_PROMPT,
    DETAIL_REINJECTED,
    GONE_PREFIX,
    REINJECTED_FILES_TYPE,
    SPILL_KEY,
    ReadIndex,
    ViewBuilder,
    is_injected,
    resolve_read_path,
    session_messages,
)
from heron.session.entries import CustomEntry
from heron.session.store import SessionStore
from tests.support.tools import BUILTIN

CWD = Path("/work/project")
UNCHANGED = "[File unchanged since you last read it at 10:00:00; its content is already in the conversation above.]"


# --- builders -----------------------------------------------------------------------------------
# These tests are about what a compaction recorded in its details; the frontier blocks the
# view adds from the path (recent steps, skills) are tested in tests/context/test_frontier.py.
NO_FRONTIER = FrontierSettings(recent_steps=0)


def user(text: str, ts: int = 1) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=ts)


def assistant(*calls: ToolCall, text: str = "", ts: int = 2) -> AssistantMessage:
    content: list[Any] = [TextContent(text=text)] if text else []
    content += list(calls)
    return AssistantMessage(
        api="faux",
        provider="faux",
        model="faux-1",
        content=content,
        stop_reason=StopReason.TOOL_USE if calls else StopReason.STOP,
        timestamp=ts,
    )


def read_call(call_id: str, path: str, offset: int | None = None, limit: int | None = None) -> ToolCall:
    arguments: dict[str, Any] = {"path": path}
    if offset is not None:
        arguments["offset"] = offset
    if limit is not None:
        arguments["limit"] = limit
    return ToolCall(id=call_id, name="read", arguments=arguments)


def read_result(call_id: str, text: str, *, mtime: int = 100, size: int = 5_000, **extra: Any) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id,
        tool_name="read",
        content=[TextContent(text=text)],
        details={"path": "x", "mtime_ns": mtime, "size": size, **extra},
        timestamp=3,
    )


def dedup_result(call_id: str, *, mtime: int = 100, size: int = 5_000) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id,
        tool_name="read",
        content=[TextContent(text=UNCHANGED)],
        details={"path": "x", "kind": "unchanged", "mtime_ns": mtime, "size": size, "previous_read_at": 1.0},
        timestamp=4,
    )


def read_turn(call_id: str, path: str, result: ToolResultMessage, **kw: Any) -> list[AgentMessage]:
    return [assistant(read_call(call_id, path, **kw)), result]


def wire(messages: Sequence[AgentMessage]) -> str:
    return json.dumps([m.to_json_dict() for m in messages], sort_keys=True)


def texts(messages: Sequence[AgentMessage]) -> list[str]:
    out = []
    for message in messages:
        if isinstance(message, CompactionSummaryMessage):
            out.append(f"summary:{message.summary}")
        elif isinstance(message, ExtensionMessage):
            out.append(f"{message.custom_type}:{message.content}")
        elif isinstance(message, UserMessage | AssistantMessage | ToolResultMessage):
            out.append(f"{message.role}:{message.text()}")
    return out


# --- session_messages: what a compaction recorded for the view ------------------------------------


def split_turn_session() -> tuple[SessionStore, dict[str, str]]:
    """u1 a1 | u2 a2(read) r2 a3(read) r3 -- a compaction that keeps from a3 (splits u2's turn)."""
    store = SessionStore.in_memory(CWD)
    ids: dict[str, str] = {}
    ids["u1"] = store.append_message(user("first task", 1)).id
    ids["a1"] = store.append_message(assistant(text="done", ts=2)).id
    ids["u2"] = store.append_message(user("second task: refactor app.py", 3)).id
    ids["a2"] = store.append_message(assistant(read_call("c2", "a.py"), ts=4)).id
    ids["r2"] = store.append_message(read_result("c2", "A" * 100)).id
    ids["a3"] = store.append_message(assistant(read_call("c3", "b.py"), ts=5)).id
    ids["r3"] = store.append_message(read_result("c3", "B" * 100)).id
    return store, ids


def test_reinjected_block_and_kept_prompt_come_right_after_the_summary() -> None:
    store, ids = split_turn_session()
    details = {DETAIL_REINJECTED: "Files you were working on: a.py", DETAIL_KEPT_PROMPT: ids["u2"]}
    store.append_compaction("the summary", ids["a3"], 5_000, details=details)
    store.append_message(assistant(text="continuing", ts=9))
    view = session_messages(store, store.leaf_id, NO_FRONTIER)
    assert texts(view) == [
        "summary:the summary",
        f"{REINJECTED_FILES_TYPE}:Files you were working on: a.py",
        "user:second task: refactor app.py",
        "assistant:",
        "toolResult:" + "B" * 100,
        "assistant:continuing",
    ]
    # The kept prompt is the stored message itself, verbatim; the block is hidden from the UI.
    assert view[2].to_json_dict() == store.get(ids["u2"]).message.to_json_dict()  # type: ignore[union-attr]
    block = view[1]
    assert isinstance(block, ExtensionMessage) and block.display is False
    assert [is_injected(m) for m in view] == [True, True, False, False, False, False]


def test_the_same_session_gives_the_same_view_on_every_call() -> None:
    store, ids = split_turn_session()
    store.append_compaction("s", ids["a3"], 5_000, details={DETAIL_REINJECTED: "files", DETAIL_KEPT_PROMPT: ids["u2"]})
    assert wire(session_messages(store, store.leaf_id, NO_FRONTIER)) == wire(
        session_messages(store, store.leaf_id, NO_FRONTIER)
    )


def test_a_kept_prompt_already_among_the_kept_messages_is_not_repeated() -> None:
    store, ids = split_turn_session()
    store.append_compaction("s", ids["u2"], 5_000, details={DETAIL_KEPT_PROMPT: ids["u2"]})
    view = session_messages(store, store.leaf_id, NO_FRONTIER)
    assert [t for t in texts(view) if t.startswith("user:")] == ["user:second task: refactor app.py"]
    assert texts(view)[:2] == ["summary:s", "user:second task: refactor app.py"]


@pytest.mark.parametrize(
    "details",
    [
        None,
        "not a dict",
        {},
        {DETAIL_REINJECTED: "", DETAIL_KEPT_PROMPT: ""},
        {DETAIL_REINJECTED: 42, DETAIL_KEPT_PROMPT: 7},
    ],
)
def test_compaction_details_without_usable_injections_leave_the_view_alone(details: Any) -> None:
    store, ids = split_turn_session()
    store.append_compaction("s", ids["a3"], 5_000, details=details)
    assert texts(session_messages(store, store.leaf_id, NO_FRONTIER)) == [
        "summary:s",
        "assistant:",
        "toolResult:" + "B" * 100,
    ]


def test_a_kept_prompt_id_that_names_no_entry_is_ignored() -> None:
    store, ids = split_turn_session()
    store.append_compaction("s", ids["a3"], 5_000, details={DETAIL_KEPT_PROMPT: "no-such-entry"})
    assert texts(session_messages(store, store.leaf_id, NO_FRONTIER)) == [
        "summary:s",
        "assistant:",
        "toolResult:" + "B" * 100,
    ]


def test_a_kept_prompt_id_naming_a_non_user_message_is_ignored() -> None:
    store, ids = split_turn_session()
    store.append_compaction("s", ids["a3"], 5_000, details={DETAIL_KEPT_PROMPT: ids["a2"]})
    assert texts(session_messages(store, store.leaf_id, NO_FRONTIER))[:2] == ["summary:s", "assistant:"]


def test_only_the_latest_compaction_injects() -> None:
    store, ids = split_turn_session()
    store.append_compaction("s1", ids["a3"], 5_000, details={DETAIL_REINJECTED: "old block"})
    after = store.append_message(user("third task", 10))
    store.append_message(assistant(text="ok", ts=11))
    store.append_compaction("s2", after.id, 3_000, details={DETAIL_REINJECTED: "new block"})
    view = texts(session_messages(store, store.leaf_id, NO_FRONTIER))
    assert view[:3] == ["summary:s2", f"{REINJECTED_FILES_TYPE}:new block", "user:third task"]
    assert not any("old block" in t for t in view)


def test_without_a_compaction_the_view_is_the_path() -> None:
    store, _ = split_turn_session()
    view = session_messages(store, store.leaf_id, NO_FRONTIER)
    assert len(view) == 7 and not any(is_injected(m) for m in view)


# --- ViewBuilder: recorded stubs ----------------------------------------------------------------------


def prunable_conversation() -> list[AgentMessage]:
    messages: list[AgentMessage] = [user("go")]
    messages += read_turn("c1", "a.txt", read_result("c1", "a" * 3_000))
    messages += [
        assistant(ToolCall(id="c2", name="bash", arguments={"command": "make"})),
        ToolResultMessage(
            tool_call_id="c2",
            tool_name="bash",
            content=[TextContent(text="b" * 3_000)],
            details={"exit": 0},
            timestamp=5,
        ),
    ]
    messages += read_turn("c3", "c.txt", read_result("c3", "c" * 3_000))
    return messages


def test_recorded_stubs_replace_their_results_byte_identically_on_every_call() -> None:
    messages = prunable_conversation()
    decisions = ContextDecisions(stubs={"c1": "[Pruned: read a.txt]", "c2": "[Pruned: bash make]"})
    builder = ViewBuilder(CWD, BUILTIN)
    first, second = builder.apply(messages, decisions), builder.apply(messages, decisions)
    assert [m.text() for m in first if isinstance(m, ToolResultMessage)] == [
        "[Pruned: read a.txt]",
        "[Pruned: bash make]",
        "c" * 3_000,
    ]
    assert wire(first) == wire(second)
    assert all(a is b for a, b in zip(first, second, strict=True))  # the same objects: nothing re-made
    # A new builder (a new process) makes the same bytes from the same decisions.
    assert wire(ViewBuilder(CWD, BUILTIN).apply(messages, decisions)) == wire(first)
    # The stub keeps what the session knows about the call: id, tool, details, time.
    stub, original = first[2], messages[2]
    assert isinstance(stub, ToolResultMessage) and isinstance(original, ToolResultMessage)
    assert (stub.tool_call_id, stub.tool_name, stub.details, stub.timestamp) == (
        original.tool_call_id,
        original.tool_name,
        original.details,
        original.timestamp,
    )
    # The input is never modified.
    assert original.text() == "a" * 3_000


def test_after_reset_the_builder_still_makes_the_same_bytes() -> None:
    messages = prunable_conversation()
    decisions = ContextDecisions(stubs={"c1": "[Pruned]"})
    builder = ViewBuilder(CWD, BUILTIN)
    before = wire(builder.apply(messages, decisions))
    builder.reset()
    assert wire(builder.apply(messages, decisions)) == before


def test_no_decisions_no_change() -> None:
    messages = prunable_conversation()
    view = ViewBuilder(CWD, BUILTIN).apply(messages, ContextDecisions())
    assert all(a is b for a, b in zip(view, messages, strict=True))


# --- ViewBuilder: de-dup stubs and their referents -------------------------------------------------------


def dedup_conversation(first: ToolResultMessage | None = None, **first_args: Any) -> list[AgentMessage]:
    messages: list[AgentMessage] = [user("go")]
    if first is not None:
        messages += read_turn("c1", first_args.pop("path", "data/big.txt"), first, **first_args)
    messages += read_turn("c2", "data/big.txt", dedup_result("c2"))
    return messages


def test_a_dedup_stub_whose_content_is_earlier_in_the_view_stays() -> None:
    messages = dedup_conversation(read_result("c1", "content " * 100))
    view = ViewBuilder(CWD, BUILTIN).apply(messages, ContextDecisions())
    assert view[-1] is messages[-1]
    assert view[-1].text() == UNCHANGED  # type: ignore[union-attr]


@pytest.mark.parametrize("path", ["./data/big.txt", "data/../data/big.txt", str(CWD / "data/big.txt"), "@data/big.txt"])
def test_the_referent_is_found_by_resolved_path(path: str) -> None:
    messages = dedup_conversation(read_result("c1", "content"), path=path)
    assert ViewBuilder(CWD, BUILTIN).apply(messages, ContextDecisions())[-1].text() == UNCHANGED  # type: ignore[union-attr]


def assert_gone(view: Sequence[AgentMessage], shown: str = "data/big.txt") -> None:
    last = view[-1]
    assert isinstance(last, ToolResultMessage)
    assert last.text().startswith(GONE_PREFIX)
    assert "no longer in the context" in last.text() and f"Read {shown} again" in last.text()
    assert "already in the conversation" not in last.text()


def test_a_dedup_stub_whose_referent_was_pruned_becomes_the_gone_note() -> None:
    messages = dedup_conversation(read_result("c1", "content " * 100))
    view = ViewBuilder(CWD, BUILTIN).apply(messages, ContextDecisions(stubs={"c1": "[Pruned: read data/big.txt]"}))
    assert view[2].text() == "[Pruned: read data/big.txt]"  # type: ignore[union-attr]
    assert_gone(view)
    note = view[-1]
    assert isinstance(note, ToolResultMessage)
    assert note.tool_call_id == "c2" and note.details == messages[-1].details  # type: ignore[union-attr]


def test_a_dedup_stub_without_any_earlier_read_becomes_the_gone_note() -> None:
    # e.g. the referent was summarised by a compaction, or lives on another branch.
    assert_gone(ViewBuilder(CWD, BUILTIN).apply(dedup_conversation(None), ContextDecisions()))


@pytest.mark.parametrize(
    ("first", "args"),
    [
        (read_result("c1", "content", mtime=100), {"offset": 10}),  # another range
        (read_result("c1", "content", mtime=100), {"limit": 50}),
        (read_result("c1", "content", mtime=100), {"path": "data/other.txt"}),  # another file
        (
            ToolResultMessage(
                tool_call_id="c1",
                tool_name="read",
                is_error=True,
                content=[TextContent(text="File not found")],
                details={"mtime_ns": 100, "size": 5_000},
            ),
            {},
        ),
        (read_result("c1", "preview", **{SPILL_KEY: {"path": "/tmp/spill"}}), {}),  # spilled: only a preview
        (ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="no details")]), {}),
        (dedup_result("c1"), {}),  # itself a stub
    ],
    ids=["offset", "limit", "other-file", "error", "spilled", "no-details", "stub"],
)
def test_a_dedup_stub_needs_the_same_range_present_whole(first: ToolResultMessage, args: dict[str, Any]) -> None:
    view = ViewBuilder(CWD, BUILTIN).apply(dedup_conversation(first, **args), ContextDecisions())
    assert_gone(view)


def test_a_referent_after_the_stub_does_not_count() -> None:
    messages: list[AgentMessage] = [user("go")]
    messages += read_turn("c2", "data/big.txt", dedup_result("c2"))
    messages += read_turn("c3", "data/big.txt", read_result("c3", "content"))
    view = ViewBuilder(CWD, BUILTIN).apply(messages, ContextDecisions())
    assert view[2].text().startswith(GONE_PREFIX)  # type: ignore[union-attr]


def test_the_gone_note_is_the_same_object_on_every_call() -> None:
    messages = dedup_conversation(None)
    builder = ViewBuilder(CWD, BUILTIN)
    first, second = builder.apply(messages, ContextDecisions()), builder.apply(messages, ContextDecisions())
    assert first[-1] is second[-1]
    assert wire(ViewBuilder(CWD, BUILTIN).apply(messages, ContextDecisions())) == wire(first)


def test_a_pruned_dedup_stub_carries_its_prune_stub_not_the_gone_note() -> None:
    messages = dedup_conversation(None)
    view = ViewBuilder(CWD, BUILTIN).apply(messages, ContextDecisions(stubs={"c2": "[Pruned]"}))
    assert view[-1].text() == "[Pruned]"  # type: ignore[union-attr]


def test_a_dedup_stub_whose_referent_was_pruned_is_not_kept_alive_by_an_older_version() -> None:
    messages: list[AgentMessage] = [user("go")]
    messages += read_turn("c1", "data/big.txt", read_result("c1", "old small content", mtime=100, size=17))
    messages += read_turn("c2", "data/big.txt", read_result("c2", "new " * 1_000, mtime=200, size=4_000))
    messages += read_turn("c3", "data/big.txt", dedup_result("c3", mtime=200, size=4_000))
    view = ViewBuilder(CWD, BUILTIN).apply(messages, ContextDecisions(stubs={"c2": "[Pruned: read data/big.txt]"}))
    # The content the stub points at (mtime 200) is gone; what is left is the old version.
    assert_gone(view)


# --- ReadIndex ---------------------------------------------------------------------------------------------


def test_read_index_finds_whole_reads_by_resolved_range() -> None:
    messages: list[AgentMessage] = [user("go")]
    messages += read_turn("c1", "src/app.py", read_result("c1", "x", mtime=7, size=70))
    messages += read_turn("c2", "src/app.py", read_result("c2", "y", mtime=8, size=80), offset=5, limit=10)
    messages += read_turn("c3", "~/notes.txt", read_result("c3", "z", mtime=9, size=90))
    index = ReadIndex.of_view(messages, CWD, tools=BUILTIN)
    assert len(index) == 3
    whole = index.find(str(CWD / "src/app.py"), None, None)
    assert whole is not None and (whole.tool_call_id, whole.mtime_ns, whole.size) == ("c1", 7, 70)
    assert whole.timestamp_ms == 3
    ranged = index.find(str(CWD / "src/app.py"), 5, 10)
    assert ranged is not None and ranged.tool_call_id == "c2"
    assert index.find(str(CWD / "src/app.py"), 5, None) is None
    assert index.find(str(CWD / "src" / ".." / "src/app.py"), None, None) is not None  # normalised
    assert index.find(resolve_read_path("~/notes.txt", CWD), None, None) is not None


def test_read_index_keeps_the_latest_whole_read_of_a_range() -> None:
    messages: list[AgentMessage] = [user("go")]
    messages += read_turn("c1", "a.py", read_result("c1", "v1", mtime=1, size=2))
    messages += read_turn("c2", "a.py", read_result("c2", "v2", mtime=2, size=2))
    messages += read_turn("c3", "a.py", dedup_result("c3", mtime=2, size=2))
    found = ReadIndex.of_view(messages, CWD, tools=BUILTIN).find(str(CWD / "a.py"), None, None)
    assert found is not None and found.tool_call_id == "c2" and found.mtime_ns == 2


def test_read_index_ignores_errors_spills_stubs_and_other_tools() -> None:
    messages: list[AgentMessage] = [user("go")]
    messages += read_turn(
        "c1",
        "err.py",
        ToolResultMessage(
            tool_call_id="c1",
            tool_name="read",
            is_error=True,
            content=[TextContent(text="File not found: err.py")],
            details={"mtime_ns": 1, "size": 1},
        ),
    )
    messages += read_turn("c2", "big.log", read_result("c2", "preview", **{SPILL_KEY: {"path": "/tmp/x"}}))
    messages += read_turn("c3", "dup.py", dedup_result("c3"))
    messages += [
        assistant(ToolCall(id="c4", name="bash", arguments={"path": "b.py"})),
        ToolResultMessage(
            tool_call_id="c4", tool_name="bash", content=[TextContent(text="out")], details={"mtime_ns": 1, "size": 1}
        ),
    ]
    messages.append(read_result("orphan", "no call"))  # a result without its call: no range known
    index = ReadIndex.of_view(messages, CWD, tools=BUILTIN)
    assert len(index) == 0


def test_read_index_ignores_pruned_reads() -> None:
    messages: list[AgentMessage] = [user("go")]
    messages += read_turn("c1", "data/big.txt", read_result("c1", "content " * 500))
    decisions = ContextDecisions(stubs={"c1": "[Pruned from the context to save space: read data/big.txt]"})
    view = ViewBuilder(CWD, BUILTIN).apply(messages, decisions)
    assert view[2].text().startswith("[Pruned")  # type: ignore[union-attr]
    # the policy passes the pruned ids: a stub keeps the original details, but not the content
    assert (
        ReadIndex.of_view(view, CWD, decisions.stubs, tools=BUILTIN).find(str(CWD / "data/big.txt"), None, None) is None
    )


def test_read_index_of_the_view_forgets_a_read_that_left_it() -> None:
    """What a compaction did: the read is no longer in the view, so it is not found."""
    earlier: list[AgentMessage] = [user("go"), *read_turn("c1", "a.py", read_result("c1", "x"))]
    assert ReadIndex.of_view(earlier, CWD, tools=BUILTIN).find(str(CWD / "a.py"), None, None) is not None
    after = [CompactionSummaryMessage(summary="read a.py", timestamp=10), user("next")]
    assert ReadIndex.of_view(after, CWD, tools=BUILTIN).find(str(CWD / "a.py"), None, None) is None


# --- ContextDecisions ---------------------------------------------------------------------------------------


def custom(data: Any, custom_type: str = DECISION_CUSTOM_TYPE, ts: str = "2025-01-01T00:00:00.000Z") -> CustomEntry:
    return CustomEntry(custom_type=custom_type, data=data, timestamp=ts)


def test_from_entries_reads_every_op() -> None:
    learned = LearnedWindow(model="faux/faux-1", window=12_000, rejected_tokens=15_000, source="error text")
    decisions = ContextDecisions.from_entries(
        [
            custom(prune_data({"c1": "stub 1", "c2": "stub 2"}), ts="2025-01-01T00:00:01.000Z"),
            custom(window_data(learned)),
            custom(auto_compaction_data(False, "the last compaction saved less than 5%")),
        ]
    )
    assert decisions.stubs == {"c1": "stub 1", "c2": "stub 2"}
    assert decisions.windows == {"faux/faux-1": learned}
    assert decisions.learned_window("faux/faux-1") == 12_000 and decisions.learned_window("faux/other") is None
    assert decisions.auto_compaction is False
    assert decisions.auto_compaction_reason == "the last compaction saved less than 5%"
    assert decisions.last_view_change_ms == 1_735_689_601_000  # the prune step's time


def test_recorded_field_names() -> None:
    """The on-disk shape (documented in docs/context.md)."""
    assert prune_data({"c1": "s"}) == {"op": "prune", "stubs": {"c1": "s"}}
    assert window_data(LearnedWindow("p/m", 1_000, 2_000, "rejected size")) == {
        "op": "window",
        "model": "p/m",
        "window": 1_000,
        "rejectedTokens": 2_000,
        "source": "rejected size",
    }
    assert auto_compaction_data(True, "r") == {"op": "auto_compaction", "enabled": True, "reason": "r"}


@pytest.mark.parametrize(
    "data",
    [
        None,
        42,
        "prune",
        [],
        {},
        {"op": "unknown-op", "stubs": {"c1": "s"}},
        {"op": "prune"},
        {"op": "prune", "stubs": ["c1"]},
        {"op": "prune", "stubs": {"c1": 7}},
        {"op": "window"},
        {"op": "window", "model": "p/m", "window": "12000"},
        {"op": "window", "model": 3, "window": 12_000},
        {"op": "window", "model": "p/m", "window": 0},
        {"op": "window", "model": "p/m", "window": -5},
        {"op": "auto_compaction"},
        {"op": "auto_compaction", "enabled": "false"},
        {"op": "auto_compaction", "enabled": 0},
    ],
)
def test_malformed_decisions_are_ignored(data: Any) -> None:
    decisions = ContextDecisions.from_entries([custom(data)])
    assert decisions.stubs == {} and decisions.windows == {} and decisions.auto_compaction is True


def test_entries_of_other_types_are_not_decisions() -> None:
    entries = [
        custom(prune_data({"c1": "s"}), custom_type="heron.ledger"),
        custom(prune_data({"c2": "s"}), custom_type="some.extension"),
    ]
    assert ContextDecisions.from_entries(entries).stubs == {}


def test_malformed_parts_of_a_prune_step_are_skipped_and_the_rest_kept() -> None:
    decisions = ContextDecisions.from_entries([custom({"op": "prune", "stubs": {"c1": "ok", "c2": None}})])
    assert decisions.stubs == {"c1": "ok"}


def test_a_window_without_usable_rejected_tokens_or_source_still_counts() -> None:
    decisions = ContextDecisions.from_entries(
        [custom({"op": "window", "model": "p/m", "window": 9_000, "rejectedTokens": "lots"})]
    )
    assert decisions.windows["p/m"] == LearnedWindow("p/m", 9_000, 0, "")


def test_the_first_stub_for_a_result_wins() -> None:
    decisions = ContextDecisions.from_entries(
        [
            custom(prune_data({"c1": "first"})),
            custom(prune_data({"c1": "second", "c2": "other"})),
        ]
    )
    assert decisions.stubs == {"c1": "first", "c2": "other"}


def test_the_latest_learned_window_per_model_counts() -> None:
    decisions = ContextDecisions.from_entries(
        [
            custom(window_data(LearnedWindow("p/a", 12_000, 16_000, "error text"))),
            custom(window_data(LearnedWindow("p/b", 30_000, 40_000, "rejected size"))),
            custom(window_data(LearnedWindow("p/a", 10_000, 12_500, "rejected size"))),
        ]
    )
    assert decisions.learned_window("p/a") == 10_000
    assert decisions.learned_window("p/b") == 30_000


def test_auto_compaction_toggles_in_order() -> None:
    entries = [custom(auto_compaction_data(False, "too small")), custom(auto_compaction_data(True, "manual"))]
    on = ContextDecisions.from_entries(entries)
    assert on.auto_compaction is True and on.auto_compaction_reason == "manual"
    off = ContextDecisions.from_entries([*entries, custom(auto_compaction_data(False, "again"))])
    assert off.auto_compaction is False and off.auto_compaction_reason == "again"


def test_the_latest_prune_time_is_the_view_change() -> None:
    decisions = ContextDecisions.from_entries(
        [
            custom(prune_data({"c1": "s"}), ts="2025-01-01T00:00:05.000Z"),
            custom(window_data(LearnedWindow("p/m", 5_000, 6_000, "x")), ts="2025-01-01T00:00:09.000Z"),
            custom(prune_data({"c2": "s"}), ts="2025-01-01T00:00:07.000Z"),
        ]
    )
    assert decisions.last_view_change_ms == 1_735_689_607_000  # only prune steps change the view


# --- decisions follow the path -----------------------------------------------------------------------------------


def test_decisions_on_another_branch_do_not_apply(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(tmp_path, path=path)
    store.append_message(user("go"))
    fork_point = store.append_message(assistant(text="hello"))
    store.append_message(user("branch one"))
    store.append_custom(DECISION_CUSTOM_TYPE, prune_data({"c1": "stub"}))
    store.append_custom(DECISION_CUSTOM_TYPE, window_data(LearnedWindow("p/m", 9_000, 10_000, "error text")))
    store.append_custom(DECISION_CUSTOM_TYPE, auto_compaction_data(False, "no shrink"))
    branch_one_leaf = store.leaf_id
    on_branch = ContextDecisions.from_entries(store.path_to(branch_one_leaf))
    assert on_branch.stubs == {"c1": "stub"} and on_branch.learned_window("p/m") == 9_000
    assert on_branch.auto_compaction is False

    store.branch(fork_point.id)
    store.append_message(user("branch two"))
    elsewhere = ContextDecisions.from_entries(store.path_to(store.leaf_id))
    assert elsewhere.stubs == {} and elsewhere.windows == {} and elsewhere.auto_compaction is True
    store.close()

    reopened = SessionStore.open(path)
    try:
        assert ContextDecisions.from_entries(reopened.path_to(reopened.leaf_id)).stubs == {}
        restored = ContextDecisions.from_entries(reopened.path_to(branch_one_leaf))
        assert restored.stubs == {"c1": "stub"} and restored.learned_window("p/m") == 9_000
    finally:
        reopened.close()
