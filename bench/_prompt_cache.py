"""A provider's prompt cache, simulated over serialised requests (issue 28's figures).

A provider serves from its cache the longest prefix a request shares with an earlier
request whose cache entry is still alive; everything after it is uncached input. Here a
request is the list of its parts in the order a provider renders them (tool definitions,
the system prompt, then the messages), each part serialised once; the cached part is
the longest prefix, in characters, the request shares with any earlier request still in
the cache. An entry lives ``ttl`` seconds from its last use (Anthropic's 5-minute cache
is refreshed by every hit) or forever (``ttl=None``).

Prefixes are found through a chained hash per part boundary (the longest boundary some
live earlier request shares), then extended character by character into the next part,
so a request costs what its parts cost to hash, not a comparison with every earlier one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from heron.ai.providers.faux import common_prefix

TTL_5_MIN = 300.0


@dataclass
class Served:
    chars: int  # the request's characters (parts joined by one separator each)
    cached: int  # ...of which served from the cache


@dataclass
class SimulatedCache:
    ttl: float | None  # seconds an entry lives after its last use; None: forever
    _boundaries: dict[int, tuple[float, int]] = field(default_factory=dict)  # prefix hash -> (last use, request)
    _requests: list[list[str]] = field(default_factory=list)

    def serve(self, parts: list[str], now: float) -> Served:
        """The cached part of a request of ``parts`` sent at ``now``; the request then
        enters the cache (and refreshes every entry it used)."""
        hashes: list[int] = []
        h = 0
        for part in parts:
            h = hash((h, part))
            hashes.append(h)
        shared, source = 0, -1
        for k in range(len(parts), 0, -1):
            found = self._boundaries.get(hashes[k - 1])
            if found is not None and (self.ttl is None or now - found[0] <= self.ttl):
                shared, source = k, found[1]
                break
        cached = sum(len(p) for p in parts[:shared]) + shared  # a separator after each part
        if source >= 0 and shared < len(parts):
            earlier = self._requests[source]
            if shared < len(earlier):
                cached += common_prefix(parts[shared], earlier[shared])
        index = len(self._requests)
        self._requests.append(parts)
        for value in hashes:
            self._boundaries[value] = (now, index)
        total = sum(len(p) for p in parts) + len(parts)
        return Served(chars=total, cached=min(cached, total))


@dataclass
class CacheFigures:
    """What a run's requests cost with one simulated cache."""

    chars: int = 0
    cached: int = 0
    summary_chars: int = 0
    summary_cached: int = 0
    summary_requests: int = 0
    served: list[Served] = field(default_factory=list)  # per request, in the order sent

    def add(self, served: Served, summary: bool) -> None:
        self.served.append(served)
        self.chars += served.chars
        self.cached += served.cached
        if summary:
            self.summary_requests += 1
            self.summary_chars += served.chars
            self.summary_cached += served.cached

    @property
    def uncached(self) -> int:
        return self.chars - self.cached

    @property
    def summary_hit(self) -> float:
        return self.summary_cached / self.summary_chars if self.summary_chars else 0.0


@dataclass
class Clock:
    """Simulated time: each request takes ``step`` seconds; before the first request of a
    turn the user pauses (the pauses are drawn once per turn number, the same for every
    agent that plays the script)."""

    pauses: dict[int, float]
    step: float = 15.0
    now: float = 0.0

    def request(self, new_turn: int | None) -> float:
        self.now += self.step + (self.pauses.get(new_turn, 0.0) if new_turn is not None else 0.0)
        return self.now


def pauses(turns: int, seed: int) -> dict[int, float]:
    """The user's pause before each turn: mostly 30-90 s, one turn in five 5-15 minutes."""
    import random

    rng = random.Random(seed * 7_919)
    return {t: rng.uniform(300, 900) if rng.random() < 0.2 else rng.uniform(30, 90) for t in range(1, turns + 1)}


def figures(
    requests: list[tuple[list[str], bool, int | None]], turn_pauses: dict[int, float]
) -> dict[str, CacheFigures]:
    """``requests``: (parts, is a summary request, the turn it starts or None), in the order
    sent. The figures with a 5-minute cache and an unbounded one."""
    out: dict[str, CacheFigures] = {}
    for name, ttl in (("5min", TTL_5_MIN), ("infinite", None)):
        cache, clock, result = SimulatedCache(ttl), Clock(turn_pauses), CacheFigures()
        for parts, summary, new_turn in requests:
            result.add(cache.serve(parts, clock.request(new_turn)), summary)
        out[name] = result
    return out
