"""The shared summary request through the real ``heron`` command (docs/context.md, "The
summary request"): against a local OpenAI-compatible server, the summary request a
compaction sends is the previous request's own prefix - the same system prompt and tools,
the messages up to the cut, byte for byte on the wire - followed by the instruction, with
``tool_choice: "none"``; the compaction's ledger record says a shared request wrote it.
With ``compaction.request: "separate"`` the summariser's own request is sent instead."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.context.compaction.summary.summary_text import SHARED_SUMMARY_MARK, SUMMARISER_SYSTEM_PROMPT
from tests.cli.audit_harness import PlanServer, Step, audit, make_project, read, run_print, text_of
from tests.cli.test_compact_on_request import FOCUS, MODEL, SETTINGS, main_bodies, session_entries, summary_bodies
from tests.support.http_server import LocalServer

PLANS: dict[int, list[Step]] = {
    0: [read("data/file0.txt", limit=200), read("data/file1.txt", limit=200), ("compact", {"focus": FOCUS})],
}


@pytest.fixture
def served() -> Iterator[list[LocalServer]]:
    made: list[LocalServer] = []
    yield made
    for server in made:
        server.close()


def start(made: list[LocalServer], tmp_path: Path, **settings: Any) -> tuple[PlanServer, Path, dict[str, str]]:
    handler = PlanServer(PLANS, {"m": 1_000_000})
    server = LocalServer(responder=handler)
    made.append(server)
    cwd, env = make_project(tmp_path, server.url, [MODEL], {**SETTINGS, "memory": {"enabled": False}, **settings})
    return handler, cwd, env


def test_the_summary_request_repeats_the_previous_request(served: list[LocalServer], tmp_path: Path) -> None:
    server, cwd, env = start(served, tmp_path)
    run_print(cwd, env, server, 0, "local/m", first=True)
    (summary,) = summary_bodies(server)
    index = server.bodies.index(summary)
    previous = server.bodies[index - 1]
    assert previous in main_bodies(server)
    assert summary["tools"] == previous["tools"] and summary["tool_choice"] == "none"
    assert "tool_choice" not in previous
    *prefix, instruction = summary["messages"]
    assert prefix == previous["messages"][: len(prefix)] and len(prefix) > 2
    assert instruction["role"] == "user" and text_of(instruction).startswith(SHARED_SUMMARY_MARK)
    assert FOCUS in text_of(instruction)
    ledger = [e["data"] for e in session_entries(cwd) if e.get("customType") == "heron.ledger"]
    (compaction,) = [r for r in ledger if r["kind"] == "compaction"]
    assert compaction["detail"]["summary_request"]["mode"] == "shared"
    assert audit(server) == []


def test_the_separate_setting_sends_the_summarisers_own_request(served: list[LocalServer], tmp_path: Path) -> None:
    server, cwd, env = start(served, tmp_path, compaction={**SETTINGS["compaction"], "request": "separate"})
    run_print(cwd, env, server, 0, "local/m", first=True)
    summaries = summary_bodies(server)
    assert summaries and all(text_of(b["messages"][0]) == SUMMARISER_SYSTEM_PROMPT for b in summaries)
    assert all("tools" not in b and "tool_choice" not in b for b in summaries)
