"""A local server's own token count (``/tokenize``) and chat template (``/apply-template``),
in llama.cpp's and vLLM's formats, each answer classified for the cache."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from heron.ai.server_probe import Answer, Prober, probing
from heron.ai.server_tokens import count_from, rendered_prompt, server_count
from tests.support.http_server import LocalServer, Recorded, Reply, json_reply

T = TypeVar("T")


def ask(base_url: str, work: Callable[[Prober], Awaitable[T]]) -> T:
    async def run() -> T:
        async with probing(base_url, None, 5.0, 5.0) as prober:
            return await work(prober)

    return asyncio.run(run())


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
    base = server.url + "/v1"
    try:
        assert ask(base, lambda p: server_count(p, base, "Qwen/Qwen3-0.6B", "one two three")) == Answer("ok", 3)
        assert asked[0]["content"] == asked[0]["prompt"] == "one two three"
        assert asked[0]["model"] == "Qwen/Qwen3-0.6B"
    finally:
        server.close()


def test_a_server_without_tokenize_is_missing_and_an_unusable_answer_too() -> None:
    answers = iter([json_reply(404, {"error": "not found"}), json_reply(200, {"tokens": "?"})])
    server = LocalServer(lambda request: next(answers), answers_probes=True)
    base = server.url + "/v1"
    try:
        assert ask(base, lambda p: server_count(p, base, "m", "text")).kind == "missing"
        assert ask(base, lambda p: server_count(p, base, "m", "text")).kind == "missing"  # not this format
    finally:
        server.close()


def test_a_server_error_is_unknown_not_missing() -> None:
    """llama.cpp answers 503 while it loads its model: worth asking again, not remembering."""
    server = LocalServer(lambda request: json_reply(503, {"error": "Loading model"}), answers_probes=True)
    base = server.url + "/v1"
    try:
        assert ask(base, lambda p: server_count(p, base, "m", "text")).kind == "unknown"
    finally:
        server.close()


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
    base = server.url + "/v1"
    try:
        tools = [{"type": "function", "function": {"name": "read", "description": "", "parameters": {}}}]
        messages = [{"role": "user", "content": "one two"}]
        assert ask(base, lambda p: rendered_prompt(p, base, "m", messages, tools)) == Answer("ok", "<s>one two")
        assert asked[0]["tools"] == tools and asked[0]["model"] == "m"
        assert ask(base, lambda p: rendered_prompt(p, base, "m", [], [])) == Answer("ok", "<s>")
        assert "tools" not in asked[1]  # no tools: none sent
    finally:
        server.close()
