"""Every round of probes ends by its deadline, whatever the server does (issue 37).

A server that accepts the connection and never answers, or that trickles a byte every
half second - in the status line and headers, or in the body - defeats any per-read
timeout. Each of heron's probes is tried against each of these, the other endpoints
behaving like llama.cpp (or "not found"): the round returns by its deadline (plus a
margin for a loaded machine: the point is that it returns at all), with what the other
endpoints said or :class:`NoAnswerInTime`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from heron.ai.server_probe import Answer, Prober, classify, probing, run_round
from heron.ai.server_tokens import COUNT_DEADLINE_S, TOKENIZE_TIMEOUT_S, rendered_prompt, server_count
from heron.ai.server_window import PROBE_DEADLINE_S, NoAnswerInTime, ServerWindow, probe_window
from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.llama_server import LlamaBehaviour, LlamaServer

T = TypeVar("T")
MARGIN_S = 10.0  # generous: without the deadline these never return
STALLS = ("silent", "trickle-head", "trickle-body")


def timed(call: Callable[[], T]) -> tuple[T | BaseException, float]:
    started = time.monotonic()
    try:
        result: T | BaseException = call()
    except Exception as exc:  # noqa: BLE001 - what the round ended with is the result
        result = exc
    return result, time.monotonic() - started


@pytest.mark.parametrize("stall", STALLS)
def test_a_stalled_models_listing_still_reads_props(stall: str) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096, stall={"/v1/models": stall}))
    try:
        found, elapsed = timed(lambda: probe_window(server.base_url, "local"))
        assert found == ServerWindow(4_096, "llama.cpp /props n_ctx", slots=1)
        assert elapsed < PROBE_DEADLINE_S + MARGIN_S
    finally:
        server.close()


@pytest.mark.parametrize("stall", STALLS)
def test_stalled_props_is_no_answer_in_time(stall: str) -> None:
    """``/v1/models`` said llama.cpp (its training context) but ``/props`` never answered:
    not the training context, which would overstate a ``-c 4096`` server 8 times, but
    "ask again soon"."""
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096, stall={"/props": stall}))
    try:
        found, elapsed = timed(lambda: probe_window(server.base_url, "local"))
        assert isinstance(found, NoAnswerInTime) and "/props" in str(found), found
        assert elapsed < PROBE_DEADLINE_S + MARGIN_S
    finally:
        server.close()


def test_stalled_slots_keeps_the_props_window() -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096, total_slots=4, stall={"/slots": "trickle-body"}))
    try:
        found, elapsed = timed(lambda: probe_window(server.base_url, "local"))
        assert found == ServerWindow(4_096, "llama.cpp /props n_ctx", slots=4)
        assert elapsed < PROBE_DEADLINE_S + MARGIN_S
    finally:
        server.close()


def stalling(paths: dict[str, str]) -> LocalServer:
    """ "Not found" everywhere but the stalled paths."""

    def respond(request: Recorded) -> Reply:
        for path, stall in paths.items():
            if request.path.startswith(path):
                return Reply(stall=stall)
        return json_reply(404, {"error": "not found"})

    return LocalServer(respond, answers_probes=True)


@pytest.mark.parametrize("path", ["/api/show", "/api/v0/models", "/v1/models"])
def test_stalled_ollama_lm_studio_or_vllm_endpoints(path: str) -> None:
    server = stalling({path: "trickle-body"})
    try:
        found, elapsed = timed(lambda: probe_window(server.url + "/v1", "qwen"))
        assert isinstance(found, NoAnswerInTime) and path in str(found), found
        assert elapsed < PROBE_DEADLINE_S + MARGIN_S
    finally:
        server.close()


@pytest.mark.parametrize("stall", STALLS)
def test_a_server_that_answers_nothing_ends_the_round_by_its_deadline(stall: str) -> None:
    server = stalling({"/": stall})
    try:
        found, elapsed = timed(lambda: probe_window(server.url + "/v1", "m"))
        assert isinstance(found, NoAnswerInTime), found
        assert elapsed < PROBE_DEADLINE_S + MARGIN_S
    finally:
        server.close()


def count_round(base: str, work: Callable[[Prober], Awaitable[Answer]]) -> Answer:
    async def run() -> Answer:
        async with probing(base, None, COUNT_DEADLINE_S, TOKENIZE_TIMEOUT_S) as prober:
            return await work(prober)

    return asyncio.run(run())


@pytest.mark.parametrize("path", ["/apply-template", "/tokenize"])
@pytest.mark.parametrize("stall", STALLS)
def test_stalled_template_and_tokenizer_are_unknown_by_the_deadline(path: str, stall: str) -> None:
    server = LlamaServer(LlamaBehaviour(stall={path: stall}))
    base = server.base_url
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]

    async def both(prober: Prober) -> Answer:
        rendered = await rendered_prompt(prober, base, "m", messages, [])
        counted = await server_count(prober, base, "m", "hi there")
        return rendered if path == "/apply-template" else counted

    try:
        answer, elapsed = timed(lambda: count_round(base, both))
        assert answer == Answer("unknown")
        assert elapsed < COUNT_DEADLINE_S + MARGIN_S
    finally:
        server.close()


def test_a_round_started_inside_a_running_loop_runs_on_its_own_thread() -> None:
    """An rpc command switching models asks from inside the event loop."""
    server = LlamaServer(LlamaBehaviour(n_ctx=8_192))

    async def inside() -> ServerWindow | None:
        return probe_window(server.base_url, "local")

    try:
        assert asyncio.run(inside()) == ServerWindow(8_192, "llama.cpp /props n_ctx", slots=1)
        assert run_round(server.base_url, None, 1.0, 1.0, lambda prober: prober.ask("GET", server.url + "/nope")) == (
            Answer("missing")
        )
    finally:
        server.close()


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (200, b'{"a": 1}', "ok"),
        (200, b"<html>the web UI</html>", "missing"),
        (404, b"", "missing"),
        (405, b"", "missing"),
        (501, b"", "missing"),  # llama.cpp --no-slots
        (503, b'{"error": "Loading model"}', "unknown"),  # llama.cpp loading its model
        (500, b"", "unknown"),
        (429, b"", "unknown"),
    ],
)
def test_answers_are_classified_for_the_cache(status: int, body: bytes, kind: str) -> None:
    assert classify(status, body).kind == kind
