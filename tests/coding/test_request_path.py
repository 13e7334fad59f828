"""Every request of a session takes one path (``heron.coding.requests``): the agent's
turns, the summaries of a compaction, a branch summary and the memory flush's turns carry
the same typed options (key, session id, timeouts, retry policy), are checked against the
context rules (the suite runs with ``HERON_CHECK_CONTEXT=strict``) and are traced."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from heron.ai.options import StreamOptions
from heron.ai.providers.faux import FauxProvider, FauxReply, text
from heron.ai.types import Context, Model, StopReason
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.summary.summariser import summary_context
from heron.context.compaction.summary.summary_text import SUMMARISER_SYSTEM_PROMPT, is_summary_request
from heron.context.rules.invariants import STRICT_LOG
from heron.session.store import SessionStore

SETTINGS = {
    "compaction": {"keepRecentTokens": 50},
    "timeouts": {"firstByteMs": 4_321, "idleMs": 5_432, "requestMs": 65_432},
    "retry": {"maxRetries": 2, "baseDelayMs": 300, "maxDelayMs": 900},
}
FLUSH_MARK = "[heron: the conversation is about to be compacted"


def is_summary(context: Context) -> bool:
    return is_summary_request(context)


def reply(context: Context) -> FauxReply:
    return text("## Goal\nthe summary") if is_summary(context) else text("noted " * 40)


def recording(faux: FauxProvider) -> list[tuple[Context, StreamOptions]]:
    """Every request the provider receives, with the options it was sent with."""
    seen: list[tuple[Context, StreamOptions]] = []
    original = faux.stream

    async def stream(model: Model, context: Context, options: StreamOptions, builder: Any) -> AsyncIterator[Any]:
        seen.append((context, options))
        async for event in original(model, context, options, builder):
            yield event

    faux.stream = stream  # type: ignore[method-assign]
    return seen


def session_of(tmp_path: Path, faux: FauxProvider, **settings: Any) -> CodingSession:
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    faux.set_fallback(reply)
    return CodingSession(
        cwd=proj,
        model=faux.model(context_window=32_000, max_tokens=2_000),
        api_key="sk-session",
        store=SessionStore.create(proj, home=tmp_path / "home"),  # never the user's own home
        home=tmp_path / "home",
        settings=settings_from_dict({**SETTINGS, **settings}),
    )


def assert_session_options(session: CodingSession, options: StreamOptions, summary: bool = False) -> None:
    assert options.api_key == "sk-session"
    # a separate summary's prompt-cache key is the session's own for summaries (another
    # prefix); a shared one repeats the conversation's prefix, under the conversation's key
    assert options.session_id == session.store.session_id + ("/summary" if summary else "")
    assert (options.first_byte_ms, options.idle_ms, options.request_ms) == (4_321, 5_432, 65_432)
    assert (options.retry.max_retries, options.retry.base_delay, options.retry.max_delay) == (2, 0.3, 0.9)
    assert options.on_retry is not None


async def test_summary_and_branch_summary_requests_carry_the_sessions_options(
    tmp_path: Path, faux: FauxProvider
) -> None:
    seen = recording(faux)
    session = session_of(tmp_path, faux)
    await session.prompt("first: " + "x" * 2_000)
    fork_point = session.store.leaf_id
    await session.prompt("second: " + "y" * 2_000)
    end = await session.compact()
    assert end is not None and end.entry_id is not None
    summary = await session.navigate(fork_point, summarize=True)
    assert summary == "## Goal\nthe summary"
    summaries = [(c, o) for c, o in seen if is_summary(c)]
    assert len(summaries) >= 2  # the compaction's, the branch's
    for context, options in seen:  # turns and summaries alike
        assert_session_options(session, options, summary=context.system_prompt == SUMMARISER_SYSTEM_PROMPT)
    for context, options in summaries:
        assert options.max_tokens is not None and options.max_tokens <= 2_000
        if context.system_prompt == SUMMARISER_SYSTEM_PROMPT:  # the branch summary: a request of its own
            assert context.tools is None or context.tools == []
        else:  # the compaction's: the turn's system prompt and tools, no tool may be called
            assert context.system_prompt == session.agent.state.system_prompt
            assert context.tools == [t.definition() for t in session.agent.state.tools]
            assert options.tool_choice == "none"
    assert any(c.system_prompt != SUMMARISER_SYSTEM_PROMPT for c, _ in summaries)


async def test_every_request_is_a_chat_span_summaries_included(tmp_path: Path, faux: FauxProvider) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from heron.coding.tracing import SessionTracer

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    session = session_of(tmp_path, faux)
    tracer = SessionTracer(session, provider.get_tracer("test"))
    await session.prompt("first: " + "x" * 2_000)
    await session.prompt("second: " + "y" * 2_000)
    assert await session.compact() is not None
    tracer.close()
    spans = sorted(memory.get_finished_spans(), key=lambda s: s.start_time or 0)
    chats = [s for s in spans if s.name == f"chat {session.model.id}"]
    kinds = [dict(s.attributes or {})["heron.request.kind"] for s in chats]
    assert kinds[:2] == ["turn", "turn"] and set(kinds[2:]) == {"summary"}
    runs = [s for s in spans if s.name == "invoke_agent heron"]
    assert len(runs) == 2
    for chat in chats:
        attributes = dict(chat.attributes or {})
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.conversation.id"] == session.store.session_id
        assert attributes["gen_ai.usage.input_tokens"] > 0
        assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    for turn in chats[:2]:  # a turn's span is a child of its run
        assert turn.parent is not None and turn.parent.span_id in {r.context.span_id for r in runs}
    for summary in chats[2:]:  # a manual /compact outside a run: a span of its own
        assert summary.parent is None


async def test_the_memory_flush_takes_the_request_path(
    tmp_path: Path, faux: FauxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_MEMORY_FLUSH", "1")
    seen = recording(faux)
    session = session_of(tmp_path, faux, memory={"flush": True})
    await session.prompt("first: " + "x" * 2_000)
    await session.prompt("second: " + "y" * 2_000)
    end = await session.context_owner.compact(reason="threshold")
    assert end.entry_id is not None
    flushes = [(c, o) for c, o in seen if c.messages and FLUSH_MARK in str(c.messages[-1].to_json_dict())]
    assert len(flushes) == 1
    context, options = flushes[0]
    assert_session_options(session, options)
    assert options.max_tokens is not None and options.max_tokens <= 2_000
    assert context.system_prompt == session.agent.state.system_prompt


async def test_a_summary_request_that_breaks_the_context_rules_is_not_sent(tmp_path: Path, faux: FauxProvider) -> None:
    """Its own snapshot: the transcript must fit the window with the summary's output cap."""
    session = session_of(tmp_path, faux)
    sent = len(faux.requests)
    answer = await session.requests.summary_ask()(summary_context("x" * 4 * 40_000), 2_000)
    assert answer.stop_reason == StopReason.ERROR
    assert answer.error_message is not None and "a.fits-window" in answer.error_message
    assert answer.error_message.startswith("the summary request breaks the context rules")
    assert len(faux.requests) == sent  # nothing reached the provider
    assert {v.rule for v in STRICT_LOG.take()} == {"a.fits-window"}  # strict mode logged it (the suite's check)
    fits = await session.requests.summary_ask()(summary_context("a short transcript"), 2_000)
    assert fits.stop_reason == StopReason.STOP and len(faux.requests) == sent + 1
