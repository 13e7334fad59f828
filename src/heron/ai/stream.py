"""The stream contract, enforced once for every provider.

A provider adapter only maps its wire events onto a :class:`MessageBuilder` and raises
on failure. This module wraps it so that, whatever the provider does, the consumer sees
``start``, block events, and exactly one ``done`` or ``error``; never an exception.
It also owns abort (interrupting a pending network read at once) and retry of
transient failures that happen before any content was shown.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol

from heron.ai.abort import sleep_or_abort
from heron.ai.builder import MessageBuilder
from heron.ai.events import AssistantEvent, DoneEvent, ErrorEvent, RetryEvent, StartEvent
from heron.ai.options import TIMEOUT_SETTINGS, StreamOptions
from heron.ai.overflow import RETRYABLE, ErrorKind, ProviderError
from heron.ai.providers.http import connection_error, display_url, incomplete, malformed
from heron.ai.tokens import calculate_cost
from heron.ai.types import AssistantMessage, Context, Model, Usage

if TYPE_CHECKING:
    from heron.ai.reading import ReadingWait


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


def observed_stream(stream: AssistantEventStream, on_end: Callable[[AssistantMessage], None]) -> AssistantEventStream:
    """A stream passing on ``stream``'s events whose final message is told to ``on_end``
    before the terminal event goes on, and is the new stream's result - so a wrapper (the
    request path's observers) knows how a request ended without reaching into the stream."""

    async def events() -> AsyncGenerator[AssistantEvent, None]:
        async for event in stream:
            if isinstance(event, DoneEvent | ErrorEvent):
                final = event.message if isinstance(event, DoneEvent) else event.error
                observed._set_result(final)
                on_end(final)
            yield event

    observed = AssistantEventStream(events())
    return observed


def describe_error(provider: Provider, exc: BaseException, where: str | None = None) -> ProviderError:
    """Normalise any exception into a :class:`ProviderError` (status, text, retry-after)."""
    if isinstance(exc, ProviderError):
        return exc
    described = provider.describe_error(exc)
    if described is not None:
        return described
    return generic_error(exc, where)


def generic_error(exc: BaseException, where: str | None = None) -> ProviderError:
    if isinstance(exc, ValueError) and isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):
        return malformed(exc)  # one classification for every provider: worth another try
    module = type(exc).__module__ or ""
    name = type(exc).__name__
    text = str(exc) or name
    if module.startswith(("httpx", "httpcore", "anyio", "aiohttp")) or isinstance(exc, (ConnectionError, OSError)):
        if "Timeout" in name or isinstance(exc, TimeoutError):
            return ProviderError(f"Request timed out: {text}", kind=ErrorKind.TRANSIENT, url=where)
        if any(word in name for word in ("RemoteProtocol", "ReadError", "Incomplete")):
            return incomplete()
        return connection_error(exc, where or "the server")
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return ProviderError(text, status=status)
    return ProviderError(f"{name}: {text}", kind=ErrorKind.UNKNOWN)


class _Aborted(Exception):
    pass


class _Watchdog:
    """Bounds each attempt's waits (``first_byte_ms``, ``idle_ms``, ``request_ms``).

    Progress is read from the builder (the provider notes when the answer starts and
    when content - not a keep-alive - arrives; every event counts as content too). When a
    bound passes while the task waits on the provider, the task is cancelled, the same way
    abort interrupts a pending read, and the attempt fails with a transient error naming
    the setting. Time the consumer spends between events is not the server's.

    A local server that may still be reading the prompt (``reading``) gets the time the
    prompt needs instead, and a timeout then is not retried (:mod:`heron.ai.reading`).
    """

    def __init__(
        self,
        options: StreamOptions,
        builder: MessageBuilder,
        task: Any,
        where: str | None,
        reading: ReadingWait | None = None,
    ) -> None:
        import asyncio

        self._options = options
        self._builder = builder
        self._task = task
        self._where = where
        self.reading = reading  # a local server: the wait while it reads (heron.ai.reading)
        self._loop = asyncio.get_running_loop()
        self._started = time.monotonic()
        self._handle: Any = None
        self.in_provider = False
        self.fired: str | None = None

    def start(self) -> None:
        builder = self._builder
        builder.responded_at = builder.active_at = None
        builder.progress = builder.progress_at = builder.answering_at = builder.prompt_timing = None
        self._schedule()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _deadline(self) -> tuple[float, str]:
        options, builder, reading = self._options, self._builder, self._reading_now()
        if reading is not None:  # the server may still be reading: its own bound, not requestMs
            name = "first_byte_ms" if builder.responded_at is None else "idle_ms"
            return reading.deadline(builder, getattr(options, name) / 1000), name
        start = builder.answering_at if self.reading is not None and builder.answering_at else self._started
        whole = (start + options.request_ms / 1000, "request_ms")
        if builder.responded_at is None:
            wait = (self._started + options.first_byte_ms / 1000, "first_byte_ms")
        else:
            wait = ((builder.active_at or builder.responded_at) + options.idle_ms / 1000, "idle_ms")
        return min(wait, whole)

    def _schedule(self) -> None:
        # The deadline only moves earlier when the answer starts (first byte -> idle), so
        # looking again at least every idle period is enough to never fire late.
        deadline, _ = self._deadline()
        wait = min(deadline - time.monotonic(), self._options.idle_ms / 1000)
        self._handle = self._loop.call_later(max(0.0, wait), self._check)

    def _check(self) -> None:
        self._handle = None
        deadline, name = self._deadline()
        if time.monotonic() < deadline:
            self._schedule()
        elif not self.in_provider or self._task is None:
            self._handle = self._loop.call_later(0.05, self._check)
        elif self.fired is None:
            self.fired = name
            self._task.cancel()

    def _reading_now(self) -> ReadingWait | None:
        reading = self.reading
        return reading if reading is not None and reading.reading(self._builder) else None

    def error(self) -> ProviderError:
        name = self.fired or "request_ms"
        limit = getattr(self._options, name) / 1000
        where = self._where or "the server"
        setting = TIMEOUT_SETTINGS[name]
        reading = self._reading_now()
        if reading is not None:  # never sent again: the retry would queue behind the copy being read
            text = reading.timeout_text(where, self._builder, setting)
            return ProviderError(text, kind=ErrorKind.TRANSIENT, url=self._where, retryable=False)
        if name == "first_byte_ms":
            text = f"no response from {where} within {limit:g} s"
        elif name == "idle_ms":
            text = f"no content from {where} for {limit:g} s"
        else:
            text = f"the request to {where} took longer than {limit:g} s"
        return ProviderError(f"Request timed out: {text} ({setting})", kind=ErrorKind.TRANSIENT, url=self._where)


def open_stream(provider: Provider, model: Model, context: Context, options: StreamOptions) -> AssistantEventStream:
    holder: list[AssistantEventStream] = []
    stream = AssistantEventStream(_run(provider, model, context, options, holder))
    holder.append(stream)
    return stream


def server_of(provider: Provider, model: Model) -> str | None:
    """``scheme://host`` the requests go to, for error messages."""
    base = model.base_url or getattr(provider, "default_base_url", None)
    return display_url(base) if isinstance(base, str) and base else None


class _Attempt:
    """One try at the request: the failure if it did not complete, and how many blocks
    the consumer saw start (blocks after those never reached it)."""

    def __init__(self) -> None:
        self.failure: ProviderError | None = None
        self.announced = 0


async def _attempt(
    provider: Provider,
    model: Model,
    context: Context,
    options: StreamOptions,
    builder: MessageBuilder,
    holder: list[AssistantEventStream],
    outcome: _Attempt,
) -> AsyncGenerator[AssistantEvent, None]:
    import asyncio

    signal = options.signal
    task = asyncio.current_task()
    where = server_of(provider, model)
    reading = _reading_wait(model, context, options)
    events = provider.stream(model, context, options, builder)
    watchdog = _Watchdog(options, builder, task, where, reading)
    interrupted = False

    def on_abort() -> None:
        nonlocal interrupted
        # Only interrupt while awaiting the provider (the flag is read live).
        if watchdog.in_provider and task is not None and not interrupted and watchdog.fired is None:
            interrupted = True
            task.cancel()

    unsubscribe = signal.add_listener(on_abort) if signal is not None else None
    watchdog.start()
    try:
        while True:
            if signal is not None and signal.aborted:
                raise _Aborted
            watchdog.in_provider = True
            try:
                event = await events.__anext__()
            except StopAsyncIteration:
                break
            finally:
                watchdog.in_provider = False
            builder.note_activity()
            builder.note_answering()
            if event.type.endswith("_start") and event.type != "start":
                outcome.announced = max(outcome.announced, event.content_index + 1)  # type: ignore[union-attr]
            yield event
    except asyncio.CancelledError:
        if (interrupted or watchdog.fired is not None) and task is not None:
            task.uncancel()
        else:
            # Cancelled from outside: record the outcome, then let cancellation proceed.
            watchdog.stop()
            builder.forget_from(outcome.announced)
            _finish_aborted(builder, holder, "Request was cancelled")
            await _close(events)
            raise
        outcome.failure = (
            ProviderError(_abort_reason(options), kind=ErrorKind.ABORTED) if interrupted else watchdog.error()
        )
    except _Aborted:
        outcome.failure = ProviderError(_abort_reason(options), kind=ErrorKind.ABORTED)
    except Exception as exc:  # noqa: BLE001 - the contract is: never raise
        outcome.failure = _name_server(describe_error(provider, exc, where), where)
    finally:
        watchdog.stop()
        if unsubscribe is not None:
            unsubscribe()
    await _close(events)
    if outcome.failure is None and reading is not None and options.on_reading is not None:
        from heron.ai.reading import sample_of

        sample = sample_of(reading, builder)
        if sample is not None:
            options.on_reading(sample)


def _reading_wait(model: Model, context: Context, options: StreamOptions) -> ReadingWait | None:
    """The wait on a local server reading the prompt (None: another server)."""
    from heron.ai.reading import ReadingWait, is_local_server

    if not is_local_server(model):
        return None
    return ReadingWait(context, options.reading_speed, options.assumed_reading_speed)


def _name_server(failure: ProviderError, where: str | None) -> ProviderError:
    """Failures a user may act on (connection, 5xx, 429) say which server they came from."""
    status = failure.status
    named = (status is not None and (status == 429 or status >= 500)) or failure.message.startswith("Connection error")
    if named and where and where not in failure.message:
        failure.message += f" ({where})"
        failure.url = failure.url or where
    return failure


def _delay_text(delay: float) -> str:
    return f"{delay:.0f} s" if delay >= 1 else f"{delay:.2g} s"


async def _run(
    provider: Provider,
    model: Model,
    context: Context,
    options: StreamOptions,
    holder: list[AssistantEventStream],
) -> AsyncGenerator[AssistantEvent, None]:
    signal = options.signal
    policy = options.retry
    builder = MessageBuilder(model)
    yield StartEvent(partial=builder.message)
    attempt = 0
    while True:
        outcome = _Attempt()
        async for event in _attempt(provider, model, context, options, builder, holder, outcome):
            yield event
        failure = outcome.failure
        if failure is None:
            _settle_usage(model, builder.usage)
            for event in builder.done():
                if isinstance(event, DoneEvent):
                    holder[0]._set_result(event.message)
                yield event
            return

        rejected = failure.kind == ErrorKind.INVALID_REQUEST and not builder.has_content
        if rejected and options.context_management is not None:
            # The server would not take the context-management fields (an unknown beta, a
            # trigger below its minimum...): the same request once more without them; the
            # answer says so, and the session falls back to heron's own compaction.
            options = dataclasses.replace(options, context_management=None)
            builder.message.context_management_error = failure.message
            builder.message.usage = Usage()
            continue
        if failure.kind in RETRYABLE and failure.retryable and not builder.has_content and attempt < policy.max_retries:
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
                            message=f"{failure.message}; retrying in {_delay_text(delay)} "
                            f"({attempt}/{policy.max_retries})",
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
        builder.forget_from(outcome.announced)
        for event in _fail(model, builder, holder, failure):
            yield event
        return


def _fail(
    model: Model, builder: MessageBuilder, holder: list[AssistantEventStream], failure: ProviderError
) -> list[AssistantEvent]:
    _settle_usage(model, builder.usage)
    events = builder.fail(
        failure.message,
        aborted=failure.kind == ErrorKind.ABORTED,
        kind=str(failure.kind),
        status=failure.status,
        retry_after=failure.retry_after,
    )
    for event in events:
        if isinstance(event, ErrorEvent):
            holder[0]._set_result(event.error)
    return events


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
