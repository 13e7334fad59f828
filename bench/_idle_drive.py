"""The idle policy in the long-window cost benchmark (bench/long_window_cost.py).

heron's idle timer (:class:`heron.coding.idle.IdleKeeper`) waits on the wall clock; the
benchmark cannot sit through a 15-minute pause. So during each user pause the benchmark
does what the timer would: it asks the keeper when its next decision is due
(``due_in``), moves the simulated wall clock (``_sim_clock.WallClock``) to that moment
and lets the keeper decide and act (``step``) - the real decision, the real warm-up
request or idle compaction, sent to the faux provider and recorded in the session -
until the next decision would fall after the user's return.

The requests the keeper sends are timed for the simulated prompt cache at the moment they
were sent: the seconds since the turn's last request, on the same clock as
``_prompt_cache.Clock`` (each turn request 15 s after the one before, the user's pause
before the first of a turn), so a warm-up refreshes the cache entry the next turn reads.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from _prompt_cache import TTL_5_MIN, CacheFigures, Clock, SimulatedCache
from _sim_clock import WallClock
from heron.coding.idle import idle_keeper


async def idle_pause(session: Any, clock: WallClock, pause_s: float, script: Any, faux: Any) -> dict[int, float]:
    """Live through a user pause of ``pause_s`` seconds with the idle timer running;
    returns {index of a request the keeper sent: seconds into the pause}."""
    keeper = idle_keeper(session)
    sent: dict[int, float] = {}
    elapsed = 0.0
    while True:
        due = keeper.due_in()
        if due is None or elapsed + due >= pause_s:
            break
        clock.advance(due)
        elapsed += due
        first = len(faux.payloads)
        script.idle = True
        try:
            decision = await keeper.step()
        finally:
            script.idle = False
        for index in range(first, len(faux.payloads)):
            sent[index] = elapsed
        if decision is None:
            break
    clock.advance(pause_s - elapsed)
    return sent


def idle_actions(session: Any) -> Counter[str]:
    """The idle decisions recorded on the session's path, by action."""
    from heron.context.records.decisions import DECISION_CUSTOM_TYPE, OP_IDLE
    from heron.session.entries import CustomEntry

    store = session.store
    ids, _ = store.lineage(store.leaf_id)
    actions: Counter[str] = Counter()
    for entry_id in ids:
        entry = store.get(entry_id)
        if isinstance(entry, CustomEntry) and entry.custom_type == DECISION_CUSTOM_TYPE:
            data = entry.data if isinstance(entry.data, dict) else {}
            if data.get("op") == OP_IDLE:
                actions[str(data.get("action"))] += 1
    return actions


def timed_figures(
    requests: list[tuple[list[str], bool, int | None]], turn_pauses: dict[int, float], idle_at: dict[int, float]
) -> CacheFigures:
    """``_prompt_cache.figures``' 5-minute figures, with the idle requests (``idle_at``:
    request index -> seconds after the turn's last request) served at their own time
    instead of one step after the request before."""
    cache, clock, result = SimulatedCache(TTL_5_MIN), Clock(turn_pauses), CacheFigures()
    for index, (parts, summary, new_turn) in enumerate(requests):
        now = clock.now + idle_at[index] if index in idle_at else clock.request(new_turn)
        result.add(cache.serve(parts, now), summary)
    return result
