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

No wait here is a fixed number of seconds: the suite measures the server's speed when it
starts (a short completion: prompt and generated tokens a second) and how long a heron
process takes to start, and every deadline is derived from them
(:class:`tests.support.real_llama.Pace`); the speed follows the slowest the server reports
for any later request. Each test gets a server of its own, started for it and stopped
after it, so a test that fails (a heron process killed at its deadline, a request the
server is still working on) cannot take the next one down; a server named by
``HERON_LLAMA_SERVER_URL`` cannot be restarted, so each test first waits until its slots
are idle.

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
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli.local_run import Place
from tests.cli.test_print_json_e2e import heron_command
from tests.support.real_llama import (
    MARGIN,
    Exchange,
    LlamaProcess,
    Pace,
    RecordingProxy,
    free_port,
    measure_speed,
    reported_timings,
    start_llama_server,
    wait_idle,
)
from tests.support.summaries import is_side_body

MODEL = os.environ.get("HERON_LLAMA_SERVER_MODEL", "local")
WINDOW = 4_096
PLAN_TOLERANCE = 1.2  # the bound: heron's plan within 1.2x of the server's count, both ways
_PLAN = re.compile(r"request turn: planned (\d+) tokens, window (\d+), ratio ([\d.]+)")
_WORDS = [
    *("river", "mountain", "garden", "window", "letter", "morning", "yellow", "quiet", "market", "summer"),
    *("engine", "pocket", "silver", "harbor", "forest", "station", "paper", "candle", "winter", "bridge"),
    *("orange", "doctor", "island", "kitchen", "button", "travel", "animal", "number", "picture", "basket"),
]

# The most requests one heron process sends here: its turn, a compaction's summary in three
# chunks and their merge (a 4,096 window: docs/configuration.md, "The real server in CI"),
# and a background summary.
REQUESTS_PER_PROCESS = 6
_STARTUP_RUNS = 2


@dataclass
class Source:
    """Where each test's server comes from: one the suite starts (``binary`` on ``model``)
    or one already running (``url``)."""

    url: str
    binary: str
    model: str
    logs: Path

    def start(self, name: str) -> tuple[str, LlamaProcess | None]:
        if self.url:
            return self.url, None
        running = start_llama_server(self.binary, self.model, self.logs / f"{name}.log", n_ctx=WINDOW)
        return running.url, running


def heron_startup(tmp: Path) -> float:
    """How long a heron process takes with no model work: the way a turn starts (the
    provider loaded, the session begun, the server probed), against a port nothing listens
    on, so it ends at the probe with an error. The slowest of a few, under the machine's load."""
    place = Place.make(tmp)
    slowest = 0.0
    for _ in range(_STARTUP_RUNS):
        flags = ["--base-url", f"http://127.0.0.1:{free_port()}/v1", "--model", MODEL]
        started = time.monotonic()
        done = place.run(*flags, "-p", "Hello", timeout=600)  # only stops a hang: nothing is known yet
        slowest = max(slowest, time.monotonic() - started)
        assert done.returncode != 0, done.stdout[-2000:]
    return slowest


def report(config: pytest.Config, line: str) -> None:
    """A line on the terminal, past the output capture (the figures behind the deadlines)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(line)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[tuple[Source, Pace]]:
    """The server's source and the pace measured once, as the suite starts (reported then,
    and again at the end: the slowest the server reported meanwhile)."""
    url = os.environ.get("HERON_LLAMA_SERVER_URL", "").rstrip("/").removesuffix("/v1")
    binary, model = os.environ.get("HERON_LLAMA_SERVER_BIN", ""), os.environ.get("HERON_LLAMA_MODEL", "")
    if not url and not (binary and model):
        missing = (
            "no llama.cpp server: set HERON_LLAMA_SERVER_BIN and HERON_LLAMA_MODEL (.ci/llama-server)"
            " or HERON_LLAMA_SERVER_URL"
        )
        if os.environ.get("HERON_REAL_SERVER_REQUIRED") == "1":
            pytest.fail(missing, pytrace=False)
        pytest.skip(missing)
    found = Source(url, binary, model, tmp_path_factory.mktemp("llama"))
    base, running = found.start("speed")
    try:
        pace = measure_speed(base, WINDOW)
    finally:
        if running is not None:
            running.stop()
    pace.startup_s = heron_startup(tmp_path_factory.mktemp("startup"))
    report(pytestconfig, f"real_server: measured {pace.describe()}")
    yield found, pace
    report(pytestconfig, f"real_server: the slowest seen {pace.describe()}")


@pytest.fixture
def server(source: tuple[Source, Pace], request: pytest.FixtureRequest) -> Iterator[RecordingProxy]:
    """A server for this test alone, behind a recording proxy that carries the pace."""
    found, pace = source
    base, running = found.start(request.node.name)
    if running is None:
        wait_idle(base, MARGIN * pace.longest_request_s)
    proxy = RecordingProxy(base, pace)
    try:
        yield proxy
    finally:
        proxy.close()
        if running is not None:
            running.stop()


def base_flags(proxy: RecordingProxy) -> list[str]:
    return ["--base-url", proxy.url + "/v1", "--model", MODEL]


def pace_of(proxy: RecordingProxy) -> Pace:
    assert proxy.pace is not None
    return proxy.pace


def run(place: Place, proxy: RecordingProxy, *args: str) -> subprocess.CompletedProcess[str]:
    """``heron`` in ``place`` with ``HERON_LOG=debug`` (its stderr then says what it planned
    for each request: :meth:`heron.coding.requests.RequestPath.plan_line`), given the time
    :data:`REQUESTS_PER_PROCESS` requests can take at the measured pace; past it the
    process and its children are killed and the test fails, saying what was measured."""
    pace = pace_of(proxy)
    deadline = pace.process_deadline(REQUESTS_PER_PROCESS)
    process = subprocess.Popen(
        [*heron_command(), *args],
        cwd=place.cwd,
        env={**place.env(), "HERON_LOG": "debug"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"heron did not end in {deadline:.0f} s ({pace.describe()}):\n{err[-3000:]}")
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


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


@pytest.mark.real_server
def test_a_one_word_prompt_takes_the_models_time_and_no_more(server: RecordingProxy, tmp_path: Path) -> None:
    place = Place.make(tmp_path)
    mark = server.mark()
    started = time.monotonic()
    done = run(place, server, *base_flags(server), "-p", "Hello")
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    sent = chats(server.since(mark))
    # heron adds to the server's own time for each request (its timings) no more than a
    # process start: nothing waited on, sent twice or run to the output limit for nothing.
    explained = pace_of(server).explained(sent)
    server_s = [e.server_seconds for e in sent]
    assert took <= explained, f"a one-word prompt took {took:.1f} s: server {server_s}, {pace_of(server).describe()}"
    assert sent and not any(e.rejected for e in sent)
    assert all(0 < asked(e) <= WINDOW // 4 for e in sent)  # a quarter of the window the server said
    (plan,) = plans(done.stderr)[:1]
    assert (
        sent[0].prompt_tokens
        and sent[0].prompt_tokens / PLAN_TOLERANCE <= plan[0] <= sent[0].prompt_tokens * PLAN_TOLERANCE
    )
    assert any(e.get("customType") == "heron.server" for e in entries(place.home))


@pytest.mark.real_server
def test_a_38_kb_prompt_is_sent_as_its_head_and_a_file(server: RecordingProxy, tmp_path: Path) -> None:
    place = Place.make(tmp_path)
    prompt = prompt_of(0, 5_600)
    assert len(prompt.encode()) >= 38_000
    mark = server.mark()
    done = run(place, server, *base_flags(server), "-p", prompt)
    assert done.returncode == 0, done.stderr[-3000:]
    sent = chats(server.since(mark))
    assert sent and not any(e.rejected for e in sent)
    users = [e["message"] for e in entries(place.home) if e.get("type") == "message" and e["message"]["role"] == "user"]
    text = json.dumps(users[-1])
    assert "too large for the context window" in text
    paths = re.findall(r"(/[^\s\"']+\.(?:md|txt))", text)
    assert paths and Path(paths[0]).is_file() and len(Path(paths[0]).read_text()) >= len(prompt) - 100


@pytest.mark.real_server
def test_twelve_turns_compact_resume_and_count_like_the_server(server: RecordingProxy, tmp_path: Path) -> None:
    place = Place.make(tmp_path)
    paired: list[tuple[int, float, int]] = []  # heron's plan, its ratio, the server's count
    start, side_logged = server.mark(), 0
    for turn in range(12):
        # Nothing configured but the server and model, then `--continue` and nothing else.
        flags = base_flags(server) if turn == 0 else ["--continue"]
        mark = server.mark()
        done = run(place, server, *flags, "-p", prompt_of(turn))
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
        turns = [e for e in sent if not is_side_body(e.body)]  # not a summary, the flush or a reflection
        assert not any(e.aborted for e in turns), f"turn {turn}: a turn request was left unfinished"
        planned = plans(done.stderr)
        assert len(planned) == len(turns), f"turn {turn}: plans {planned}, turn requests {len(turns)}"
        for (plan, _window, ratio), exchange in zip(planned, turns, strict=True):
            if exchange.prompt_tokens:
                paired.append((plan, ratio, exchange.prompt_tokens))
    side_seen = [e for e in chats(server.since(start)) if is_side_body(e.body)]
    assert len(side_seen) <= side_logged, f"the server saw {len(side_seen)} side requests, heron logged {side_logged}"
    log = entries(place.home)
    assert sum(1 for e in log if e.get("type") == "compaction") >= 1
    assert any((e.get("data") or {}).get("op") == "calibration" for e in log)
    assert_well_formed(place.home)

    # The same session resumed with no flag at all: its server and model come from the file.
    mark = server.mark()
    done = run(place, server, "--continue", "-p", "One more word.")
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


class Rpc:
    """``heron --mode rpc`` in its own process group, its events read as they come; every
    wait is bounded by the pace's deadline for one process."""

    def __init__(self, place: Place, proxy: RecordingProxy) -> None:
        self.pace = pace_of(proxy)
        self.process = subprocess.Popen(
            [*heron_command(), "--mode", "rpc", *base_flags(proxy)],
            cwd=place.cwd,
            env=place.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read_events, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_events(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.strip():
                self.events.put(json.loads(line))

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        self.stderr.extend(self.process.stderr)

    def send(self, command: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def until(self, what: str, test: Any) -> dict[str, Any]:
        deadline = self.pace.process_deadline(REQUESTS_PER_PROCESS)
        end = time.monotonic() + deadline
        while True:
            try:
                event = self.events.get(timeout=max(0.1, end - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no {what} in {deadline:.0f} s ({self.pace.describe()}):\n{''.join(self.stderr)[-3000:]}")
            if test(event):
                return event

    def close(self, *, wait: bool) -> int:
        """End the process: its input closed and, when ``wait``, the time to end it has;
        otherwise (a test already failing) at once. Its whole group is killed if left."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        deadline = self.pace.process_deadline(1) if wait else 0.1
        try:
            return self.process.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            if wait:
                pytest.fail(f"heron --mode rpc did not end {deadline:.0f} s after its input closed")
            return self.process.returncode


@pytest.mark.real_server
def test_an_rpc_turn(server: RecordingProxy, tmp_path: Path) -> None:
    place = Place.make(tmp_path)
    rpc = Rpc(place, server)
    ended = False
    try:
        mark = server.mark()
        rpc.send({"id": "1", "type": "prompt", "message": prompt_of(1, 300)})
        assert rpc.until("answer to the prompt", lambda e: e.get("id") == "1")["success"]
        rpc.until("agent_end", lambda e: e.get("type") == "agent_end")
        rpc.send({"id": "2", "type": "get_state"})
        state = rpc.until("state", lambda e: e.get("id") == "2")["data"]
        assert state["context"]["contextWindow"] == WINDOW
        assert "/props" in state["context"]["windowSource"]
        sent = chats(server.since(mark))
        assert sent and not any(e.rejected for e in sent)
        assert sent[-1].prompt_tokens and state["context"]["tokens"] > 0
        ended = True
    finally:
        status = rpc.close(wait=ended)
    assert status == 0, "".join(rpc.stderr)[-3000:]
    assert_well_formed(place.home)


# --- the pace, offline (these run with the main suite, no server needed) ----------------------


def test_the_pace_slows_to_what_the_server_reports_and_derives_every_deadline() -> None:
    pace = Pace(prompt_tps=200.0, predicted_tps=20.0, n_ctx=4_096, startup_s=2.0)
    assert pace.longest_request_s == pytest.approx(4_096 / 200 + 1_024 / 20)
    assert pace.process_deadline(2) == pytest.approx(MARGIN * (2.0 + 2 * pace.longest_request_s))
    # A request measured over a handful of tokens measures the fixed cost, not the speed.
    pace.observe({"prompt_n": 3, "prompt_per_second": 1.0, "predicted_n": 2, "predicted_per_second": 0.5})
    assert (pace.prompt_tps, pace.predicted_tps) == (200.0, 20.0)
    # A slower request slows the pace (and lengthens the deadlines); a faster one does not.
    pace.observe({"prompt_n": 900, "prompt_per_second": 90.0, "predicted_n": 40, "predicted_per_second": 8.0})
    pace.observe({"prompt_n": 900, "prompt_per_second": 400.0, "predicted_n": 40, "predicted_per_second": 50.0})
    assert (pace.prompt_tps, pace.predicted_tps) == (90.0, 8.0)
    # Nonsense in the report (a zero, infinity, a string) is not a speed.
    pace.observe({"prompt_n": 900, "prompt_per_second": 0, "predicted_n": 40, "predicted_per_second": "fast"})
    pace.observe({"prompt_n": 900, "prompt_per_second": float("inf"), "predicted_n": 40})
    assert (pace.prompt_tps, pace.predicted_tps) == (90.0, 8.0)


def test_a_process_is_given_its_start_and_the_servers_own_time() -> None:
    pace = Pace(prompt_tps=100.0, predicted_tps=10.0, n_ctx=4_096, startup_s=1.5)
    timed = Exchange("POST", "/v1/chat/completions", 200, {}, timings={"prompt_ms": 2_500.0, "predicted_ms": 1_500.0})
    assert timed.server_seconds == pytest.approx(4.0)
    assert pace.explained([timed]) == pytest.approx(MARGIN * (1.5 + 4.0))
    # A request the server gave no timings for (rejected, or left) counts as the longest one.
    untimed = Exchange("POST", "/v1/chat/completions", 400, {})
    assert pace.explained([timed, untimed]) == pytest.approx(MARGIN * (1.5 + 4.0 + pace.longest_request_s))


def test_the_timings_are_read_from_the_last_chunk_of_a_stream() -> None:
    stream = (
        b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":467},"timings":{"prompt_n":467,"prompt_ms":3120.5}}\n\n'
        b"data: [DONE]\n\n"
    )
    assert reported_timings(stream) == {"prompt_n": 467, "prompt_ms": 3120.5}
    assert reported_timings(b'{"error":{"code":400,"n_prompt_tokens":5000}}') is None
    assert reported_timings(b"not json at all") is None
