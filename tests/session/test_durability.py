"""Durability and bad input: crashes mid-append, torn and malformed lines, odd headers,
duplicate ids, dangling parents, a second writer. Nothing is fatal, nothing else is lost."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from heron.ai.types import UserMessage
from heron.session.entries import MessageEntry
from heron.session.errors import SessionError
from heron.session.store import SessionInUseError, SessionReadOnlyError, SessionStore
from tests.session.support import REPO, assistant, chain, header, msg_line, user, write_jsonl

# --- kill -9 while appending ------------------------------------------------------------------

SIZES = [20, 300, 4_000, 60_000, 250_000, 1_000_000]


def payload(n: int) -> str:
    size = random.Random(n).choice(SIZES)
    return f"entry {n} " + ("abcdefghij" * (size // 10 + 1))[:size]


def _writer(path: Path, start: int, progress: int) -> None:
    """The child: append numbered entries until killed, reporting each finished append."""
    store = SessionStore.open(path)
    n = start
    while True:
        store.append_message(user(payload(n)))
        os.write(progress, b"%d\n" % n)
        n += 1


def numbered(store: SessionStore) -> list[int]:
    out = []
    for entry in store:
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
            text = entry.message.text()
            n = int(text.split(" ", 2)[1])
            assert text == payload(n), f"entry {n} is not intact"
            out.append(n)
    return out


def test_kill_minus_nine_at_random_points_loses_at_most_the_entry_being_written(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    first = SessionStore.create(tmp_path, path=path)
    first.append_message(assistant("the file exists from here on"))
    first.close()
    rng = random.Random(20240501)
    torn: set[int] = set()  # offsets of the torn lines seen so far
    next_n = 0
    iterations = 30
    for _ in range(iterations):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer process
            os.close(read_end)
            try:
                _writer(path, next_n, write_end)
            finally:
                os._exit(0)
        os.close(write_end)
        time.sleep(rng.uniform(0.005, 0.06))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        reported = [int(x) for x in os.read(read_end, 1 << 20).split()]
        os.close(read_end)

        store = SessionStore.open(path)  # never fails, and takes the lock: the dead writer held none
        found = numbered(store)
        # every entry the writer finished is there, intact, in order, once
        assert found == list(range(len(found)))
        assert not reported or found[-1] >= reported[-1]
        raw = path.read_bytes()
        if any("incomplete last line" in w for w in store.warnings):
            assert not raw.endswith(b"\n")
            torn.add(raw.rfind(b"\n") + 1)
        # a torn line is dropped while it is the last line and skipped as malformed once
        # something follows it; nothing else is ever reported
        problems = [w for w in store.warnings if "incomplete last line" in w or "malformed entry skipped" in w]
        assert len(problems) == len(store.warnings) == len(torn)
        next_n = len(found)
        store.close()
    assert next_n > iterations  # the writers got work done
    # the next append after a torn line starts on a fresh line
    store = SessionStore.open(path)
    marker = store.append_message(user(payload(next_n)))
    store.close()
    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    last = json.loads(raw.rstrip(b"\n").rsplit(b"\n", 1)[-1])
    assert last["id"] == marker.id
    assert numbered(SessionStore.open(path, read_only=True)) == list(range(next_n + 1))


# --- torn and malformed lines -----------------------------------------------------------------


def test_a_torn_last_line_is_dropped_and_the_next_append_starts_on_a_fresh_line(tmp_path: Path) -> None:
    lines: list[Any] = [header(), *chain(3)]
    torn = json.dumps(msg_line("e0000003", "e0000002", user("cut short")))[:70]
    path = write_jsonl(tmp_path / "s.jsonl", [*lines, torn], trailing_newline=False)
    store = SessionStore.open(path)
    assert len(store) == 3 and store.leaf_id == "e0000002"
    assert any("line 5" in w and "incomplete last line" in w for w in store.warnings)
    new = store.append_message(assistant("after the crash"))
    store.close()
    raw = path.read_text()
    assert raw.endswith(torn + "\n" + json.dumps(new.to_json_dict(), separators=(",", ":")) + "\n")
    again = SessionStore.open(path, read_only=True)
    assert again.ids() == ["e0000000", "e0000001", "e0000002", new.id]
    assert [w for w in again.warnings if "line 5" in w and "malformed" in w]
    assert len(again.build_context().messages) == 4


def test_a_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [header(), *chain(2)], trailing_newline=False)
    store = SessionStore.open(path)
    assert len(store) == 2 and store.warnings == []
    store.append_message(user("next"))
    store.close()
    assert len(SessionStore.open(path, read_only=True)) == 3
    assert path.read_text().count("\n") == 4


def test_malformed_lines_in_the_middle_are_skipped_with_warnings(tmp_path: Path) -> None:
    good = chain(8)
    # e0000003 with its fields in another order (the prefix cannot be read) and cut mid-way
    broken_json_with_id = '{"id":"e0000003","parentId":"e0000002","type":"message","message":{"role":"us'
    unparsable_later = json.dumps(good[6], separators=(",", ":"))[:-3]  # the prefix reads, the JSON does not
    lines: list[Any] = [
        header(),
        good[0],
        "this is not json",
        good[1],
        "[1, 2, 3]",
        good[2],
        "",
        broken_json_with_id,
        good[4],  # its parent e0000003 was malformed: attached to e0000002
        '{"no": "type"}',
        header(),  # a second header
        good[5],
        unparsable_later,
        good[7],
    ]
    path = write_jsonl(tmp_path / "s.jsonl", lines)
    store = SessionStore.open(path, read_only=True)
    text = "\n".join(store.warnings)
    for line in (3, 5, 8, 10, 11):
        assert f"line {line}:" in text
    assert "attached to e0000002" in text
    assert store.ids() == ["e0000000", "e0000001", "e0000002", "e0000004", "e0000005", "e0000006", "e0000007"]
    context = store.build_context()
    assert "line 13: malformed entry skipped" in "\n".join(store.warnings)  # found when it was needed
    # nothing else lost: every readable message is in the leaf's context, in order
    assert context.entry_ids == ["e0000000", "e0000001", "e0000002", "e0000004", "e0000005", "e0000007"]


def test_a_file_with_only_a_header(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [header()])
    store = SessionStore.open(path)
    assert len(store) == 0 and store.leaf_id is None and store.warnings == []
    assert store.build_context().messages == []
    store.append_message(user("first"))
    store.close()
    assert len(SessionStore.open(path, read_only=True)) == 1


def test_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    reader = SessionStore.open(path, read_only=True)
    assert len(reader) == 0 and any("empty" in w for w in reader.warnings)
    store = SessionStore.open(path)
    store.append_message(user("hello"))
    store.close()
    data = [json.loads(x) for x in path.read_text().splitlines()]
    assert data[0]["type"] == "session" and data[0]["version"] == 3 and data[1]["type"] == "message"
    assert SessionStore.open(path, read_only=True).warnings == []


@pytest.mark.parametrize(
    "content",
    [b"my notes\nsecond line\n", b"one line, no newline", b"\x00\x01binary", b'{"a": 1}\n{"b": 2}\n'],
    ids=["text", "one-line", "binary", "other-json"],
)
def test_a_file_that_is_not_a_session_is_refused_and_left_as_it_is(tmp_path: Path, content: bytes) -> None:
    """``--session notes.jsonl`` or a library caller naming the wrong file: writing a session
    into it would replace what it holds, so opening it to write is refused; reading it
    (``heron sessions``) still works, with a warning."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(content)
    with pytest.raises(SessionError, match="not a session file"):
        SessionStore.open(path)
    assert path.read_bytes() == content
    reader = SessionStore.open(path, read_only=True)
    assert len(reader) == 0 and reader.warnings


def test_a_header_cut_short_is_still_a_session_to_repair(tmp_path: Path) -> None:
    """heron stopped while creating the file: the start of a header is its own, repaired."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"sess')
    store = SessionStore.open(path)
    store.append_message(user("hello"))
    store.close()
    assert [json.loads(x)["type"] for x in path.read_text().splitlines()] == ["session", "message"]


def test_a_header_of_a_future_version_is_read_but_not_appended_to(tmp_path: Path) -> None:
    lines = [
        header(version=4, newField={"x": 1}),
        *chain(3),
        {"type": "hologram", "id": "f0000000", "parentId": "e0000002", "timestamp": "2027-01-01T00:00:00.000Z"},
    ]
    path = write_jsonl(tmp_path / "s.jsonl", lines)
    before = path.read_bytes()
    # continuing it is refused at once, naming the version and the file (not at the first append)
    with pytest.raises(SessionReadOnlyError, match=r"version 4 is newer .*not continued: .*s\.jsonl"):
        SessionStore.open(path)
    store = SessionStore.open(path, read_only=True)
    assert any("version 4 is newer" in w for w in store.warnings)
    assert len(store) == 4 and len(store.build_context().messages) == 3
    with pytest.raises(SessionReadOnlyError, match="version 4"):
        store.append_message(user("no"))
    store.close()
    assert path.read_bytes() == before


def test_duplicate_ids(tmp_path: Path) -> None:
    lines = [
        header(),
        msg_line("aaaa0000", None, user("first a")),
        msg_line("bbbb0000", "aaaa0000", assistant("b")),
        msg_line("aaaa0000", "bbbb0000", user("second a")),  # the same id again
        msg_line("cccc0000", "aaaa0000", assistant("c")),  # written after it: its parent is the later one
    ]
    store = SessionStore.open(write_jsonl(tmp_path / "s.jsonl", lines), read_only=True)
    assert any("duplicate id aaaa0000" in w for w in store.warnings)
    assert len(store) == 4
    context = store.build_context()
    assert [m.text() for m in context.messages] == ["first a", "b", "second a", "c"]
    assert store.get("aaaa0000") is not None and store.get("aaaa0000").message.text() == "second a"  # type: ignore[union-attr]
    renamed = store.ids()[0]
    assert renamed != "aaaa0000" and store.parent_id_of("bbbb0000") == renamed


def test_a_parent_id_that_points_nowhere(tmp_path: Path) -> None:
    lines = [
        header(),
        *chain(2),
        msg_line("dddd0000", "nowhere0", user("orphan")),
        msg_line("eeee0000", "dddd0000", assistant("its child")),
    ]
    store = SessionStore.open(write_jsonl(tmp_path / "s.jsonl", lines), read_only=True)
    assert any("parent nowhere0 not found" in w for w in store.warnings)
    assert store.tree().roots == ["e0000000", "dddd0000"] and store.tree().orphans == ["dddd0000"]
    assert [m.text() for m in store.build_context().messages] == ["orphan", "its child"]
    assert [m.text() for m in store.build_context("e0000001").messages] == ["question 0", "answer 1"]


def test_a_compaction_whose_first_kept_entry_is_missing(tmp_path: Path) -> None:
    lines = [
        header(),
        *chain(4),
        {
            "type": "compaction",
            "id": "c0000000",
            "parentId": "e0000003",
            "timestamp": "2026-01-05T09:00:02.000Z",
            "summary": "S",
            "firstKeptEntryId": "gone0000",
            "tokensBefore": 5,
        },
        msg_line("f0000000", "c0000000", user("after")),
    ]
    store = SessionStore.open(write_jsonl(tmp_path / "s.jsonl", lines), read_only=True)
    context = store.build_context()
    assert any("gone0000" in w and "not on the path" in w for w in store.warnings)
    assert [m.role for m in context.messages] == ["compactionSummary", "user", "assistant", "user", "assistant", "user"]


# --- one writer ---------------------------------------------------------------------------------


def test_a_second_writer_gets_session_in_use(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [header(), *chain(2)])
    script = (
        "import sys, time\n"
        "from heron.session.store import SessionStore\n"
        "s = SessionStore.open(sys.argv[1])\n"
        "s.append_message(__import__('heron.ai.types', fromlist=['x']).UserMessage(content='from the holder'))\n"
        "print('locked', flush=True)\n"
        "time.sleep(60)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(SessionInUseError) as err:
            SessionStore.open(path)
        assert f"session is in use by another heron process (pid {holder.pid})" in str(err.value)
        assert err.value.pid == holder.pid
        reader = SessionStore.open(path, read_only=True)  # readers never lock
        assert len(reader) == 3
    finally:
        holder.kill()
        holder.wait()
    SessionStore.open(path).close()  # the lock went with the process


def test_two_stores_in_one_process_also_exclude_each_other(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [header(), *chain(1)])
    first = SessionStore.open(path)
    with pytest.raises(SessionInUseError, match="already open in this process"):  # not "another process"
        SessionStore.open(path)
    first.close()
    SessionStore.open(path).close()


def test_duplicate_ids_on_lines_read_the_slow_way(tmp_path: Path) -> None:
    first = {
        "id": "aaaa0000",
        "type": "message",
        "parentId": None,
        "timestamp": "t",
        "message": user("first a").to_json_dict(),
    }  # fields in another order: decoded during the scan
    lines = [
        header(),
        first,
        msg_line("aaaa0000", "aaaa0000", user("second a")),
        msg_line("bbbb0000", "aaaa0000", assistant("b")),
    ]
    store = SessionStore.open(write_jsonl(tmp_path / "s.jsonl", lines), read_only=True)
    renamed = store.ids()[0]
    assert renamed != "aaaa0000"
    entry = store.entry_at(0)
    assert entry is not None and entry.id == renamed
    assert [m.text() for m in store.build_context().messages] == ["first a", "second a", "b"]
