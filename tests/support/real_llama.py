"""A real ``llama-server`` for the ``real_server`` tests, behind a proxy that records.

:func:`start_llama_server` runs the binary ``.ci/llama-server`` builds (``HERON_LLAMA_SERVER_BIN``)
on the model it assembles (``HERON_LLAMA_MODEL``) with the window the tests need (``-c``),
one slot, on a free loopback port, with the model's end-of-sequence token favoured
(``--logit-bias``, :data:`END_BIAS`): Gemma 3 270M is a base model that never ends an
answer by itself, so without it every answer runs to heron's output limit (a quarter of
the window, 1,024 tokens: minutes on two cores). With it the model ends its answers
after a few dozen tokens, as an instruction-tuned model ends its turn; heron's requests
are unchanged (the tests check the output limit heron asks for). :class:`RecordingProxy` sits in front of it (or of any
server named by ``HERON_LLAMA_SERVER_URL``) and passes every request and response through
unchanged, streaming included, while it records what the server was asked and answered:
the status (a rejected request is a 4xx), the request body, and the prompt tokens the
server reports (an answer's ``usage``, a rejection's ``n_prompt_tokens``). That is how the
tests count rejected requests and compare the server's counts with heron's plan.

:class:`Pace` is how long the tests let anything take: the server's speed is measured when
the suite starts (:func:`measure_speed`: a short completion, prompt and generated tokens a
second) and slowed to the slowest the server reports for any later request (llama.cpp's
``timings``), so a deadline follows the machine's load instead of a fixed number of seconds.
"""

from __future__ import annotations

import http.client
import json
import math
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# Gemma's <eos> (token 1) and how much it is favoured: measured on the 2-core machine,
# +6 ends the answers after 12-30 tokens (a one-word prompt in 2 s, a 1,000-token prompt
# in 12 s) where unbiased they ran to the limit at 5-17 tokens/s.
END_TOKEN = 1
END_BIAS = 6
# How much slower than the measured pace anything may be before it counts as hung: the load
# on a shared machine moves while the suite runs (the measured speeds varied 2-3x with it).
MARGIN = 3.0
# A measurement over fewer tokens is mostly fixed cost, not speed: ignored by Pace.observe.
_MIN_PROMPT_N = 64
_MIN_PREDICTED_N = 8
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "proxy-connection"}


@dataclass
class Exchange:
    """One request through the proxy."""

    method: str
    path: str
    status: int
    body: Any
    prompt_tokens: int | None = None
    aborted: bool = False  # the client left before the answer ended
    timings: dict[str, Any] | None = None  # llama.cpp's own account of the work, when it gave one

    @property
    def is_chat(self) -> bool:
        return self.method == "POST" and self.path.endswith("/chat/completions")

    @property
    def rejected(self) -> bool:
        return self.status >= 400

    @property
    def server_seconds(self) -> float | None:
        """The time the server says it spent reading the prompt and generating."""
        if not self.timings:
            return None
        return (float(self.timings.get("prompt_ms", 0)) + float(self.timings.get("predicted_ms", 0))) / 1000


def _documents(payload: bytes) -> list[dict[str, Any]]:
    """The JSON objects of an answer: each ``data:`` line of a stream, or the whole body."""
    text = payload.decode("utf-8", "replace")
    found: list[dict[str, Any]] = []
    for document in [line[5:].strip() for line in text.splitlines() if line.startswith("data:")] or [text]:
        try:
            data = json.loads(document)
        except ValueError:
            continue
        if isinstance(data, dict):
            found.append(data)
    return found


def reported_timings(payload: bytes) -> dict[str, Any] | None:
    """llama.cpp's ``timings`` of an answer (the last streamed chunk carries them)."""
    found: dict[str, Any] | None = None
    for data in _documents(payload):
        if isinstance(data.get("timings"), dict):
            found = data["timings"]
    return found


def reported_prompt_tokens(payload: bytes) -> int | None:
    """The prompt tokens a chat response reports: the streamed ``usage`` chunk's (or a
    JSON answer's), or a rejection's ``n_prompt_tokens``."""
    found: int | None = None
    for data in _documents(payload):
        usage = data.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            found = usage["prompt_tokens"]
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("n_prompt_tokens"), int):
            found = error["n_prompt_tokens"]
    return found


@dataclass
class Pace:
    """The measured speed of the server (and of heron's start), and the deadlines derived
    from it: a wait that outlasts its deadline is a hang, not a slow machine."""

    prompt_tps: float  # prompt tokens the server reads a second
    predicted_tps: float  # tokens it generates a second
    n_ctx: int  # the server's window: a request reads at most this many tokens
    startup_s: float = 0.0  # a heron process's start, measured by the suite

    def request_s(self, prompt_tokens: int, predicted_tokens: int) -> float:
        return prompt_tokens / self.prompt_tps + predicted_tokens / self.predicted_tps

    @property
    def longest_request_s(self) -> float:
        """The longest one request can keep the server busy: a full window read and an
        answer at heron's output limit (a quarter of the window; the tests check that)."""
        return self.request_s(self.n_ctx, self.n_ctx // 4)

    def process_deadline(self, requests: int) -> float:
        """How long a heron process making at most ``requests`` requests may take."""
        return MARGIN * (self.startup_s + requests * self.longest_request_s)

    def explained(self, exchanges: list[Exchange]) -> float:
        """The most a heron process whose requests were ``exchanges`` should take: its start
        and the server's own time for each request (from its ``timings``, or the longest
        a request can take when it gave none), times :data:`MARGIN`."""
        work = 0.0
        for exchange in exchanges:
            seconds = exchange.server_seconds
            work += self.longest_request_s if seconds is None else seconds
        return MARGIN * (self.startup_s + work)

    def observe(self, timings: dict[str, Any]) -> None:
        """Slow down to a later request's speed, when it was measured over enough tokens
        (a handful of tokens measures the fixed cost of a request, not the speed)."""
        prompt_n, prompt_rate = timings.get("prompt_n", 0), timings.get("prompt_per_second", 0)
        if isinstance(prompt_n, int) and prompt_n >= _MIN_PROMPT_N and _positive(prompt_rate):
            self.prompt_tps = min(self.prompt_tps, float(prompt_rate))
        predicted_n, predicted_rate = timings.get("predicted_n", 0), timings.get("predicted_per_second", 0)
        if isinstance(predicted_n, int) and predicted_n >= _MIN_PREDICTED_N and _positive(predicted_rate):
            self.predicted_tps = min(self.predicted_tps, float(predicted_rate))

    def describe(self) -> str:
        return (
            f"{self.prompt_tps:.0f} prompt tokens/s, {self.predicted_tps:.1f} generated tokens/s, "
            f"heron starts in {self.startup_s:.1f} s, margin {MARGIN:g}x"
        )


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


class RecordingProxy:
    """Forwards ``http://127.0.0.1:<port>/…`` to ``upstream`` and records each exchange;
    with a ``pace``, each answer's ``timings`` slow it to the speed the server reports, and
    the wait for the server's next byte is bounded by it (a prompt is read in silence)."""

    def __init__(self, upstream: str, pace: Pace | None = None) -> None:
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.exchanges: list[Exchange] = []
        self.pace = pace
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)  # no exchange under way
        self._under_way = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                wait = MARGIN * proxy.pace.longest_request_s if proxy.pace else 600
                upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=wait)
                try:
                    upstream.request(self.command, self.path, body=body or None, headers=headers)
                    response = upstream.getresponse()
                except OSError as exc:  # the server died: the test sees a 502 recorded
                    upstream.close()
                    proxy._record(self.command, self.path, 502, body, str(exc).encode(), aborted=False)
                    self.send_error(502, str(exc))
                    return
                seen = bytearray()
                recorded: Exchange | None = None
                try:
                    self.send_response(response.status)
                    for key, value in response.getheaders():
                        if key.lower() not in _HOP_HEADERS:
                            self.send_header(key, value)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    while piece := response.read1(65536):
                        seen += piece
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                        self.wfile.flush()
                    # recorded before the client can see the answer end: a test that reads the
                    # record once heron is done (its process ended, an rpc event) finds it there
                    recorded = proxy._record(self.command, self.path, response.status, body, bytes(seen), aborted=False)
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:  # the client went away mid-answer (a `-p` process ending)
                    if recorded is None:
                        proxy._record(self.command, self.path, response.status, body, bytes(seen), aborted=True)
                    else:
                        proxy.mark_aborted(recorded)
                finally:
                    upstream.close()

            def _counted(self) -> None:
                proxy._began()
                try:
                    self._handle()
                finally:
                    proxy._ended()

            do_GET = _counted
            do_POST = _counted

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def _record(self, method: str, path: str, status: int, body: bytes, answer: bytes, *, aborted: bool) -> Exchange:
        try:
            parsed: Any = json.loads(body) if body else None
        except ValueError:
            parsed = None
        exchange = Exchange(method, path.split("?")[0], status, parsed, aborted=aborted)
        if exchange.is_chat:
            exchange.prompt_tokens = reported_prompt_tokens(answer)
            exchange.timings = reported_timings(answer)
        with self._lock:
            self.exchanges.append(exchange)
            if self.pace is not None and exchange.timings:
                self.pace.observe(exchange.timings)
        return exchange

    def _began(self) -> None:
        with self._lock:
            self._under_way += 1

    def _ended(self) -> None:
        with self._lock:
            self._under_way -= 1
            self._settled.notify_all()

    def mark_aborted(self, exchange: Exchange) -> None:
        """The client left before the answer's last bytes reached it."""
        with self._lock:
            exchange.aborted = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def mark(self) -> int:
        """Where the record stands now: :meth:`since` gives what came after."""
        with self._lock:
            return len(self.exchanges)

    def since(self, mark: int) -> list[Exchange]:
        """The exchanges after ``mark``, once those under way have ended (at most 30 s): heron
        can be done with an answer - its last event read, its process ended - before the
        proxy has read the server's end of it and recorded the exchange."""
        with self._settled:
            self._settled.wait_for(lambda: self._under_way == 0, timeout=30)
            return list(self.exchanges[mark:])

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def free_port() -> int:
    """A loopback port nothing listens on (now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LlamaProcess:
    """A running ``llama-server`` and where its log goes."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path
    extra: dict[str, Any] = field(default_factory=dict)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _get_json(url: str, method: str, path: str, body: Any = None, *, timeout: float = 60) -> Any:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=timeout)
    try:
        connection.request(method, path, body=None if body is None else json.dumps(body))
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


# About 300 tokens of plain words: long enough that reading it measures the prompt speed.
_SPEED_PROMPT = "Measure the speed: " + " ".join(["the river runs past the old mill by the bridge"] * 30)
_SPEED_PREDICT = 32


def measure_speed(url: str, n_ctx: int, *, runs: int = 2, timeout: float = 600) -> Pace:
    """The server's speed from ``runs`` short completions (about 300 prompt tokens read,
    32 generated with the end token ignored, nothing cached): the slowest of them, the
    first including the server's warm-up. ``timeout`` only stops a server that never
    answers; nothing is known of its speed yet."""
    body = {
        "prompt": _SPEED_PROMPT,
        "n_predict": _SPEED_PREDICT,
        "ignore_eos": True,
        "cache_prompt": False,
        "temperature": 0,
        "seed": 1,
    }
    prompt_rates, predicted_rates = [], []
    for _ in range(runs):
        timings = _get_json(url, "POST", "/completion", body, timeout=timeout).get("timings") or {}
        prompt_rate, predicted_rate = timings.get("prompt_per_second"), timings.get("predicted_per_second")
        if not (_positive(prompt_rate) and _positive(predicted_rate)):
            raise RuntimeError(f"the server reported no speed for a completion: timings {timings}")
        prompt_rates.append(float(prompt_rate))
        predicted_rates.append(float(predicted_rate))
    return Pace(min(prompt_rates), min(predicted_rates), n_ctx)


def wait_idle(url: str, deadline: float) -> None:
    """Wait until no slot of the server is working (a server the suite did not start, and
    cannot restart: what an earlier test left running must not eat the next one's time)."""
    end = time.monotonic() + deadline
    busy: list[Any] = []
    while time.monotonic() < end:
        slots = _get_json(url, "GET", "/slots")
        busy = [slot.get("id") for slot in slots if isinstance(slot, dict) and slot.get("is_processing")]
        if not busy:
            return
        time.sleep(1)
    raise RuntimeError(f"the server's slots {busy} were still busy after {deadline:.0f} s")


def _check_end_token(running: LlamaProcess) -> None:
    """The biased token must be the model's end-of-sequence token (a model whose token
    differs would be biased towards some word instead: a clear error, not slow tests)."""
    eos = _get_json(running.url, "GET", "/props").get("eos_token")
    tokens = _get_json(running.url, "POST", "/tokenize", {"content": eos, "parse_special": True}).get("tokens")
    if tokens != [END_TOKEN]:
        running.stop()
        raise RuntimeError(f"the model's end-of-sequence token {eos!r} is {tokens}, not {END_TOKEN}: set END_TOKEN")


def start_llama_server(binary: str, model: str, log: Path, *, n_ctx: int = 4_096, timeout: float = 600) -> LlamaProcess:
    """``llama-server`` on ``model`` with an ``n_ctx``-token window, one slot and the
    end-of-sequence token favoured, once its ``/health`` says the model is loaded (raises
    with the log's tail when it never does). Loading took 2-4 s on the loaded 2 cores;
    ``timeout`` only stops a server that never becomes ready."""
    port = free_port()
    command = [
        binary,
        "--model", model,
        "--ctx-size", str(n_ctx),
        "--parallel", "1",
        "--threads", "2",
        "--host", "127.0.0.1",
        "--port", str(port),
        "--alias", "local",
        "--logit-bias", f"{END_TOKEN}+{END_BIAS}",
        "--seed", "1",  # the same answers on every run, so the same timings
    ]  # fmt: skip
    handle = log.open("wb")
    process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    running = LlamaProcess(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama-server exited with {process.returncode}:\n{running.log_tail()}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/health")
            if connection.getresponse().status == 200:
                _check_end_token(running)
                return running
        except OSError:
            pass
        time.sleep(0.5)
    running.stop()
    raise RuntimeError(f"llama-server did not become ready in {timeout:.0f} s:\n{running.log_tail()}")
