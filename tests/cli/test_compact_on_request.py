"""Compaction on request (issue 27): the model's ``compact`` tool and a hook's request.

Through the real ``heron`` command (``-p``, a new process per turn with ``--continue``)
against a local OpenAI-compatible server that plays a scripted model. The ``compact``
call's focus reaches the summary request; the request after the call carries the
summary and no longer the results it replaced; the next process sends the same history
(derived from the session file). A compaction that would save less than 5% is not
written. A ``UserPromptSubmit`` hook that answers ``{"compact": "..."}`` gets a
compaction before the turn's first request, with its focus.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.audit_harness import (
    FLUSH_MARK,
    PlanServer,
    Step,
    audit,
    make_project,
    read,
    run_print,
    text_of,
)
from tests.support.http_server import LocalServer
from tests.support.summaries import is_summary_body

MODEL = {"id": "m", "contextWindow": 32_768, "maxTokens": 4_096}
SETTINGS: dict[str, Any] = {
    "defaultTools": ["read", "bash", "edit", "write", "compact"],
    "compaction": {"keepRecentTokens": 2_000},
}
FOCUS = "the line numbers of file 1"
SUMMARY_LINE = "earlier turns done"  # in the plan server's summary


def session_entries(cwd: Path) -> list[dict[str, Any]]:
    home = cwd.parent / "home"
    files = sorted(home.rglob("*.jsonl"))
    files = [f for f in files if "sessions" in f.parts]
    assert len(files) == 1, files
    return [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]


def main_bodies(server: PlanServer) -> list[dict[str, Any]]:
    """The session's own requests (not the summaries, not the memory flush's)."""
    return [
        b for b in server.bodies if not is_summary_body(b) and not text_of(b["messages"][-1]).startswith(FLUSH_MARK)
    ]


def flushes(server: PlanServer) -> int:
    return sum(1 for b in server.bodies if text_of(b["messages"][-1]).startswith(FLUSH_MARK))


def summary_bodies(server: PlanServer) -> list[dict[str, Any]]:
    return [b for b in server.bodies if is_summary_body(b)]


@pytest.fixture
def served() -> Iterator[list[LocalServer]]:
    made: list[LocalServer] = []
    yield made
    for server in made:
        server.close()


def start(made: list[LocalServer], tmp_path: Path, plans: dict[int, list[Step]], **settings: Any) -> Any:
    handler = PlanServer(plans, {"m": 1_000_000})
    server = LocalServer(responder=handler)
    made.append(server)
    cwd, env = make_project(tmp_path, server.url, [MODEL], {**SETTINGS, **settings})
    return handler, cwd, env


def test_the_models_compact_call_compacts_before_its_next_request_with_its_focus(
    served: list[LocalServer], tmp_path: Path
) -> None:
    plans: dict[int, list[Step]] = {
        0: [read("data/file0.txt", limit=200), read("data/file1.txt", limit=200), ("compact", {"focus": FOCUS})],
        1: [read("data/small.txt")],
    }
    server, cwd, env = start(served, tmp_path, plans)
    run_print(cwd, env, server, 0, "local/m", first=True)
    summaries = summary_bodies(server)
    assert summaries and FOCUS in json.dumps(summaries[-1])
    bodies = main_bodies(server)
    after = json.dumps(bodies[-1])  # the answer to the compact call
    assert SUMMARY_LINE in after and "000199 file 0:" not in after  # the old reads are summarised
    assert SUMMARY_LINE not in json.dumps(bodies[-2])
    compactions = [e for e in session_entries(cwd) if e["type"] == "compaction"]
    assert len(compactions) == 1 and flushes(server) == 1  # the memory flush, once, before it
    count = len(bodies)
    run_print(cwd, env, server, 1, "local/m", first=False)
    resumed = main_bodies(server)[count]
    # the new process sends the compacted history it reads from the session file: the
    # previous request, its answer and the new prompt
    before = bodies[-1]["messages"]
    assert resumed["messages"][: len(before)] == before
    assert SUMMARY_LINE in json.dumps(resumed) and "000199 file 0:" not in json.dumps(resumed)
    assert audit(server) == []


def test_a_compact_call_with_nothing_to_save_writes_nothing(served: list[LocalServer], tmp_path: Path) -> None:
    plans: dict[int, list[Step]] = {0: [("compact", {})]}
    server, cwd, env = start(served, tmp_path, plans)
    run_print(cwd, env, server, 0, "local/m", first=True)
    assert not [e for e in session_entries(cwd) if e["type"] == "compaction"]
    assert "Compaction requested" in json.dumps(main_bodies(server)[-1])


def test_a_user_prompt_submit_hook_asks_for_a_compaction(served: list[LocalServer], tmp_path: Path) -> None:
    plans: dict[int, list[Step]] = {0: [read("data/file0.txt", limit=200), read("data/file1.txt", limit=200)]}
    server, cwd, env = start(served, tmp_path, plans)
    run_print(cwd, env, server, 0, "local/m", first=True)
    assert not summary_bodies(server)
    settings_file = cwd.parent / "home" / "settings.json"
    settings = json.loads(settings_file.read_text())
    hook = cwd.parent / "hook.py"
    hook.write_text(f"print({json.dumps(json.dumps({'compact': FOCUS}))})\n")
    command = f"{sys.executable} {hook}"
    settings["hooks"] = {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]}
    settings_file.write_text(json.dumps(settings))
    count = len(main_bodies(server))
    run_print(cwd, env, server, 1, "local/m", first=False)
    summaries = summary_bodies(server)
    assert summaries and FOCUS in json.dumps(summaries[-1])
    first = json.dumps(main_bodies(server)[count])  # the turn's first request: already compacted
    assert SUMMARY_LINE in first and "000199 file 0:" not in first
    compactions = [e for e in session_entries(cwd) if e["type"] == "compaction"]
    assert len(compactions) == 1
