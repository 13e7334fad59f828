"""Entry codec (camelCase on disk, snake_case in Python, unknowns kept) and migration."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest

import heron.session.entries as entries_module
from heron.agent.messages import ExtensionMessage, OpaqueMessage
from heron.ai.types import ImageContent, TextContent
from heron.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionHeader,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    UnknownEntry,
    dumps_line,
    entry_from_json,
    iso_now,
    iso_to_ms,
    migrate,
    new_entry_id,
    new_session_id,
)
from tests.session.support import ENTRY_ID, ISO_MS, assistant, user

COMMON = {"id": "a1b2c3d4", "parent_id": "00000000", "timestamp": "2026-01-05T09:00:00.000Z"}


def every_entry() -> list[Any]:
    return [
        MessageEntry(message=user("hi"), **COMMON),
        MessageEntry(message=assistant("hello"), **COMMON),
        ModelChangeEntry(provider="anthropic", model_id="claude-sonnet-4-5", **COMMON),
        ThinkingLevelChangeEntry(thinking_level="high", **COMMON),
        CompactionEntry(
            summary="s",
            first_kept_entry_id="0000abcd",
            tokens_before=123,
            details={"readFiles": ["a.py"]},
            from_hook=False,
            **COMMON,
        ),
        BranchSummaryEntry(from_id="0000abcd", summary="left", details={"x": 1}, **COMMON),
        CustomEntry(custom_type="ext.state", data={"k": [1, 2]}, **COMMON),
        CustomMessageEntry(
            custom_type="ext.card",
            content=[TextContent(text="card"), ImageContent(data="aGk=", mime_type="image/png")],
            display=False,
            details={"d": 1},
            **COMMON,
        ),
        CustomMessageEntry(custom_type="ext.note", content="plain", **COMMON),
        LabelEntry(target_id="0000abcd", label="checkpoint", **COMMON),
        LabelEntry(target_id="0000abcd", label=None, **COMMON),
        SessionInfoEntry(name="refactor", **COMMON),
        SessionInfoEntry(**COMMON),
    ]


@pytest.mark.parametrize("entry", every_entry(), ids=lambda e: e.type)
def test_every_entry_type_roundtrips_through_json(entry: Any) -> None:
    data = entry.to_json_dict()
    assert list(data)[:4] == ["type", "id", "parentId", "timestamp"]
    line = dumps_line(data)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    again = entry_from_json(json.loads(line))
    assert type(again) is type(entry)
    assert again.to_json_dict() == data
    assert again.id == "a1b2c3d4" and again.parent_id == "00000000"


def test_camel_case_on_disk_snake_case_in_python() -> None:
    entry = CompactionEntry(summary="s", first_kept_entry_id="0000abcd", tokens_before=5, **COMMON)
    data = entry.to_json_dict()
    assert data["firstKeptEntryId"] == "0000abcd" and data["tokensBefore"] == 5 and data["parentId"] == "00000000"
    assert "first_kept_entry_id" not in data
    model = entry_from_json(
        {
            "type": "model_change",
            "id": "x",
            "parentId": None,
            "timestamp": "t",
            "provider": "openai",
            "modelId": "gpt-5",
        }
    )
    assert isinstance(model, ModelChangeEntry) and model.model_id == "gpt-5" and str(model.model) == "openai/gpt-5"
    thinking = entry_from_json(
        {"type": "thinking_level_change", "id": "x", "parentId": None, "timestamp": "t", "thinkingLevel": "low"}
    )
    assert isinstance(thinking, ThinkingLevelChangeEntry) and thinking.thinking_level == "low"


def test_unknown_types_and_fields_are_kept_verbatim() -> None:
    raw = {
        "type": "future_thing",
        "id": "abcd0123",
        "parentId": None,
        "timestamp": "2026-01-05T09:00:00.000Z",
        "payload": {"nested": [1, "two"]},
        "flag": True,
    }
    entry = entry_from_json(dict(raw))
    assert isinstance(entry, UnknownEntry) and entry.type == "future_thing"
    assert entry.to_json_dict() == raw
    known = {
        "type": "label",
        "id": "abcd0123",
        "parentId": "ffff0000",
        "timestamp": "2026-01-05T09:00:00.000Z",
        "targetId": "ffff0000",
        "label": "x",
        "colour": "blue",
    }
    label = entry_from_json(dict(known))
    assert isinstance(label, LabelEntry) and label.extra == {"colour": "blue"}
    assert label.to_json_dict() == known
    message = {
        "type": "message",
        "id": "abcd0123",
        "parentId": None,
        "timestamp": "t",
        "message": {"role": "assistant", "content": [{"type": "hologram"}], "provider": "p"},
    }
    odd = entry_from_json(json.loads(json.dumps(message)))  # a block this heron cannot decode
    assert isinstance(odd, MessageEntry) and isinstance(odd.message, OpaqueMessage)
    assert odd.to_json_dict() == message


def test_header_keeps_version_one_settings() -> None:
    raw = {
        "type": "session",
        "id": "u",
        "timestamp": "2025-11-20T23:33:50.805Z",
        "cwd": "/w",
        "provider": "anthropic",
        "modelId": "claude-sonnet-4-5",
        "thinkingLevel": "off",
        "branchedFrom": "/p",
    }
    head = SessionHeader.from_json_dict(raw)
    assert head.version == 1
    assert str(head.legacy_model) == "anthropic/claude-sonnet-4-5" and head.legacy_thinking_level == "off"
    assert head.to_json_dict() == {**raw, "version": 1}


@pytest.mark.parametrize(
    "bad",
    [
        [],
        "x",
        {"id": "a"},
        {"type": ""},
        {"type": "session", "id": "a"},
        {"type": "message", "id": "a", "message": "not an object"},
        {"type": "custom_message", "id": "a", "content": 5},
    ],
)
def test_malformed_entries_raise_value_error(bad: Any) -> None:
    with pytest.raises(ValueError):
        entry_from_json(bad)


def test_ids_and_timestamps_have_pi_shapes() -> None:
    taken: set[str] = set()
    for _ in range(2000):
        new = new_entry_id(taken)
        assert ENTRY_ID.match(new) and new not in taken
        taken.add(new)
    assert ISO_MS.match(iso_now())
    assert iso_to_ms("2025-11-20T23:33:50.805Z") == 1763681630805
    assert iso_to_ms("garbage") == 0


def test_a_new_entry_id_is_drawn_again_while_it_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = iter([bytes.fromhex("0000000a"), bytes.fromhex("0000000b"), bytes.fromhex("0000000c")])
    asked: list[int] = []

    def scripted(size: int) -> bytes:
        asked.append(size)
        return next(draws)

    monkeypatch.setattr(entries_module.os, "urandom", scripted)
    assert new_entry_id({"0000000a", "0000000b"}) == "0000000c"  # two collisions, then a free id
    assert asked == [4, 4, 4]


def test_session_ids_are_version_4_uuids_in_their_text_form() -> None:
    ids = {new_session_id() for _ in range(500)}
    assert len(ids) == 500
    for value in ids:
        parsed = uuid.UUID(value)
        assert str(parsed) == value and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_custom_message_entry_content_blocks() -> None:
    entry = entry_from_json(
        {
            "type": "custom_message",
            "id": "a",
            "parentId": None,
            "timestamp": "t",
            "customType": "c",
            "content": [{"type": "text", "text": "x"}],
            "display": True,
        }
    )
    assert isinstance(entry, CustomMessageEntry) and entry.content == [TextContent(text="x")]
    # the agent's own custom role decodes too (used when building the context)
    assert ExtensionMessage(custom_type="c", content="x").role == "custom"


# --- migration ------------------------------------------------------------------------------


def v1_entries() -> list[dict[str, Any]]:
    return [
        {"type": "message", "timestamp": "t1", "message": user("one").to_json_dict()},
        {"type": "message", "timestamp": "t2", "message": assistant("two").to_json_dict()},
        {"type": "thinking_level_change", "timestamp": "t3", "thinkingLevel": "high"},
        {"type": "message", "timestamp": "t4", "message": user("three").to_json_dict()},
        # the index counts the header: file line 3 is the thinking_level_change (entry 2 without it)
        {"type": "compaction", "timestamp": "t5", "summary": "sum", "firstKeptEntryIndex": 3, "tokensBefore": 9},
        {"type": "message", "timestamp": "t6", "message": assistant("four").to_json_dict()},
    ]


def test_v1_migration_assigns_ids_chains_parents_and_turns_the_index_into_an_id() -> None:
    head: dict[str, Any] = {"type": "session", "id": "u", "timestamp": "t", "cwd": "/w"}
    entries = v1_entries()
    warnings = migrate(head, entries)
    assert warnings == []
    assert head["version"] == 3
    ids = [e["id"] for e in entries]
    assert all(ENTRY_ID.match(i) for i in ids) and len(set(ids)) == len(ids)
    assert [e["parentId"] for e in entries] == [None, *ids[:-1]]
    compaction = entries[4]
    assert "firstKeptEntryIndex" not in compaction
    assert compaction["firstKeptEntryId"] == ids[2]  # file line 3 (header = line 0) = entry 2
    assert list(compaction)[:3] == ["type", "id", "parentId"]


def test_v1_migration_counts_lines_when_some_could_not_be_read() -> None:
    head: dict[str, Any] = {"type": "session", "id": "u", "timestamp": "t", "cwd": "/w"}
    entries = v1_entries()
    del entries[0]  # line 1 was malformed: the remaining entries sit on lines 2..6
    warnings = migrate(head, entries, lines=[2, 3, 4, 5, 6])
    assert warnings == []
    assert entries[3]["firstKeptEntryId"] == entries[1]["id"]  # line 3 is still the thinking change


@pytest.mark.parametrize("index", [0, 5, 99, "3"])
def test_v1_compaction_index_that_names_no_earlier_entry_warns(index: Any) -> None:
    head: dict[str, Any] = {"type": "session", "id": "u", "timestamp": "t", "cwd": "/w"}
    entries = v1_entries()
    entries[4]["firstKeptEntryIndex"] = index
    warnings = migrate(head, entries)
    assert len(warnings) == 1 and "firstKeptEntryIndex" in warnings[0]
    assert entries[4]["firstKeptEntryId"] == ""


def test_v2_migration_renames_hook_messages_and_keeps_ids() -> None:
    head: dict[str, Any] = {"type": "session", "version": 2, "id": "u", "timestamp": "t", "cwd": "/w"}
    entries = [
        {
            "type": "message",
            "id": "aaaa0001",
            "parentId": None,
            "timestamp": "t",
            "message": {"role": "hookMessage", "customType": "h", "content": "x", "display": True, "timestamp": 1},
        },
        {
            "type": "message",
            "id": "aaaa0002",
            "parentId": "aaaa0001",
            "timestamp": "t",
            "message": user("u").to_json_dict(),
        },
    ]
    migrate(head, entries)
    assert head["version"] == 3
    assert entries[0]["message"]["role"] == "custom"
    assert [e["id"] for e in entries] == ["aaaa0001", "aaaa0002"]
    decoded = entry_from_json(entries[0])
    assert isinstance(decoded, MessageEntry) and isinstance(decoded.message, ExtensionMessage)


def test_iso_now_is_utc_with_milliseconds() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d\d\dZ", iso_now())


def test_lines_are_compact_utf8_and_survive_lone_surrogates() -> None:
    assert dumps_line({"a": "ü b"}) == '{"a":"ü b"}\n'.encode()
    # not encodable as UTF-8: the unpaired surrogate becomes U+FFFD, a split pair is joined
    line = dumps_line({"a": "x\ud800y", "b": "\ud83d\ude00", "\udcff": 1})
    assert line.decode("utf-8") == '{"a":"x\ufffdy","b":"\U0001f600","\ufffd":1}\n'
    assert json.loads(line) == {"a": "x\ufffdy", "b": "\U0001f600", "\ufffd": 1} and line.count(b"\n") == 1
