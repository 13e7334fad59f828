"""Continuity: the task list, project memory and recall survive every compaction.

One session in a 16k window (faux provider): turn 1 puts a unique marker in a command's
output, turn 2 writes a task list, later turns of long answers force at least three
automatic compactions, each preceded by the silent memory flush. Then: the task list is
in every request after each compaction, byte for byte the same; the memory note written
during a flush is in the next session's system prompt; ``search_history`` (the model's
tool) and ``heron sessions search`` (the command) both find the turn-1 entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.types import Context, ToolResultMessage, UserMessage
from heron.coding.memory import FLUSH_PROMPT, INDEX_FILE, memory_dir
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.summary.summary_text import SUMMARISER_SYSTEM_PROMPT, is_summary_request
from heron.context.continuity.todos import injected_todos_text
from heron.session.entries import CompactionEntry, CustomEntry, MessageEntry
from heron.session.store import SessionStore

MARKER = "MARKER-7f3c-continuity"
TODOS = [
    {"content": "find where the marker comes from", "status": "completed"},
    {"content": "write the report", "status": "in_progress"},
    {"content": "tidy up `tmp/` afterwards", "status": "pending"},
]
FLUSH_START = FLUSH_PROMPT.split("\n", 1)[0]
NOTE = "- the marker is printed by the build script (noted during a flush)"


def last_text(context: Context) -> str:
    last = context.messages[-1]
    if isinstance(last, UserMessage | ToolResultMessage):
        return last.text()
    return ""


class Model:
    """The scripted model: main turns from a list, flush turns and summaries on demand."""

    def __init__(self, turns: list[FauxReply], memory: Path) -> None:
        self.turns = turns
        self.memory = memory
        self.flushes = 0

    def __call__(self, context: Context) -> FauxReply:
        if is_summary_request(context):
            return text("<analysis>went through it</analysis><summary>## Goal\nFind the marker.</summary>")
        last = context.messages[-1]
        if isinstance(last, UserMessage) and last.text().startswith(FLUSH_START):
            self.flushes += 1
            # a flush tries a forbidden tool first, then writes the memory index
            return (
                tool_call("bash", {"command": "env"})
                if self.flushes == 1
                else tool_call("write", {"path": str(self.memory / INDEX_FILE), "content": f"# Memory\n{NOTE}\n"})
            )
        if isinstance(last, ToolResultMessage) and self._in_flush(context):
            if last.tool_name == "bash":
                return tool_call("write", {"path": str(self.memory / INDEX_FILE), "content": f"# Memory\n{NOTE}\n"})
            return text("Saved.")
        return self.turns.pop(0)

    @staticmethod
    def _in_flush(context: Context) -> bool:
        return any(isinstance(m, UserMessage) and m.text().startswith(FLUSH_START) for m in context.messages)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HERON_HOME", str(path))
    monkeypatch.setenv("HERON_MEMORY_FLUSH", "1")
    return path


async def test_todos_memory_and_recall_survive_three_compactions(
    tmp_path: Path, home: Path, faux: FauxProvider
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    memory = memory_dir(home, project)
    long = "Thinking it through carefully, step by step, with all the details. " * 120  # ~8k chars
    turns: list[FauxReply] = [
        tool_call("bash", {"command": f"echo build step one; echo {MARKER}; echo done"}),
        text("Ran it."),
        tool_call("todo", {"todos": TODOS}),
        text("Planned."),
    ]
    for n in range(14):
        turns.append(text(f"Answer {n}. {long}"))
    turns += [tool_call("search_history", {"query": MARKER}), text("Found it again.")]
    model = Model(turns, memory)
    faux.set_fallback(model)
    store = SessionStore.create(project, home=home)
    session = CodingSession(
        cwd=project,
        model=faux.model(context_window=16_384, max_tokens=2_048),
        store=store,
        home=home,
        # The flush here just fits under the threshold; the recent-steps block (about 100
        # tokens more after each compaction) would tip it over. That block has its own
        # tests (tests/cli/test_frontier_e2e.py); this one is about todos, memory, recall.
        settings=settings_from_dict({"continuity": {"recentSteps": 0}}),
    )
    prompts = ["run the build", "make a plan", *(f"go on, part {n}" for n in range(14)), "where was the marker?"]
    for prompt in prompts:
        await session.prompt(prompt)

    entries = SessionStore.open(store.path, read_only=True).entries()  # type: ignore[arg-type]
    compactions = [e for e in entries if isinstance(e, CompactionEntry)]
    assert len(compactions) >= 3
    # the task list, rendered from the stored list, in every request after each compaction
    rendered = injected_todos_text(TODOS)  # type: ignore[arg-type]
    after_first = False
    for payload in faux.payloads:
        if "compacted into the following summary" in payload and SUMMARISER_SYSTEM_PROMPT not in payload:
            after_first = True
        if after_first and SUMMARISER_SYSTEM_PROMPT not in payload and FLUSH_START not in payload:
            assert json.dumps(rendered, ensure_ascii=False)[1:-1] in payload
    assert after_first
    # the summariser's draft is kept in the entry, not in the context
    assert compactions[-1].details["analysis"] == "went through it"  # type: ignore[index]
    assert all("went through it" not in p for p in faux.payloads if SUMMARISER_SYSTEM_PROMPT not in p)
    # the flush: exactly once per compaction, sent each time, bash refused, the note written, nothing recorded
    flushes = [
        e.data
        for e in entries
        if isinstance(e, CustomEntry) and e.custom_type == "heron.context" and e.data.get("op") == "flush"
    ]
    assert len(flushes) == len(compactions) == model.flushes  # one each, none otherwise
    assert not any("skipped" in f for f in flushes)
    assert (memory / INDEX_FILE).read_text() == f"# Memory\n{NOTE}\n"
    recorded = [e for e in entries if isinstance(e, MessageEntry)]
    assert not any(FLUSH_START in json.dumps(e.to_json_dict()) for e in recorded)
    # search_history, the model's way back, found the turn-1 output
    results = [
        e.message
        for e in recorded
        if isinstance(e.message, ToolResultMessage) and e.message.tool_name == "search_history"
    ]
    assert results and MARKER in results[-1].text()

    # the note is in the next session's system prompt; a resumed session keeps its own
    fresh = CodingSession(
        cwd=project,
        model=faux.model(context_window=16_384),
        home=home,
        store=SessionStore.create(project, home=home),
        settings=settings_from_dict({}),
    )
    assert NOTE in fresh.system_prompt
    store.close()
    resumed = CodingSession(
        cwd=project,
        model=faux.model(context_window=16_384),
        home=home,
        store=SessionStore.open(store.path),
        settings=settings_from_dict({}),
    )  # type: ignore[arg-type]
    assert NOTE not in resumed.system_prompt and resumed.system_prompt == session.system_prompt

    # the command finds the turn-1 entry too
    env = {**os.environ, "HERON_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "heron.cli.main", "sessions", "search", MARKER, "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    hits: list[dict[str, Any]] = json.loads(done.stdout)
    assert any(MARKER in hit["snippet"] and hit["tool"] == "bash" for hit in hits)


async def test_a_flush_at_the_windows_edge_is_sent_with_the_newest_turns(
    tmp_path: Path, home: Path, faux: FauxProvider
) -> None:
    """The whole view leaves the flush no room for an answer (a compaction at the window's
    edge): it is sent with the newest whole turns that fit instead of being skipped, and
    counted on those (the replies' usage, which measured the whole view, is no anchor:
    the strict request check of the test suite would refuse it otherwise)."""
    project = tmp_path / "proj"
    project.mkdir()
    flushes: list[list[str]] = []

    def reply(context: Context) -> FauxReply:
        if is_summary_request(context):
            return text("## Goal\nsummary")
        if last_text(context).startswith(FLUSH_START[:40]):
            flushes.append([m.text() for m in context.messages if isinstance(m, UserMessage)])
            return text("Nothing to save.")
        return text("x" * 30_000)  # one answer alone close to the threshold

    faux.set_fallback(reply)
    store = SessionStore.create(project, home=home)
    session = CodingSession(
        cwd=project,
        model=faux.model(context_window=16_384, max_tokens=2_048),
        store=store,
        home=home,
        settings=settings_from_dict({}),
    )
    for n in range(3):
        await session.prompt(f"part {n}")
    assert flushes and all(f[0] != "part 0" and f[-1].startswith(FLUSH_START[:40]) for f in flushes)
    recorded = [
        e.data
        for e in store.entries()
        if isinstance(e, CustomEntry) and e.custom_type == "heron.context" and e.data.get("op") == "flush"
    ]
    assert len(recorded) == len(flushes) and not any("skipped" in r for r in recorded)


async def test_the_todo_list_is_restored_on_resume_and_shown_in_context(
    tmp_path: Path, home: Path, faux: FauxProvider
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    faux.queue(tool_call("todo", {"todos": TODOS}), text("ok"))
    store = SessionStore.create(project, home=home)
    session = CodingSession(cwd=project, model=faux.model(), store=store, home=home, settings=settings_from_dict({}))
    events: list[Any] = []
    session.subscribe(events.append)
    await session.prompt("plan it")
    assert [e.todos for e in events if e.type == "todos"] == [TODOS]
    store.close()
    resumed = CodingSession(
        cwd=project,
        model=faux.model(),
        store=SessionStore.open(store.path),  # type: ignore[arg-type]
        home=home,
        settings=settings_from_dict({}),
    )
    assert resumed.todos == TODOS and resumed.context_breakdown().todos == TODOS


async def test_a_bad_todo_list_is_a_clear_tool_error(tmp_path: Path, home: Path, faux: FauxProvider) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    faux.queue(tool_call("todo", {"todos": [{"content": "x", "status": "done"}]}), text("ok"))
    session = CodingSession(cwd=project, model=faux.model(), home=home, settings=settings_from_dict({}))
    await session.prompt("plan it")
    result = next(m for m in session.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and "status" in result.text()
    assert session.todos == []
