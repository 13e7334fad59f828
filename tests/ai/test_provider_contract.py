"""One contract, every provider: the same cases run through each real adapter against a
local server speaking its wire format (see ``tests/ai/wires.py``)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from heron.ai import (
    NO_RETRY,
    AbortController,
    AssistantEvent,
    AssistantMessage,
    Context,
    ErrorEvent,
    Model,
    RetryEvent,
    RetryPolicy,
    StopReason,
    StreamOptions,
    UserMessage,
    is_context_overflow,
)
from heron.ai.providers.http import INCOMPLETE
from heron.ai.registry import get_provider
from heron.ai.stream import open_stream
from tests.ai.wires import (
    AUTH_KIND,
    IDS,
    OVERFLOW_TEXT,
    RATE_KIND,
    SERVER_KIND,
    WIRES,
    Wire,
    answer,
    check_stream,
    model_for,
)
from tests.support.http_server import LocalServer, Reply

pytestmark = pytest.mark.parametrize("wire", WIRES, ids=IDS)


def hello() -> Context:
    return Context(messages=[UserMessage(content="hello")])


async def run(
    model: Model, options: StreamOptions | None = None, on_event: Any = None
) -> tuple[list[AssistantEvent], AssistantMessage]:
    opts = options or StreamOptions(retry=NO_RETRY)
    opts.api_key = opts.api_key or "sk-test"
    stream = open_stream(get_provider(model.api), model, hello(), opts)
    events: list[AssistantEvent] = []
    async for event in stream:
        events.append(event)
        if on_event is not None:
            on_event(event)
    message = await stream.result()
    check_stream(events)
    return events, message


def fast_retry(**fields: Any) -> StreamOptions:
    return StreamOptions(retry=RetryPolicy(max_retries=2, base_delay=0.01), **fields)


# --- streams that break ------------------------------------------------------------------


async def test_truncated_stream_keeps_text(wire: Wire, local_server: LocalServer) -> None:
    body = wire.start() + wire.text("Hello ", "world, this is a long answer") + wire.end()
    cut = body.index(b"world") + 3
    local_server.queue(Reply(body=body, chunk_size=17, truncate_at=cut))
    events, message = await run(model_for(wire, local_server), fast_retry())
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].kind == "transient"
    assert message.stop_reason == StopReason.ERROR
    assert message.text().startswith("Hello ")
    assert len(local_server.requests) == 1  # text was shown: not retried


async def test_stream_dropped_mid_answer_is_transient(wire: Wire, local_server: LocalServer) -> None:
    local_server.queue(Reply(body=wire.start() + wire.text("Half an ")))
    events, message = await run(model_for(wire, local_server))
    assert isinstance(events[-1], ErrorEvent)
    assert (events[-1].kind, message.error_kind) == ("transient", "transient")
    assert message.error_message == INCOMPLETE
    assert message.text() == "Half an "


async def test_stream_dropped_before_content_is_retried(wire: Wire, local_server: LocalServer) -> None:
    local_server.queue(Reply(body=wire.start()), Reply(body=answer(wire, "second try")))
    retries: list[RetryEvent] = []
    events, message = await run(model_for(wire, local_server), fast_retry(on_retry=retries.append))
    assert events[-1].type == "done"
    assert message.text() == "second try"
    assert [r.kind for r in retries] == ["transient"]
    assert retries[0].error_message == INCOMPLETE


async def test_malformed_sse_is_transient(wire: Wire, local_server: LocalServer) -> None:
    local_server.queue(Reply(body=wire.start() + wire.text("Hello") + wire.bad_json() + wire.end(), chunk_size=29))
    events, message = await run(model_for(wire, local_server))
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].kind == "transient"
    assert "malformed event" in (message.error_message or "")
    assert message.text() == "Hello"


async def test_malformed_before_content_is_retried(wire: Wire, local_server: LocalServer) -> None:
    local_server.queue(Reply(body=wire.start() + wire.bad_json()), Reply(body=answer(wire, "fine")))
    events, message = await run(model_for(wire, local_server), fast_retry())
    assert events[-1].type == "done"
    assert message.text() == "fine"
    assert len(local_server.requests) == 2


async def test_invalid_tool_json_is_kept_raw(wire: Wire, local_server: LocalServer) -> None:
    if wire.api == "google-gemini":
        pytest.skip("Gemini sends a call's arguments as a JSON object, never as text")
    fragments = ('{"path": "a.txt", ', '"mode": oops}')
    local_server.queue(
        Reply(body=wire.start() + wire.tool("call_bad", "read", *fragments) + wire.end(True), chunk_size=37)
    )
    events, message = await run(model_for(wire, local_server))
    assert events[-1].type == "done"
    assert message.stop_reason == StopReason.TOOL_USE
    (call,) = message.tool_calls()
    assert call.name == "read" and call.id.startswith("call_bad")
    assert call.arguments == {}
    assert call.raw_arguments == "".join(fragments)


# --- HTTP errors -------------------------------------------------------------------------


async def test_overflow_wording(wire: Wire, local_server: LocalServer) -> None:
    text, kind, code = OVERFLOW_TEXT[wire.api]
    local_server.queue(wire.error(400, text, kind, code))
    events, message = await run(model_for(wire, local_server), fast_retry())
    terminal = events[-1]
    assert isinstance(terminal, ErrorEvent)
    assert (terminal.kind, terminal.status) == ("overflow", 400)
    assert (message.error_kind, message.error_status) == ("overflow", 400)
    assert text in (message.error_message or "")
    assert is_context_overflow(message)
    assert len(local_server.requests) == 1
    assert [e.type for e in events] == ["start", "error"]


async def test_401_is_auth_and_not_retried(wire: Wire, local_server: LocalServer) -> None:
    local_server.queue(wire.error(401, "invalid api key", AUTH_KIND[wire.api]))
    events, message = await run(model_for(wire, local_server), fast_retry())
    terminal = events[-1]
    assert isinstance(terminal, ErrorEvent)
    assert (terminal.kind, terminal.status) == ("auth", 401)
    assert "invalid api key" in (message.error_message or "")
    assert len(local_server.requests) == 1


async def test_429_waits_for_retry_after(wire: Wire, local_server: LocalServer) -> None:
    limited = wire.error(429, "Too many requests", RATE_KIND[wire.api], None, **{"retry-after": "0.05"})
    local_server.queue(limited, Reply(body=answer(wire, "fine")))
    retries: list[RetryEvent] = []
    options = StreamOptions(retry=RetryPolicy(max_retries=2, base_delay=30.0), on_retry=retries.append)
    started = time.monotonic()
    events, message = await run(model_for(wire, local_server), options)
    assert events[-1].type == "done" and message.text() == "fine"
    assert time.monotonic() - started < 5  # the server's 0.05 s, not the 30 s base
    assert [(r.attempt, r.kind, r.delay) for r in retries] == [(1, "rate_limit", 0.05)]
    # Retries say where they went and when the next try is, ready for the CLI to print.
    assert local_server.url in retries[0].error_message
    assert retries[0].message.endswith("retrying in 0.05 s (1/2)")
    assert local_server.url in retries[0].message


async def test_429_reported_when_not_retried(wire: Wire, local_server: LocalServer) -> None:
    local_server.queue(wire.error(429, "Too many requests", RATE_KIND[wire.api], None, **{"retry-after": "7"}))
    events, message = await run(model_for(wire, local_server))
    terminal = events[-1]
    assert isinstance(terminal, ErrorEvent)
    assert (terminal.kind, terminal.status, terminal.retry_after) == ("rate_limit", 429, 7.0)
    assert (message.error_kind, message.error_status, message.retry_after) == ("rate_limit", 429, 7.0)
    assert local_server.url in (message.error_message or "")
    assert not is_context_overflow(message)


async def test_500_then_success(wire: Wire, local_server: LocalServer) -> None:
    local_server.queue(
        wire.error(500, "Internal server error", SERVER_KIND[wire.api]),
        Reply(body=answer(wire, "recovered"), chunk_size=37),
    )
    retries: list[RetryEvent] = []
    events, message = await run(model_for(wire, local_server), fast_retry(on_retry=retries.append))
    assert events[-1].type == "done"
    assert message.text() == "recovered"
    assert [e.type for e in events].count("start") == 1
    assert len(local_server.requests) == 2
    assert [r.kind for r in retries] == ["transient"]
    assert "500" in retries[0].error_message and local_server.url in retries[0].error_message


async def test_connection_refused_names_the_server(wire: Wire) -> None:
    server = LocalServer()
    model = model_for(wire, server)
    server.close()  # nothing listens there any more
    retries: list[RetryEvent] = []
    events, message = await run(
        model, StreamOptions(retry=RetryPolicy(max_retries=1, base_delay=0.01), on_retry=retries.append)
    )
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].kind == "transient"
    # A local address that refuses: tried once more in the transport, then said once, with
    # no retry events (docs/ai.md, "Failures")
    assert message.error_message == f"nothing is listening at {server.url} — is the server running?"
    assert retries == []
    assert len(server.requests) == 0


# --- abort -------------------------------------------------------------------------------


async def test_abort_mid_tool_call(wire: Wire, local_server: LocalServer) -> None:
    content = "x" * 40
    fragments = ['{"path": "notes.txt", "content": "', *([content] * 60), '"}']
    if wire.api == "google-gemini":
        body = wire.start() + wire.text(*["Writing the file. "] * 60) + wire.end()
    else:
        body = wire.start() + wire.text("Writing the file.") + wire.tool("call_abort", "write", *fragments)
        body += wire.end(True)
    local_server.queue(Reply(body=body, chunk_size=64, chunk_delay=0.02))
    controller = AbortController()
    loop = asyncio.get_running_loop()
    aborted_at: list[float] = []

    def abort() -> None:
        aborted_at.append(time.monotonic())
        controller.abort("user pressed escape")

    def on_event(event: AssistantEvent) -> None:
        # Once the arguments (Gemini: the text) stream, abort while the adapter waits on the socket.
        wanted = "text_delta" if wire.api == "google-gemini" else "toolcall_delta"
        if event.type == wanted and not aborted_at:
            aborted_at.append(0.0)
            loop.call_later(0.05, abort)

    events, message = await run(
        model_for(wire, local_server), StreamOptions(signal=controller.signal, retry=NO_RETRY), on_event
    )
    finished = time.monotonic()
    terminal = events[-1]
    assert isinstance(terminal, ErrorEvent)
    assert terminal.kind == "aborted"
    assert message.stop_reason == StopReason.ABORTED
    assert message.error_message == "user pressed escape"
    assert message.text().startswith("Writing the file.")
    if wire.api != "google-gemini":
        (call,) = message.tool_calls()
        assert call.raw_arguments is not None and call.raw_arguments.startswith('{"path": "notes.txt"')
    assert finished - aborted_at[-1] < 1.0  # the pending read was interrupted, not waited out


# --- event loops ---------------------------------------------------------------------------


def test_two_event_loops(wire: Wire, local_server: LocalServer) -> None:
    """Each ``asyncio.run`` gets a client of its own loop (not a closed one)."""
    model = model_for(wire, local_server)
    for n in range(2):
        local_server.queue(Reply(body=answer(wire, f"run {n}")))
        message = asyncio.run(_complete(model))
        assert message.stop_reason == StopReason.STOP, message.error_message
        assert message.text() == f"run {n}"


async def _complete(model: Model) -> AssistantMessage:
    return (await run(model))[1]


# --- hostile bytes ---------------------------------------------------------------------------


async def test_invalid_utf8_is_replaced(wire: Wire, local_server: LocalServer) -> None:
    body = wire.start() + wire.text("caf") + wire.raw_text(b"\xe9 \xff\xfe ok") + wire.end()
    local_server.queue(Reply(body=body, chunk_size=7))
    events, message = await run(model_for(wire, local_server))
    assert events[-1].type == "done", message.error_message
    assert message.text() == "caf\ufffd \ufffd\ufffd ok"


async def test_lone_surrogate_is_replaced(wire: Wire, local_server: LocalServer) -> None:
    body = wire.start() + wire.text("a") + wire.raw_text(b"\\ud800b\\udfffc") + wire.end()
    local_server.queue(Reply(body=body))
    events, message = await run(model_for(wire, local_server))
    assert events[-1].type == "done", message.error_message
    assert message.text() == "a\ufffdb\ufffdc"
    deltas = "".join(e.delta for e in events if e.type == "text_delta")  # type: ignore[union-attr]
    deltas.encode("utf-8")  # what a terminal or a session file gets is valid UTF-8
    json.dumps(message.to_json_dict(), ensure_ascii=False).encode("utf-8")


# --- bounded waits -------------------------------------------------------------------------


async def test_silent_server_hits_first_byte_timeout(wire: Wire, local_server: LocalServer) -> None:
    local_server.queue(Reply(body=answer(wire), delay=20))
    started = time.monotonic()
    events, message = await run(model_for(wire, local_server), StreamOptions(retry=NO_RETRY, first_byte_ms=1000))
    elapsed = time.monotonic() - started
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].kind == "transient"
    assert "timeouts.firstByteMs" in (message.error_message or "")
    assert local_server.url in (message.error_message or "")
    assert 0.9 <= elapsed < 5


async def test_keep_alive_only_server_hits_idle_timeout(wire: Wire, local_server: LocalServer) -> None:
    pings = wire.keep_alive() * 200
    local_server.queue(Reply(body=wire.start() + pings, chunk_size=len(wire.keep_alive()), chunk_delay=0.1))
    started = time.monotonic()
    options = StreamOptions(retry=NO_RETRY, first_byte_ms=30_000, idle_ms=1000)
    events, message = await run(model_for(wire, local_server), options)
    elapsed = time.monotonic() - started
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].kind == "transient"
    # Keep-alives (SSE comments, Anthropic's pings) are not content.
    assert "timeouts.idleMs" in (message.error_message or ""), message.error_message
    assert 0.9 <= elapsed < 5


async def test_timeout_is_retried_and_each_retry_reported(wire: Wire, local_server: LocalServer) -> None:
    local_server.queue(Reply(body=answer(wire), delay=20), Reply(body=answer(wire, "second")))
    retries: list[RetryEvent] = []
    options = StreamOptions(
        retry=RetryPolicy(max_retries=2, base_delay=0.01), on_retry=retries.append, first_byte_ms=1000
    )
    # a hosted server's behaviour (a local one is never asked twice: tests/ai/test_reading.py)
    remote = model_for(wire, local_server, compat={"localServer": False})
    events, message = await run(remote, options)
    assert events[-1].type == "done" and message.text() == "second"
    assert [r.kind for r in retries] == ["transient"]
    assert "timeouts.firstByteMs" in retries[0].message


def test_timeouts_below_one_second_are_refused(wire: Wire) -> None:
    with pytest.raises(ValueError, match=r"timeouts\.idleMs must be"):
        StreamOptions(idle_ms=999)


async def test_redirect_says_where_to(wire: Wire, local_server: LocalServer) -> None:
    local_server.queue(Reply(status=307, headers={"location": "https://elsewhere.example/v1"}, body=""))
    events, message = await run(model_for(wire, local_server))
    assert isinstance(events[-1], ErrorEvent)
    assert "https://elsewhere.example/v1" in (message.error_message or "")
    assert len(local_server.requests) == 1
