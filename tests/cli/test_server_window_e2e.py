"""The window and output limit of a local server, asked of the server (docs/configuration.md,
"What heron asks a local server").

The real ``heron`` command against a scripted llama.cpp server started with ``-c 4096``:
with nothing but ``--base-url`` and ``--model``, heron reads ``/props``, plans for 4,096
tokens and asks for at most a quarter of it; the answer is cached in ``$HERON_HOME`` so
the next run asks nothing; ``--context-window`` / ``--max-tokens`` and a configured
``maxTokens`` win and are sent as given.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from tests.cli.local_run import Place
from tests.support.http_server import LocalServer
from tests.support.llama_server import MODEL_PATH, LlamaBehaviour, LlamaServer
from tests.support.sse import openai_reply


def test_the_window_is_read_from_llama_props_and_cached(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096))
    place = Place.make(tmp_path)
    try:
        done = place.run("--base-url", server.base_url, "--model", "gemma", "-p", "hello")
        assert done.returncode == 0, done.stderr
        assert "/props" in server.paths()
        turn = server.served[-1]
        assert turn.max_tokens <= 1_024  # a quarter of the server's window, not 16,384
        assert not turn.rejected
        cache = json.loads((place.home / "cache" / "server-windows.json").read_text())
        assert [entry["window"] for entry in cache.values()] == [4_096]

        asked = len(server.requests)
        again = place.run("--base-url", server.base_url, "--model", "gemma", "-p", "hello again")
        assert again.returncode == 0, again.stderr
        # The cache answered the window, and what the template does with the tools
        # (remembered with it); the new session's counts are calibrated by the server's
        # tokenizer before its first request (heron.coding.first_count).
        assert [r.path for r in server.requests[asked:]] == ["/tokenize", "/v1/chat/completions"]
    finally:
        server.close()


def test_flags_override_the_server_and_a_small_output_limit_is_sent_as_given(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096))
    place = Place.make(tmp_path)
    try:
        args = ("--base-url", server.base_url, "--model", "gemma", "--context-window", "3000", "--max-tokens", "256")
        done = place.run(*args, "-p", "hello")
        assert done.returncode == 0, done.stderr
        assert "/props" not in server.paths()  # a given window is never asked for
        # the template and tokenizer still are
        assert server.paths() == ["/apply-template", "/apply-template", "/tokenize", "/v1/chat/completions"]
        assert server.served[-1].max_tokens == 256
    finally:
        server.close()


def test_a_configured_max_tokens_below_1024_is_honoured(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096))
    place = Place.make(tmp_path)
    try:
        provider = {
            "baseUrl": server.base_url,
            "api": "openai-completions",
            "models": [{"id": "gemma", "maxTokens": 200}],
        }
        (place.home / "models.json").write_text(json.dumps({"providers": {"llama": provider}}))
        done = place.run("--model", "llama/gemma", "-p", "hello")
        assert done.returncode == 0, done.stderr
        assert "/props" in server.paths()  # no contextWindow in models.json: asked
        assert server.served[-1].max_tokens == 200
    finally:
        server.close()


def test_the_servers_own_output_cap_is_learned(tmp_path: Path) -> None:
    """A server started with ``-n 256`` says so in ``/props``: heron asks for no more."""
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096, n_predict=256))
    place = Place.make(tmp_path)
    try:
        done = place.run("--base-url", server.base_url, "--model", "gemma", "-p", "hello")
        assert done.returncode == 0, done.stderr
        assert server.served[-1].max_tokens == 256
        cache = json.loads((place.home / "cache" / "server-windows.json").read_text())
        assert [(e["window"], e["output"]) for e in cache.values()] == [(4_096, 256)]
    finally:
        server.close()


def test_context_shows_where_the_window_came_from(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=8_192))
    place = Place.make(tmp_path)
    try:
        done = place.run("--base-url", server.base_url, "--model", MODEL_PATH, "--mode", "rpc", stdin=_rpc_context())
        assert done.returncode == 0, done.stderr
        assert "llama.cpp /props n_ctx" in done.stdout
    finally:
        server.close()


def _rpc_context() -> str:
    return json.dumps({"id": "1", "type": "get_state"}) + "\n"


def test_nothing_listening_fails_fast_and_says_so_once(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    place = Place.make(tmp_path)
    started = time.monotonic()
    done = place.run("--base-url", f"http://127.0.0.1:{port}/v1", "--model", "gemma", "-p", "hello")
    elapsed = time.monotonic() - started
    assert done.returncode == 1
    hint = f"nothing is listening at http://127.0.0.1:{port} — is the server running?"
    assert done.stderr.count(hint) == 1, done.stderr
    assert "retrying" not in done.stderr
    assert elapsed < 15  # not 2 + 4 + 8 s of retries (and a loaded machine's start-up)


def test_continue_without_flags_uses_the_sessions_server(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=8_192))
    place = Place.make(tmp_path)
    try:
        first = place.run("--base-url", server.base_url, "--model", "gemma", "--api-key", "sk-local-1", "-p", "one")
        assert first.returncode == 0, first.stderr
        second = place.run("--continue", "-p", "two")
        assert second.returncode == 0, second.stderr
        last = server.served[-1].body
        assert last["model"] == "gemma"
        assert [m["content"] for m in last["messages"] if m["role"] == "user"][-2:] in (
            ["one", "two"],
            [[{"type": "text", "text": "one"}], [{"type": "text", "text": "two"}]],
        )
        (session,) = (place.home / "sessions").rglob("*.jsonl")
        text = session.read_text()
        assert '"heron.server"' in text and server.base_url in text
        assert "sk-local-1" not in text  # a key is never part of what a session remembers
        by_path = place.run("--session", str(session), "-p", "three")
        assert by_path.returncode == 0, by_path.stderr
        assert server.served[-1].body["model"] == "gemma"
    finally:
        server.close()


def test_flags_override_the_remembered_server(tmp_path: Path) -> None:
    first_server, other = LlamaServer(), LlamaServer()
    place = Place.make(tmp_path)
    try:
        assert place.run("--base-url", first_server.base_url, "--model", "gemma", "-p", "one").returncode == 0
        moved = place.run("--continue", "--base-url", other.base_url, "--model", "qwen", "-p", "two")
        assert moved.returncode == 0, moved.stderr
        assert [s.body["model"] for s in other.served] == ["qwen"]
        assert len(first_server.served) == 1
        back = place.run("--continue", "-p", "three")  # the latest server the session used
        assert back.returncode == 0, back.stderr
        assert [s.body["model"] for s in other.served] == ["qwen", "qwen"]
    finally:
        first_server.close()
        other.close()


def test_a_server_that_says_nothing_is_asked_once(tmp_path: Path) -> None:
    server = LocalServer()
    server.fallback = openai_reply("hi", prompt_tokens=900, completion_tokens=1)
    place = Place.make(tmp_path)
    try:
        assert place.run("--base-url", server.url + "/v1", "--model", "m", "-p", "one").returncode == 0
        asked = len(server.probes)
        assert asked >= 3  # /v1/models, /props, /api/show...: all "not found"
        assert server.requests[-1].json()["max_completion_tokens"] == 16_384  # the default: no window said
        assert place.run("--base-url", server.url + "/v1", "--model", "m", "-p", "two").returncode == 0
        assert len(server.probes) == asked  # the cache remembers that it said nothing
    finally:
        server.close()


def test_a_model_switched_to_in_rpc_gets_its_servers_window(tmp_path: Path) -> None:
    """``set_model`` (the rpc form of ``/model``) to a models.json model without
    ``contextWindow``: its own server is asked, as at the start."""
    first, second = LlamaServer(LlamaBehaviour(n_ctx=4_096)), LlamaServer(LlamaBehaviour(n_ctx=8_192))
    place = Place.make(tmp_path)
    try:
        provider = {"baseUrl": second.base_url, "api": "openai-chat", "models": [{"id": "gemma-8k"}]}
        (place.home / "models.json").write_text(json.dumps({"providers": {"llama": provider}}))
        commands = [
            {"id": "1", "type": "set_model", "model": "llama/gemma-8k"},
            {"id": "2", "type": "get_state"},
        ]
        stdin = "".join(json.dumps(c) + "\n" for c in commands)
        done = place.run("--base-url", first.base_url, "--model", "gemma", "--mode", "rpc", stdin=stdin)
        assert done.returncode == 0, done.stderr
        answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines()) if a.get("type") == "response"}
        assert answers["1"]["data"]["contextWindow"] == 8_192
        assert answers["1"]["data"]["maxTokens"] <= 2_048  # a quarter of the new window
        context = answers["2"]["data"]["context"]
        assert context["contextWindow"] == 8_192 and context["windowSource"] == "llama.cpp /props n_ctx"
        assert "/props" in second.paths()
    finally:
        first.close()
        second.close()


def test_heron_batch_asks_the_server_for_its_window(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096))
    place = Place.make(tmp_path)
    try:
        tasks = tmp_path / "tasks.jsonl"
        tasks.write_text(json.dumps({"id": "t1", "prompt": "hello", "cwd": str(place.cwd)}) + "\n")
        args = ["batch", str(tasks), "--out", str(tmp_path / "out"), "--base-url", server.base_url]
        done = place.run(*args, "--model", "gemma", "--progress", "plain")
        assert done.returncode == 0, done.stderr
        assert "/props" in server.paths()
        (turn,) = server.served
        assert turn.max_tokens <= 1_024 and not turn.rejected  # planned for 4,096, not 128,000
    finally:
        server.close()
