"""When a pruning step is taken and what it stubs: the one rule, recorded or only planned.

:meth:`ContextPolicy.pressure` takes a step before a request once the view passes the
high-water mark, or - the prompt cache being cold (:mod:`heron.context.pruning.cold_cache`) - the
low-water mark. Others need to know what such a step would do without taking it: the
background summary and the soft threshold (how much of the view only a compaction
reduces), and the idle policy (:mod:`heron.context.compaction.idle`: how large the request that
finds the cache expired would be, to price letting it expire). All of them ask here, so
the rule that decides a step exists once (docs/context.md, "Pruning").

:class:`Pruner` is held by :class:`~heron.context.policy.ContextPolicy`: it reads the
marks from the window model (:class:`~heron.context.sizes.WindowSizes`) and records
its steps through the policy's :class:`~heron.context.records.recorder.DecisionRecorder`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from heron.agent.messages import AgentMessage
from heron.agent.tool_meta import ToolCatalog
from heron.context.compaction.native import NativeTracker, native_view
from heron.context.pruning.prune import prune_step
from heron.context.records.decisions import prune_data
from heron.context.records.ledger import Ledger, LedgerRecord
from heron.context.records.recorder import DecisionRecorder
from heron.context.view.build import View

if TYPE_CHECKING:  # the window model sits at the layer's top, above the stages
    from heron.context.policy import PolicySettings
    from heron.context.sizes import WindowSizes

PRUNE_MIN_STEP_SHARE = 0.10  # below the threshold, a step must save this share of the window


@dataclass(frozen=True, slots=True)
class StepPlan:
    """A step due at some load: what it spares and how much it must or may save."""

    keep_turns: int  # the results of this many last assistant messages are spared
    min_saving: int  # a step saving less is not taken (each one is a cache miss)
    target: int | None  # stop once the stubs save this much (None: stub everything prunable)
    cold: float | None  # the idle seconds that made the cache cold, when that is why


class Pruner:
    """The pruning step's rule (:meth:`step_plan`), taken (:meth:`prune`) or planned.

    ``view``: the view of some messages under the recorded decisions (the policy's
    incremental builder), for the size of a request a step is planned for."""

    def __init__(
        self,
        settings: PolicySettings,
        sizes: WindowSizes,
        recorder: DecisionRecorder,
        *,
        tools: ToolCatalog,
        ledger: Ledger,
        natives: NativeTracker,
        view: Callable[[Sequence[AgentMessage]], View],
    ) -> None:
        self.settings = settings
        self.sizes = sizes
        self.recorder = recorder
        self.tools = tools
        self.ledger = ledger
        self.natives = natives
        self.view = view

    @property
    def enabled(self) -> bool:
        """heron's own pruning: on unless the provider clears old tool results itself."""
        sizes = self.sizes
        native = self.settings.native.for_model(sizes.model)
        off = self.recorder.decisions.native_off
        return self.settings.pruning and not (native.server_clearing and sizes.model_key not in off)

    def step_plan(self, load: int, cold: float | None) -> StepPlan | None:
        """The step due before a request whose view is ``load`` tokens (None: none).

        Past the high-water mark: down to the low-water mark, sparing the last
        ``keepTurns`` assistant messages. At a cold moment (``cold``: the prompt cache has
        expired, so the request is paid in full whatever it keeps) already past the
        low-water mark: every prunable result but those of the last ``coldKeepTurns``.
        Below the threshold a small step is not worth its cache miss: only steps that
        might spare a compaction are taken."""
        sizes = self.sizes
        high, low = sizes.prune_marks
        if not self.enabled or not (load > high or (cold is not None and load > low)):
            return None
        min_saving = 0 if load > sizes.threshold else int(sizes.working_window * PRUNE_MIN_STEP_SHARE)
        if cold is None:
            return StepPlan(self.settings.prune_keep_turns, min_saving, load - low, None)
        keep = min(self.settings.prune_cold_keep_turns, self.settings.prune_keep_turns)
        return StepPlan(keep, min_saving, None, cold)

    def take_step(self, messages: Sequence[AgentMessage], plan: StepPlan) -> int:
        """The step :meth:`step_plan` planned, recorded: the tokens it saved (0: none)."""
        return self.prune(messages, plan.min_saving, plan.keep_turns, plan.target, plan.cold)

    def cold_request_tokens(self, messages: Sequence[AgentMessage]) -> int:
        """How many tokens the next request would carry if it found the prompt cache
        expired: the view's count less what the cold step :meth:`pressure` would take then
        saves - planned here, nothing recorded. What the idle policy prices letting the
        cache expire by (:mod:`heron.context.compaction.idle`)."""
        view = self.view(messages)
        tokens = self.sizes.count(view)
        cold = float(self.sizes.cache_ttl_s)  # any time past the lifetime: the rule does not depend on it
        plan = self.step_plan(self.sizes.load(view, tokens), cold)
        if plan is None:
            return tokens
        _, records = self._plan_stubs(messages, plan.min_saving, plan.keep_turns, plan.target)
        return max(0, tokens - sum(r.chars_before - r.chars_after for r in records) // 4)

    def pruning_spares(self, messages: Sequence[AgentMessage], predicted: int) -> bool:
        """Whether the pruning step taken at a view of ``predicted`` tokens would get it
        below the marks' middle, so that no compaction runs there (nothing is recorded)."""
        if not self.enabled:
            return False
        return self.unprunable(messages, predicted) <= self.compaction_bar

    def unprunable(self, messages: Sequence[AgentMessage], tokens: int) -> int:
        """``tokens`` less what the pruning step taken at that size could stub now (all
        of it with pruning off): the part of the view only a compaction reduces."""
        if not self.enabled:
            return tokens
        low = self.sizes.prune_marks[1]
        _, records = prune_step(
            messages, self.recorder.decisions.stubs, self.settings.prune_keep_turns, 0, tokens - low, tools=self.tools
        )
        return tokens - sum(r.chars_before - r.chars_after for r in records) // 4

    @property
    def compaction_bar(self) -> int:
        """What :meth:`unprunable` is compared with to know whether the threshold will
        compact: the marks' middle when pruning runs first there, the threshold itself
        when pruning is off."""
        if not self.enabled:
            return self.sizes.threshold
        high, low = self.sizes.prune_marks
        return (high + low) // 2

    def _plan_stubs(
        self, messages: Sequence[AgentMessage], min_saving: int, keep_turns: int, target: int | None
    ) -> tuple[dict[str, str], list[LedgerRecord]]:
        """The stubs of one step and their ledger records, not recorded."""
        messages = native_view(messages, self.sizes.model, self.natives.index(messages))  # unread: no stub
        return prune_step(messages, self.recorder.decisions.stubs, keep_turns, min_saving, target, tools=self.tools)

    def prune(
        self,
        messages: Sequence[AgentMessage],
        min_saving_tokens: int,
        keep_turns: int | None = None,
        target_saving_tokens: int | None = None,
        cold: float | None = None,
    ) -> int:
        """One pruning step, recorded in the session: the tokens it saved (0: nothing was
        pruned). ``target_saving_tokens``: stop once the stubs save that much (None: all);
        ``cold``: the idle seconds that made the prompt cache cold, when that is why."""
        keep = self.settings.prune_keep_turns if keep_turns is None else keep_turns
        stubs, records = self._plan_stubs(messages, min_saving_tokens, keep, target_saving_tokens)
        if not stubs:
            return 0
        self.recorder.record(prune_data(stubs))
        for record in records:
            if cold is not None:
                record.detail["cacheCold"] = {"idleSeconds": round(cold), "ttlSeconds": self.sizes.cache_ttl_s}
            self.ledger.add(record)
        return max(1, sum(r.chars_before - r.chars_after for r in records) // 4)
