"""A scripted HTTP server on 127.0.0.1 for provider tests.

It speaks real HTTP/1.1 (chunked transfer, keep-alive, abrupt close), so heron's HTTP
client talks to it exactly as it would to the provider: what reaches an adapter went
through the same connection handling, SSE reader and error paths.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream; charset=utf-8"
    # Write the body in pieces of this many bytes (None: one piece).
    chunk_size: int | None = None
    chunk_delay: float = 0.0
    # Close the socket abruptly after this many body bytes (a dropped connection).
    truncate_at: int | None = None
    # Hold the response open this long before the body starts (abort/timeout tests).
    delay: float = 0.0
    # Never complete the response (until the server closes): "silent" accepts the request
    # and says nothing; "trickle-head" sends the status line and headers a byte at a time;
    # "trickle-body" sends the headers, then the body a byte at a time - one byte every
    # ``trickle_s``, which no per-read timeout ever catches.
    stall: str | None = None
    trickle_s: float = 0.5
    # The body as pieces, each written after its pause in seconds (the headers go at once):
    # a server that streams some events, is silent a while, then streams more. Replaces ``body``.
    schedule: list[tuple[float, bytes]] | None = None

    def body_bytes(self) -> bytes:
        return self.body.encode() if isinstance(self.body, str) else self.body


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status=status, body=json.dumps(payload), content_type="application/json", headers=headers or {})


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


# What heron asks a local server before its first request (heron.ai.server_window): a
# scripted server answers them "not found", as an OpenAI-compatible server without these
# endpoints does, and its queued replies are kept for the requests they script.
_PROBE_PATHS = ("/v1/models", "/models", "/props", "/api/show", "/api/v0/models", "/tokenize", "/apply-template")


_HEAD_PREFIX = b"HTTP/1.1 200 OK\r\nX-Slow: "  # then one more letter of this header every time


def _is_probe(recorded: Recorded) -> bool:
    return any(recorded.path == p or recorded.path.startswith(p + "/") for p in _PROBE_PATHS)


class _QuietServer(ThreadingHTTPServer):
    """Clients hanging up mid-response is what the abort and truncation tests do."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class LocalServer:
    """Replies come from the queue (then ``fallback``), or - with ``responder`` - are
    computed from each request (a server that inspects what it is sent)."""

    def __init__(self, responder: Callable[[Recorded], Reply] | None = None, *, answers_probes: bool = False) -> None:
        self.requests: list[Recorded] = []
        # Requests for a server's own endpoints (``/props``, ``/v1/models``...), answered
        # 404 and kept apart unless ``answers_probes`` (then the responder answers them).
        self.probes: list[Recorded] = []
        self.answers_probes = answers_probes
        self._replies: list[Reply] = []
        self.fallback: Reply | None = None
        self.responder = responder
        self._lock = threading.Lock()
        self.closed = threading.Event()  # set by close(): stalled responses end
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                recorded = Recorded(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                if not server.answers_probes and _is_probe(recorded):
                    server.probes.append(recorded)
                    self._send(json_reply(404, {"error": {"message": "Not Found", "type": "not_found_error"}}))
                    return
                server._record(recorded)
                responder = server.responder
                reply = responder(recorded) if responder is not None else server._next()
                self._send(reply)

            do_POST = _handle
            do_GET = _handle

            def _stall(self, reply: Reply) -> None:
                """Hold the client with a response that never completes (``Reply.stall``)."""
                head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
                if reply.stall == "trickle-body":
                    self.wfile.write(head)
                    self.wfile.flush()
                sent = 0
                try:
                    while not server.closed.wait(reply.trickle_s if reply.stall != "silent" else 0.05):
                        if reply.stall == "silent":
                            continue
                        byte = b" "  # a JSON body of blanks, or a header that never ends
                        if reply.stall == "trickle-head":
                            byte = _HEAD_PREFIX[sent : sent + 1] or b"a"
                        self.wfile.write(byte)
                        self.wfile.flush()
                        sent += 1
                except OSError:  # the client gave up: what a deadline does
                    pass
                self.close_connection = True

            def _send(self, reply: Reply) -> None:
                if reply.stall is not None:
                    self._stall(reply)
                    return
                payload = reply.body_bytes()
                if reply.delay:
                    time.sleep(reply.delay)
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                if reply.schedule is not None:
                    self._scheduled(reply.schedule)
                    return
                size = reply.chunk_size or max(1, len(payload))
                sent = 0
                try:
                    for start in range(0, len(payload), size):
                        piece = payload[start : start + size]
                        if reply.truncate_at is not None and sent + len(piece) > reply.truncate_at:
                            piece = piece[: reply.truncate_at - sent]
                            self.wfile.write(f"{len(piece) + 10:x}\r\n".encode() + piece)
                            self.wfile.flush()
                            self.connection.shutdown(socket.SHUT_RDWR)
                            self.close_connection = True
                            return
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                        self.wfile.flush()
                        sent += len(piece)
                        if reply.chunk_delay:
                            time.sleep(reply.chunk_delay)
                    if reply.truncate_at is not None and reply.truncate_at >= len(payload):
                        self.connection.shutdown(socket.SHUT_RDWR)
                        self.close_connection = True
                        return
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, OSError):
                    self.close_connection = True

            def _scheduled(self, schedule: list[tuple[float, bytes]]) -> None:
                self.wfile.flush()
                try:
                    for pause, piece in schedule:
                        time.sleep(pause)
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, OSError):
                    self.close_connection = True

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def _record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def _next(self) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.pop(0)
        if self.fallback is not None:
            return self.fallback
        return json_reply(500, {"error": {"message": "test server: no reply queued"}})

    def close(self) -> None:
        self.closed.set()
        self._httpd.shutdown()
        self._httpd.server_close()
