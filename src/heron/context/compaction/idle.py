"""The idle policy's decision: before an idle session's prompt cache expires, warm it,
compact, or let it expire - whichever costs least (docs/context.md, "The idle policy").

The prices are the model's (dollars per million tokens), the same price model as the
working budget (:mod:`heron.context.window.working_budget`). Each option is costed as what it
adds, before the user's next request, to a next request that finds the prefix cached:

- **warm**: one warm-up request re-reads the context (``T`` tokens at the cache-read
  price ``r``) and writes one output token; the next request is then a cache hit;
- **expire**: nothing now; the next request finds the cache cold, so heron's cold-cache
  pruning (:mod:`heron.context.pruning.cold_cache`) stubs the old results first, and it writes
  what is left, ``C`` tokens, to the cache instead of reading ``T``: ``C w - T r``. ``C``
  is the step :meth:`ContextPolicy.pressure` would take then, planned by the one rule
  that takes it (:meth:`~heron.context.pruning.pruning_steps.Pruner.cold_request_tokens`);
  with nothing to stub ``C = T`` and this is ``T (w - r)``. It can be negative: a cold
  request that sheds most of the context costs less than a warm one that carries it all;
- **compact**: the summary request rides the still warm cache (``T r``) and writes the
  summary (``O`` output tokens at ``o``); the next request then writes the shorter prefix
  ``S`` instead of reading ``T``: ``T r + O o + S w - T r``.

The assumption on the user: at each decision point (one cache lifetime into the pause)
the user is taken to come back within the next lifetime, so the options are compared as
if the next request follows. A pause longer than :data:`MAX_WARMS` lifetimes is taken to
mean the user is away: no more warm-ups, the cache expires. A model without prices (a
local server) has nothing billed to save: its cache is left alone.

Pure: nothing here reads the session or the clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from heron.ai.types import ModelCost
from heron.context.window.working_budget import FIXED_ALLOWANCE_TOKENS, SUMMARY_OUTPUT_TOKENS

IdlePolicy = Literal["auto", "warm", "compact", "off"]
IdleAction = Literal["warm", "compact", "expire"]
POLICIES: tuple[IdlePolicy, ...] = ("auto", "warm", "compact", "off")
MAX_WARMS = 3  # warm-ups per idle period at most: past that the user is taken to be away
WARM_OUTPUT_TOKENS = 1  # a warm-up asks for one token: its answer is never used
LEAD_SHARE = 0.1  # act this share of the lifetime before it ends ...
MAX_LEAD_S = 30.0  # ... but no earlier than this before it ends


@dataclass(frozen=True, slots=True)
class IdleCosts:
    """Dollars each option adds to the next request (see the module's docstring)."""

    warm: float
    compact: float
    expire: float

    def to_data(self) -> dict[str, float]:
        return {"warm": round(self.warm, 6), "compact": round(self.compact, 6), "expire": round(self.expire, 6)}


@dataclass(frozen=True, slots=True)
class IdleDecision:
    """What to do before the cache expires, why, and the costs compared (None: not priced)."""

    action: IdleAction
    reason: str
    costs: IdleCosts | None = None

    def to_data(self) -> dict[str, Any]:
        """The decision as its session record holds it."""
        data: dict[str, Any] = {"action": self.action, "reason": self.reason}
        if self.costs is not None:
            data["costs"] = self.costs.to_data()
        return data


def idle_costs(cost: ModelCost, context_tokens: int, kept_tokens: int, cold_tokens: int) -> IdleCosts | None:
    """The three options' costs for a context of ``context_tokens``, of which a compaction
    keeps ``kept_tokens`` verbatim and a request after the cache expired sends
    ``cold_tokens``; None for a model without prices."""
    read = cost.cache_read or cost.input  # a provider without a cache price re-reads at the input price
    if read <= 0:
        return None
    write = cost.cache_write or cost.input
    tokens = max(0, context_tokens)
    survivors = min(tokens, max(0, kept_tokens) + FIXED_ALLOWANCE_TOKENS)
    per = 1e-6
    return IdleCosts(
        warm=(tokens * read + WARM_OUTPUT_TOKENS * cost.output) * per,
        compact=(SUMMARY_OUTPUT_TOKENS * cost.output + survivors * write) * per,
        expire=(min(tokens, max(0, cold_tokens)) * write - tokens * read) * per,
    )


def decide(
    policy: IdlePolicy, cost: ModelCost, *, context_tokens: int, kept_tokens: int, cold_tokens: int, warms: int
) -> IdleDecision:
    """The action for an idle session whose cache is about to expire, after ``warms``
    warm-ups in this idle period. ``policy`` "off" never gets here (no timer runs)."""
    costs = idle_costs(cost, context_tokens, kept_tokens, cold_tokens)
    if policy == "compact":
        return IdleDecision("compact", "idle.policy is compact", costs)
    if warms >= MAX_WARMS:
        return IdleDecision("expire", f"{warms} warm-ups already: the user is taken to be away", costs)
    if policy == "warm":
        return IdleDecision("warm", "idle.policy is warm", costs)
    if costs is None:
        return IdleDecision("expire", "the model has no prices: letting the cache expire costs nothing billed")
    options: dict[IdleAction, float] = {"warm": costs.warm, "expire": costs.expire}
    if context_tokens > kept_tokens + FIXED_ALLOWANCE_TOKENS:
        options["compact"] = costs.compact  # a compaction that keeps everything saves nothing
    action = min(options, key=lambda name: options[name])
    compared = ", ".join(f"{name} {'-' if value < 0 else ''}${abs(value):.4f}" for name, value in options.items())
    tokens = f"{context_tokens:,} tokens"
    if cold_tokens < context_tokens:
        tokens += f" ({max(0, cold_tokens):,} once the cache has expired and old results are pruned)"
    return IdleDecision(action, f"auto: cheapest of {compared} for {tokens}", costs)


def lead_seconds(ttl_s: float) -> float:
    """How long before the cache's end the decision is taken: time for a warm-up or a
    summary request to reach the provider while the prefix is still held."""
    return min(MAX_LEAD_S, ttl_s * LEAD_SHARE)


def parse_policy(value: object) -> IdlePolicy:
    """``idle.policy`` as settings.json holds it; ValueError with the reason otherwise."""
    for policy in POLICIES:
        if value == policy:
            return policy
    raise ValueError("expected " + " or ".join(f'"{p}"' for p in POLICIES))
