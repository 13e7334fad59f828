"""SessionStore: deferred creation, appends, leaf and branches, labels, name, tree, fork,
in-memory sessions, lazy opening, migration on write."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from heron.agent.messages import BranchSummaryMessage, ExtensionMessage
from heron.ai.types import AssistantMessage, ToolCall, UserMessage
from heron.session import _scan
from heron.session.context import build_context
from heron.session.entries import (
    CustomEntry,
    LabelEntry,
    MessageEntry,
    ModelRef,
    entry_from_json,
)
from heron.session.naming import encode_cwd
from heron.session.store import SessionStore
from tests.session.support import (
    ENTRY_ID,
    PI_SESSIONS,
    assistant,
    chain,
    generate_pi_session,
    header,
    tool_result,
    user,
    write_jsonl,
)
from tests.support.fixtures import needs_shared


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "heron-home"
    monkeypatch.setenv("HERON_HOME", str(root))
    return root


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_nothing_is_written_until_the_first_message(home: Path, tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path / "proj")
    assert store.path is not None
    assert store.path.parent == home / "sessions" / encode_cwd(str(tmp_path / "proj"))
    assert store.path.name.endswith(f"_{store.session_id}.jsonl")
    store.append_model_change("faux", "faux-1")
    store.append_thinking_level_change("off")
    store.append_custom("heron.ledger", {"kind": "context_file"})
    assert not store.path.exists() and not store.on_disk  # starting and quitting leaves no file
    store.append_message(user("hello"))  # the prompt: written before its request is sent
    assert store.path.exists() and store.on_disk
    data = lines_of(store.path)
    assert [d["type"] for d in data] == ["session", "model_change", "thinking_level_change", "custom", "message"]
    assert data[0]["version"] == 3 and data[0]["id"] == store.session_id
    assert data[4]["message"]["role"] == "user" and data[4]["parentId"] == data[3]["id"]
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    store.append_message(assistant("hi"))
    store.append_message(user("more"))
    assert len(lines_of(store.path)) == 7
    store.close()
    reopened = SessionStore.open(store.path, read_only=True)
    assert [m.role for m in reopened.build_context().messages] == ["user", "assistant", "user"]


def test_materialize_writes_the_buffer_at_once(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    store.append_message(user("first"))
    store.materialize()
    assert len(lines_of(tmp_path / "s.jsonl")) == 2
    store.close()


def test_each_append_is_one_write_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    store.append_message(user("q"))
    store.append_message(assistant("a"))
    calls: list[tuple[int, bytes]] = []
    real_write = os.write

    def counting(fd: int, data: Any) -> int:
        calls.append((fd, bytes(data)))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", counting)
    for n in range(5):
        store.append_message(user(f"line {n}") if n % 2 else assistant(f"answer {n}"))
    assert len(calls) == 5
    assert all(data.endswith(b"\n") and data.count(b"\n") == 1 for _, data in calls)
    store.close()


def test_fsync_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    plain = SessionStore.create(tmp_path, path=tmp_path / "a.jsonl")
    plain.append_message(assistant())
    plain.append_message(user("x"))
    assert synced == []
    durable = SessionStore.create(tmp_path, path=tmp_path / "b.jsonl", fsync=True)
    durable.append_message(assistant())
    durable.append_message(user("x"))
    assert len(synced) == 2
    plain.close()
    durable.close()


def test_appends_fill_ids_parents_and_timestamps(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    first = store.append_message(user("a"))
    second = store.append_message(assistant("b"))
    assert ENTRY_ID.match(first.id) and first.parent_id is None
    assert second.parent_id == first.id and store.leaf_id == second.id and store.leaf_index == 1
    with pytest.raises(ValueError):
        store.append(MessageEntry(message=user("dup"), id=first.id))


def test_branch_moves_the_leaf_and_writes_nothing(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    a = store.append_message(user("a"))
    b = store.append_message(assistant("b"))
    store.append_message(user("c"))
    size = (tmp_path / "s.jsonl").stat().st_size
    store.branch(b.id)
    assert store.leaf_id == b.id
    assert (tmp_path / "s.jsonl").stat().st_size == size
    d = store.append_message(user("d"))
    assert d.parent_id == b.id
    assert store.tree().children[b.id] == [store.ids()[2], d.id]
    assert [e.id for e in store.path_to()] == [a.id, b.id, d.id]
    store.reset_leaf()
    assert store.leaf_id is None and store.build_context().messages == []
    root = store.append_message(user("new root"))
    assert root.parent_id is None
    assert store.tree().roots == [a.id, root.id]
    store.close()
    reopened = SessionStore.open(tmp_path / "s.jsonl", read_only=True)
    assert reopened.tree().children[b.id][-1] == d.id
    assert reopened.leaf_id == root.id


def test_branch_with_summary(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    a = store.append_message(user("a"))
    store.append_message(assistant("b"))
    old_leaf = store.append_message(user("abandoned")).id
    summary = store.branch_with_summary(a.id, "tried plan A")
    assert summary.parent_id == a.id and summary.from_id == old_leaf and store.leaf_id == summary.id
    context = store.build_context()
    assert [m.role for m in context.messages] == ["user", "branchSummary"]
    assert isinstance(context.messages[1], BranchSummaryMessage) and context.messages[1].from_id == old_leaf
    empty = store.branch_with_summary(a.id, "")
    assert store.build_context(empty.id).entry_ids == [a.id]  # an empty summary produces no message


def test_labels_latest_wins_and_none_clears(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(tmp_path, path=path)
    a = store.append_message(user("a"))
    b = store.append_message(assistant("b"))
    store.set_label(a.id, "start")
    store.set_label(b.id, "answer")
    store.set_label(a.id, "beginning")
    store.set_label(b.id, None)
    assert store.labels == {a.id: "beginning"}
    with pytest.raises(KeyError):
        store.set_label("nope0000", "x")
    store.close()
    reopened = SessionStore.open(path, read_only=True)
    assert reopened.labels == {a.id: "beginning"} and reopened.label_of(b.id) is None
    label_line = lines_of(path)[-1]
    assert label_line["type"] == "label" and "label" not in label_line  # cleared: no label field, as pi writes


def test_session_name(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(tmp_path, path=path)
    store.append_message(assistant())
    assert store.name is None
    store.set_name("first name")
    store.set_name("better name")
    assert store.name == "better name"
    store.close()
    assert SessionStore.open(path, read_only=True).name == "better name"


def test_tree_roots_children_and_orphans(tmp_path: Path) -> None:
    lines: list[Any] = [header(), *chain(3)]
    lines.append({**chain(1, start=10)[0], "parentId": "deadbeef"})  # points nowhere
    lines.append({**chain(1, start=11)[0], "parentId": "e0000000"})  # a second child of the first entry
    store = SessionStore.open(write_jsonl(tmp_path / "s.jsonl", lines), read_only=True)
    tree = store.tree()
    assert tree.roots == ["e0000000", "e000000a"]
    assert tree.orphans == ["e000000a"]
    assert tree.children["e0000000"] == ["e0000001", "e000000b"]
    assert any("deadbeef" in w and "treated as a root" in w for w in store.warnings)
    assert store.path_ids("e0000002") == ["e0000000", "e0000001", "e0000002"]


def test_fork_writes_the_path_into_a_new_file(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(tmp_path, path=path)
    a = store.append_message(user("a"))
    b = store.append_message(assistant("b"))
    store.append_custom("ext.state", {"x": 1})
    store.set_label(a.id, "start")
    c = store.append_message(user("c"))
    store.branch(b.id)
    store.append_message(user("other branch"))
    fork = store.fork(c.id)
    assert fork.path is not None and fork.path != path and fork.path.exists()
    assert fork.path.parent == home / "sessions" / encode_cwd(str(tmp_path))
    data = lines_of(fork.path)
    assert data[0]["parentSession"] == str(path) and data[0]["id"] == fork.session_id != store.session_id
    original = {d["id"]: d for d in lines_of(path)[1:]}
    copied = data[1:-1]
    assert [d["id"] for d in copied] == store.path_ids(c.id)
    assert all(d == original[d["id"]] for d in copied)  # byte-for-byte the same entries
    assert data[-1]["type"] == "label" and data[-1]["targetId"] == a.id  # labels of the path come along
    reopened = SessionStore.open(fork.path, read_only=True)
    assert reopened.labels == {a.id: "start"}
    assert [m.role for m in reopened.build_context().messages] == ["user", "assistant", "user"]
    assert reopened.header.parent_session == str(path)
    fork.append_message(assistant("continues"))  # the fork is open for writing
    fork.close()
    store.close()


def test_fork_without_a_message_waits_like_a_new_session(home: Path, tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    a = store.append_message(user("a"))
    memory_fork = store.fork(a.id)
    assert memory_fork.path is None and len(memory_fork) == 1
    disk = SessionStore.create(tmp_path, path=tmp_path / "d.jsonl")
    first = disk.append_model_change("faux", "faux-1")
    disk.materialize()
    fork = disk.fork(first.id)
    assert fork.path is not None and not fork.path.exists()
    fork.append_message(user("now"))
    assert fork.path.exists() and len(lines_of(fork.path)) == 3
    with_prompt = disk.fork(disk.append_message(user("a")).id)  # a prompt: written at once
    assert with_prompt.path is not None and len(lines_of(with_prompt.path)) == 3
    with_prompt.close()
    fork.close()
    disk.close()


def test_in_memory_sessions_write_nothing(home: Path, tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    for n in range(10):
        store.append_message(user(f"u{n}") if n % 2 == 0 else assistant(f"a{n}"))
    store.materialize()
    assert store.path is None and not home.exists()
    assert len(store.build_context().messages) == 10


def test_settings_are_tracked_for_the_leaf(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    assert store.current_settings() == (None, None)
    store.append_model_change("anthropic", "claude")
    store.append_thinking_level_change("high")
    first = store.append_message(user("a"))
    assert store.current_settings() == (ModelRef("anthropic", "claude"), "high")
    store.append_message(assistant("b", provider="openai", model="gpt"))
    assert store.current_settings() == (ModelRef("openai", "gpt"), "high")
    store.branch(first.id)
    assert store.current_settings() == (ModelRef("anthropic", "claude"), "high")


def test_reopen_and_append(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(tmp_path, path=path)
    ids = [store.append_message(m).id for m in (user("a"), assistant("b"), user("c"))]
    store.close()
    again = SessionStore.open(path)
    assert again.ids() == ids and again.leaf_id == ids[-1]
    new = again.append_message(assistant("d"))
    assert new.parent_id == ids[-1]
    again.close()
    assert [e.id for e in SessionStore.open(path, read_only=True).path_to()] == [*ids, new.id]


def test_read_only_stores_refuse_to_append(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [header(), *chain(2)])
    store = SessionStore.open(path, read_only=True)
    with pytest.raises(Exception, match="read-only"):
        store.append_message(user("x"))


@pytest.mark.parametrize("window", [_scan.WINDOW, 8192])
def test_lazy_open_reads_what_a_full_decode_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int) -> None:
    monkeypatch.setattr(_scan, "WINDOW", window)
    path = tmp_path / "pi.jsonl"
    stats = generate_pi_session(path, 3000, seed=7)
    raw = [json.loads(line) for line in path.read_text().splitlines()]
    store = SessionStore.open(path, read_only=True)
    assert store.warnings == []
    assert len(store) == stats["entries"] == len(raw) - 1
    assert store.ids() == [d["id"] for d in raw[1:]]
    assert store.types() == [d["type"] for d in raw[1:]]
    assert [store.parent_id_of(i) for i in store.ids()] == [d["parentId"] for d in raw[1:]]
    assert store.roles() == [d["message"]["role"] if d["type"] == "message" else None for d in raw[1:]]
    assert store.leaf_id == stats["leaf"]
    assert len(store.path_indices()) == stats["leaf_path_len"]
    lazy = store.build_context()
    full = build_context([entry_from_json(d) for d in raw[1:]], stats["leaf"])
    assert [m.to_json_dict() for m in lazy.messages] == [m.to_json_dict() for m in full.messages]
    assert lazy.entry_ids == full.entry_ids and lazy.model == full.model
    assert lazy.thinking_level == full.thinking_level
    # every entry decodes to exactly the JSON pi wrote
    for n, entry in enumerate(store):
        assert entry.to_json_dict() == raw[n + 1]


@needs_shared(PI_SESSIONS)
def test_a_version_one_file_is_rewritten_in_version_three_before_the_first_append(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    shutil.copy(PI_SESSIONS / "before-compaction.jsonl", path)
    with open(path, "a") as fh:  # an entry type and a field this heron does not know
        fh.write(json.dumps({"type": "future_thing", "timestamp": "2025-12-09T01:30:00.000Z", "blob": [1]}) + "\n")
    before = path.read_bytes()
    store = SessionStore.open(path)
    assert store.source_version == 1 and store.header.version == 3
    context_before = [m.to_json_dict() for m in store.build_context().messages]
    assert path.read_bytes() == before  # opening alone changes nothing
    added = store.append_message(user("after migration"))
    store.close()
    data = lines_of(path)
    assert data[0]["version"] == 3 and data[0]["branchedFrom"].endswith(".jsonl")  # unknown header field kept
    assert all(ENTRY_ID.match(d["id"]) for d in data[1:])
    assert [d["parentId"] for d in data[1:]] == [None, *[d["id"] for d in data[1:-1]]]
    assert data[-2]["type"] == "future_thing" and data[-2]["blob"] == [1]
    assert data[-1]["id"] == added.id
    assert not any("firstKeptEntryIndex" in d for d in data)
    again = SessionStore.open(path, read_only=True)
    assert again.source_version == 3 and again.warnings == []
    context_after = [m.to_json_dict() for m in again.build_context().messages]
    assert context_after == [*context_before, user("after migration").to_json_dict()]


def test_custom_messages_are_in_the_context_custom_entries_are_not(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    store.append_message(user("a"))
    store.append_custom("ext.state", {"n": 1})
    store.append_custom_message("ext.card", "shown to the model", display=False)
    context = store.build_context()
    assert [m.role for m in context.messages] == ["user", "custom"]
    card = context.messages[1]
    assert isinstance(card, ExtensionMessage) and card.custom_type == "ext.card" and not card.display
    assert isinstance(store.get(store.ids()[1]), CustomEntry)


def test_tool_turns_round_trip_through_a_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(tmp_path, path=path)
    call = ToolCall(id="call_1", name="read", arguments={"path": "a.py"})
    messages = [
        user("read a.py"),
        assistant("reading", calls=[call]),
        tool_result("call_1", "print(1)"),
        assistant("done"),
    ]
    for m in messages:
        store.append_message(m)
    store.close()
    context = SessionStore.open(path, read_only=True).build_context()
    assert [m.to_json_dict() for m in context.messages] == [m.to_json_dict() for m in messages]
    assert isinstance(context.messages[0], UserMessage) and isinstance(context.messages[1], AssistantMessage)


def test_store_get_and_entry_at(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [header(), *chain(4)])
    store = SessionStore.open(path, read_only=True)
    entry = store.get("e0000002")
    assert isinstance(entry, MessageEntry) and store.entry_at(2) is entry
    assert store.entry_at(3, cache=False) is not store.entry_at(3, cache=False)
    assert store.type_of("e0000001") == "message" and store.role_of("e0000001") == "assistant"
    with pytest.raises(KeyError):
        store.get("missing0")
    assert isinstance(LabelEntry(target_id="x").to_json_dict(), dict)


def test_fork_of_a_file_copies_lines_verbatim_and_repairs_links(tmp_path: Path) -> None:
    good = chain(6)
    good[0]["parentId"] = "nowhere0"  # an orphan: a root in the fork
    good[1]["zFutureField"] = {"kept": True}  # unknown fields and their order survive
    broken = json.dumps(good[3], separators=(",", ":"))[:-25]  # the prefix reads, the JSON does not
    lines: list[Any] = [header(), *good[:3], broken, *good[4:]]
    path = write_jsonl(tmp_path / "s.jsonl", lines)
    source_lines = path.read_text().splitlines()
    store = SessionStore.open(path)
    fork = store.fork("e0000005", path=tmp_path / "fork.jsonl")
    assert fork.path == tmp_path / "fork.jsonl"
    written = (tmp_path / "fork.jsonl").read_text().splitlines()
    data = [json.loads(x) for x in written]
    assert [d["id"] for d in data[1:]] == ["e0000000", "e0000001", "e0000002", "e0000004", "e0000005"]
    assert data[1]["parentId"] is None  # the orphan became a plain root
    assert written[2:4] == source_lines[2:4]  # byte for byte
    assert data[4]["parentId"] == "e0000002"  # the malformed entry is left out, the chain repaired
    assert written[5] == source_lines[6]
    assert any("malformed" in w for w in store.warnings)
    reopened = SessionStore.open(tmp_path / "fork.jsonl", read_only=True)
    assert reopened.warnings == [] and len(reopened.build_context().messages) == 5
    fork.close()
    store.close()


def test_fork_of_a_generated_pi_session(tmp_path: Path) -> None:
    path = tmp_path / "pi.jsonl"
    stats = generate_pi_session(path, 2000, seed=5)
    store = SessionStore.open(path, read_only=True)
    fork = store.fork(path=tmp_path / "fork.jsonl")
    source = {json.loads(x)["id"]: x for x in path.read_text().splitlines()[1:]}
    copied = (tmp_path / "fork.jsonl").read_text().splitlines()[1:]
    path_ids = store.path_ids()
    assert len(path_ids) == stats["leaf_path_len"]
    assert [json.loads(x)["id"] for x in copied[: len(path_ids)]] == path_ids
    assert all(x == source[json.loads(x)["id"]] for x in copied[: len(path_ids)])
    assert all(json.loads(x)["type"] == "label" for x in copied[len(path_ids) :])
    a, b = store.build_context(), fork.build_context()
    assert [m.to_json_dict() for m in a.messages] == [m.to_json_dict() for m in b.messages]
    assert a.model == b.model and a.thinking_level == b.thinking_level
    fork.close()


@pytest.mark.parametrize("order", ["forward", "backward", "random"])
def test_entries_are_found_in_any_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: str) -> None:
    monkeypatch.setattr(_scan, "WINDOW", 20_000)
    path = tmp_path / "pi.jsonl"
    generate_pi_session(path, 600, seed=11)
    raw = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    store = SessionStore.open(path, read_only=True)
    indices = list(range(len(raw)))
    if order == "backward":
        indices.reverse()
    elif order == "random":
        import random

        random.Random(3).shuffle(indices)
    for i in indices:
        entry = store.entry_at(i)
        assert entry is not None and entry.to_json_dict() == raw[i]
    assert store.warnings == []


def test_a_file_that_shrank_after_opening_reads_as_malformed_not_garbage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_scan, "WINDOW", 4_000)
    path = tmp_path / "pi.jsonl"
    generate_pi_session(path, 300, seed=2)
    store = SessionStore.open(path, read_only=True)
    with open(path, "r+b") as fh:  # another program truncates the file
        fh.truncate(path.stat().st_size // 2)
    decoded = [store.entry_at(i) for i in range(len(store))]
    assert decoded[0] is not None and decoded[-1] is None
    assert any("malformed" in w or "changed on disk" in w for w in store.warnings)
