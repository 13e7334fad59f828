"""The window model: how large the window is, where its marks are, and how a view is counted.

Every decision of the context layer compares a count with a mark: a pruning step starts
past the high-water mark, a compaction past the threshold, a request is refused past the
window less the smallest output. :class:`WindowSizes` is the one place those numbers come
from - the model's window or a smaller one a server taught (the decisions), the reserve,
the working budget, the output cap - and the one place a view is counted (tokens of the
view being sent, system prompt and tool definitions included, in the server's tokens
once calibrated; docs/context.md, "Counting"). It decides nothing and records nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from heron.agent.messages import AgentMessage
from heron.ai.types import Model
from heron.context.compaction.plan import SUMMARY_ALLOWANCE_TOKENS, CompactionSettings
from heron.context.pruning.cold_cache import cache_lifetime
from heron.context.records.decisions import ContextDecisions
from heron.context.tool_output.limits import ToolLimits
from heron.context.view.build import View
from heron.context.window.budget import Tally, context_message_tokens, request_tokens, tail_pressure
from heron.context.window.output_room import min_output, output_cap, output_limit
from heron.context.window.working_budget import WorkingBudget, working_budget

if TYPE_CHECKING:
    from heron.context.policy import PolicySettings


def _tally(view: Sequence[AgentMessage]) -> Tally | None:
    """The counts kept while ``view`` was built, when it is a view the builder made."""
    return view.tally if isinstance(view, View) else None


class WindowSizes:
    """The window, its marks and the counts, for the current model under the recorded decisions.

    ``decisions``: the decisions in force, asked afresh each time (a reload replaces
    them); ``model``: the model of the next request; ``fixed_tokens``: what the system
    prompt and tool definitions of the next request count."""

    def __init__(
        self,
        settings: PolicySettings,
        decisions: Callable[[], ContextDecisions],
        model: Callable[[], Model],
        fixed_tokens: Callable[[], int],
    ) -> None:
        self.settings = settings
        self._decisions = decisions
        self._model = model
        self._fixed_tokens = fixed_tokens

    @property
    def model(self) -> Model:
        return self._model()

    @property
    def model_key(self) -> str:
        return f"{self.model.provider}/{self.model.id}"

    def fixed_tokens(self) -> int:
        return self._fixed_tokens()

    @property
    def cache_ttl_s(self) -> int:
        """The prompt cache's lifetime for the current model (heron.context.pruning.cold_cache)."""
        return cache_lifetime(self.model, self.settings.prune_cache_ttl_s)

    # --- the window and its marks ------------------------------------------------------------

    @property
    def window(self) -> int:
        """The window heron plans for: the model's, or less when a server enforced less."""
        configured = self.model.context_window
        learned = self._decisions().learned_window(self.model_key)
        return min(configured, learned) if learned else configured

    @property
    def tool_limits(self) -> ToolLimits:
        return self.settings.tool_limits

    @property
    def compaction_settings(self) -> CompactionSettings:
        base = CompactionSettings(self.settings.reserve_tokens, self.settings.keep_recent_tokens)
        return base.for_window(self.window)

    @property
    def plan_settings(self) -> CompactionSettings:
        """What a compaction plans with: the keep-recent budget never more than the room
        the threshold leaves beside the system prompt, the tools and a summary, so that
        in a small window a compaction goes down to the current turn alone rather than
        keep more than fits (docs/context.md, "Small windows")."""
        base = self.compaction_settings
        room = self.threshold - self.scaled(self.fixed_tokens()) - SUMMARY_ALLOWANCE_TOKENS
        room = int(room / self.ratio)  # the plan counts at chars/4
        return CompactionSettings(base.reserve_tokens, max(0, min(base.keep_recent_tokens, room)))

    @property
    def reserve(self) -> int:
        return self.compaction_settings.reserve_tokens

    @property
    def budget(self) -> WorkingBudget:
        """The working budget (heron.context.window.working_budget), from the model and the settings
        alone: the tool definitions are sized by it, so it cannot depend on them."""
        kept = self.compaction_settings.keep_recent_tokens
        return working_budget(self.model, self.settings.working_budget, kept_tokens=kept)

    @property
    def threshold(self) -> int:
        """Above this many tokens a request is not sent until the context is compacted: the
        window less the reserve, or the working budget when that is lower."""
        return self.budget.limit(self.window - self.reserve)

    @property
    def working_window(self) -> int:
        """The window the context is planned in: the model's, or the working budget and the
        reserve when those are less - what sizes tool results and pruning steps."""
        return min(self.window, self.threshold + self.reserve)

    @property
    def prune_marks(self) -> tuple[int, int]:
        """(high, low) water marks in tokens: a step starts above ``high`` and aims at ``low``."""
        high_share = min(1.0, max(0.0, self.settings.prune_high_water))
        low_share = min(high_share, max(0.0, self.settings.prune_low_water))
        budget = self.threshold
        return int(budget * high_share), int(budget * low_share)

    # --- the output cap ----------------------------------------------------------------------

    @property
    def output_limit(self) -> int:
        return output_limit(self.model, self.window)

    @property
    def min_output(self) -> int:
        return min_output(self.output_limit, self.window)

    def output_cap(self, tokens: int) -> int:
        """The output cap of a request of ``tokens`` (heron.context.window.output_room)."""
        return output_cap(tokens, self.window, self.output_limit, self.min_output)

    # --- counting ----------------------------------------------------------------------------

    @property
    def ratio(self) -> float:
        """The server's tokens per chars/4-estimated token for this model (1.0 until an
        answer's usage calibrated it, :mod:`heron.context.window.calibration`)."""
        found = self._decisions().calibration.get(self.model_key)
        return found[0] if found is not None else 1.0

    def scaled(self, estimated: int) -> int:
        """An estimate in the server's tokens."""
        return math.ceil(estimated * self.ratio)

    def count(self, view: Sequence[AgentMessage]) -> int:
        """The tokens of a request carrying ``view``: anchored on the provider's last report
        when the view has not changed before it since, estimated after it."""
        model = self.model
        return request_tokens(
            view,
            self.fixed_tokens(),
            floor_ms=self._decisions().last_view_change_ms,
            model=(model.provider, model.id),
            tally=_tally(view),
            ratio=self.ratio,
        )

    def load(self, view: Sequence[AgentMessage], tokens: int) -> int:
        """``tokens`` (the count) plus what chars / 4 misses after the usage anchor, at the
        provider's own rate (:func:`tail_pressure`): what pruning and compaction decide on,
        so a request the provider counts over the threshold is not sent on an undercount."""
        decisions = self._decisions()
        if self.model_key in decisions.calibration:
            return tokens  # the calibrated count already has the tail at the server's rate
        model = self.model
        return tokens + tail_pressure(
            view,
            self.fixed_tokens(),
            floor_ms=decisions.last_view_change_ms,
            model=(model.provider, model.id),
            tally=_tally(view),
        )

    def estimate(self, view: Sequence[AgentMessage]) -> int:
        """Everything estimated, no anchor: how compactions compare before and after."""
        return self.scaled(self.raw_estimate(view))

    def raw_estimate(self, view: Sequence[AgentMessage]) -> int:
        """:meth:`estimate` at chars/4, uncalibrated."""
        tally = _tally(view)
        if tally is not None and tally.length == len(view):
            return self.fixed_tokens() + tally.between(0, len(view))
        return self.fixed_tokens() + sum(context_message_tokens(m) for m in view)
