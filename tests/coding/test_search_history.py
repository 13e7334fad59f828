"""The search_history tool, and recall end to end: a marker printed by a command in turn 1
of a CodingSession is found after a compaction, by the tool (as the model sees it) and
by ``heron sessions search`` run as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from heron.agent.tools import ToolError
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.ai.types import Context, ToolResultMessage, UserMessage
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.coding.tools import DEFAULT_TOOLS, create_tools
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.params import SearchHistoryParams
from heron.coding.tools.search_history import SearchHistoryTool
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.session.entries import CompactionEntry, MessageEntry
from heron.session.store import SessionStore

MARKER = "MARKER-7f3a-e2e"


def run(tool: SearchHistoryTool, **params: object) -> str:
    import asyncio

    result = asyncio.run(tool.execute("c", SearchHistoryParams(**params), AbortSignal(), lambda _: None))  # type: ignore[arg-type]
    return result.content[0].text  # type: ignore[union-attr]


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[ToolEnv, SessionStore]:
    home = tmp_path / "home"
    cwd = tmp_path / "proj"
    cwd.mkdir()
    store = SessionStore.create(cwd, home=home)
    store.append_message(UserMessage(content="where is the config.yaml file?"))
    store.materialize()
    return ToolEnv(cwd=cwd, session_id=store.session_id, home=home), store


def test_is_a_default_tool() -> None:
    assert "search_history" in DEFAULT_TOOLS
    env = ToolEnv(cwd=Path.cwd())
    assert [t.name for t in create_tools(env, ["search_history", "json_query"])] == ["search_history", "json_query"]


def test_returns_snippet_entry_role_time_and_how_to_read_more(recorded: tuple[ToolEnv, SessionStore]) -> None:
    env, store = recorded
    out = run(SearchHistoryTool(env), query="config.yaml")
    entry_id = store.leaf_id
    assert f"entry {entry_id}" in out and "1. user" in out
    assert "**config.yaml**" in out
    assert f"json_query path={store.path}" in out and f'select(.id == "{entry_id}")' in out


def test_no_matches_and_scope_project(recorded: tuple[ToolEnv, SessionStore]) -> None:
    env, _ = recorded
    assert run(SearchHistoryTool(env), query="nothingmatchesthis").startswith("No matches")
    assert "session " in run(SearchHistoryTool(env), query="config", scope="project")  # other sessions are named


def test_an_fts5_syntax_error_is_a_tool_error(recorded: tuple[ToolEnv, SessionStore]) -> None:
    env, _ = recorded
    with pytest.raises(ToolError, match="invalid search query"):
        run(SearchHistoryTool(env), query='"config AND')


def test_an_unrecorded_session_cannot_search_its_own_history(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="not recorded"):
        run(SearchHistoryTool(ToolEnv(cwd=tmp_path, session_id=None, home=tmp_path)), query="x")


def test_output_obeys_the_byte_limit(recorded: tuple[ToolEnv, SessionStore]) -> None:
    from dataclasses import replace

    env, store = recorded
    for i in range(40):
        store.append_message(UserMessage(content=f"config number {i} " + "filler " * 50))
    small = replace(env, limits=replace(env.limits, max_bytes=1_000))
    out = run(SearchHistoryTool(small), query="config", limit=40)
    assert len(out.encode()) < 1_200 and "[Output truncated" in out


async def test_marker_from_turn_one_is_found_after_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, faux: FauxProvider
) -> None:
    home = tmp_path / "home"
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.setenv("HERON_HOME", str(home))
    script = [
        # long enough that a summary shrinks the context (a compaction never makes it grow)
        tool_call("bash", {"command": f"echo {MARKER}"}),
        text("printed it. " + "It is a fine marker. " * 150),
        text("noted. " + "Something else entirely. " * 150),
        tool_call("search_history", {"query": MARKER}),
        text("found it again"),
    ]

    def reply(context: Context) -> object:
        if is_summary_request(context):
            return text("## Goal\nprint things")
        return script.pop(0)

    faux.set_fallback(reply)  # type: ignore[arg-type]
    store = SessionStore.create(project)
    model = faux.model(context_window=128_000, max_tokens=8_192)
    session = CodingSession(
        cwd=project, model=model, store=store, settings=settings_from_dict({"compaction": {"keepRecentTokens": 1}})
    )
    await session.prompt("print the marker")
    await session.prompt("now something else")
    assert await session.compact() is not None
    await session.prompt("what was the marker?")

    entries = SessionStore.open(store.path, read_only=True).entries()  # type: ignore[arg-type]
    assert any(isinstance(e, CompactionEntry) for e in entries)
    bash_result = next(
        e
        for e in entries
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage) and e.message.tool_name == "bash"
    )
    # what the model got back from search_history
    sent = faux.requests[-1].messages
    found = next(m for m in sent if isinstance(m, ToolResultMessage) and m.tool_name == "search_history")
    assert not found.is_error
    assert f"entry {bash_result.id}" in found.text() and MARKER.split("-")[0] in found.text()

    env = {**os.environ, "HERON_HOME": str(home)}
    cli = [sys.executable, "-m", "heron.cli.main", "sessions", "search", MARKER]
    done = subprocess.run([*cli, "--json"], cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert {"session", "entry_id", "role", "tool", "timestamp", "snippet"} <= set(hits[0])
    by_entry = {h["entry_id"]: h for h in hits}
    assert by_entry[bash_result.id]["role"] == "toolResult" and by_entry[bash_result.id]["tool"] == "bash"
    assert by_entry[bash_result.id]["session"] == store.session_id
    plain = subprocess.run(
        [*cli, "--session", store.session_id[:8]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert plain.returncode == 0 and bash_result.id in plain.stdout
    none = subprocess.run(
        [*cli[:-1], "nosuchwordanywhere", "--all"], cwd=project, env=env, capture_output=True, text=True, timeout=60
    )
    assert none.returncode == 1 and "no matches" in none.stdout
    bad = subprocess.run([*cli[:-1], '"unclosed'], cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "invalid search query" in bad.stderr
