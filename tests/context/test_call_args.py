"""Tool-call arguments past one result's budget are shown shortened in requests
(heron.context.view.call_args): the rule itself, and a session whose model writes 5 MB in one
call - it used to send nothing ever again (every request 1.3 M tokens, no pruning step or
compaction able to reduce the call) - answering the next prompt and ``/compact``, with
the session file keeping the call whole and a reopened session going on."""

from __future__ import annotations

from pathlib import Path

from heron.agent.tool_meta import EMPTY_CATALOG
from heron.ai.providers.faux import FauxProvider, serialise_request, text, tool_call
from heron.ai.types import AssistantMessage, Context, ToolCall, ToolResultMessage
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.context.view.call_args import NOTE_KEY, shortened
from heron.context.window.budget import arguments_chars
from heron.session.entries import CustomEntry, MessageEntry
from heron.session.store import SessionStore
from tests.support.tools import BUILTIN

BIG = 5 << 20  # 5 MB: the write of the issue


def test_arguments_within_the_budget_are_shown_as_they_are() -> None:
    call = ToolCall(id="c", name="write", arguments={"path": "a.txt", "content": "x" * 900})
    assert shortened(call, 1_000, EMPTY_CATALOG) is None


def test_a_long_string_keeps_its_head_and_says_where_the_whole_is() -> None:
    call = ToolCall(id="c", name="write", arguments={"path": "a.txt", "content": "ab" * 50_000})
    shown = shortened(call, 4_000, BUILTIN)
    assert shown is not None and arguments_chars(shown["arguments"]) <= 4_000
    content = shown["arguments"]["content"]
    assert content.startswith("ab" * 500) and shown["arguments"]["path"] == "a.txt"
    assert "99,000 more characters of this argument are not shown" in content
    assert "the call wrote it to a.txt" in content and "the session file keeps the call whole" in content


def test_nested_strings_are_shortened_and_too_many_pieces_become_one_note() -> None:
    edits = [{"oldText": "o" * 9_000, "newText": "n" * 9_000}]
    shown = shortened(ToolCall(id="c", name="edit", arguments={"path": "f.py", "edits": edits}), 8_000, EMPTY_CATALOG)
    assert shown is not None
    (edit,) = shown["arguments"]["edits"]
    assert edit["oldText"].startswith("o" * 2_000) and "7,000 more characters" in edit["oldText"]
    # a thousand short strings: none is long, all of them together are
    many = ToolCall(id="c", name="x", arguments={"items": [f"item {i:05d}" for i in range(1_000)]})
    shown = shortened(many, 2_000, EMPTY_CATALOG)
    assert shown is not None and list(shown["arguments"]) == [NOTE_KEY]
    assert "characters of this call's arguments are not shown" in shown["arguments"][NOTE_KEY]


def test_text_that_did_not_parse_is_shortened_too() -> None:
    call = ToolCall(id="c", name="write", arguments={}, raw_arguments="{" + "z" * 50_000)
    shown = shortened(call, 4_000, EMPTY_CATALOG)
    assert shown is not None and len(shown["rawArguments"]) < 2_000


SETTINGS = settings_from_dict({"compaction": {"keepRecentTokens": 1}})  # /compact keeps the last turn only


def _session(project: Path, faux: FauxProvider) -> CodingSession:
    store = SessionStore.create(project)
    return CodingSession(
        cwd=project,
        model=faux.model(context_window=128_000, max_tokens=8_192),
        store=store,
        settings=SETTINGS,
        tools=["read", "write"],
    )


async def test_a_5_mb_write_leaves_the_session_usable(tmp_path: Path, monkeypatch: object, faux: FauxProvider) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))  # type: ignore[attr-defined]
    script = [tool_call("write", {"path": "big.txt", "content": "x" * BIG}), text("wrote it"), text("next answer")]

    def reply(context: Context) -> object:
        return text("## Goal\nwrite a big file") if is_summary_request(context) else script.pop(0)

    faux.set_fallback(reply)  # type: ignore[arg-type]
    session = _session(project, faux)
    await session.prompt("write a 5 MB file")
    await session.prompt("and now?")
    assert (project / "big.txt").stat().st_size == BIG
    assert await session.compact() is not None  # /compact sends its summary request and is written
    asked = [r for r in faux.requests if not is_summary_request(r)]
    assert len(asked) == 3 and all(len(serialise_request(r)) < 60_000 for r in faux.requests)
    # the call keeps its id and its result right after it; the model learns where the rest is
    last = asked[-1].messages
    index = next(i for i, m in enumerate(last) if isinstance(m, AssistantMessage) and m.tool_calls())
    (call,) = last[index].tool_calls()  # type: ignore[union-attr]
    result = last[index + 1]
    assert isinstance(result, ToolResultMessage) and result.tool_call_id == call.id
    assert "not shown; the call wrote it to big.txt" in call.arguments["content"]

    # nothing lost: the session keeps the call whole, and says once how requests show it
    assert session.store.path is not None
    entries = SessionStore.open(session.store.path, read_only=True).entries()
    stored = next(e.message for e in entries if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage))
    assert stored.tool_calls()[0].arguments["content"] == "x" * BIG
    decisions = [e for e in entries if isinstance(e, CustomEntry) and e.data.get("op") == "call_args"]
    assert len(decisions) == 1 and list(decisions[0].data["calls"]) == [call.id]
    ledger = [e.data for e in entries if isinstance(e, CustomEntry) and e.data.get("kind") == "call_args"]
    assert len(ledger) == 1 and ledger[0]["charsBefore"] > BIG and ledger[0]["charsAfter"] < 40_000

    # a new process goes on with the session
    script.append(text("again"))
    session._recorder.close()
    session.store.close()
    reopened = CodingSession(
        cwd=project,
        model=session.model,
        store=SessionStore.open(session.store.path),
        settings=SETTINGS,
        tools=["read", "write"],
    )
    before = len(faux.requests)
    await reopened.prompt("one more")
    # (the compaction summarised the call; the restart-equivalence suites compare the bytes)
    assert len(serialise_request(faux.requests[before])) < 60_000
