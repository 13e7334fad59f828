"""Pluggable compaction (issue 27): an extension's ``before_compact`` through the real CLI.

``heron -p`` processes (``--continue`` for each later turn) against a local
OpenAI-compatible server playing a scripted model; the model's ``compact`` call makes the
compaction happen at a known point. The example extension of docs/extensions.md (a
deterministic summariser) supplies the summary: no summary request reaches the server,
the next request carries the extension's summary, the entry records who wrote it, and a
new process replays it. An extension that raises leaves heron's own compaction to run;
one may cancel the compaction or keep another range.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from tests.cli.audit_harness import PlanServer, Rpc, Step, audit, prompt, read, run_print
from tests.cli.test_compact_on_request import SUMMARY_LINE, main_bodies, session_entries, start, summary_bodies
from tests.cli.test_compact_on_request import served as served  # the fixture
from tests.support.http_server import LocalServer

DOCS = Path(__file__).resolve().parents[2] / "docs" / "extensions.md"
# The example of docs/extensions.md, "Pluggable compaction", as the page shows it.
DIGEST = DOCS.read_text().split("`~/.heron/extensions/digest.py`", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
RAISES = """
def register(api):
    @api.before_compact
    def broken(data):
        raise RuntimeError("the summariser service is down")
"""
CANCELS = """
from heron.coding.extensions import CompactionAnswer

def register(api):
    @api.before_compact
    def never(data):
        return CompactionAnswer(cancel=True)
"""
KEEPS_LAST = """
from heron.coding.extensions import CompactionAnswer

def register(api):
    @api.before_compact
    def keep_last(data):
        return CompactionAnswer(summary="short summary", first_kept_entry_id=data.cut_points[-1])
"""
PLANS: dict[int, list[Step]] = {
    0: [read("data/file0.txt", limit=200), read("data/file1.txt", limit=200), ("compact", {"focus": "file 1"})],
    1: [read("data/small.txt")],
}
HEADER = "the digest extension"


def extension(cwd: Path, name: str, source: str) -> None:
    directory = cwd.parent / "home" / "extensions"
    directory.mkdir(exist_ok=True)
    (directory / f"{name}.py").write_text(textwrap.dedent(source))


def compactions(cwd: Path) -> list[dict[str, Any]]:
    return [e for e in session_entries(cwd) if e["type"] == "compaction"]


def test_the_example_extensions_summary_is_used_recorded_and_replayed(
    served: list[LocalServer], tmp_path: Path
) -> None:
    server, cwd, env = start(served, tmp_path, PLANS)
    extension(cwd, "digest", DIGEST)
    run_print(cwd, env, server, 0, "local/m", first=True)
    assert not summary_bodies(server)  # the model was never asked for a summary
    bodies = main_bodies(server)
    after = json.dumps(bodies[-1])
    assert HEADER in after and "- asked: turn 0: follow the plan" in after and "keep in mind: file 1" in after
    assert "000199 file 0:" not in after
    [entry] = compactions(cwd)
    assert HEADER in entry["summary"] and entry["details"]["heronChosenBy"] == "extension digest"
    assert "data/file0.txt" in entry["summary"]  # heron's own lists are appended to it
    count = len(bodies)
    run_print(cwd, env, server, 1, "local/m", first=False)  # a new process: replayed from the file
    resumed = main_bodies(server)[count]
    before = bodies[-1]["messages"]
    assert resumed["messages"][: len(before)] == before
    assert audit(server) == []


def test_an_extension_that_raises_leaves_the_normal_compaction_to_run(
    served: list[LocalServer], tmp_path: Path
) -> None:
    server, cwd, env = start(served, tmp_path, PLANS)
    extension(cwd, "broken", RAISES)
    run_print(cwd, env, server, 0, "local/m", first=True)
    assert summary_bodies(server)  # heron asked the model, as without the extension
    assert SUMMARY_LINE in json.dumps(main_bodies(server)[-1])
    [entry] = compactions(cwd)
    assert "heronChosenBy" not in entry["details"]


def test_an_extension_may_cancel_or_keep_another_range(served: list[LocalServer], tmp_path: Path) -> None:
    server, cwd, env = start(served, tmp_path, PLANS)
    extension(cwd, "never", CANCELS)
    run_print(cwd, env, server, 0, "local/m", first=True)
    assert not compactions(cwd) and not summary_bodies(server)

    other: PlanServer
    other, cwd2, env2 = start(served, tmp_path / "second", PLANS)
    extension(cwd2, "keep_last", KEEPS_LAST)
    run_print(cwd2, env2, other, 0, "local/m", first=True)
    [entry] = compactions(cwd2)
    calls = [
        e["id"]
        for e in session_entries(cwd2)
        if e["type"] == "message" and any(b.get("name") == "compact" for b in e["message"].get("content", []))
    ]
    assert entry["firstKeptEntryId"] == calls[0]  # the last cut point then: the compact call itself
    assert entry["summary"].startswith("short summary")
    assert audit(other) == []


EXITS = """
import sys

def register(api):
    @api.before_compact
    def leave(data):
        sys.exit("the handler wanted heron gone")
"""
EXITS_ON_A_CALL = """
def register(api):
    @api.before_tool_call
    def leave(call):
        raise SystemExit(2)
"""
BLOCKS = """
import time

def register(api):
    @api.before_compact
    def stuck(data):
        time.sleep(3600)
"""


def test_a_handler_that_exits_or_blocks_does_not_end_or_freeze_the_rpc_process(
    served: list[LocalServer], tmp_path: Path
) -> None:
    """Issue 37: ``SystemExit`` from handlers (a tool call's, a compaction's) disables the
    extension and the rpc process serves the next commands; a ``before_compact`` that blocks
    is abandoned at ``extensions.handlerTimeoutMs`` and the compaction goes on."""
    server, cwd, env = start(served, tmp_path, PLANS, extensions={"handlerTimeoutMs": 1_000})
    extension(cwd, "quitter", EXITS)
    extension(cwd, "caller", EXITS_ON_A_CALL)
    extension(cwd, "sleeper", BLOCKS)
    rpc = Rpc(cwd, env, "local/m")
    try:
        server.turn = 0
        events = rpc.command(
            {"type": "prompt", "message": prompt(0)}, lambda e: e.get("type") == "run_end" and e.get("id") == "c1"
        )
        assert events[-1]["type"] == "run_end" and events[-1].get("error") is None, events[-1]
        state = rpc.command({"type": "get_state"}, lambda e: e.get("type") == "response" and e.get("id") == "c2")
        assert state[-1]["success"] is True
        assert rpc.turn(server, 1) == "done with turn 1"
    finally:
        rpc.close()
    assert rpc.child.returncode == 0
    said = "\n".join(str(e.get("message")) for e in events if e.get("type") == "context_warning")
    assert "extension caller" in said and "SystemExit: 2" in said, said
    assert "extension quitter" in said and "SystemExit: the handler wanted heron gone" in said, said
    assert "extension sleeper" in said and "did not return within 1 s" in said, said
    [entry] = compactions(cwd)  # heron's own
    assert "heronChosenBy" not in entry["details"]
    assert summary_bodies(server)
    assert audit(server) == []
