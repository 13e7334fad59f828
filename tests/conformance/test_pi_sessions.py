"""Conformance with pi's session files.

1. The two real sessions written by pi (version 1, ``../shared/fixtures/pi/sessions``) are
   migrated and read; every expected number is computed here, independently, from the raw
   JSON lines (the README's migration rule: ids in file order, parents chained linearly,
   ``firstKeptEntryIndex`` counted in the file's entry list *including* the header).
2. Sessions heron writes follow pi's version-3 rules (field names, 8-hex ids, ISO
   timestamps with milliseconds) and read back identically; so do pi's own v3 lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from heron.agent.messages import BashExecutionMessage, CompactionSummaryMessage
from heron.ai.types import ImageContent, TextContent, ToolCall
from heron.session.entries import ModelRef
from heron.session.store import SessionStore
from tests.session.support import (
    ENTRY_ID,
    PI_SESSIONS,
    assistant,
    generate_pi_session,
    pi_format_problems,
    tool_result,
    user,
)
from tests.support.fixtures import needs_shared

LARGE = PI_SESSIONS / "large-session.jsonl"
COMPACTED = PI_SESSIONS / "before-compaction.jsonl"


def raw_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def expected_settings(lines: list[dict[str, Any]]) -> tuple[ModelRef, str]:
    """pi's rule over a linear file: the header's settings (v1), then the latest
    model_change or assistant message, and the latest thinking_level_change."""
    head = lines[0]
    model = ModelRef(head["provider"], head["modelId"])
    thinking = head["thinkingLevel"]
    for entry in lines[1:]:
        if entry["type"] == "model_change":
            model = ModelRef(entry["provider"], entry["modelId"])
        elif entry["type"] == "message" and entry["message"]["role"] == "assistant":
            model = ModelRef(entry["message"]["provider"], entry["message"]["model"])
        elif entry["type"] == "thinking_level_change":
            thinking = entry["thinkingLevel"]
    return model, thinking


def as_written(ours: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    """``ours`` without what heron's message codec adds to pi's older lines: ``totalTokens``
    in an assistant's usage (the sum of the four counts; pi's current files carry it, these older ones do not)."""
    usage = ours.get("usage")
    if isinstance(usage, dict) and "totalTokens" not in raw.get("usage", {}):
        ours = {**ours, "usage": {k: v for k, v in usage.items() if k != "totalTokens"}}
    return ours


def count(values: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return out


@needs_shared(PI_SESSIONS)
@pytest.mark.parametrize("path", [LARGE, COMPACTED], ids=lambda p: p.name)
def test_migration_of_pis_version_one_files(path: Path) -> None:
    lines = raw_lines(path)
    assert "version" not in lines[0]  # version 1
    store = SessionStore.open(path, read_only=True)
    assert store.warnings == []
    assert store.source_version == 1 and store.header.version == 3
    assert store.header.id == lines[0]["id"] and store.header.cwd == lines[0]["cwd"]
    entries = lines[1:]
    assert len(store) == len(entries)
    assert store.types() == [e["type"] for e in entries]
    assert count(store.types()) == count([e["type"] for e in entries])
    roles = [r for r in store.roles() if r is not None]
    assert count(roles) == count([e["message"]["role"] for e in entries if e["type"] == "message"])
    ids = store.ids()
    assert all(ENTRY_ID.match(i) for i in ids) and len(set(ids)) == len(ids)
    # parents chained in file order: the path to the last entry is the whole file
    assert [store.parent_id_of(i) for i in ids] == [None, *ids[:-1]]
    assert store.leaf_index == len(entries) - 1
    assert store.path_ids() == ids
    # firstKeptEntryIndex counts the header (file line 0), so it names entry index - 1
    for n, entry in enumerate(entries):
        if entry["type"] == "compaction":
            migrated = store.entry_at(n)
            assert migrated is not None and migrated.first_kept_entry_id == ids[entry["firstKeptEntryIndex"] - 1]  # type: ignore[union-attr]


@needs_shared(PI_SESSIONS)
def test_large_session_context() -> None:
    lines = raw_lines(LARGE)
    entries = lines[1:]
    # 1,018 entries: 914 messages (88 user, 453 assistant, 373 toolResult), 103 thinking
    # level changes, 1 model change; no compaction, no branch: the context is every message
    assert len(entries) == 1018
    messages = [e["message"] for e in entries if e["type"] == "message"]
    assert len(messages) == 914
    assert count([m["role"] for m in messages]) == {"user": 88, "assistant": 453, "toolResult": 373}
    store = SessionStore.open(LARGE, read_only=True)
    context = store.build_context()
    assert len(context.messages) == 914
    assert context.messages[0].role == "user"
    # the same messages, in the same order, with the same content
    assert [as_written(m.to_json_dict(), raw) for m, raw in zip(context.messages, messages, strict=True)] == messages
    model, thinking = expected_settings(lines)
    assert context.model == model and context.thinking_level == thinking
    # the last model named on the path is that of the last assistant message (the one
    # model_change, line 3, comes before it), and the 103rd thinking change set "off"
    assert (str(context.model), context.thinking_level) == ("anthropic/claude-sonnet-4-5", "off")


@needs_shared(PI_SESSIONS)
def test_before_compaction_context_starts_with_the_latest_compaction_summary() -> None:
    lines = raw_lines(COMPACTED)
    entries = lines[1:]
    compactions = [n for n, e in enumerate(lines) if e["type"] == "compaction"]  # positions counting the header
    assert len(compactions) == 2
    latest = compactions[-1]
    first_kept = lines[latest]["firstKeptEntryIndex"]  # also counting the header
    assert 0 < first_kept < latest
    # the context: the latest compaction's summary, then the messages from its first kept
    # entry up to it, then every message after it (the first compaction is history now)
    kept = [e["message"] for e in lines[first_kept:latest] if e["type"] == "message"]
    after = [e["message"] for e in lines[latest + 1 :] if e["type"] == "message"]
    expected = len(kept) + len(after) + 1
    store = SessionStore.open(COMPACTED, read_only=True)
    assert count(store.types()) == {"message": 990, "thinking_level_change": 5, "model_change": 5, "compaction": 2}
    assert len(entries) == 1002
    context = store.build_context()
    assert len(context.messages) == expected == 446
    summary = context.messages[0]
    assert isinstance(summary, CompactionSummaryMessage)
    assert summary.summary == lines[latest]["summary"] and summary.tokens_before == lines[latest]["tokensBefore"]
    assert context.messages[0].role == "compactionSummary"
    assert [
        as_written(m.to_json_dict(), raw) for m, raw in zip(context.messages[1:], kept + after, strict=True)
    ] == kept + after
    assert context.entry_ids[1] == store.ids()[first_kept - 1]
    model, thinking = expected_settings(lines)
    assert context.model == model and context.thinking_level == thinking
    assert (str(context.model), context.thinking_level) == ("anthropic/claude-opus-4-5", "off")
    # the three commands the user ran themselves decode as bashExecution messages
    bash = [e for e in store if getattr(e, "message", None) is not None and isinstance(e.message, BashExecutionMessage)]  # type: ignore[union-attr]
    assert len(bash) == 3


def test_heron_sessions_follow_pis_format_and_read_back_identically(tmp_path: Path) -> None:
    path = tmp_path / "heron.jsonl"
    store = SessionStore.create(tmp_path, path=path)
    store.append_model_change("anthropic", "claude-sonnet-4-5")
    store.append_thinking_level_change("medium")
    question = store.append_message(user("read the file, please — ünïcode too"))
    call = ToolCall(id="toolu_01", name="read", arguments={"path": "src/a.py", "limit": 50})
    store.append_message(assistant("reading", calls=[call]))
    store.append_message(tool_result("toolu_01", "print('hi')"))
    store.append_message(assistant("done"))
    store.append_custom("ext.state", {"counter": 1})
    card = [TextContent(text="card"), ImageContent(data="aGk=", mime_type="image/png")]
    store.append_custom_message("ext.card", card)
    store.append_message(BashExecutionMessage(command="ls", output="a.py", exit_code=0))
    store.append_compaction("## Goal\nsummary", question.id, 1234, details={"readFiles": ["src/a.py"]}, from_hook=False)
    store.set_label(question.id, "start")
    store.set_name("format check")
    store.branch_with_summary(question.id, "explored another way", details={"modifiedFiles": []})
    store.append_message(assistant("on the new branch"))
    store.close()
    assert pi_format_problems(path) == []
    written = raw_lines(path)
    reopened = SessionStore.open(path, read_only=True)
    assert reopened.warnings == []
    assert reopened.header.to_json_dict() == written[0]
    assert [e.to_json_dict() for e in reopened] == written[1:]
    assert len(reopened) == len(written) - 1


def test_pis_own_version_three_lines_read_back_identically(tmp_path: Path) -> None:
    path = tmp_path / "pi.jsonl"
    stats = generate_pi_session(path, 2500, seed=3)
    assert pi_format_problems(path) == []  # the checker agrees with pi's writer
    written = raw_lines(path)
    store = SessionStore.open(path, read_only=True)
    assert store.warnings == [] and len(store) == stats["entries"]
    assert [e.to_json_dict() for e in store] == written[1:]
