"""Each part of the history is turned into its wire form once, not on every request.

A request carries the whole history, and a session's history only grows at its end. So
the history is cut into *segments*, each starting at an assistant message that follows
a user-side message (a prompt or a tool result), and each segment's wire items are built
once (adapted to the target model, converted, serialised to JSON text) and reused while
the same message objects come back. A segment is self-contained for every adapter: tool
results follow the assistant message that called them, a call without a result gets its
synthetic result at the end of its own segment, and no wire turn spans two segments
(one case - a segment whose assistant messages were all dropped - is merged by the
Anthropic adapter).

Two levels keep it cheap: the previous request of each target is remembered, and when
the new history starts with the same messages (checked by a C-level list comparison
with an identity fast path) only the last segments are looked at; otherwise each
segment is found by the identities of its messages. Messages are treated as values that
do not change once in a history: heron's layers replace a message (pruning stubs,
compaction) rather than edit it. The key includes the target (api, provider, model and
what changes the conversion), because the same message is adapted differently for
another model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from heron.ai.types import AssistantMessage, Message

JSON = dict[str, Any]

_MAX_SEGMENTS = 50_000
_MAX_TARGETS = 16
# Settled segments are joined into blocks of about this size, reused by later requests,
# so a request copies only its newest part and is sent as a few large pieces.
BLOCK_BYTES = 64 * 1024


@dataclass(slots=True)
class Segment:
    items: list[JSON]
    # The items as UTF-8 JSON, comma-separated, no brackets (b"" when there are none):
    # encoded once, so a request is one join of cached bytes (no re-encoding).
    wire: bytes


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def make_segment(items: list[JSON]) -> Segment:
    return Segment(items=items, wire=",".join(dumps(item) for item in items).encode())


def segment_starts(messages: list[Message], start: int = 0) -> list[int]:
    """Where segments begin in ``messages[start:]`` (``start`` itself always does)."""
    starts = [start]
    previous_assistant = True
    for index in range(start, len(messages)):
        is_assistant = isinstance(messages[index], AssistantMessage)
        if is_assistant and not previous_assistant and index != start:
            starts.append(index)
        previous_assistant = is_assistant
    return starts


@dataclass(slots=True)
class History:
    """A history's segments for one request: ``blocks`` hold ``segments[:frozen]`` already
    joined (comma-separated), the rest are still single segments."""

    segments: list[Segment]
    blocks: list[bytes]
    frozen: int

    @property
    def loose(self) -> list[Segment]:
        return self.segments[self.frozen :]

    def wires(self, first: list[bytes] | None = None) -> list[bytes]:
        """Serialised pieces of the array (``first`` before the history), for :func:`array_pieces`."""
        return [*(first or []), *self.blocks, *(segment.wire for segment in self.loose)]


@dataclass(slots=True)
class _Previous:
    messages: list[Message]
    starts: list[int]
    segments: list[Segment]
    blocks: list[bytes]
    frozen: int


class WireCache:
    """Segments of recent histories, per target (see the module docstring)."""

    def __init__(self) -> None:
        self._previous: dict[Hashable, _Previous] = {}
        self._memo: dict[Hashable, tuple[tuple[Message, ...], Segment]] = {}

    def segments(
        self, target: Hashable, messages: list[Message], convert: Callable[[list[Message]], list[JSON]]
    ) -> list[Segment]:
        """The segments of ``messages`` for ``target``; ``convert`` builds the items of
        one segment (adapting and converting it) when it is not known yet."""
        return self.history(target, messages, convert).segments

    def history(
        self,
        target: Hashable,
        messages: list[Message],
        convert: Callable[[list[Message]], list[JSON]],
        clean: Callable[[list[Segment]], bool] | None = None,
    ) -> History:
        """:meth:`segments` with the settled ones joined into reusable blocks. ``clean``
        says whether a run of segments may be joined as they are (no wire turn of the
        adapter spans two of them); without it every run may."""
        previous = self._previous.get(target)
        kept: list[Segment] = []
        start = 0
        blocks: list[bytes] = []
        frozen = 0
        if previous is not None and len(previous.starts) > 1:
            count = len(previous.messages)
            if len(messages) >= count and messages[:count] == previous.messages:
                # The last known segment may have grown: rebuild from its start.
                kept = previous.segments[:-1]
                start = previous.starts[-1]
                blocks, frozen = previous.blocks, previous.frozen
        starts = segment_starts(messages, start) if messages else []
        fresh = [self._segment(target, messages, a, b, convert) for a, b in _pairs(starts, len(messages))]
        all_starts = (previous.starts[:-1] if kept and previous is not None else []) + starts
        segments = kept + fresh
        blocks, frozen = _freeze(segments, blocks, frozen, clean)
        self._remember(target, _Previous(list(messages), all_starts, segments, blocks, frozen))
        return History(segments, blocks, frozen)

    def _segment(
        self,
        target: Hashable,
        messages: list[Message],
        start: int,
        end: int,
        convert: Callable[[list[Message]], list[JSON]],
    ) -> Segment:
        part = tuple(messages[start:end])
        key = (target, *map(id, part))
        hit = self._memo.get(key)
        if hit is not None and hit[0] == part:
            return hit[1]
        segment = make_segment(convert(list(part)))
        if len(self._memo) >= _MAX_SEGMENTS:
            for old in list(self._memo)[: _MAX_SEGMENTS // 2]:
                del self._memo[old]
        self._memo[key] = (part, segment)
        return segment

    def _remember(self, target: Hashable, previous: _Previous) -> None:
        self._previous.pop(target, None)
        if len(self._previous) >= _MAX_TARGETS:
            del self._previous[next(iter(self._previous))]
        self._previous[target] = previous


def _freeze(
    segments: list[Segment], blocks: list[bytes], frozen: int, clean: Callable[[list[Segment]], bool] | None
) -> tuple[list[bytes], int]:
    """Join the settled loose segments (all but the last) into a new block once they
    reach :data:`BLOCK_BYTES`; a run the adapter cannot join as it is stays loose."""
    settled = len(segments) - 1
    if settled - frozen < 1 or not segments[settled - 1].wire:
        return blocks, frozen  # the last frozen segment must have items: adapters check from it
    if sum(len(s.wire) for s in segments[frozen:settled]) < BLOCK_BYTES:
        return blocks, frozen
    run = segments[max(0, frozen - 1) : settled + 1]
    if clean is not None and not clean(run):
        return blocks, frozen
    block = b",".join(s.wire for s in segments[frozen:settled] if s.wire)
    return ([*blocks, block] if block else blocks), settled


def _pairs(starts: list[int], end: int) -> list[tuple[int, int]]:
    bounds = [*starts, end]
    return [(bounds[i], bounds[i + 1]) for i in range(len(starts))]


def array_pieces(wires: list[bytes]) -> list[bytes]:
    """A JSON array of already serialised items, as pieces to join once."""
    pieces = [b"["]
    for wire in wires:
        if wire:
            pieces.append(wire)
            pieces.append(b",")
    if len(pieces) > 1:
        pieces.pop()
    pieces.append(b"]")
    return pieces


def join_items(segments: list[Segment]) -> list[bytes]:
    """The JSON array of every segment's items (as pieces)."""
    return array_pieces([s.wire for s in segments])


def all_items(segments: list[Segment]) -> list[JSON]:
    return [item for segment in segments for item in segment.items]


def body_pieces(head: JSON, array_key: str, array: list[bytes]) -> list[bytes]:
    """``head`` as JSON with ``array_key`` set to the already serialised array, as pieces:
    the cached blocks are sent as they are (a long history is megabytes, and copying it
    is what a request would cost)."""
    text = dumps(head)
    opening = "{" if text == "{}" else text[:-1] + ","
    return [(opening + dumps(array_key) + ":").encode(), *array, b"}"]
