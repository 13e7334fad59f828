"""Counting like the server (docs/context.md, "Counting tokens"): heron's chars/4 estimate
calibrated per model from the prompt tokens the server reports, recorded in the session.

A scripted llama.cpp server whose tokenizer counts 7 characters a token (a Gemma-like
vocabulary: fewer tokens than chars/4) or 2.5 (more): after the first answers, heron's
plan for each request is within 1.2x of the server's own count, after a compaction too
(where nothing anchors the count), and a process that opens the session later counts
the same.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from heron.ai.types import Model
from heron.coding.runtime import CodingSession
from heron.session.store import SessionStore
from tests.support.llama_server import LlamaBehaviour, LlamaServer


def words(turn: int, tokens: int) -> str:
    return f"Turn {turn}. " + " ".join(f"w{turn:02d}x{i:03d}" for i in range(tokens * 4 // 9))


def session_at(server: LlamaServer, cwd: Path, home: Path, store: SessionStore) -> CodingSession:
    model = Model(
        id="gemma",
        api="openai-chat",
        provider="local",
        base_url=server.base_url,
        context_window=16_384,
        max_tokens=1_024,
    )
    return CodingSession(cwd=cwd, model=model, store=store, home=home)


def with_a_file(server: LlamaServer, tmp_path: Path) -> tuple[CodingSession, SessionStore, Path, Path]:
    """A session with a file, in a new project and home, talking to ``server``."""
    cwd, home = tmp_path / "proj", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    store = SessionStore.create(cwd, home=home)
    return session_at(server, cwd, home, store), store, cwd, home


@pytest.mark.parametrize("chars_per_token", [7.0, 2.5], ids=["server-counts-less", "server-counts-more"])
def test_the_plan_is_within_1_2x_of_the_servers_count(tmp_path: Path, chars_per_token: float) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=16_384, chars_per_token=chars_per_token))
    try:
        session, store, cwd, home = with_a_file(server, tmp_path)
        off: list[float] = []
        for turn in range(4):
            asyncio.run(session.prompt(words(turn, 1_500)))
            served = [s for s in server.served if not s.summary]
            off.append(session.request_plan.tokens / served[-1].prompt_tokens)
        asyncio.run(session.compact())  # nothing anchors the count after a compaction
        asyncio.run(session.prompt(words(9, 1_500)))
        served = [s for s in server.served if not s.summary]
        off.append(session.request_plan.tokens / served[-1].prompt_tokens)
        assert all(1 / 1.2 <= ratio <= 1.2 for ratio in off[1:]), off
        ratio = session.policy.sizes.ratio
        assert ratio != 1.0
        before = session.policy.sizes.count(session.policy.view(session.messages))
        store.close()
        reopened = session_at(server, cwd, home, SessionStore.open(store.path))  # type: ignore[arg-type]
        assert reopened.policy.sizes.ratio == ratio  # a restart counts the same
        view = reopened.policy.view(reopened.messages)
        assert reopened.policy.sizes.count(view) == before
    finally:
        server.close()


@pytest.mark.parametrize("chars_per_token", [7.0, 2.5], ids=["server-counts-less", "server-counts-more"])
def test_the_first_request_is_planned_on_the_servers_tokenize(tmp_path: Path, chars_per_token: float) -> None:
    """Before any answer has calibrated the model, a small local window asks the server's
    ``/tokenize`` to count the system prompt and tools: the first plan is already within
    1.2x, and the ratio is recorded (a resume counts the same)."""
    server = LlamaServer(LlamaBehaviour(n_ctx=16_384, chars_per_token=chars_per_token))
    try:
        session, store, cwd, home = with_a_file(server, tmp_path)
        asyncio.run(session.prompt("Hello"))
        (served,) = server.served
        assert 1 / 1.2 <= session.request_plan.tokens / served.prompt_tokens <= 1.2
        assert session.policy.sizes.ratio != 1.0
        asyncio.run(session.prompt(words(1, 300)))
        assert server.paths().count("/tokenize") == 1  # once: the answers calibrate from then on
        store.close()
        reopened = session_at(server, cwd, home, SessionStore.open(store.path))  # type: ignore[arg-type]
        assert reopened.policy.calibration.calibrated
    finally:
        server.close()


def test_a_template_that_drops_the_tools_is_counted_without_them(tmp_path: Path) -> None:
    """Gemma 3's chat template has no tools section: the server never sees the schemas
    heron sends. The rendered first request (``/apply-template``) shows it, heron's own
    count leaves the tools out, and every plan - the first, the later ones and a resumed
    process's - is within 1.2x of the server's count on both sides."""
    server = LlamaServer(LlamaBehaviour(n_ctx=16_384, chars_per_token=5.0, drops_tools=True))
    try:
        session, store, cwd, home = with_a_file(server, tmp_path)
        plans: list[int] = []
        for turn, prompt in enumerate(["Hello", words(1, 300), "Short one.", words(2, 900)]):
            asyncio.run(session.prompt(prompt))
            plans.append(session.request_plan.tokens)
            assert server.served[-1].prompt_tokens > 0, turn
        for plan, served in zip(plans, server.served, strict=True):
            assert 1 / 1.2 <= plan / served.prompt_tokens <= 1.2, (plans, [s.prompt_tokens for s in server.served])
        store.close()
        reopened = session_at(server, cwd, home, SessionStore.open(store.path))  # type: ignore[arg-type]
        asyncio.run(reopened.prompt("And once more."))
        assert 1 / 1.2 <= reopened.request_plan.tokens / server.served[-1].prompt_tokens <= 1.2
    finally:
        server.close()


def test_a_server_without_tokenize_is_asked_once(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=16_384, chars_per_token=2.5, tokenize=False))
    cwd, home = tmp_path / "proj", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    try:
        session = session_at(server, cwd, home, SessionStore.in_memory(cwd))
        asyncio.run(session.prompt("Hello"))
        asyncio.run(session.prompt("Hello again"))
        assert server.paths().count("/tokenize") == 1
        assert len(server.served) == 2  # the requests went out all the same
    finally:
        server.close()


def test_a_large_window_does_not_ask(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=65_536))
    cwd, home = tmp_path / "proj", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    try:
        model = Model(id="gemma", api="openai-chat", provider="local", base_url=server.base_url, context_window=65_536)
        session = CodingSession(cwd=cwd, model=model, store=SessionStore.in_memory(cwd), home=home)
        asyncio.run(session.prompt("Hello"))
        assert "/tokenize" not in server.paths()
    finally:
        server.close()


def test_debug_log_says_what_each_turn_was_planned_at(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """``HERON_LOG=debug``: one line per request, a turn's with heron's plan - what the
    ``real_server`` tests set beside the real server's own count."""
    server = LlamaServer(LlamaBehaviour(n_ctx=16_384, chars_per_token=3.0))
    cwd, home = tmp_path / "proj", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    try:
        session = session_at(server, cwd, home, SessionStore.in_memory(cwd))
        with caplog.at_level(logging.DEBUG, logger="heron.coding.requests"):
            asyncio.run(session.prompt(words(0, 600)))
        (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("request ")]
        (served,) = server.served
        assert line == (
            f"request turn: planned {session.request_plan.tokens} tokens, window 16384, "
            f"ratio {session.policy.sizes.ratio:.3f}, max_tokens {served.max_tokens}"
        )
    finally:
        server.close()
