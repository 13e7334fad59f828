"""Pruning while the prompt cache is cold: the step that costs nothing.

A pruning step breaks the request's prefix at its first new stub, so every character
after it is sent again uncached (docs/context.md, "Pruning"). That is a price only while
the provider still holds the prefix. A provider's prompt cache lives a few minutes after
its last use (Anthropic: 5 minutes, refreshed by every hit; OpenAI: 5-10 minutes of
inactivity); after a longer pause - the user reading the answer, a long command - the
next request pays for all of its input anyway. Stubbing old results at that moment makes
the request that is paid in full smaller, and moves the next step (a real cache miss)
further away; stubbing them while the prefix is warm would only add a miss.

Whether the cache is cold is judged from the session file: the time since the last
reply on the path (its ``timestamp``, written when the reply was received) against the
cache lifetime setting (``pruning.cacheTtlSeconds``; 0 turns this off). The step itself
is recorded like any other, so a process that opens the session later derives the same
view whatever its clock says.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from heron.agent.messages import AgentMessage
from heron.ai.providers.http import is_local_url
from heron.ai.types import AssistantMessage, Model

# Anthropic's default cache lifetime, the shortest of the providers that cache prefixes:
# a longer setting misses cold moments, a shorter one prunes while the prefix is still held.
DEFAULT_CACHE_TTL_S = 300
# A step at a cold moment spares only the results of the latest assistant message - those
# the model has not answered from yet (none at a turn's start) - where a warm step spares
# the last three (``PRUNE_KEEP_TURNS``). Everything the request carries is paid in full
# then: a result the model already answered from costs as much kept as read again, and is
# read again only when needed (docs/context.md, "Pruning while the cache is cold").
COLD_KEEP_TURNS = 1


def cache_lifetime(model: Model, configured: int | None) -> int:
    """The cache lifetime to judge by: the configured one; else none for a local or
    private server, whose prefix cache (llama.cpp, vLLM, Ollama: a slot's computed prefix)
    lasts until another prompt replaces it, not a few minutes, so a cold step there would
    only throw away a prefix it still holds (and make a CPU server compute it again); else
    :data:`DEFAULT_CACHE_TTL_S`. Judged from the model of the request, which the session
    file records, so a resumed process judges alike."""
    if configured is not None:
        return configured
    if model.base_url and is_local_url(model.base_url):
        return 0
    return DEFAULT_CACHE_TTL_S


def idle_seconds(messages: Sequence[AgentMessage], now_ms: int | None = None, warmed_ms: int = 0) -> float | None:
    """Seconds since the last reply in ``messages`` (None: no reply yet, or one without a
    time), or since the latest warm-up of the idle policy (``warmed_ms``, recorded in the
    session: docs/context.md, "The idle policy") when that came later: how long the
    provider's cache of this conversation has gone unused."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            if message.timestamp <= 0:
                return None
            now = int(time.time() * 1000) if now_ms is None else now_ms
            return max(0.0, (now - max(message.timestamp, warmed_ms)) / 1000)
    return None


def cache_cold(
    messages: Sequence[AgentMessage], ttl_s: int, now_ms: int | None = None, warmed_ms: int = 0
) -> float | None:
    """The idle seconds when the cache of this conversation has expired (more than
    ``ttl_s`` since the last reply or warm-up), else None. ``ttl_s`` 0: never (the setting is off)."""
    if ttl_s <= 0:
        return None
    idle = idle_seconds(messages, now_ms, warmed_ms)
    return idle if idle is not None and idle > ttl_s else None
