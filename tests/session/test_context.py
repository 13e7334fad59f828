"""build_context: what the agent sees for a leaf, model and thinking level restored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from heron.agent.messages import CompactionSummaryMessage, ExtensionMessage
from heron.session.context import build_context
from heron.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    ModelRef,
    SessionHeader,
    ThinkingLevelChangeEntry,
)
from heron.session.store import SessionStore
from tests.session.support import assistant, user


def linked(*entries: Any) -> list[Entry]:
    """Give entries ids e0, e1, ... and chain them in order."""
    parent = None
    for n, entry in enumerate(entries):
        entry.id = f"e{n}"
        entry.parent_id = parent
        entry.timestamp = "2026-01-05T09:00:00.000Z"
        parent = entry.id
    return list(entries)


def texts(messages: list[Any]) -> list[str]:
    out = []
    for m in messages:
        if isinstance(m, CompactionSummaryMessage):
            out.append(f"summary:{m.summary}")
        elif hasattr(m, "summary"):
            out.append(f"branch:{m.summary}")
        elif isinstance(m, ExtensionMessage):
            out.append(f"custom:{m.content}")
        else:
            out.append(m.text())
    return out


def test_a_path_without_compaction_is_all_its_messages() -> None:
    entries = linked(
        ModelChangeEntry(provider="anthropic", model_id="claude"),
        ThinkingLevelChangeEntry(thinking_level="medium"),
        MessageEntry(message=user("q1")),
        MessageEntry(message=assistant("a1", provider="anthropic", model="claude")),
        CustomEntry(custom_type="state"),
        LabelEntry(target_id="e2", label="x"),
        MessageEntry(message=user("q2")),
    )
    context = build_context(entries, "e6")
    assert texts(context.messages) == ["q1", "a1", "q2"]
    assert context.entry_ids == ["e2", "e3", "e6"]
    assert context.model == ModelRef("anthropic", "claude") and context.thinking_level == "medium"
    assert build_context(entries, "e3").entry_ids == ["e2", "e3"]
    assert build_context(entries, None).messages == []


def test_with_a_compaction_summary_then_kept_entries_then_the_rest() -> None:
    entries = linked(
        MessageEntry(message=user("old question")),  # e0
        MessageEntry(message=assistant("old answer")),  # e1
        MessageEntry(message=user("kept question")),  # e2
        MessageEntry(message=assistant("kept answer")),  # e3
        CompactionEntry(summary="S1", first_kept_entry_id="e2", tokens_before=1000),  # e4
        MessageEntry(message=user("after")),  # e5
    )
    context = build_context(entries, "e5")
    assert texts(context.messages) == ["summary:S1", "kept question", "kept answer", "after"]
    assert context.entry_ids == ["e4", "e2", "e3", "e5"] and context.compaction_id == "e4"
    summary = context.messages[0]
    assert isinstance(summary, CompactionSummaryMessage) and summary.tokens_before == 1000
    assert summary.timestamp == 1767603600000


def test_only_the_latest_compaction_counts() -> None:
    entries = linked(
        MessageEntry(message=user("a")),  # e0
        MessageEntry(message=assistant("b")),  # e1
        CompactionEntry(summary="S1", first_kept_entry_id="e1"),  # e2
        MessageEntry(message=user("c")),  # e3
        MessageEntry(message=assistant("d")),  # e4
        CompactionEntry(summary="S2", first_kept_entry_id="e3"),  # e5
        MessageEntry(message=user("e")),  # e6
    )
    assert texts(build_context(entries, "e6").messages) == ["summary:S2", "c", "d", "e"]
    # a leaf before the second compaction still sees the first
    assert texts(build_context(entries, "e4").messages) == ["summary:S1", "b", "c", "d"]


def test_a_compaction_whose_first_kept_entry_is_missing_keeps_what_it_could_have_summarised() -> None:
    entries = linked(
        MessageEntry(message=user("a")),  # e0
        MessageEntry(message=assistant("b")),  # e1
        CompactionEntry(summary="S1", first_kept_entry_id="e1"),  # e2
        MessageEntry(message=user("c")),  # e3
        MessageEntry(message=assistant("d")),  # e4
        CompactionEntry(summary="S2", first_kept_entry_id="gone0000"),  # e5
        MessageEntry(message=user("e")),  # e6
    )
    context = build_context(entries, "e6")
    # the previous compaction's first kept entry (e1) up to S2, then what follows
    assert texts(context.messages) == ["summary:S2", "b", "c", "d", "e"]
    assert len(context.warnings) == 1 and "gone0000" in context.warnings[0]
    alone = linked(
        MessageEntry(message=user("a")),
        CompactionEntry(summary="S", first_kept_entry_id=""),
        MessageEntry(message=user("b")),
    )
    context = build_context(alone, "e2")
    assert texts(context.messages) == ["summary:S", "a", "b"]  # no earlier compaction: from the root


def test_custom_messages_and_branch_summaries() -> None:
    entries = linked(
        MessageEntry(message=user("a")),
        CustomMessageEntry(custom_type="ext", content="card text", display=True),
        BranchSummaryEntry(from_id="x", summary=""),
        BranchSummaryEntry(from_id="x", summary="went elsewhere"),
        CustomEntry(custom_type="never shown"),
    )
    context = build_context(entries, "e4")
    assert texts(context.messages) == ["a", "custom:card text", "branch:went elsewhere"]
    assert [m.role for m in context.messages] == ["user", "custom", "branchSummary"]


def test_model_comes_from_the_latest_model_change_or_assistant_message() -> None:
    entries = linked(
        ModelChangeEntry(provider="p1", model_id="m1"),
        MessageEntry(message=user("a")),
        MessageEntry(message=assistant("b", provider="p2", model="m2")),
        ThinkingLevelChangeEntry(thinking_level="low"),
        ModelChangeEntry(provider="p3", model_id="m3"),
        MessageEntry(message=user("c")),
    )
    assert build_context(entries, "e5").model == ModelRef("p3", "m3")
    assert build_context(entries, "e3").model == ModelRef("p2", "m2")
    assert build_context(entries, "e1").model == ModelRef("p1", "m1")
    assert build_context(entries, "e2").thinking_level == "off"  # nothing recorded yet: pi's default
    assert build_context(entries, "e5").thinking_level == "low"


def test_version_one_header_settings_are_the_starting_point() -> None:
    head = SessionHeader(
        id="u",
        timestamp="t",
        cwd="/w",
        version=1,
        extra={"provider": "anthropic", "modelId": "claude-opus-4-5", "thinkingLevel": "high"},
    )
    entries = linked(MessageEntry(message=user("a")))
    context = build_context(entries, "e0", header=head)
    assert context.model == ModelRef("anthropic", "claude-opus-4-5") and context.thinking_level == "high"


def test_the_store_and_a_plain_list_agree(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    store.append_model_change("anthropic", "claude")
    first = store.append_message(user("a"))
    store.append_message(assistant("b"))
    store.append_compaction("S", first.id, 10)
    store.append_message(user("c"))
    store.close()
    reopened = SessionStore.open(tmp_path / "s.jsonl", read_only=True)
    from_store = reopened.build_context()
    from_list = build_context(reopened.entries(), reopened.leaf_id)
    assert from_store.entry_ids == from_list.entry_ids
    assert [m.to_json_dict() for m in from_store.messages] == [m.to_json_dict() for m in from_list.messages]
    assert from_store.model == from_list.model == ModelRef("faux", "faux-1")
