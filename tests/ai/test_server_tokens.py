"""A local server's own token count (``/tokenize``), in llama.cpp's and vLLM's formats."""

from __future__ import annotations

from typing import Any

from heron.ai.server_tokens import count_from, rendered_prompt, server_count
from tests.support.http_server import LocalServer, Recorded, Reply, json_reply


def test_count_from_each_servers_answer() -> None:
    assert count_from({"tokens": [2, 9259, 1902]}) == 3  # llama.cpp
    assert count_from({"count": 4, "max_model_len": 8192, "tokens": [1, 2, 3, 4]}) == 4  # vLLM
    assert count_from({"tokens": "nope"}) is None
    assert count_from(["not", "a", "dict"]) is None
    assert count_from({"count": True}) is None


def test_one_request_speaks_both_formats() -> None:
    asked: list[dict[str, Any]] = []

    def respond(request: Recorded) -> Reply:
        body = request.json()
        asked.append(body)
        if request.path != "/tokenize":
            return json_reply(404, {"error": "not found"})
        # vLLM reads "model" and "prompt" and answers with a count
        return json_reply(200, {"count": len(body["prompt"].split()), "tokens": [], "max_model_len": 4096})

    server = LocalServer(respond, answers_probes=True)
    try:
        assert server_count(server.url + "/v1", "Qwen/Qwen3-0.6B", "one two three") == 3
        assert asked[0]["content"] == asked[0]["prompt"] == "one two three"
        assert asked[0]["model"] == "Qwen/Qwen3-0.6B"
    finally:
        server.close()


def test_a_server_without_tokenize_gives_none() -> None:
    server = LocalServer(lambda request: json_reply(404, {"error": "not found"}), answers_probes=True)
    try:
        assert server_count(server.url + "/v1", "m", "text") is None
    finally:
        server.close()
    assert server_count(server.url + "/v1", "m", "text") is None  # nothing listening any more


def test_the_server_renders_its_chat_template() -> None:
    """``/apply-template`` gets the Chat Completions body, tools included, and answers
    with the prompt its template makes of it."""
    asked: list[dict[str, Any]] = []

    def respond(request: Recorded) -> Reply:
        asked.append(request.json())
        if request.path != "/apply-template":
            return json_reply(404, {"error": "not found"})
        return json_reply(200, {"prompt": "<s>" + "".join(m["content"] for m in request.json()["messages"])})

    server = LocalServer(respond, answers_probes=True)
    try:
        tools = [{"type": "function", "function": {"name": "read", "description": "", "parameters": {}}}]
        prompt = rendered_prompt(server.url + "/v1", "m", [{"role": "user", "content": "one two"}], tools)
        assert prompt == "<s>one two"
        assert asked[0]["tools"] == tools and asked[0]["model"] == "m"
        assert rendered_prompt(server.url + "/v1", "m", [], []) == "<s>"
        assert "tools" not in asked[1]  # no tools: none sent
    finally:
        server.close()
    assert rendered_prompt(server.url + "/v1", "m", [], []) is None  # nothing listening any more
