"""Asking a local server for its window, in each server's own response format."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from heron.ai.server_window import NothingListening, ServerWindow, probe_window, server_root
from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.llama_server import LlamaBehaviour, LlamaServer

NOT_FOUND = json_reply(404, {"error": "not found"})


def serving(routes: dict[tuple[str, str], Any]) -> LocalServer:
    def respond(request: Recorded) -> Reply:
        payload = routes.get((request.method, request.path))
        return json_reply(200, payload) if payload is not None else NOT_FOUND

    return LocalServer(respond, answers_probes=True)


def test_vllm_max_model_len() -> None:
    models = {
        "object": "list",
        "data": [
            {"id": "other", "object": "model", "owned_by": "vllm", "max_model_len": 2048},
            {
                "id": "Qwen/Qwen3-8B",
                "object": "model",
                "owned_by": "vllm",
                "root": "Qwen/Qwen3-8B",
                "max_model_len": 32768,
            },
        ],
    }
    server = serving({("GET", "/v1/models"): models})
    try:
        found = probe_window(server.url + "/v1", "Qwen/Qwen3-8B")
        assert found is not None and (found.window, found.source) == (32768, "vLLM /v1/models max_model_len")
    finally:
        server.close()


def test_llama_props_wins_over_the_training_context() -> None:
    models = {"object": "list", "data": [{"id": "m.gguf", "owned_by": "llamacpp", "meta": {"n_ctx_train": 131072}}]}
    props = {"default_generation_settings": {"n_ctx": 4096, "params": {"n_predict": -1}}, "total_slots": 1}
    server = serving({("GET", "/v1/models"): models, ("GET", "/props"): props})
    try:
        found = probe_window(server.url + "/v1", "local")
        assert found is not None and found.window == 4096 and "props" in found.source
        assert [r.path for r in server.requests] == ["/v1/models", "/props"]
    finally:
        server.close()


@pytest.mark.parametrize(
    ("settings", "output"),
    [
        ({"n_ctx": 4096, "params": {"n_predict": 256}}, 256),  # llama-server -n 256
        ({"n_ctx": 4096, "n_predict": 300}, 300),  # older builds: beside n_ctx
        ({"n_ctx": 4096, "params": {"n_predict": -1}}, None),  # -1: no cap
        ({"n_ctx": 4096, "params": {"n_predict": True}}, None),
    ],
)
def test_llama_props_n_predict_is_the_servers_output_limit(settings: dict[str, Any], output: int | None) -> None:
    server = serving({("GET", "/props"): {"default_generation_settings": settings}})
    try:
        found = probe_window(server.url + "/v1", "local")
        assert found is not None and (found.window, found.output_limit) == (4096, output)
        assert ("n_predict" in found.source) == (output is not None)
    finally:
        server.close()


@pytest.mark.parametrize(
    ("show", "window"),
    [
        (
            {
                "parameters": 'stop                           "<end>"\nnum_ctx                        8192',
                "model_info": {"llama.context_length": 131072},
            },
            8192,
        ),
        ({"parameters": "temperature 0.7", "model_info": {"qwen2.context_length": 32768}}, 4096),
        ({"model_info": {"gemma3.context_length": 2048}}, 2048),
    ],
)
def test_ollama_num_ctx_else_its_default_context(show: dict[str, Any], window: int) -> None:
    server = serving({("POST", "/api/show"): show})
    try:
        found = probe_window(server.url + "/v1", "qwen2.5-coder:7b")
        assert found is not None and found.window == window
        shown = [r for r in server.requests if r.path == "/api/show"]
        assert shown[0].json() == {"model": "qwen2.5-coder:7b"}
    finally:
        server.close()


def test_lm_studio_loaded_context_length() -> None:
    model = {"id": "qwen2.5-7b", "state": "loaded", "max_context_length": 32768, "loaded_context_length": 8192}
    server = serving({("GET", "/api/v0/models/qwen2.5-7b"): model})
    try:
        found = probe_window(server.url + "/v1", "qwen2.5-7b")
        assert found is not None and found.window == 8192 and "LM Studio" in found.source
    finally:
        server.close()


def test_a_server_that_says_nothing_leaves_the_window_alone() -> None:
    server = serving({})
    try:
        assert probe_window(server.url + "/v1", "m") is None
    finally:
        server.close()


def test_a_refused_connection_stops_the_probing() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(NothingListening):
        probe_window(f"http://127.0.0.1:{port}/v1", "m")


def test_the_root_of_a_v1_base_url() -> None:
    assert server_root("http://localhost:8080/v1/") == "http://localhost:8080"
    assert server_root("http://localhost:1234") == "http://localhost:1234"


def test_llama_slots_from_props_and_the_smallest_slot() -> None:
    """``total_slots`` is kept (a server of several slots may share one cache: heron sends
    nothing beside the turn); with several, ``/slots`` is asked and the smallest slot's
    ``n_ctx`` is the window (a request may get any slot)."""
    server = LlamaServer(LlamaBehaviour(n_ctx=8_192, total_slots=4, slot_n_ctx=2_048))
    try:
        found = probe_window(server.base_url, "local")
        assert found == ServerWindow(2_048, "llama.cpp /slots n_ctx", slots=4)
        assert server.paths() == ["/v1/models", "/props", "/slots"]
    finally:
        server.close()


@pytest.mark.parametrize("slots_endpoint", [True, False])
def test_one_slot_or_slots_off_asks_nothing_more(slots_endpoint: bool) -> None:
    behaviour = LlamaBehaviour(n_ctx=4_096, total_slots=1 if slots_endpoint else 4, slots_endpoint=slots_endpoint)
    server = LlamaServer(behaviour)
    try:
        found = probe_window(server.base_url, "local")
        assert found is not None and found.window == 4_096 and found.slots == behaviour.total_slots
        assert "/slots" not in server.paths()  # one slot: /props said it all; --no-slots: props says it is off
    finally:
        server.close()


def test_slots_not_found_keeps_the_props_window() -> None:
    props = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 2}
    server = serving({("GET", "/props"): props})  # /slots: "not found", as an older build
    try:
        assert probe_window(server.url + "/v1", "local") == ServerWindow(4_096, "llama.cpp /props n_ctx", slots=2)
    finally:
        server.close()
