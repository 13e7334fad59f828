"""The local-server path against a real ``llama-server`` and a real model (marker ``real_server``).

The server is the one ``.ci/run`` builds (``.ci/llama-server``: ``HERON_LLAMA_SERVER_BIN``,
``HERON_LLAMA_MODEL``), started here with a 4,096-token window and the model's
end-of-sequence token favoured (the base model never ends an answer by itself:
:mod:`tests.support.real_llama`), or one already running named by
``HERON_LLAMA_SERVER_URL`` (its root URL, started with ``-c 4096 --logit-bias 1+6``;
``HERON_LLAMA_SERVER_MODEL`` is the model name sent, default ``local``). Without either
the tests skip - unless ``HERON_REAL_SERVER_REQUIRED=1`` (``.ci/run`` sets it), where
that is a failure. A recording proxy sits in front of the server
(:mod:`tests.support.real_llama`): it counts rejected requests and reads the server's own
prompt-token counts.

heron runs as a user runs it, with nothing configured but ``--base-url`` and ``--model``:
the window comes from the server (``/props``), the output limit is a quarter of it,
counts are calibrated by the server's reports. The tests assert on behaviour - exit codes,
rejected requests, the session file, the counts - never on the model's words.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.local_run import Place
from tests.cli.test_print_json_e2e import heron_command
from tests.support.real_llama import Exchange, LlamaProcess, RecordingProxy, start_llama_server
from tests.support.summaries import is_summary_body

MODEL = os.environ.get("HERON_LLAMA_SERVER_MODEL", "local")
WINDOW = 4_096
PLAN_TOLERANCE = 1.2  # the bound: heron's plan within 1.2x of the server's count, both ways
_PLAN = re.compile(r"request turn: planned (\d+) tokens, window (\d+), ratio ([\d.]+)")
_WORDS = [
    *("river", "mountain", "garden", "window", "letter", "morning", "yellow", "quiet", "market", "summer"),
    *("engine", "pocket", "silver", "harbor", "forest", "station", "paper", "candle", "winter", "bridge"),
    *("orange", "doctor", "island", "kitchen", "button", "travel", "animal", "number", "picture", "basket"),
]

pytestmark = pytest.mark.real_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RecordingProxy]:
    url = os.environ.get("HERON_LLAMA_SERVER_URL", "").rstrip("/")
    binary, model = os.environ.get("HERON_LLAMA_SERVER_BIN", ""), os.environ.get("HERON_LLAMA_MODEL", "")
    running: LlamaProcess | None = None
    if not url and binary and model:
        running = start_llama_server(binary, model, tmp_path_factory.mktemp("llama") / "server.log", n_ctx=WINDOW)
        url = running.url
    if not url:
        missing = (
            "no llama.cpp server: set HERON_LLAMA_SERVER_BIN and HERON_LLAMA_MODEL (.ci/llama-server)"
            " or HERON_LLAMA_SERVER_URL"
        )
        if os.environ.get("HERON_REAL_SERVER_REQUIRED") == "1":
            pytest.fail(missing, pytrace=False)
        pytest.skip(missing)
    proxy = RecordingProxy(url.removesuffix("/v1"))
    try:
        yield proxy
    finally:
        proxy.close()
        if running is not None:
            running.stop()


def base_flags(proxy: RecordingProxy) -> list[str]:
    return ["--base-url", proxy.url + "/v1", "--model", MODEL]


def run(place: Place, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``heron`` in ``place`` with ``HERON_LOG=debug``: its stderr then says what it planned
    for each request (:meth:`heron.coding.requests.RequestPath.plan_line`)."""
    return subprocess.run(
        [*heron_command(), *args],
        cwd=place.cwd,
        env={**place.env(), "HERON_LOG": "debug"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def words(turn: int, count: int) -> str:
    """``count`` plain words (about one real token each), different every turn."""
    return " ".join(_WORDS[(i * 7 + turn * 13 + i // len(_WORDS)) % len(_WORDS)] for i in range(count))


def prompt_of(turn: int, count: int = 960) -> str:
    return f"Turn {turn}: remember these words. {words(turn, count)}"


def entries(home: Path) -> list[dict[str, Any]]:
    (session,) = (home / "sessions").rglob("*.jsonl")
    return [json.loads(line) for line in session.read_text().splitlines()]


def chats(exchanges: list[Exchange]) -> list[Exchange]:
    return [e for e in exchanges if e.is_chat]


def assert_well_formed(home: Path) -> None:
    """Every entry's parent is an earlier entry; every tool result follows its call."""
    seen: set[str] = set()
    for entry in entries(home)[1:]:
        parent = entry.get("parentId")
        assert parent is None or parent in seen, f"entry {entry.get('id')} has an unknown parent {parent}"
        seen.add(entry["id"])


def plans(stderr: str) -> list[tuple[int, int, float]]:
    return [(int(m[1]), int(m[2]), float(m[3])) for m in _PLAN.finditer(stderr)]


def request_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ": request " in line]


def asked(exchange: Exchange) -> int:
    """The output limit a chat request asked for (0 when it asked none)."""
    limit = exchange.body.get("max_completion_tokens", exchange.body.get("max_tokens"))
    return limit if isinstance(limit, int) else 0


def test_one_word_prompt_within_a_minute(server: RecordingProxy, tmp_path: Path) -> None:
    place = Place.make(tmp_path)
    mark = server.mark()
    started = time.monotonic()
    done = run(place, *base_flags(server), "-p", "Hello", timeout=120)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    assert took < 60, f"a one-word prompt took {took:.0f} s"
    sent = chats(server.since(mark))
    assert sent and not any(e.rejected for e in sent)
    assert all(0 < asked(e) <= WINDOW // 4 for e in sent)  # a quarter of the window the server said
    (plan,) = plans(done.stderr)[:1]
    assert (
        sent[0].prompt_tokens
        and sent[0].prompt_tokens / PLAN_TOLERANCE <= plan[0] <= sent[0].prompt_tokens * PLAN_TOLERANCE
    )
    assert any(e.get("customType") == "heron.server" for e in entries(place.home))


def test_a_38_kb_prompt_is_sent_as_its_head_and_a_file(server: RecordingProxy, tmp_path: Path) -> None:
    place = Place.make(tmp_path)
    prompt = prompt_of(0, 5_600)
    assert len(prompt.encode()) >= 38_000
    mark = server.mark()
    done = run(place, *base_flags(server), "-p", prompt)
    assert done.returncode == 0, done.stderr[-3000:]
    sent = chats(server.since(mark))
    assert sent and not any(e.rejected for e in sent)
    users = [e["message"] for e in entries(place.home) if e.get("type") == "message" and e["message"]["role"] == "user"]
    text = json.dumps(users[-1])
    assert "too large for the context window" in text
    paths = re.findall(r"(/[^\s\"']+\.(?:md|txt))", text)
    assert paths and Path(paths[0]).is_file() and len(Path(paths[0]).read_text()) >= len(prompt) - 100


def test_twelve_turns_compact_resume_and_count_like_the_server(server: RecordingProxy, tmp_path: Path) -> None:
    place = Place.make(tmp_path)
    paired: list[tuple[int, float, int]] = []  # heron's plan, its ratio, the server's count
    start, side_logged = server.mark(), 0
    for turn in range(12):
        # Nothing configured but the server and model, then `--continue` and nothing else.
        flags = base_flags(server) if turn == 0 else ["--continue"]
        mark = server.mark()
        done = run(place, *flags, "-p", prompt_of(turn))
        assert done.returncode == 0, f"turn {turn}: {done.stderr[-3000:]}"
        sent = chats(server.since(mark))
        rejected = [e for e in sent if e.rejected]
        assert not rejected, f"turn {turn}: {len(rejected)} request(s) rejected"
        assert all(0 < asked(e) <= WINDOW // 4 for e in sent), [asked(e) for e in sent]
        # The proxy records an exchange when its answer ends (or its client leaves). A
        # background summary is asked for beside the turn, and a `-p` process waits for it
        # after its answer and keeps it for the process that compacts (docs/context.md,
        # "Background compaction"). So the server sees exactly heron's turn requests, whose
        # plans are paired with them in order, and over the session at most the side
        # requests heron logged.
        side_logged += sum(": request turn" not in line for line in request_lines(done.stderr))
        turns = [e for e in sent if not is_summary_body(e.body)]
        assert not any(e.aborted for e in turns), f"turn {turn}: a turn request was left unfinished"
        planned = plans(done.stderr)
        assert len(planned) == len(turns), f"turn {turn}: plans {planned}, turn requests {len(turns)}"
        for (plan, _window, ratio), exchange in zip(planned, turns, strict=True):
            if exchange.prompt_tokens:
                paired.append((plan, ratio, exchange.prompt_tokens))
    side_seen = [e for e in chats(server.since(start)) if is_summary_body(e.body)]
    assert len(side_seen) <= side_logged, f"the server saw {len(side_seen)} summaries, heron logged {side_logged}"
    log = entries(place.home)
    assert sum(1 for e in log if e.get("type") == "compaction") >= 1
    assert any((e.get("data") or {}).get("op") == "calibration" for e in log)
    assert_well_formed(place.home)

    # The same session resumed with no flag at all: its server and model come from the file.
    mark = server.mark()
    done = run(place, "--continue", "-p", "One more word.")
    assert done.returncode == 0, done.stderr[-3000:]
    sent = chats(server.since(mark))
    assert sent and not any(e.rejected for e in sent)
    assert_well_formed(place.home)

    # Once calibrated, heron's plan is within 1.2x of the server's count on both sides: an
    # undercount gets a request rejected, an overcount compacts (or refuses) for nothing.
    # This template drops the tool schemas; heron sees that (/apply-template) and leaves
    # them out of its count (docs/configuration.md, "A local server, with nothing configured").
    calibrated = [(plan, actual) for plan, ratio, actual in paired if ratio != 1.0]
    assert calibrated, f"no request was planned with a calibrated count: {paired}"
    for plan, actual in calibrated:
        assert actual / PLAN_TOLERANCE <= plan <= actual * PLAN_TOLERANCE, (plan, actual, paired)


def test_an_rpc_turn(server: RecordingProxy, tmp_path: Path) -> None:
    place = Place.make(tmp_path)
    process = subprocess.Popen(
        [*heron_command(), "--mode", "rpc", *base_flags(server)],
        cwd=place.cwd,
        env=place.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[dict[str, Any]] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.strip():
                lines.put(json.loads(line))

    threading.Thread(target=read, daemon=True).start()

    def send(command: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write(json.dumps(command) + "\n")
        process.stdin.flush()

    def until(test: Any, timeout: float = 180) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            event = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if test(event):
                return event

    try:
        mark = server.mark()
        send({"id": "1", "type": "prompt", "message": prompt_of(1, 300)})
        assert until(lambda e: e.get("id") == "1")["success"]
        until(lambda e: e.get("type") == "agent_end")
        send({"id": "2", "type": "get_state"})
        state = until(lambda e: e.get("id") == "2")["data"]
        assert state["context"]["contextWindow"] == WINDOW
        assert "/props" in state["context"]["windowSource"]
        sent = chats(server.since(mark))
        assert sent and not any(e.rejected for e in sent)
        assert sent[-1].prompt_tokens and state["context"]["tokens"] > 0
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)
    assert process.returncode == 0
    assert_well_formed(place.home)
