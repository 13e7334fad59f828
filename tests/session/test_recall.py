"""The recall index: what is indexed, catching up with files that grow, shrink, change or
vanish, torn lines, spill files, scopes, query syntax, and a damaged index file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from heron.ai.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from heron.session.entries import CustomMessageEntry
from heron.session.naming import encode_cwd
from heron.session.recall import QueryError, RecallIndex, fts_query, index_path
from heron.session.store import SessionStore


def assistant(text: str = "", calls: list[ToolCall] | None = None) -> AssistantMessage:
    content: list[TextContent | ToolCall] = [TextContent(text=text)] if text else []
    content.extend(calls or [])
    return AssistantMessage(api="faux", provider="faux", model="m", content=content)  # type: ignore[arg-type]


def make_session(home: Path, cwd: Path, *texts: str) -> SessionStore:
    store = SessionStore.create(cwd, home=home)
    for text in texts:
        store.append_message(UserMessage(content=text))
        store.append_message(assistant(f"answer to {text}"))
    return store


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


def search(home: Path, query: str, **kw: object) -> list[dict[str, object]]:
    with RecallIndex(home) as index:
        return [h.to_json() for h in index.search(query, **kw).hits]  # type: ignore[arg-type]


def test_every_kind_of_entry_is_indexed_with_role_tool_and_time(home: Path, cwd: Path) -> None:
    store = SessionStore.create(cwd, home=home)
    user = store.append_message(UserMessage(content="please count the zebras"))
    call = store.append_message(
        assistant("I will run it", [ToolCall(id="c1", name="bash", arguments={"command": "echo giraffe"})])
    )
    result = store.append_message(
        ToolResultMessage(tool_call_id="c1", tool_name="bash", content=[TextContent(text="giraffe output")])
    )
    compaction = store.append_compaction("summary mentions okapi", call.id, 1000)
    custom = store.append(CustomMessageEntry(custom_type="ext", content="extension says lemur"))
    store.branch(user.id)
    summary = store.branch_with_summary(user.id, "branch summary about tapir")
    store.close()

    def one(query: str) -> dict[str, object]:
        hits = search(home, query, scope="session", session_id=store.session_id)
        assert len(hits) == 1, hits
        return hits[0]

    assert one("zebras")["entry_id"] == user.id and one("zebras")["role"] == "user"
    hit = one("echo")  # the tool call's arguments
    assert (hit["entry_id"], hit["role"], hit["tool"]) == (call.id, "assistant", "bash")
    hit = one("output")
    assert (hit["entry_id"], hit["role"], hit["tool"]) == (result.id, "toolResult", "bash")
    assert hit["timestamp"] == result.timestamp and "**output**" in str(hit["snippet"])
    assert one("okapi")["entry_id"] == compaction.id and one("okapi")["role"] == "compaction"
    assert one("lemur")["entry_id"] == custom.id
    assert one("tapir")["entry_id"] == summary.id and one("tapir")["role"] == "branch_summary"
    assert one("zebras")["path"] == str(store.path) and one("zebras")["line"] == 2  # header is line 1


def test_catch_up_reads_only_what_was_appended(home: Path, cwd: Path) -> None:
    store = make_session(home, cwd, "first alpha")
    with RecallIndex(home) as index:
        assert index.catch_up().rows_added == 2
        assert index.catch_up().files_indexed == 0  # unchanged: nothing read
        store.append_message(UserMessage(content="second beta"))
        stats = index.catch_up()
        assert (stats.files_indexed, stats.rows_added) == (1, 1)
        assert [h.entry_id for h in index.search("alpha").hits]  # the old rows are still there
        assert index.stats()["rows"] == 3


def test_a_torn_last_line_is_indexed_once_it_is_complete(home: Path, cwd: Path) -> None:
    store = make_session(home, cwd, "whole")
    store.close()
    assert store.path is not None
    line = (
        json.dumps(
            {
                "type": "message",
                "id": "abcd1234",
                "parentId": None,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": "pelican", "timestamp": 1},
            }
        )
        + "\n"
    )
    with open(store.path, "a") as fh:
        fh.write(line[:40])
    assert search(home, "pelican") == []
    with open(store.path, "a") as fh:
        fh.write(line[40:])
    hits = search(home, "pelican")
    assert [h["entry_id"] for h in hits] == ["abcd1234"]


def test_a_rewritten_or_shrunk_file_is_indexed_again(home: Path, cwd: Path) -> None:
    store = make_session(home, cwd, "original walrus", "more narwhal")
    store.close()
    assert store.path is not None and search(home, "walrus")
    lines = store.path.read_text().splitlines(keepends=True)
    store.path.write_text(lines[0] + lines[1].replace("walrus", "seal!!"))  # shorter, and changed
    assert search(home, "walrus") == [] and search(home, "narwhal") == []
    assert len(search(home, "seal")) == 1
    # same size, a changed byte inside what was indexed: also noticed
    text = store.path.read_text()
    store.path.write_text(text.replace("seal!!", "otter!"))
    os.utime(store.path, ns=(1, 1))
    assert search(home, "seal") == [] and len(search(home, "otter")) == 1


def test_a_deleted_session_file_drops_its_rows(home: Path, cwd: Path) -> None:
    keep = make_session(home, cwd, "kept heron")
    gone = make_session(home, cwd, "deleted heron")
    assert len(search(home, "heron", scope="all")) == 4
    assert gone.path is not None
    gone.close()
    gone.path.unlink()
    hits = search(home, "heron", scope="all")
    assert {h["session"] for h in hits} == {keep.session_id}
    with RecallIndex(home) as index:
        assert index.stats()["sources"] == 1


def test_scopes_session_project_all(home: Path, cwd: Path, tmp_path: Path) -> None:
    other_cwd = tmp_path / "other"
    other_cwd.mkdir()
    a = make_session(home, cwd, "shared word")
    b = make_session(home, cwd, "shared word")
    c = make_session(home, other_cwd, "shared word")
    project = encode_cwd(cwd)
    assert {h["session"] for h in search(home, "shared", scope="session", session_id=a.session_id)} == {a.session_id}
    assert {h["session"] for h in search(home, "shared", scope="project", project=project)} == {
        a.session_id,
        b.session_id,
    }
    assert {h["session"] for h in search(home, "shared", scope="all")} == {a.session_id, b.session_id, c.session_id}
    assert len(search(home, "shared", scope="all", limit=2)) == 2


def test_spill_files_are_indexed_in_line_chunks_and_linked_to_their_result(home: Path, cwd: Path) -> None:
    store = make_session(home, cwd, "run the build")
    spill_dir = home / "tool-output" / store.session_id
    spill_dir.mkdir(parents=True)
    spill = spill_dir / "call_1.txt"
    spill.write_text("".join(f"line {i}\n" for i in range(1, 251)) + "the needle is here\n")
    store.append_message(
        ToolResultMessage(
            tool_call_id="call_1",
            tool_name="bash",
            content=[TextContent(text="preview only")],
            details={"budget_spill": {"spill_path": str(spill), "spilled": True}},
        )
    )
    hits = search(home, "needle", scope="session", session_id=store.session_id)
    assert len(hits) == 1
    hit = hits[0]
    assert hit["source"] == "spill" and hit["path"] == str(spill)
    assert hit["line"] == 201 and hit["lines"] == 51  # chunks of 100 lines: the third one
    assert hit["role"] == "toolResult" and hit["tool"] == "bash" and hit["entry_id"] == store.leaf_id
    preview = search(home, "preview", scope="session", session_id=store.session_id)[0]
    assert preview["spill_path"] == str(spill)
    spill.unlink()
    assert search(home, "needle", scope="session", session_id=store.session_id) == []


def test_searches_and_their_results_are_not_indexed(home: Path, cwd: Path) -> None:
    store = make_session(home, cwd, "find the kiwi")
    store.append_message(assistant("", [ToolCall(id="s1", name="search_history", arguments={"query": "kiwi"})]))
    store.append_message(
        ToolResultMessage(tool_call_id="s1", tool_name="search_history", content=[TextContent(text="1 match for kiwi")])
    )
    hits = search(home, "kiwi")
    assert sorted(str(h["role"]) for h in hits) == ["assistant", "user"]
    assert all(h["tool"] is None for h in hits)


def test_plain_words_are_quoted_and_fts5_syntax_passes_through(home: Path, cwd: Path) -> None:
    make_session(home, cwd, "the MARKER-x7 appeared in foo.py", "alpha beta gamma", "alpha only")
    assert fts_query("MARKER-x7 foo.py") == '"MARKER-x7" "foo.py"'
    assert fts_query('"alpha beta"') == '"alpha beta"'
    assert len(search(home, "MARKER-x7")) == 2  # the message and its answer
    assert search(home, "x7-MARKER") == []  # a phrase: the order counts
    assert len(search(home, "foo.py")) == 2
    assert len(search(home, "alpha")) == 4  # two user messages and their answers
    assert len(search(home, '"beta gamma"')) == 2
    assert len(search(home, "alpha NOT beta")) == 2
    assert len(search(home, "gamm*")) == 2
    assert len(search(home, "NEAR(alpha gamma, 1)")) == 2
    assert len(search(home, "gamma OR only")) == 4


@pytest.mark.parametrize("query", ['"unclosed', "alpha AND", "NEAR(", "col:umn AND x", "alpha OR (beta"])
def test_a_bad_fts5_query_is_a_query_error(home: Path, cwd: Path, query: str) -> None:
    make_session(home, cwd, "alpha")
    with RecallIndex(home) as index, pytest.raises(QueryError, match="invalid search query"):
        index.search(query)


@pytest.mark.parametrize("query", ["", "   ", "-- ..."])
def test_a_query_without_words_is_a_query_error(home: Path, query: str) -> None:
    with RecallIndex(home) as index, pytest.raises(QueryError):
        index.search(query)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign"])
def test_a_damaged_index_is_rebuilt(home: Path, cwd: Path, damage: str) -> None:
    make_session(home, cwd, "the albatross", *[f"filler {i} " * 200 for i in range(30)])
    assert len(search(home, "albatross")) == 2  # the message and its answer
    path = index_path(home)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    if damage == "garbage":
        path.write_bytes(b"this is not an sqlite file at all" * 100)
    elif damage == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2] + b"\0" * 4096)
    else:  # an sqlite file of some other schema
        import sqlite3

        path.unlink()
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)")
        db.execute("INSERT INTO meta VALUES ('schema', '0')")
        db.commit()
        db.close()
    assert len(search(home, "albatross")) == 2


def test_missing_index_directory_and_rebuild(home: Path, cwd: Path) -> None:
    make_session(home, cwd, "the condor")
    with RecallIndex(home) as index:
        assert index.catch_up().rows_added == 2
        stats = index.rebuild()
        assert stats.rebuilt and stats.rows_added == 2
        assert len(index.search("condor").hits) == 2


def test_older_session_versions_are_indexed_through_migration(home: Path) -> None:
    folder = home / "sessions" / "--old--"
    folder.mkdir(parents=True)
    lines = [
        {"type": "session", "id": "old-1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/old"},
        {
            "type": "message",
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "legacy flamingo", "timestamp": 1},
        },
    ]
    (folder / "2025-01-01T00-00-00-000Z_old-1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    hits = search(home, "flamingo")
    assert len(hits) == 1 and hits[0]["session"] == "old-1" and hits[0]["role"] == "user"
