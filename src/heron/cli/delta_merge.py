"""Stream deltas merged before they are written (json and rpc modes).

A model streams its answer in pieces of a few characters; written one JSON line per piece,
the line's own fields (``type``, the event's ``type``, ``contentIndex``) outweigh the text
they carry many times over: 10-character deltas made stdout about 9 times the answer. So
the two modes write through :class:`DeltaMerger`: consecutive deltas of the same block are
held and written as one delta, at the latest ``window`` seconds after the first of them, as
soon as anything else is written (an event, a response, ``run_end``), or once ``limit``
characters are held. A client appending the deltas of each ``contentIndex`` gets the same
text, in the same order relative to every other line, only in fewer pieces.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

WINDOW_S = 0.05
LIMIT_CHARS = 16_384

_DELTAS = frozenset({"text_delta", "thinking_delta", "toolcall_delta"})
# json mode nests the stream event as "event", rpc (pi's shape) as "assistantMessageEvent"
_INNER_KEYS = ("event", "assistantMessageEvent")


def _inner(data: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    if data.get("type") != "message_update":
        return None
    for key in _INNER_KEYS:
        inner = data.get(key)
        if isinstance(inner, dict) and inner.get("type") in _DELTAS and isinstance(inner.get("delta"), str):
            return key, inner
    return None


def _same_block(held: dict[str, Any], inner: dict[str, Any]) -> bool:
    """The same kind of delta of the same block: every field but the delta agrees."""
    return held.keys() == inner.keys() and all(held[k] == inner[k] for k in held if k != "delta")


class DeltaMerger:
    """Writes JSON objects through ``write``, merging consecutive stream deltas."""

    def __init__(self, write: Callable[[dict[str, Any]], None], *, window: float = WINDOW_S) -> None:
        self._write = write
        self._window = window
        self._held: dict[str, Any] | None = None
        self._key = ""
        self._pieces: list[str] = []
        self._size = 0
        self._timer: asyncio.TimerHandle | None = None

    def write(self, data: dict[str, Any]) -> None:
        found = _inner(data)
        if found is None:
            self.flush()
            self._write(data)
            return
        key, inner = found
        held = self._held
        if held is not None and (key != self._key or not _same_block(held[key], inner)):
            self.flush()
            held = None
        if held is None:
            self._hold(data, key, inner)
        else:
            # a field outside the stream event (rpc's usage) takes its newest value
            self._held = {**held, **data, key: held[key]}
            self._pieces.append(inner["delta"])
            self._size += len(inner["delta"])
        if self._size >= LIMIT_CHARS:
            self.flush()

    def _hold(self, data: dict[str, Any], key: str, inner: dict[str, Any]) -> None:
        self._held, self._key = data, key
        self._pieces, self._size = [inner["delta"]], len(inner["delta"])
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()  # no loop to flush it later: write it now
            return
        self._timer = loop.call_later(self._window, self.flush)

    def flush(self) -> None:
        """Write the held delta, if any (also the timer's callback)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        held, self._held = self._held, None
        if held is None:
            return
        key = self._key
        merged = {**held, key: {**held[key], "delta": "".join(self._pieces)}}
        self._pieces, self._size = [], 0
        self._write(merged)
