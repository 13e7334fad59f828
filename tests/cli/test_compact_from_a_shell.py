"""After automatic compaction is off, later turns still work; ``/compact`` from a shell.

The real ``heron`` command, one process per turn (``-p --continue``), against a scripted
llama.cpp server with an 8,192-token window. Automatic compaction switches itself off
when a compaction saves too little (docs/context.md, "Compaction", 7-8); every later
``-p --continue`` used to fail once the conversation no longer fit the window, since
nothing compacted any more and ``/compact`` could not be asked for from ``-p``. Now a
request that does not fit is compacted although heron switched it off (and a compaction
that saves enough switches it back on); when the user switched it off, the turn fails
with a clear error naming ``heron compact``, and ``heron compact`` /
``heron -p --continue /compact`` compact the session.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.local_run import Place
from tests.cli.test_small_window_e2e import prompt_of
from tests.support.llama_server import LlamaBehaviour, LlamaServer

WINDOW = 8_192
LONG_SUMMARY = "## Goal\n" + "every word of every turn, repeated at length. " * 450  # ~5,000 tokens: cannot shrink
SHORT_SUMMARY = "## Goal\nremember the words\n## Progress\nturns answered"


def entries(place: Place) -> list[dict[str, Any]]:
    found = list((place.home / "sessions").rglob("*.jsonl"))
    if not found:
        return []
    (session,) = found
    return [json.loads(line) for line in session.read_text().splitlines()]


def auto_switches(place: Place) -> list[dict[str, Any]]:
    return [
        e["data"]
        for e in entries(place)
        if e.get("customType") == "heron.context" and e["data"].get("op") == "auto_compaction"
    ]


def compactions(place: Place) -> int:
    return sum(1 for e in entries(place) if e["type"] == "compaction")


def turn(place: Place, server: LlamaServer, n: int, *extra: str) -> Any:
    flags = ["--base-url", server.base_url, "--model", "gemma"] if n == 0 else ["--continue"]
    return place.run(*flags, *extra, "-p", prompt_of(n), timeout=180)


def test_turns_go_on_after_heron_switched_automatic_compaction_off(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=WINDOW, summary=LONG_SUMMARY))
    place = Place.make(tmp_path)
    try:
        n = 0
        while not auto_switches(place):  # a summary longer than what it replaces: switched off
            done = turn(place, server, n)
            # the turn that switches it off may not fit the window: it fails, clearly
            assert done.returncode == 0 or auto_switches(place), f"turn {n}: {done.stderr[-2000:]}"
            assert "Traceback" not in done.stderr
            n += 1
            assert n < 12, "automatic compaction was never switched off"
        (off,) = auto_switches(place)
        assert off["enabled"] is False and "by" not in off and compactions(place) == 0
        server.behaviour.summary = SHORT_SUMMARY
        for m in range(n, n + 5):  # each turn adds ~900 tokens: the window is passed at once
            done = turn(place, server, m)
            assert done.returncode == 0, f"turn {m}: {done.stderr[-2000:]}"
            assert done.stdout.strip() == "Done."
        assert compactions(place) >= 1
        assert auto_switches(place)[1] == {
            "op": "auto_compaction",
            "enabled": True,
            "reason": "a compaction saved enough again",
        }
        for served in server.served:
            assert not served.rejected and served.prompt_tokens + served.max_tokens <= WINDOW
    finally:
        server.close()


def switch_off_by_user(place: Place) -> None:
    """What rpc ``set_auto_compaction`` records (``by: user``), appended as a new leaf."""
    (session,) = (place.home / "sessions").rglob("*.jsonl")
    last = entries(place)[-1]
    data = {"op": "auto_compaction", "enabled": False, "reason": "the rpc client asked for it", "by": "user"}
    line = {
        "type": "custom",
        "id": "0ff0ff00",
        "parentId": last["id"],
        "timestamp": last["timestamp"],
        "customType": "heron.context",
        "data": data,
    }
    with session.open("a") as fh:
        fh.write(json.dumps(line) + "\n")


def test_a_turn_that_does_not_fit_says_heron_compact_which_compacts(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=WINDOW, summary=SHORT_SUMMARY))
    place = Place.make(tmp_path)
    try:
        done = turn(place, server, 0)
        assert done.returncode == 0, done.stderr
        switch_off_by_user(place)  # the user's switch-off is respected: nothing compacts by itself
        n = 1
        while True:
            done = turn(place, server, n)
            if done.returncode != 0:
                break
            n += 1
            assert n < 12, "the window was never passed"
        assert "Traceback" not in done.stderr
        assert "does not fit the 8,192-token window" in done.stderr
        assert "heron compact --continue" in done.stderr and "/compact" in done.stderr
        assert compactions(place) == 0
        before = len(entries(place))

        # heron compact: the newest session of this directory, with a focus
        done = place.run("compact", "keep", "the", "turn", "numbers", timeout=180)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("Compacted: ~") and "tokens" in done.stdout
        assert compactions(place) == 1 and len(entries(place)) > before  # appended to: nothing lost
        summary_request = [s for s in server.served if s.summary][-1]
        assert "keep the turn numbers" in json.dumps(summary_request.body)
        assert auto_switches(place)[-1]["enabled"] is True  # a manual compaction turns it back on

        # the prompt that did not fit is in the session (answered by the error), and the
        # next turn goes on from the compacted history
        failed = prompt_of(n)
        assert any(failed in json.dumps(e) for e in entries(place) if e["type"] == "message")
        done = place.run("--continue", "-p", "and now?", timeout=180)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "Done."
        sent = json.dumps(server.served[-1].body)
        assert "turns answered" in sent and failed[:200] in sent

        for served in server.served:
            assert not served.rejected and served.prompt_tokens + served.max_tokens <= WINDOW
    finally:
        server.close()


def test_slash_compact_as_the_prompt_of_print_and_json_mode(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=32_768, summary=SHORT_SUMMARY))
    place = Place.make(tmp_path)
    try:
        for n in range(6):  # ~11,000 tokens: more than compaction keeps, below the threshold
            flags = ["--base-url", server.base_url, "--model", "gemma"] if n == 0 else ["--continue"]
            assert place.run(*flags, "-p", prompt_of(n, 2_000), timeout=180).returncode == 0
        assert compactions(place) == 0
        done = place.run("--continue", "-p", "/compact", timeout=180)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("Compacted: ~") and compactions(place) == 1
        assert not [s for s in server.served if not s.summary][6:]  # no model turn: a command
        done = place.run("--continue", "-p", "what now?", timeout=180)
        assert done.returncode == 0 and "turns answered" in json.dumps(server.served[-1].body)
        # json mode: the compaction's events, and run_end with the reply as the answer
        for n in range(7, 10):
            assert place.run("--continue", "-p", prompt_of(n, 2_000), timeout=180).returncode == 0
        done = place.run("--continue", "--mode", "json", "-p", "/compact the words", timeout=180)
        assert done.returncode == 0, done.stderr
        lines = [json.loads(line) for line in done.stdout.splitlines()]
        end = next(e for e in lines if e["type"] == "compaction_end")
        assert end["entry_id"] is not None and lines[-1]["type"] == "run_end" and lines[-1]["error"] is None
        assert "the words" in json.dumps([s.body for s in server.served if s.summary][-1])
    finally:
        server.close()


def test_compact_of_a_session_with_nothing_to_compact_says_so(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=WINDOW))
    place = Place.make(tmp_path)
    try:
        assert turn(place, server, 0).returncode == 0
        before = (next((place.home / "sessions").rglob("*.jsonl"))).read_bytes()
        done = place.run("compact", timeout=180)
        assert done.returncode == 1 and done.stdout == ""
        assert "nothing compacted" in done.stderr and "Traceback" not in done.stderr
        assert (next((place.home / "sessions").rglob("*.jsonl"))).read_bytes().startswith(before)
        done = place.run("compact", "--session", "nosuchsession", timeout=180)
        assert done.returncode == 2 and "nosuchsession" in done.stderr
        done = place.run("compact", "-p", "x", timeout=180)
        assert done.returncode == 2 and "the focus is given as words" in done.stderr
    finally:
        server.close()
