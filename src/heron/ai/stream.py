"""The stream contract, enforced once for every provider.

A provider adapter only maps its wire events onto a :class:`MessageBuilder` and raises
on failure. This module wraps it so that, whatever the provider does, the consumer sees
``start``, block events, and exactly one ``done`` or ``error``; never an exception.
It also owns abort (interrupting a pending network read at once) and retry of
transient failures that happen before any content was shown.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Generator
from typing import Any, Protocol

from heron.ai.abort import sleep_or_abort
from heron.ai.builder import MessageBuilder
from heron.ai.events import AssistantEvent, DoneEvent, ErrorEvent, RetryEvent, StartEvent
from heron.ai.options import StreamOptions
from heron.ai.overflow import RETRYABLE, ErrorKind, ProviderError
from heron.ai.tokens import calculate_cost
from heron.ai.types import AssistantMessage, Context, Model, Usage


class Provider(Protocol):
    """What a provider implements. ``stream`` yields the builder's events and returns when
    the response is complete (having set ``builder.stop_reason`` and usage); it raises on
    any failure - :func:`describe_error` decides what the failure means."""

    api: str

    def stream(
        self, model: Model, context: Context, options: StreamOptions, builder: MessageBuilder
    ) -> AsyncIterator[AssistantEvent]: ...

    def describe_error(self, exc: BaseException) -> ProviderError | None: ...


class AssistantEventStream:
    """Async iterator of events; ``await stream.result()`` gives the final message."""

    def __init__(self, events: AsyncGenerator[AssistantEvent, None]) -> None:
        self._events = events
        self._result: AssistantMessage | None = None

    def __aiter__(self) -> AsyncGenerator[AssistantEvent, None]:
        return self._events

    def _set_result(self, message: AssistantMessage) -> None:
        self._result = message

    async def result(self) -> AssistantMessage:
        """Drain what is left of the stream and return the final message."""
        if self._result is None:
            async for _ in self._events:
                pass
        assert self._result is not None, "stream ended without a terminal event"
        return self._result

    def __await__(self) -> Generator[Any, None, AssistantMessage]:
        return self.result().__await__()


def describe_error(provider: Provider, exc: BaseException) -> ProviderError:
    """Normalise any exception into a :class:`ProviderError` (status, text, retry-after)."""
    if isinstance(exc, ProviderError):
        return exc
    described = provider.describe_error(exc)
    if described is not None:
        return described
    return generic_error(exc)


def generic_error(exc: BaseException) -> ProviderError:
    module = type(exc).__module__ or ""
    name = type(exc).__name__
    text = str(exc) or name
    if module.startswith(("httpx", "httpcore", "anyio")) or isinstance(exc, (ConnectionError, OSError)):
        if "Timeout" in name or isinstance(exc, TimeoutError):
            return ProviderError(f"Request timed out: {text}", kind=ErrorKind.TRANSIENT)
        return ProviderError(f"Connection error: {text}", kind=ErrorKind.TRANSIENT)
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return ProviderError(text, status=status)
    return ProviderError(f"{name}: {text}", kind=ErrorKind.UNKNOWN)


class _Aborted(Exception):
    pass


def open_stream(provider: Provider, model: Model, context: Context, options: StreamOptions) -> AssistantEventStream:
    holder: list[AssistantEventStream] = []
    stream = AssistantEventStream(_run(provider, model, context, options, holder))
    holder.append(stream)
    return stream


async def _run(
    provider: Provider,
    model: Model,
    context: Context,
    options: StreamOptions,
    holder: list[AssistantEventStream],
) -> AsyncGenerator[AssistantEvent, None]:
    import asyncio  # lazily: importing heron.ai must not pay for asyncio

    signal = options.signal
    policy = options.retry
    builder = MessageBuilder(model)
    task = asyncio.current_task()
    yield StartEvent(partial=builder.message)
    attempt = 0
    while True:
        events = provider.stream(model, context, options, builder)
        in_provider = False
        interrupted = False

        def on_abort() -> None:
            nonlocal interrupted
            # in_provider is read live on purpose: only interrupt while awaiting the provider.
            if in_provider and task is not None and not interrupted:  # noqa: B023
                interrupted = True
                task.cancel()

        unsubscribe = signal.add_listener(on_abort) if signal is not None else None
        failure: ProviderError | None = None
        try:
            while True:
                if signal is not None and signal.aborted:
                    raise _Aborted
                in_provider = True
                try:
                    event = await events.__anext__()
                except StopAsyncIteration:
                    break
                finally:
                    in_provider = False
                yield event
        except asyncio.CancelledError:
            if interrupted and task is not None:
                task.uncancel()
            else:
                # Cancelled from outside: record the outcome, then let cancellation proceed.
                _finish_aborted(builder, holder, "Request was cancelled")
                await _close(events)
                raise
            failure = ProviderError(_abort_reason(options), kind=ErrorKind.ABORTED)
        except _Aborted:
            failure = ProviderError(_abort_reason(options), kind=ErrorKind.ABORTED)
        except Exception as exc:  # noqa: BLE001 - the contract is: never raise
            failure = describe_error(provider, exc)
        finally:
            if unsubscribe is not None:
                unsubscribe()
        await _close(events)

        if failure is None:
            _settle_usage(model, builder.usage)
            for event in builder.done():
                if isinstance(event, DoneEvent):
                    holder[0]._set_result(event.message)
                yield event
            return

        if failure.kind in RETRYABLE and not builder.has_content and attempt < policy.max_retries:
            delay = policy.delay(attempt, failure.retry_after)
            if delay <= policy.max_delay:
                attempt += 1
                if options.on_retry is not None:
                    options.on_retry(
                        RetryEvent(
                            attempt=attempt,
                            max_retries=policy.max_retries,
                            delay=delay,
                            error_message=failure.message,
                            kind=str(failure.kind),
                        )
                    )
                if await sleep_or_abort(delay, signal):
                    builder.message.usage = Usage()
                    builder.message.response_id = None
                    continue
                failure = ProviderError(_abort_reason(options), kind=ErrorKind.ABORTED)
            else:
                failure.message += (
                    f" (the server asked to retry after {delay:.0f}s, longer than the "
                    f"{policy.max_delay:.0f}s heron waits)"
                )

        _settle_usage(model, builder.usage)
        for event in builder.fail(
            failure.message,
            aborted=failure.kind == ErrorKind.ABORTED,
            kind=str(failure.kind),
            status=failure.status,
            retry_after=failure.retry_after,
        ):
            if isinstance(event, ErrorEvent):
                holder[0]._set_result(event.error)
            yield event
        return


def _abort_reason(options: StreamOptions) -> str:
    return options.signal.reason if options.signal is not None else "Request was aborted"


def _finish_aborted(builder: MessageBuilder, holder: list[AssistantEventStream], reason: str) -> None:
    for event in builder.fail(reason, aborted=True, kind=str(ErrorKind.ABORTED)):
        if isinstance(event, ErrorEvent):
            holder[0]._set_result(event.error)


def _settle_usage(model: Model, usage: Usage) -> None:
    calculate_cost(model, usage)


async def _close(events: AsyncIterator[AssistantEvent]) -> None:
    closer = getattr(events, "aclose", None)
    if closer is None:
        return
    with contextlib.suppress(Exception):  # closing a broken stream must not mask its error
        await closer()
