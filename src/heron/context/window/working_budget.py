"""The working budget: how large the context may grow before it is compacted, whatever
the window allows (docs/context.md, "The working budget").

A window of a million tokens does not mean a request should carry a million tokens: every
request re-reads the whole context, and a priced model bills those reads. Compacting
costs something too - the summary request re-reads the context once more, the summary is
written as output, and the shorter prefix that follows is written to the cache again - but
it is paid once per cycle, while re-reading is paid on every step. So there is a size past
which carrying the context on costs more than compacting it, and it depends only on the
model's prices and on how much a step adds.

The model, per compaction cycle of a context that grows from ``S`` tokens (what survives
a compaction: the kept recent turns, plus an allowance for the system prompt, the tools
and the summary) by ``g``
tokens a step until it reaches the budget ``B = S + x``:

- re-reading: ``x / g`` steps, each reading on average ``S + x / 2`` tokens at the
  cache-read price ``r``;
- compacting: the summary request reads ``B`` at ``r``, writes ``O`` summary tokens at the
  output price ``o``, and the next request writes ``S`` to the cache at ``w``.

The cost per step, ``r (S + x/2) + g (r (S + x) + O o + S w) / x``, is smallest at
``x = sqrt(2 g (S + (O o + S w) / r))``, which is the budget "auto" picks. A model
without prices (a local server) has no budget: re-reading it costs nothing billed.

Nothing here reads the session: the budget is a function of the model and the settings,
so a resumed process compacts at the same size as one that never stopped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from heron.ai.types import Model

AUTO = "auto"
STEP_TOKENS = 4_000  # what a step adds to the context, on average (a tool call, its result, an answer)
SUMMARY_OUTPUT_TOKENS = 4_000  # what a summary costs as output, about
MIN_BUDGET_TOKENS = 32_000  # below this a coding session compacts too often to keep its thread
# What survives a compaction beside the kept recent turns: the system prompt and tool definitions
# (heron's own come to about 2,000 tokens; context files and MCP tools add to them) and the summary.
# A fixed allowance, not the session's own count: the tools' output limits - part of their
# definitions - are sized by the budget, so the budget cannot depend on the definitions.
FIXED_ALLOWANCE_TOKENS = 6_000

WorkingBudgetSetting = int | str | None  # tokens, "auto", or None (off: the window decides)


@dataclass(frozen=True, slots=True)
class WorkingBudget:
    """The budget a session compacts at, and why (``/context``, the report).

    ``tokens`` is None when the window alone decides (no budget set, or an unpriced
    model); ``break_even_steps`` is how many steps after a compaction its cost is paid
    back by the cheaper requests that follow."""

    tokens: int | None
    reason: str
    break_even_steps: float | None = None

    def to_detail(self) -> dict[str, object]:
        """The budget as a ledger record's detail (the compaction it triggered)."""
        steps = None if self.break_even_steps is None else round(self.break_even_steps, 2)
        return {"tokens": self.tokens, "reason": self.reason, "break_even_steps": steps}

    def describe(self) -> str:
        """One line for ``/context``: the budget, why, and when a compaction pays back."""
        if self.tokens is None:
            return f"working budget: none ({self.reason})"
        line = f"working budget {self.tokens:,} tokens ({self.reason})"
        if self.break_even_steps is not None:
            line += f"; a compaction there pays for itself in {self.break_even_steps:.1f} steps"
        return line

    def limit(self, threshold: int) -> int:
        """The compaction threshold under this budget: the lower of the two."""
        return threshold if self.tokens is None else min(threshold, self.tokens)


def working_budget(model: Model, setting: WorkingBudgetSetting, *, kept_tokens: int) -> WorkingBudget:
    """The budget for ``model`` under ``setting``; ``kept_tokens`` is what a compaction keeps
    of the recent turns (the system prompt, tools and summary are added as an allowance)."""
    if isinstance(setting, int):
        return WorkingBudget(setting, f"compaction.workingBudget is {setting:,} tokens")
    if setting != AUTO:
        return WorkingBudget(None, "compaction.workingBudget is off: compaction waits for the window")
    return _auto(model, max(0, kept_tokens) + FIXED_ALLOWANCE_TOKENS)


def _auto(model: Model, survivors: int) -> WorkingBudget:
    cost = model.cost
    read = cost.cache_read or cost.input  # a provider without a cache re-reads at the input price
    if read <= 0:
        return WorkingBudget(None, "auto: the model has no prices, so re-reading costs nothing billed")
    write = cost.cache_write or cost.input
    once = SUMMARY_OUTPUT_TOKENS * cost.output + survivors * write  # dollars per million, per compaction
    growth = math.sqrt(2 * STEP_TOKENS * (survivors + once / read))
    tokens = max(MIN_BUDGET_TOKENS, int(survivors + growth))
    compaction = tokens * read + once
    saving = (tokens - survivors) * read  # each step after a compaction reads this much less
    steps = compaction / saving if saving > 0 else None
    reason = (
        f"auto from the prices per million tokens (cache read ${read:g}, cache write ${write:g}, output "
        f"${cost.output:g}): {survivors:,} tokens survive a compaction and a step adds about {STEP_TOKENS:,}, "
        f"so compacting at {tokens:,} costs least per step"
    )
    return WorkingBudget(tokens, reason, steps)


def parse_setting(value: object) -> WorkingBudgetSetting:
    """``compaction.workingBudget`` as settings.json holds it: a positive number of tokens,
    ``"auto"`` or ``"off"``/``null``. Raises ValueError with the reason otherwise."""
    if value is None or value == "off":
        return None
    if value == AUTO:
        return AUTO
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise ValueError('expected a positive number of tokens, "auto" or "off"')
