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
"""

from __future__ import annotations

import http.client
import json
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

    @property
    def is_chat(self) -> bool:
        return self.method == "POST" and self.path.endswith("/chat/completions")

    @property
    def rejected(self) -> bool:
        return self.status >= 400


def reported_prompt_tokens(payload: bytes) -> int | None:
    """The prompt tokens a chat response reports: the streamed ``usage`` chunk's (or a
    JSON answer's), or a rejection's ``n_prompt_tokens``."""
    found: int | None = None
    text = payload.decode("utf-8", "replace")
    documents = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")] or [text]
    for document in documents:
        try:
            data = json.loads(document)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        usage = data.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            found = usage["prompt_tokens"]
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("n_prompt_tokens"), int):
            found = error["n_prompt_tokens"]
    return found


class RecordingProxy:
    """Forwards ``http://127.0.0.1:<port>/…`` to ``upstream`` and records each exchange."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=600)
                try:
                    upstream.request(self.command, self.path, body=body or None, headers=headers)
                    response = upstream.getresponse()
                except OSError as exc:  # the server died: the test sees a 502 recorded
                    upstream.close()
                    proxy._record(self.command, self.path, 502, body, str(exc).encode(), aborted=False)
                    self.send_error(502, str(exc))
                    return
                seen = bytearray()
                aborted = False
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
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:  # the client went away mid-answer (a `-p` process ending)
                    aborted = True
                finally:
                    upstream.close()
                proxy._record(self.command, self.path, response.status, body, bytes(seen), aborted=aborted)

            do_GET = _handle
            do_POST = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def _record(self, method: str, path: str, status: int, body: bytes, answer: bytes, *, aborted: bool) -> None:
        try:
            parsed: Any = json.loads(body) if body else None
        except ValueError:
            parsed = None
        exchange = Exchange(method, path.split("?")[0], status, parsed, aborted=aborted)
        if exchange.is_chat:
            exchange.prompt_tokens = reported_prompt_tokens(answer)
        with self._lock:
            self.exchanges.append(exchange)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def mark(self) -> int:
        """Where the record stands now: :meth:`since` gives what came after."""
        with self._lock:
            return len(self.exchanges)

    def since(self, mark: int) -> list[Exchange]:
        with self._lock:
            return list(self.exchanges[mark:])

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _free_port() -> int:
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


def _get_json(port: int, method: str, path: str, body: Any = None) -> Any:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, body=None if body is None else json.dumps(body))
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


def _check_end_token(running: LlamaProcess, port: int) -> None:
    """The biased token must be the model's end-of-sequence token (a model whose token
    differs would be biased towards some word instead: a clear error, not slow tests)."""
    eos = _get_json(port, "GET", "/props").get("eos_token")
    tokens = _get_json(port, "POST", "/tokenize", {"content": eos, "parse_special": True}).get("tokens")
    if tokens != [END_TOKEN]:
        running.stop()
        raise RuntimeError(f"the model's end-of-sequence token {eos!r} is {tokens}, not {END_TOKEN}: set END_TOKEN")


def start_llama_server(binary: str, model: str, log: Path, *, n_ctx: int = 4_096, timeout: float = 180) -> LlamaProcess:
    """``llama-server`` on ``model`` with an ``n_ctx``-token window, one slot and the
    end-of-sequence token favoured, once its ``/health`` says the model is loaded (raises
    with the log's tail when it never does)."""
    port = _free_port()
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
                _check_end_token(running, port)
                return running
        except OSError:
            pass
        time.sleep(0.5)
    running.stop()
    raise RuntimeError(f"llama-server did not become ready in {timeout:.0f} s:\n{running.log_tail()}")
