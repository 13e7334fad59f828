"""One way to publish events: listeners in order, each failure contained.

The agent, the context ledger and the coding session all tell listeners (UIs, the
session recorder, tests) what happened. A listener that raises must not break the run
or starve the listeners after it, and a listener may unsubscribe while an event is
being delivered. This small class is the one place that gets those rules right.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

log = logging.getLogger(__name__)


class Emitter(Generic[T]):
    def __init__(self, label: str = "listener") -> None:
        self._listeners: list[Callable[[T], None]] = []
        self._label = label

    def subscribe(self, listener: Callable[[T], None]) -> Callable[[], None]:
        """Add ``listener``; the returned function removes it (calling it twice is fine)."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def emit(self, event: T) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken UI must not break the run
                log.exception("%s failed on %s", self._label, getattr(event, "type", type(event).__name__))

    def __len__(self) -> int:
        return len(self._listeners)
