"""A cancellation token that can be shared by a stream, a tool and a UI.

asyncio cancellation alone is not enough: a UI thread or a signal handler must be able
to stop a run without owning its task, and a tool wants to ask "was I aborted?" after
the fact. Listeners let a stream interrupt a pending network read at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio


class AbortSignal:
    __slots__ = ("_aborted", "_event", "_listeners", "_reason")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: str | None = None
        self._listeners: list[Callable[[], None]] = []
        self._event: asyncio.Event | None = None

    @property
    def aborted(self) -> bool:
        return self._aborted

    @property
    def reason(self) -> str:
        return self._reason or "Request was aborted"

    def abort(self, reason: str | None = None) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        if self._event is not None:
            self._event.set()
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener()

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` on abort (at once if already aborted); returns an unsubscribe."""
        if self._aborted:
            listener()
            return lambda: None
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    async def wait(self) -> None:
        if self._aborted:
            return
        if self._event is None:
            import asyncio

            self._event = asyncio.Event()
        await self._event.wait()


class AbortController:
    """Owns a signal; ``abort()`` fires it. Mirrors the browser API pi users know."""

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: str | None = None) -> None:
        self.signal.abort(reason)


async def sleep_or_abort(seconds: float, signal: AbortSignal | None) -> bool:
    """Sleep; return ``False`` early if the signal fires first."""
    import asyncio

    if signal is None:
        await asyncio.sleep(seconds)
        return True
    if signal.aborted:
        return False
    waiter = asyncio.ensure_future(signal.wait())
    try:
        done, _ = await asyncio.wait({waiter}, timeout=seconds)
    finally:
        if not waiter.done():
            waiter.cancel()
    return not done
