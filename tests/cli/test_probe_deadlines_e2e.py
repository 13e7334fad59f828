"""The real ``heron`` command against local servers that stall its probes (issue 37).

- A server that never completes a probe's answer (silent, or trickling a byte every half
  second) does not hold heron: every probe has an overall deadline, heron sends its first
  request with heron's default window and says so, and the next process (a minute's
  grace) asks nothing and says so again.
- A process killed while it waits on the window probe leaves the prompt in the session
  file, and ``heron -p --continue`` sends it (or, given a new prompt, puts it in the
  conversation with the note that it went unanswered).
- What a server lacks (``/apply-template``, ``/tokenize``) is asked by the first process
  only, until the cache expires.

Timing: each stalled run is compared with the same run against a server that answers
(measured here, on this machine's load), plus the probes' deadlines, plus a generous
margin - without the deadlines these runs never end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from heron.ai.server_tokens import COUNT_DEADLINE_S
from heron.ai.server_window import PROBE_DEADLINE_S
from heron.coding.model_limits import ANSWERS_FILE, CACHE_SECONDS
from heron.coding.unanswered import NOTE_TEXT
from tests.cli.local_run import Place
from tests.cli.test_print_json_e2e import heron_command
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.llama_server import LlamaBehaviour, LlamaServer
from tests.support.sse import openai_reply

MARGIN_S = 30.0  # a loaded machine's variance; a hung heron never ends at all
PROMPT = "my prompt: list the herons of Europe"


def user_texts(body: dict[str, object]) -> list[str]:
    texts = []
    for message in body["messages"]:  # type: ignore[attr-defined]
        if message["role"] == "user":
            content = message["content"]
            texts.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return texts


def timed_run(place: Place, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = place.run(*args, timeout=180)
    return done, time.monotonic() - started


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> float:
    """Seconds a ``heron -p`` against an answering llama.cpp server takes here."""
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096))
    try:
        done, elapsed = timed_run(Place.make(tmp_path_factory.mktemp("baseline")), *flags(server), "-p", "hi")
        assert done.returncode == 0, done.stderr
        return elapsed
    finally:
        server.close()


def flags(server: LlamaServer) -> tuple[str, ...]:
    return ("--base-url", server.base_url, "--model", "gemma")


@pytest.mark.parametrize(
    ("path", "stall", "window_known"),
    [
        ("/v1/models", "trickle-body", True),  # /props still says the window
        ("/props", "trickle-head", False),
        ("/props", "silent", False),
        ("/apply-template", "trickle-body", True),
        ("/tokenize", "silent", True),
    ],
)
def test_a_stalled_probe_never_holds_the_first_request(
    tmp_path: Path, baseline: float, path: str, stall: str, window_known: bool
) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096, stall={path: stall}))
    place = Place.make(tmp_path)
    try:
        done, elapsed = timed_run(place, *flags(server), "-p", "hello")
        assert done.returncode == 0, done.stderr
        assert elapsed < baseline + PROBE_DEADLINE_S + COUNT_DEADLINE_S + MARGIN_S, elapsed
        (turn,) = server.served
        if window_known:  # planned for the server's 4,096: a quarter of it at most for the answer
            assert turn.max_tokens <= 1_024 and "did not" not in done.stderr, done.stderr
        else:  # heron's default window, said on stderr
            assert turn.max_tokens == 16_384
            assert "did not answer /props in time" in done.stderr and "--context-window" in done.stderr
        asked = len(server.requests)
        again, elapsed = timed_run(place, "--continue", "-p", "and again")
        assert again.returncode == 0, again.stderr
        assert elapsed < baseline + MARGIN_S  # nothing stalled is asked again within the minute
        assert [r.path for r in server.requests[asked:]][-1] == "/v1/chat/completions"
        assert path not in [r.path for r in server.requests[asked:]]
        assert ("did not say its context window in time" in again.stderr) == (not window_known), again.stderr
    finally:
        server.close()


def test_a_server_that_accepts_and_never_answers_any_probe(tmp_path: Path, baseline: float) -> None:
    """Every probe path silent; only the chat request is answered."""

    def respond(request: Recorded) -> Reply:
        if request.path == "/v1/chat/completions":
            return openai_reply("done", prompt_tokens=900, completion_tokens=1)
        return Reply(stall="silent")

    server = LocalServer(respond, answers_probes=True)
    place = Place.make(tmp_path)
    try:
        done, elapsed = timed_run(place, "--base-url", server.url + "/v1", "--model", "m", "-p", "hello")
        assert done.returncode == 0, done.stderr
        assert done.stdout == "done\n"
        assert elapsed < baseline + PROBE_DEADLINE_S + MARGIN_S, elapsed
        assert "did not answer /v1/models" in done.stderr, done.stderr
    finally:
        server.close()


def session_lines(place: Place) -> list[dict[str, object]]:
    (path,) = (place.home / "sessions").rglob("*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def killed_during_the_probe(place: Place, server: LlamaServer) -> None:
    """``heron -p PROMPT`` killed (-9) while the server holds its window probe."""
    child = subprocess.Popen(
        [*heron_command(), *flags(server), "-p", PROMPT],
        cwd=place.cwd,
        env=place.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while "/v1/models" not in server.paths():
            assert child.poll() is None, "heron ended before it probed"
            assert time.monotonic() < deadline, "heron never probed"
            time.sleep(0.05)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    assert not server.served, "no request was sent"
    journal = [e for e in session_lines(place) if e.get("customType") == "heron.prompt"]
    assert len(journal) == 1 and PROMPT in json.dumps(journal[0]), session_lines(place)
    del server.behaviour.stall["/v1/models"]  # the server answers from now on


def test_a_kill_during_the_probe_keeps_the_prompt_and_continue_sends_it(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096, stall={"/v1/models": "silent"}))
    place = Place.make(tmp_path)
    try:
        killed_during_the_probe(place, server)
        done = place.run("-p", "--continue")  # no flags: the session's server, recorded before the probe
        assert done.returncode == 0, done.stderr
        assert "the prompt the last run stopped before sending: my prompt" in done.stderr, done.stderr
        (turn,) = server.served
        assert user_texts(turn.body) == [PROMPT]  # once, as the killed run would have sent it
        assert turn.max_tokens <= 1_024  # the window was asked for this time
        nothing = place.run("-p", "--continue")
        assert nothing.returncode == 2 and "none to send again" in nothing.stderr
    finally:
        server.close()


def test_a_new_prompt_after_a_kill_during_the_probe_carries_the_lost_one(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096, stall={"/v1/models": "trickle-body"}))
    place = Place.make(tmp_path)
    try:
        killed_during_the_probe(place, server)
        done = place.run("--continue", "-p", "something else")
        assert done.returncode == 0, done.stderr
        (turn,) = server.served
        assert user_texts(turn.body) == [PROMPT, NOTE_TEXT, "something else"]
        again = place.run("--continue", "-p", "and more")  # restart equivalence: the same history
        assert again.returncode == 0, again.stderr
        assert user_texts(server.served[-1].body)[:3] == [PROMPT, NOTE_TEXT, "something else"]
    finally:
        server.close()


def test_endpoints_a_server_lacks_are_asked_by_the_first_process_only(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096, apply_template=False, tokenize=False))
    place = Place.make(tmp_path)
    try:
        assert place.run(*flags(server), "-p", "one").returncode == 0
        probes = [p for p in server.paths() if p != "/v1/chat/completions"]
        assert probes == ["/v1/models", "/props", "/apply-template", "/tokenize"]
        for n in range(2):
            asked = len(server.requests)
            done = place.run("--continue", "-p", f"turn {n}")
            assert done.returncode == 0, done.stderr
            assert server.paths()[asked:] == ["/v1/chat/completions"]  # no probe at all
        # past the cache's life, they are asked again (a server restarted with other flags)
        for name in ("server-windows.json", ANSWERS_FILE.name):
            cache = place.home / "cache" / name
            records = json.loads(cache.read_text())
            for record in records.values():
                record["at"] -= CACHE_SECONDS + 1
            cache.write_text(json.dumps(records))
        asked = len(server.requests)
        assert place.run("--continue", "-p", "later").returncode == 0
        # (not /tokenize: the answers have calibrated the session's counts by now)
        assert server.paths()[asked:] == ["/v1/models", "/props", "/apply-template", "/v1/chat/completions"]
    finally:
        server.close()
