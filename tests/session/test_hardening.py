"""Sessions that hostile bytes, hand edits or a failing disk would break.

- lone surrogates: never written (the file is valid UTF-8 JSON), and old files holding
  them (as ``\\ud800`` escapes, or as invalid UTF-8 bytes) load and can be continued;
- parent cycles: cut where they close, with a warning, in the context and the tree;
- write failures: :class:`SessionWriteError` naming the file and the OS error, the file
  cut back to its last whole line, every later append refused; the recorder stops the run.
"""

from __future__ import annotations

import errno
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.agent import Agent, AgentEvent, FunctionTool, MessageEndEvent, ToolParams, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.ai.types import AssistantMessage, StopReason
from heron.session.recorder import SessionRecorder
from heron.session.store import SessionStore, SessionWriteError
from tests.session.support import assistant, chain, header, msg_line, user, write_jsonl

# --- lone surrogates ---------------------------------------------------------------------------


def test_lone_surrogates_are_replaced_when_written(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    store.append_message(user("bad byte: \udcff, lone high: \ud800, split pair: \ud83d\ude00"))
    store.append_message(assistant("answer with \udfff"))
    store.close()
    raw = (tmp_path / "s.jsonl").read_bytes()
    text = raw.decode("utf-8")  # valid UTF-8
    assert "\\ud" not in text.lower()  # and no escaped surrogates either
    reopened = SessionStore.open(tmp_path / "s.jsonl")
    messages = reopened.build_context().messages
    assert messages[0].text() == "bad byte: \ufffd, lone high: \ufffd, split pair: \U0001f600"
    assert messages[1].text() == "answer with \ufffd"
    reopened.append_message(user("more"))  # continuing works
    reopened.close()
    json.dumps(
        [m.to_json_dict() for m in SessionStore.open(tmp_path / "s.jsonl").build_context().messages], ensure_ascii=False
    ).encode("utf-8")


def test_old_files_with_escaped_surrogates_load_and_continue(tmp_path: Path) -> None:
    # what heron wrote before: the surrogate escaped, so the file is ASCII but decodes to it
    lines = [header(), *chain(2)]
    lines[1]["message"]["content"][0]["text"] = "poison \ud800 here"
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")  # json.dumps escapes it: \ud800
    assert b"\\ud800" in path.read_bytes()
    store = SessionStore.open(path)
    assert store.warnings == []
    messages = store.build_context().messages
    assert messages[0].text() == "poison \ufffd here"
    for message in messages:  # what a provider request does with them
        json.dumps(message.to_json_dict(), ensure_ascii=False).encode("utf-8")
    store.append_message(user("go on"))
    store.close()
    assert len(SessionStore.open(path, read_only=True).build_context().messages) == 3


def test_lines_with_invalid_utf8_load_with_replacement(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = [json.dumps(line).encode() for line in [header(), *chain(2)]]
    good[2] = good[2].replace(b"answer 1", b"answer \xff\xed\xa0\x80 1")  # a stray byte, a surrogate as UTF-8
    path.write_bytes(b"\n".join(good) + b"\n")
    store = SessionStore.open(path, read_only=True)
    messages = store.build_context().messages
    assert len(messages) == 2 and messages[1].text().startswith("answer \ufffd")


def test_a_migrated_file_with_surrogates_is_rewritten_as_valid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    v2 = [
        {"type": "session", "version": 2, "id": "x", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        msg_line("aaaa0001", None, user("old \udcff")),
    ]
    path.write_text("\n".join(json.dumps(line) for line in v2) + "\n")
    store = SessionStore.open(path)
    store.append_message(user("next"))
    store.close()
    text = path.read_bytes().decode("utf-8")
    assert "\\udcff" not in text and "old \ufffd" in text


# --- parent cycles -----------------------------------------------------------------------------


def cyclic(tmp_path: Path, edit: dict[str, str | None]) -> Path:
    """Six chained messages with some parentIds changed by hand."""
    lines = [header(), *chain(6)]
    for line in lines[1:]:
        if line["id"] in edit:
            line["parentId"] = edit[line["id"]]
    return write_jsonl(tmp_path / "c.jsonl", lines)


def test_a_self_parented_leaf(tmp_path: Path) -> None:
    path = cyclic(tmp_path, {"e0000005": "e0000005"})
    store = SessionStore.open(path, read_only=True)
    assert any("cycle" in w and "e0000005" in w for w in store.warnings)
    assert store.path_ids() == ["e0000005"]  # the leaf is a root now: it appears once
    assert [m.text() for m in store.build_context().messages] == ["answer 5"]
    tree = store.tree()
    assert sorted(tree.roots) == ["e0000000", "e0000005"]


def test_a_longer_cycle_is_cut_where_it_points_forwards(tmp_path: Path) -> None:
    # e2 -> e4 (forwards), e3 -> e2, e4 -> e3: a cycle e2 -> e4 -> e3 -> e2; e5 hangs below it
    path = cyclic(tmp_path, {"e0000002": "e0000004"})
    store = SessionStore.open(path, read_only=True)
    cycle_warnings = [w for w in store.warnings if "cycle" in w]
    assert len(cycle_warnings) == 1 and "3 entries" in cycle_warnings[0] and "e0000002" in cycle_warnings[0]
    assert store.path_ids() == ["e0000002", "e0000003", "e0000004", "e0000005"]
    texts = [m.text() for m in store.build_context().messages]
    assert texts == ["question 2", "answer 3", "question 4", "answer 5"]  # once each
    assert store.parent_id_of("e0000002") is None


def test_sessions_tree_prints_a_cyclic_session(tmp_path: Path) -> None:
    import argparse

    from heron.cli.sessions_cmd import run

    path = cyclic(tmp_path, {"e0000000": "e0000005"})  # the root points at the leaf: no root at all
    out, err = io.StringIO(), io.StringIO()
    assert run(argparse.Namespace(sessions_command="tree", file=str(path)), out, err) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 + 6  # the header line and every entry, once
    assert "<- leaf" in lines[-1] and "cycle" in err.getvalue()


def test_a_cut_cycle_is_written_without_it_when_the_session_is_forked(tmp_path: Path) -> None:
    path = cyclic(tmp_path, {"e0000005": "e0000005"})
    store = SessionStore.open(path)
    forked = store.fork(path=tmp_path / "f.jsonl")
    data = [json.loads(line) for line in (tmp_path / "f.jsonl").read_text().splitlines()]
    assert [(d["id"], d["parentId"]) for d in data[1:]] == [("e0000005", None)]
    assert SessionStore.open(tmp_path / "f.jsonl", read_only=True).warnings == []
    forked.close()


# --- write failures ----------------------------------------------------------------------------


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """``os.write`` of session files stores ``budget`` more bytes, then fails with ENOSPC."""
    state = {"budget": 10**9}
    real = os.write

    def write(fd: int, data: Any) -> int:
        if ".jsonl" not in os.readlink(f"/proc/self/fd/{fd}"):
            return real(fd, data)
        if state["budget"] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = real(fd, bytes(data[: state["budget"]]))
        state["budget"] -= written
        return written

    monkeypatch.setattr(os, "write", write)
    yield state


def test_a_failed_append_keeps_the_file_and_refuses_more(tmp_path: Path, full_disk: dict[str, int]) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(tmp_path, path=path)
    store.append_message(user("one"))
    store.append_message(assistant("two"))
    before = path.read_bytes()
    full_disk["budget"] = 10  # part of the next line fits
    with pytest.raises(SessionWriteError) as failed:
        store.append_message(user("three"))
    message = str(failed.value)
    assert message == f"cannot save the session (appending an entry): {path}: [Errno 28] No space left on device"
    assert failed.value.path == path and isinstance(failed.value.cause, OSError)
    assert path.read_bytes() == before  # the 10 bytes that fitted were cut off again
    assert len(store) == 2 and store.write_error is failed.value
    full_disk["budget"] = 10**9  # even with room again: the session has a hole now, nothing more is written
    with pytest.raises(SessionWriteError, match="no longer saved after an earlier error"):
        store.append_message(user("four"))
    assert path.read_bytes() == before
    store.close()
    assert [m.text() for m in SessionStore.open(path).build_context().messages] == ["one", "two"]


def test_a_failed_creation_leaves_no_file(tmp_path: Path, full_disk: dict[str, int]) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(tmp_path, path=path)
    store.append_model_change("faux", "faux-1")  # buffered: no file yet
    full_disk["budget"] = 20
    with pytest.raises(SessionWriteError, match=r"\(creating the file\).*No space left"):
        store.append_message(user("one"))  # the first message creates the file
    assert not path.exists()


def test_a_failed_rewrite_changes_nothing(tmp_path: Path, full_disk: dict[str, int]) -> None:
    path = tmp_path / "old.jsonl"
    v2 = [
        {"type": "session", "version": 2, "id": "x", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        msg_line("aaaa0001", None, user("old")),
    ]
    write_jsonl(path, v2)
    before = path.read_bytes()
    store = SessionStore.open(path)
    full_disk["budget"] = 0
    with pytest.raises(SessionWriteError, match="rewriting the file"):
        store.append_message(user("new"))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["old.jsonl"]  # no temporary file left


class NoteParams(ToolParams):
    text: str


@pytest.mark.parametrize("fail_at", ["prompt", "answer", "result"])
async def test_the_recorder_stops_the_run_before_the_next_tool(
    faux: FauxProvider, tmp_path: Path, full_disk: dict[str, int], fail_at: str
) -> None:
    ran: list[str] = []

    async def note(call_id: str, params: NoteParams, signal: AbortSignal, on_update: Any) -> ToolResult:
        ran.append(params.text)
        if fail_at == "result":
            full_disk["budget"] = 0  # the disk fills while the tool runs: its result cannot be saved
        return ToolResult.text("noted")

    agent = Agent(model=faux.model(), tools=[FunctionTool("note", "Take a note.", NoteParams, note)])
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(tmp_path, path=path)
    store.append_message(user("earlier"))
    store.append_message(assistant("earlier answer"))  # on disk now
    saved = path.read_bytes()

    def fill_disk(event: AgentEvent) -> None:  # subscribed before the recorder: runs before it saves
        if fail_at == "answer" and isinstance(event, MessageEndEvent) and event.message.role == "assistant":
            full_disk["budget"] = 0

    agent.subscribe(fill_disk)
    recorder = SessionRecorder(agent, store, record_settings=False)
    faux.queue(
        tool_call("note", {"text": "a"}, call_id="c1"), tool_call("note", {"text": "b"}, call_id="c2"), text("done")
    )
    if fail_at == "prompt":
        full_disk["budget"] = 0
    await agent.prompt("go")
    assert isinstance(recorder.error, SessionWriteError) and recorder.errors == [recorder.error]
    assert ran == (["a"] if fail_at == "result" else [])  # no tool after the failed append
    assert faux.pending == (3 if fail_at == "prompt" else 2)  # and no request after it either
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == StopReason.ABORTED
    assert "No space left on device" in (last.error_message or "")
    on_disk = path.read_bytes()
    assert on_disk.startswith(saved)
    roles = [json.loads(x)["message"]["role"] for x in on_disk.splitlines()[1:]]
    expected = {"prompt": [], "answer": ["user"], "result": ["user", "assistant"]}[fail_at]
    assert roles == ["user", "assistant", *expected]
