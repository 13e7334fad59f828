"""Running one extension handler so that it cannot stop heron.

An extension is code heron did not write, called in the middle of a turn. Whatever it
does, heron goes on:

- **it cannot end heron**: anything a handler raises - ``SystemExit``,
  ``KeyboardInterrupt`` and other ``BaseException``\\ s included - comes back as the
  handler's failure (the host disables the extension and says why);
- **it cannot freeze heron**: a plain function runs in a thread of its own, so a blocking
  call (``time.sleep``, a socket read without a timeout) leaves the event loop - the
  screen, Esc, rpc commands - free; an ``async`` handler runs on the loop and is cancelled
  at its deadline. A handler still running at its deadline
  (``extensions.handlerTimeoutMs``, 30 s by default) is abandoned and that is its failure;
- **an abort ends the wait**: with a signal (a compaction's), Esc stops waiting at once.

The plain functions of one extension never run at the same time (a lock per extension):
its handlers were written for heron's one thread. A thread that is abandoned cannot be
stopped (Python has no way to); it is a daemon, and its extension is disabled, so it runs
nothing else. The same holds for an ``async`` handler that ignores its cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from heron.ai.abort import AbortSignal


@dataclass(slots=True)
class Outcome:
    """What a handler did: its value, or its failure (what it raised, or a description of
    how it overran), or nothing because the wait was aborted."""

    value: Any = None
    failure: BaseException | str | None = None
    aborted: bool = False


def overran(timeout: float) -> str:
    return f"did not return within {timeout:g} s (extensions.handlerTimeoutMs); abandoned"


def is_async(handler: Callable[..., Any]) -> bool:
    """Whether calling ``handler`` only makes a coroutine (it may be called on the loop)."""
    call = getattr(handler, "__call__", None)  # noqa: B004 - an object with an async __call__
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)


def _start(
    handler: Callable[..., Any], args: Sequence[Any], lock: threading.Lock, done: Callable[[Outcome], None]
) -> None:
    """Run ``handler(*args)`` in a daemon thread (under the extension's lock); ``done``
    gets the outcome there."""

    def target() -> None:
        with lock:
            try:
                out = Outcome(value=handler(*args))
            except BaseException as exc:  # noqa: BLE001 - nothing a handler raises may end heron
                out = Outcome(failure=exc)
        done(out)

    threading.Thread(target=target, name="heron-extension-handler", daemon=True).start()


def call_now(handler: Callable[..., Any], args: Sequence[Any], *, timeout: float, lock: threading.Lock) -> Outcome:
    """A plain handler run from code that cannot await (an event being sent): waited for in
    this thread, at most ``timeout`` seconds."""
    finished = threading.Event()
    box: list[Outcome] = []

    def done(out: Outcome) -> None:
        box.append(out)
        finished.set()

    _start(handler, args, lock, done)
    if not finished.wait(timeout):
        return Outcome(failure=overran(timeout))
    return box[0]


async def call(
    handler: Callable[..., Any],
    args: Sequence[Any],
    *,
    timeout: float,
    lock: threading.Lock,
    signal: AbortSignal | None = None,
) -> Outcome:
    """``handler(*args)``, awaited when it is (or returns) awaitable, within ``timeout``
    seconds in all; ``signal``: an abort ends the wait."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    if is_async(handler):
        try:
            pending: Any = handler(*args)
        except BaseException as exc:  # noqa: BLE001 - nothing a handler raises may end heron
            return Outcome(failure=exc)
    else:
        future: asyncio.Future[Outcome] = loop.create_future()

        def done(out: Outcome) -> None:
            with contextlib.suppress(RuntimeError):  # an abandoned handler ending after the loop closed
                loop.call_soon_threadsafe(_resolve, future, out)

        _start(handler, args, lock, done)
        out = await _race(future, deadline - loop.time(), timeout, signal)
        if out.failure is not None or out.aborted or not inspect.isawaitable(out.value):
            return out
        pending = out.value
    return await settle(pending, timeout=max(0.0, deadline - loop.time()), signal=signal, limit=timeout)


async def settle(
    pending: Awaitable[Any], *, timeout: float, signal: AbortSignal | None = None, limit: float | None = None
) -> Outcome:
    """What an awaitable a handler gave back comes to, within ``timeout`` seconds; it is
    cancelled (and left) when the time is up or the wait is aborted."""
    task = asyncio.ensure_future(_shielded(pending))
    try:
        return await _race(task, timeout, timeout if limit is None else limit, signal)
    finally:
        if not task.done():
            task.cancel()  # not awaited: a handler that ignores its cancellation is left behind


async def _shielded(pending: Awaitable[Any]) -> Outcome:
    """The awaitable's result as an :class:`Outcome`; a ``BaseException`` it raises is caught
    here, inside the task (a task lets ``SystemExit`` out of the event loop)."""
    try:
        return Outcome(value=await pending)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # noqa: BLE001 - nothing a handler raises may end heron
        return Outcome(failure=exc)


async def _race(future: asyncio.Future[Outcome], timeout: float, limit: float, signal: AbortSignal | None) -> Outcome:
    """The future's outcome, or an overrun after ``timeout`` seconds (``limit``: the
    deadline named), or an abort."""
    loop = asyncio.get_running_loop()
    aborted: asyncio.Future[None] = loop.create_future()
    remove = None
    if signal is not None:
        if signal.aborted:
            return Outcome(aborted=True)
        remove = signal.add_listener(lambda: None if aborted.done() else aborted.set_result(None))
    try:
        waiting: set[asyncio.Future[Any]] = {future, aborted}
        await asyncio.wait(waiting, timeout=max(0.0, timeout), return_when=asyncio.FIRST_COMPLETED)
    finally:
        if remove is not None:
            remove()
        aborted.cancel()
    if future.done() and not future.cancelled():
        return future.result()
    return Outcome(aborted=True) if signal is not None and signal.aborted else Outcome(failure=overran(limit))


def _resolve(future: asyncio.Future[Outcome], out: Outcome) -> None:
    if not future.done():
        future.set_result(out)


__all__ = ["Outcome", "call", "call_now", "is_async", "overran", "settle"]
