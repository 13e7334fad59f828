"""The stream contract, the faux provider, retry and abort, all through heron.ai.stream."""

from __future__ import annotations

import asyncio
import time

import pytest

from heron.ai import (
    AbortController,
    Context,
    DoneEvent,
    ErrorEvent,
    RetryEvent,
    RetryPolicy,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
    complete,
    stream,
)
from heron.ai.events import AssistantEvent
from heron.ai.providers.faux import FauxProvider, FauxReply, error, serialise_request, text, tool_call
from tests.ai.wires import check_stream

FAST = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=1.0)


def ctx(prompt: str = "hi") -> Context:
    return Context(system_prompt="You are a test.", messages=[UserMessage(content=prompt)])


async def collect(faux: FauxProvider, context: Context | None = None, **options: object) -> list[AssistantEvent]:
    return [event async for event in stream(faux.model(), context or ctx(), **options)]  # type: ignore[arg-type]


async def test_text_thinking_and_tool_call_stream(faux: FauxProvider) -> None:
    faux.queue(
        FauxReply(
            content=[
                ThinkingContent(thinking="Let me think about the file.", thinking_signature="sig-1"),
                TextContent(text="I will read it."),
                ToolCall(id="c1", name="read", arguments={"path": "src/ä.py", "limit": 20}),
            ]
        )
    )
    events = await collect(faux)
    check_stream(events)
    done = events[-1]
    assert isinstance(done, DoneEvent)
    message = done.message
    assert message.stop_reason == StopReason.TOOL_USE
    assert [b.type for b in message.content] == ["thinking", "text", "toolCall"]
    assert message.content[0].thinking_signature == "sig-1"  # type: ignore[union-attr]
    assert message.tool_calls()[0].arguments == {"path": "src/ä.py", "limit": 20}
    deltas = [e for e in events if e.type == "toolcall_delta"]
    assert len(deltas) > 1
    # arguments parsed so far are always consistent with the final ones
    for event in deltas:
        partial_args = event.partial.content[2].arguments  # type: ignore[union-attr]
        for key, value in partial_args.items():
            final = message.tool_calls()[0].arguments[key]
            assert value == final or (isinstance(value, str) and final.startswith(value))


async def test_usage_estimate_and_simulated_prompt_cache(faux: FauxProvider) -> None:
    faux.queue(text("one"), text("two"))
    first = await complete(faux.model(), ctx("a question"), session_id="s1")
    request_chars = len(serialise_request(ctx("a question")))
    assert first.usage.input == -(-request_chars // 4)
    assert first.usage.cache_read == 0
    assert first.usage.output == 1
    assert first.usage.cost.total > 0
    follow = ctx("a question")
    follow.messages += [first, UserMessage(content="and more")]
    second = await complete(faux.model(), follow, session_id="s1")
    assert second.usage.cache_read > 0
    total = second.usage.input + second.usage.cache_read
    assert total == -(-len(serialise_request(follow)) // 4)


async def test_empty_queue_is_an_error_event(faux: FauxProvider) -> None:
    events = await collect(faux)
    check_stream(events)
    assert isinstance(events[-1], ErrorEvent)
    assert events[-1].error.stop_reason == StopReason.ERROR
    assert "no reply queued" in (events[-1].error.error_message or "")


async def test_reply_function_sees_the_context(faux: FauxProvider) -> None:
    faux.queue(lambda c: text(f"you said {c.messages[-1].text()}"))  # type: ignore[union-attr]
    message = await complete(faux.model(), ctx("ping"))
    assert message.text() == "you said ping"


async def test_transient_error_is_retried_before_content(faux: FauxProvider) -> None:
    retries: list[RetryEvent] = []
    faux.queue(error("overloaded", 529), error("bad gateway", 502), text("fine"))
    events = await collect(faux, retry=FAST, on_retry=retries.append)
    check_stream(events)
    assert isinstance(events[-1], DoneEvent)
    assert events[-1].message.text() == "fine"
    assert [r.attempt for r in retries] == [1, 2]
    assert all(r.kind == "transient" for r in retries)


async def test_retry_gives_up_after_max_retries(faux: FauxProvider) -> None:
    faux.queue(*[error("service unavailable", 503) for _ in range(4)])
    events = await collect(faux, retry=RetryPolicy(max_retries=2, base_delay=0.001))
    last = events[-1]
    assert isinstance(last, ErrorEvent)
    assert last.kind == "transient" and last.status == 503
    assert faux.pending == 1


async def test_retry_after_is_honoured(faux: FauxProvider) -> None:
    faux.queue(error("rate limited", 429, retry_after=0.2), text("ok"))
    start = time.perf_counter()
    message = await complete(faux.model(), ctx(), retry=RetryPolicy(base_delay=0.001))
    assert message.text() == "ok"
    assert time.perf_counter() - start >= 0.19


async def test_retry_after_longer_than_cap_is_reported_not_waited(faux: FauxProvider) -> None:
    faux.queue(error("rate limited", 429, retry_after=3600))
    start = time.perf_counter()
    message = await complete(faux.model(), ctx(), retry=RetryPolicy(max_delay=60))
    assert time.perf_counter() - start < 1
    assert message.stop_reason == StopReason.ERROR
    assert "3600s" in (message.error_message or "")


async def test_no_retry_once_content_was_streamed(faux: FauxProvider) -> None:
    faux.queue(
        FauxReply(
            content=[TextContent(text="partial answer here")], error=error("reset", 503).error, error_after_chunks=1
        ),
        text("never used"),
    )
    events = await collect(faux, retry=FAST)
    check_stream(events)
    last = events[-1]
    assert isinstance(last, ErrorEvent)
    assert last.error.text() == "partial answer here"[: faux.chunk_size]
    assert faux.pending == 1


async def test_auth_error_is_not_retried(faux: FauxProvider) -> None:
    faux.queue(error("invalid x-api-key", 401), text("unused"))
    message = await complete(faux.model(), ctx(), retry=FAST)
    assert message.stop_reason == StopReason.ERROR
    assert faux.pending == 1


async def test_abort_mid_tool_call_keeps_partial_content() -> None:
    faux = FauxProvider.install("faux-slow", chunk_size=4, chunk_delay=0.01)
    faux.queue(tool_call("write", {"path": "a.txt", "content": "x" * 400}, text_before="Writing now"))
    controller = AbortController()
    events: list[AssistantEvent] = []
    async for event in stream(faux.model(), ctx(), signal=controller.signal):
        events.append(event)
        if event.type == "toolcall_delta" and len(events) > 20:
            controller.abort()
    check_stream(events)
    last = events[-1]
    assert isinstance(last, ErrorEvent)
    assert last.reason == StopReason.ABORTED and last.kind == "aborted"
    message = last.error
    assert message.text() == "Writing now"
    call = message.tool_calls()[0]
    assert call.arguments["path"] == "a.txt"
    assert call.arguments["content"].startswith("xxx")
    assert call.raw_arguments is not None and call.raw_arguments.startswith('{"path": "a.txt"')


async def test_abort_interrupts_a_pending_wait() -> None:
    """An abort fires while the provider is blocked (no chunk arriving): it ends at once."""
    faux = FauxProvider.install("faux-stuck", chunk_size=4, chunk_delay=30)
    faux.queue(text("this takes forever"))
    controller = AbortController()
    asyncio.get_running_loop().call_later(0.05, controller.abort)
    start = time.perf_counter()
    message = await complete(faux.model(), ctx(), signal=controller.signal)
    assert time.perf_counter() - start < 2
    assert message.stop_reason == StopReason.ABORTED
    assert message.error_message == "Request was aborted"
    assert not asyncio.current_task().cancelling()  # type: ignore[union-attr]


async def test_abort_during_retry_wait(faux: FauxProvider) -> None:
    faux.queue(error("overloaded", 529), text("late"))
    controller = AbortController()
    asyncio.get_running_loop().call_later(0.05, controller.abort)
    message = await complete(faux.model(), ctx(), signal=controller.signal, retry=RetryPolicy(base_delay=10))
    assert message.stop_reason == StopReason.ABORTED


async def test_outside_cancellation_propagates_and_records_result() -> None:
    faux = FauxProvider.install("faux-cancel", chunk_size=2, chunk_delay=0.05)
    faux.queue(text("slow slow slow"))
    s = stream(faux.model(), ctx())

    async def consume() -> None:
        async for _ in s:
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.08)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    result = await s.result()
    assert result.stop_reason == StopReason.ABORTED


async def test_invalid_tool_json_keeps_raw_text(faux: FauxProvider) -> None:
    faux.queue(FauxReply(content=[ToolCall(id="x", name="edit", raw_arguments='{"path": "a", "old": ')]))
    message = await complete(faux.model(), ctx())
    call = message.tool_calls()[0]
    assert call.arguments == {}
    assert call.raw_arguments == '{"path": "a", "old": '
    assert message.stop_reason == StopReason.TOOL_USE


async def test_stream_result_is_awaitable_directly(faux: FauxProvider) -> None:
    faux.queue(text("direct"))
    message = await stream(faux.model(), ctx())
    assert message.text() == "direct"


async def test_unknown_api_raises_key_error() -> None:
    from heron.ai import Model

    with pytest.raises(KeyError, match="no provider for api"):
        stream(Model(id="m", api="nope", provider="p"), ctx())


async def test_on_payload_sees_the_request(faux: FauxProvider) -> None:
    payloads: list[dict[str, object]] = []
    faux.queue(text("x"))
    await complete(faux.model(), ctx("payload please"), on_payload=payloads.append)
    assert "payload please" in str(payloads[0]["body"])


async def test_long_text_and_arguments_stream_in_linear_time() -> None:
    """A 100 KB answer and a 100 KB write in 4-character deltas: each delta must not copy
    or re-parse everything received so far (the whole stream stays well under a second
    of work even on a slow machine), and the partial arguments keep up within an eighth."""
    faux = FauxProvider.install("faux-long", chunk_size=4)
    content = "x = 1\n" * 17_000
    write = ToolCall(id="w", name="write", arguments={"path": "a.py", "content": content})
    faux.queue(FauxReply(content=[TextContent(text="y" * 100_000), write]))
    events = [e async for e in stream(faux.model(), ctx())]
    check_stream(events)
    final = events[-1]
    assert isinstance(final, DoneEvent)
    assert final.message.text() == "y" * 100_000
    assert final.message.tool_calls()[0].arguments["content"] == content
    seen = [
        len(e.partial.content[1].arguments.get("content", ""))
        for e in events  # type: ignore[union-attr]
        if e.type == "toolcall_delta"
    ]
    assert seen[-1] >= len(content) * 7 // 8
    assert seen == sorted(seen)


async def test_blocks_built_in_a_failed_batch_are_not_ended_unannounced() -> None:
    """An adapter that starts a block and raises before its batch was yielded: the
    consumer never saw that block start, so it gets no end for it either."""
    from heron.ai.builder import MessageBuilder
    from heron.ai.registry import register_provider, unregister_provider
    from heron.ai.types import Model

    class Broken:
        api = "broken-test"

        async def stream(self, model: Model, context: Context, options: object, builder: MessageBuilder):  # type: ignore[no-untyped-def]
            yield builder.start_text("a")
            yield builder.text_delta("a", "kept")
            batch = [builder.start_tool_call("b", "call_1", "read"), builder.tool_call_delta("b", '{"p"')]
            raise ValueError(f"broken after building {len(batch)} events")
            yield batch[0]  # pragma: no cover

        def describe_error(self, exc: BaseException) -> None:
            return None

    register_provider(Broken())
    try:
        model = Model(id="m", api="broken-test", provider="t")
        events = [event async for event in stream(model, ctx("hi"), retry=FAST)]
    finally:
        unregister_provider("broken-test")
    check_stream(events)
    final = events[-1]
    assert isinstance(final, ErrorEvent)
    assert final.error.text() == "kept"
    assert final.error.tool_calls() == []


async def test_an_observed_stream_tells_how_it_ended_before_passing_the_end_on(faux: FauxProvider) -> None:
    """The request path's observers learn the final message from ``observed_stream``, before
    the terminal event reaches the consumer, and the wrapper's result is that message - for
    an answer and for a failure alike."""
    from heron.ai.stream import observed_stream

    faux.queue(text("done"), error("overloaded", status=400))
    for expected in (DoneEvent, ErrorEvent):
        told: list[object] = []
        seen_before_end: list[bool] = []
        wrapped = observed_stream(stream(faux.model(), ctx()), told.append)
        async for event in wrapped:
            if isinstance(event, DoneEvent | ErrorEvent):
                seen_before_end.append(len(told) == 1)
                assert isinstance(event, expected)
        final = await wrapped.result()
        assert told == [final] and seen_before_end == [True]
        assert (final.stop_reason == StopReason.ERROR) == (expected is ErrorEvent)
