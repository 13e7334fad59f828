"""The context policy: what the next request carries, decided before each one.

The session's context owner (``heron.coding.context_owner``) asks it for the view of the
next request: :meth:`ContextPolicy.pressure` prunes and says whether a compaction is due,
:meth:`ContextPolicy.settle` finishes the view after that compaction and returns what
the request is planned with (:class:`Settled`: the view, its count, its output cap). The
policy holds one part per job, each with a narrow interface, and decides with them:

* :attr:`~ContextPolicy.sizes` - the window model and the counts
  (:class:`~heron.context.sizes.WindowSizes`), deciding nothing;
* :attr:`~ContextPolicy.pruner` - the pruning step's rule, taken or planned
  (:class:`~heron.context.pruning.pruning_steps.Pruner`);
* :attr:`~ContextPolicy.windows` - windows learnt from rejections
  (:class:`~heron.context.window.learned_window.WindowLearner`), given the rejected
  request's numbers;
* :attr:`~ContextPolicy.calibration` - the server's tokens per estimated token
  (:class:`~heron.context.window.calibrated.Calibration`);
* :attr:`~ContextPolicy.calls` - tool-call arguments shown shortened
  (:class:`~heron.context.view.call_args.CallShortener`);
* :attr:`~ContextPolicy.recorder` - every decision appended to the session the moment it
  is made (:class:`~heron.context.records.recorder.DecisionRecorder`), so a process that
  opens the session later derives the same view: nothing that shapes a request lives
  only here.

Counting follows one rule: tokens of the view actually being sent, system prompt and
tool definitions included; the provider's last report anchors the count only when the
view has not changed before it since (no pruning step, no compaction, same model).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from heron.agent.messages import AgentMessage
from heron.agent.tool_meta import ToolCatalog
from heron.ai.abort import AbortSignal
from heron.ai.options import ContextManagement
from heron.ai.types import AssistantMessage, Model
from heron.context.compaction.boundaries import BACKGROUND_AT, SOFT_THRESHOLD, next_step_tokens, step_boundary
from heron.context.compaction.native import (
    NativeSettings,
    NativeTracker,
    answer_records,
    native_view,
    request_fields,
    uncovered,
)
from heron.context.compaction.plan import SUMMARY_ALLOWANCE_TOKENS, entry_message, prepare_compaction
from heron.context.continuity.frontier import FrontierSettings
from heron.context.pruning.cold_cache import COLD_KEEP_TURNS, cache_cold
from heron.context.pruning.prune import PRUNE_HIGH_WATER, PRUNE_KEEP_TURNS, PRUNE_LOW_WATER
from heron.context.pruning.pruning_steps import PRUNE_MIN_STEP_SHARE, Pruner
from heron.context.records.decisions import ContextDecisions, native_data
from heron.context.records.ledger import Ledger
from heron.context.records.recorder import DecisionRecorder
from heron.context.sizes import WindowSizes
from heron.context.tool_output.limits import DEFAULT_LIMITS, ToolLimits
from heron.context.view.build import ReadIndex, ReadInView, View, ViewBuilder
from heron.context.view.call_args import CallShortener
from heron.context.window.budget import context_message_tokens
from heron.context.window.budget_notice import NOTICE_FRAMING, notice_data
from heron.context.window.calibrated import Calibration
from heron.context.window.learned_window import WindowLearner
from heron.context.window.output_room import does_not_fit
from heron.context.window.working_budget import AUTO, WorkingBudgetSetting
from heron.session.store import SessionStore


class ContextFull(RuntimeError):
    """The view cannot be brought within the window: nothing is sent."""


@dataclass(frozen=True, slots=True)
class Pressure:
    """What :meth:`ContextPolicy.pressure` found, for :meth:`ContextPolicy.settle`."""

    view: View
    tokens: int
    pressed: bool  # past the threshold (or an early compaction wanted), not aborted
    compact: bool  # an automatic compaction is due
    early: bool  # ... below the threshold, after a shallow pruning step


@dataclass(frozen=True, slots=True)
class Settled:
    """What :meth:`ContextPolicy.settle` returns: the view of the next request and the numbers
    it is planned with, as a value the request path passes on (no field is left for a
    later hook to read)."""

    view: View
    tokens: int  # the view's count, system prompt and tools included
    max_tokens: int  # the request's output cap
    over_threshold: str | None = None  # why the view is still past the threshold, when it is


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """The switches and thresholds of pruning and compaction, read once from the settings so
    the policy's decisions depend only on these values and the view."""

    pruning: bool = True
    compaction: bool = True
    reserve_tokens: int = 16_384
    keep_recent_tokens: int = 20_000
    working_budget: WorkingBudgetSetting = AUTO  # compact past this many tokens, whatever the window
    soft_threshold: float = SOFT_THRESHOLD  # share of the threshold; 1.0: compact at the threshold only
    background: bool = True  # summarise ahead, beside the turn (heron.context.compaction.background)
    background_at: float = BACKGROUND_AT  # share of the threshold past which the background summary starts
    prune_high_water: float = PRUNE_HIGH_WATER
    prune_low_water: float = PRUNE_LOW_WATER
    prune_keep_turns: int = PRUNE_KEEP_TURNS
    # Past this idle time a step is free (heron.context.pruning.cold_cache); 0: never; None: by the server.
    prune_cache_ttl_s: int | None = 0
    prune_cold_keep_turns: int = COLD_KEEP_TURNS  # ...and spares fewer results (heron.context.pruning.cold_cache)
    frontier: FrontierSettings = field(default_factory=FrontierSettings)  # re-injected after a compaction
    native: NativeSettings = field(default_factory=NativeSettings)  # provider-native compaction, server clearing
    tool_limits: ToolLimits = DEFAULT_LIMITS  # one result's budget bounds a call's arguments too (call_args)


class ContextPolicy:
    """Pruning, the compaction trigger and the read index, deciding with its parts."""

    def __init__(
        self,
        store: SessionStore,
        *,
        cwd: Path,
        settings: PolicySettings,
        ledger: Ledger,
        model: Callable[[], Model],
        fixed_tokens: Callable[[], int],
        tools: ToolCatalog,
    ) -> None:
        self.cwd = cwd
        self.tools = tools  # what each tool name in the session is (kinds, files): the session's tool set
        self.settings = settings
        self.ledger = ledger
        self.recorder = DecisionRecorder(store)
        self.sizes = WindowSizes(settings, lambda: self.recorder.decisions, model, fixed_tokens)
        self.views = ViewBuilder(cwd, tools)
        self.natives = NativeTracker()  # where the latest provider-native block is
        self.pruner = Pruner(
            settings, self.sizes, self.recorder, tools=tools, ledger=ledger, natives=self.natives, view=self.view
        )
        self.windows = WindowLearner(self.sizes, self.recorder, ledger)
        self.calibration = Calibration(self.sizes, self.recorder)
        self.calls = CallShortener(self.sizes, self.recorder, tools=tools, ledger=ledger)
        self.reads = ReadIndex()
        self.reload(store)

    # --- state from the session ----------------------------------------------------------

    def reload(self, store: SessionStore | None = None) -> None:
        """Re-derive every decision from the session path (open, branch, switch file)."""
        self.recorder.reload(store if store is not None else self.recorder.store)
        self.views.reset()
        self.reads = ReadIndex()

    @property
    def store(self) -> SessionStore:
        return self.recorder.store

    @property
    def decisions(self) -> ContextDecisions:
        """The decisions in force on the session's path (replaced by :meth:`reload`)."""
        return self.recorder.decisions

    @property
    def auto_compaction(self) -> bool:
        return self.settings.compaction and self.decisions.auto_compaction

    def view(self, messages: Sequence[AgentMessage]) -> View:
        """The messages a request carries: the decisions applied to ``messages`` (built
        incrementally: extended by what was added since the last call), from the latest
        native compaction block on when this model's provider wrote it."""
        model = self.sizes.model
        return self.views.apply(native_view(messages, model, self.natives.index(messages)), self.decisions)

    def uncovered_native(self, messages: Sequence[AgentMessage]) -> AssistantMessage | None:
        """The reply whose native block the current model cannot read, while the history it
        covered is still unsummarised (:func:`heron.context.compaction.native.uncovered`)."""
        return uncovered(messages, self.sizes.model, self.natives.index(messages))

    @property
    def native(self) -> NativeSettings:
        """Provider-native compaction and server-side clearing for the current model."""
        return self.settings.native.for_model(self.sizes.model)

    def native_request(self) -> ContextManagement | None:
        """The server-side context management the next turn asks for (None: none)."""
        sizes = self.sizes
        return request_fields(
            self.native,
            threshold=sizes.threshold,
            window=sizes.window,
            keep_tool_uses=self.settings.prune_keep_turns,
            exclude_tools=self.tools.names("todo"),
            off=sizes.model_key in self.decisions.native_off or not self.settings.compaction,
        )

    def observe(self, answer: AssistantMessage, tokens: int) -> None:
        """What the provider did to the context of the request ``answer`` came from (heron's
        count of it: ``tokens``, from its plan): into the ledger; a rejection of the native
        fields recorded, so heron compacts from now on."""
        key = self.sizes.model_key
        if answer.context_management_error is not None and key not in self.decisions.native_off:
            self.recorder.record(native_data(key, False, answer.context_management_error))
        for record in answer_records(answer, tokens):
            self.ledger.add(record)

    # --- before every request ----------------------------------------------------------------

    def pressure(self, messages: list[AgentMessage], signal: AbortSignal) -> Pressure:
        """The first half of preparing the next request: the view counted, pruned down to
        the low-water mark once past the high-water mark, and whether a compaction is due.
        Whoever runs compactions (``heron.coding.context_owner``) runs it when one is, then
        calls :meth:`settle`."""
        sizes, pruner = self.sizes, self.pruner
        self.calls.shorten_calls(messages)
        view = self.view(messages)
        tokens = sizes.count(view)
        load = sizes.load(view, tokens)  # what the decisions compare: never less than the count
        high, low = sizes.prune_marks
        stepped = False
        ttl = sizes.cache_ttl_s
        cold = cache_cold(messages, ttl, warmed_ms=self.decisions.warmed_ms) if pruner.enabled else None
        plan = pruner.step_plan(load, cold)
        if plan is not None:
            saved = pruner.take_step(messages, plan)
            if saved:
                view = self.view(messages)
                tokens = sizes.count(view)
                # The load before the step was anchored on the provider's report; after it,
                # everything is estimated, and chars/4 misses each message's framing. What
                # the step removed is known, so the view is at least the old load minus that.
                load = max(sizes.load(view, tokens), load - saved)
                stepped = True
        # A step that could not get below the marks' midpoint: what fills the budget is the
        # conversation itself, which only a compaction removes. Compacting now, while the
        # prefix breaks anyway, spares the string of ever shallower steps that would follow.
        middle = (high + low) // 2
        early = stepped and load > middle and self.auto_compaction and self._worth_compacting(view, load, load - middle)
        pressed = (load > sizes.threshold or early) and not signal.aborted
        return Pressure(
            view=view,
            tokens=tokens,
            pressed=pressed,
            compact=pressed and (self.auto_compaction or self._last_resort(tokens)),
            early=early and load <= sizes.threshold,
        )

    def soft_due(self, messages: Sequence[AgentMessage], pressure: Pressure) -> bool:
        """Whether to compact now, at a step boundary (:func:`step_boundary`), below the
        threshold: the view is past the soft threshold, the next step - as large as the
        largest of the last few - would take it past the hard threshold, and the pruning that would run
        there could not spare the compaction. So the compaction that is coming anyway
        falls where the agent is between steps, not in the middle of one, and no
        compaction runs that the threshold alone would not have run. When it is due, the
        pruning step the threshold would have taken first is taken (recorded) here too."""
        share, sizes = self.settings.soft_threshold, self.sizes
        if pressure.pressed or share >= 1.0 or not self.auto_compaction:
            return False
        load = sizes.load(pressure.view, pressure.tokens)
        if load <= sizes.threshold * share or step_boundary(messages, self.tools) is None:
            return False
        predicted = load + next_step_tokens(pressure.view, self.tools)
        if predicted <= sizes.threshold:
            return False
        if self.pruner.pruning_spares(messages, predicted):
            return False  # the step at the threshold would free the room
        if not self._worth_compacting(pressure.view, load, load - int(sizes.threshold * share)):
            return False
        if self.pruner.enabled:  # the step the threshold would take first: the kept messages carry it
            self.pruner.prune(messages, 0, target_saving_tokens=load - sizes.prune_marks[1])
        return True

    def settle(
        self,
        messages: list[AgentMessage],
        pressure: Pressure,
        rebuilt: list[AgentMessage] | None = None,
        failure: str | None = None,
    ) -> Settled:
        """The view for the next request and its numbers, after the compaction
        :meth:`pressure` asked for (``rebuilt``: the conversation it wrote; ``failure``: why
        it failed, if it did): pruned again when still past the threshold. Raises
        :class:`ContextFull` rather than send a request over the window."""
        sizes = self.sizes
        view, tokens = pressure.view, pressure.tokens
        if rebuilt is not None:
            messages = rebuilt
            view = self.view(messages)
            tokens = sizes.count(view)
            load = sizes.load(view, tokens)
            low, pruner = sizes.prune_marks[1], self.pruner
            if load > sizes.threshold and pruner.enabled and pruner.prune(messages, 0, target_saving_tokens=load - low):
                view = self.view(messages)
                tokens = sizes.count(view)
        over = None
        if pressure.pressed and tokens > sizes.threshold:
            over = f"the compaction failed: {failure}" if failure else self._why_over()
        notice = notice_data(messages, tokens, sizes.threshold, self.decisions.notice_mark, sizes.model)
        if notice is not None and tokens + sizes.scaled(len(notice["text"]) // 4 + NOTICE_FRAMING) <= sizes.threshold:
            # a budget mark reached: told once, at the end of this request (never pushing it past the threshold)
            self.recorder.record(notice)
            view = self.view(messages)
            tokens = sizes.count(view)
        if tokens + sizes.min_output > sizes.window:
            fixed, why = sizes.scaled(sizes.fixed_tokens()), over or "nothing left to reduce"
            raise ContextFull(does_not_fit(tokens, sizes.window, fixed, sizes.min_output, why))
        self.reads = view.reads
        return Settled(view=view, tokens=tokens, max_tokens=sizes.output_cap(tokens), over_threshold=over)

    def _worth_compacting(self, view: Sequence[AgentMessage], tokens: int, excess: int) -> bool:
        """Whether the history that pruning cannot reduce - everything before the results
        it protects, old results already stubbed - is at least ``excess`` tokens (and a
        tenth of the window), and a compaction now would remove that much. Recent results
        above the marks are not a reason to compact: that would summarise exactly what
        ``keep_turns`` protects. ``tokens`` is the view's count; what it has over the
        chars/4 estimate is each message's framing, spread evenly over the messages (the
        history is many small messages, so their framing matters)."""
        leaf = self.store.leaf_id
        if leaf is None:
            return False
        path = self.store.path_to(leaf)
        plan = prepare_compaction(path, self.sizes.plan_settings, self.tools, self.decisions.call_args)
        if plan is None or not plan.has_work:
            return False
        framing = max(0.0, (tokens - self.sizes.estimate(view)) / max(1, len(view)))

        def size(messages: Sequence[AgentMessage]) -> float:
            return sum(context_message_tokens(m) for m in messages) + framing * len(messages)

        kept = self.view([m for m in (entry_message(e) for e in path[plan.first_kept_index :]) if m is not None])
        asks = [i for i, m in enumerate(view) if isinstance(m, AssistantMessage)]
        keep = self.settings.prune_keep_turns
        boundary = asks[-keep] if keep and len(asks) >= keep else len(view) if not keep else 0
        removable = min(size(view[:boundary]), size(view) - size(kept)) - SUMMARY_ALLOWANCE_TOKENS
        return removable >= max(excess, int(self.sizes.working_window * PRUNE_MIN_STEP_SHARE))

    def _last_resort(self, tokens: int) -> bool:
        """Whether to compact although heron switched automatic compaction off itself (a
        compaction saved too little): the request does not fit the window, so without one
        nothing can be sent - every later turn would fail. Not when the user switched it
        off, or turned compaction off in the settings."""
        decisions, sizes = self.decisions, self.sizes
        off_by_heron = not decisions.auto_compaction and not decisions.auto_compaction_by_user
        return self.settings.compaction and off_by_heron and tokens + sizes.min_output > sizes.window

    def _why_over(self) -> str:
        if not self.settings.compaction:
            return "compaction is turned off"
        if not self.decisions.auto_compaction:
            return f"automatic compaction is off: {self.decisions.auto_compaction_reason}"
        return "the kept recent messages alone exceed the threshold"

    def find_read(self, path: str, offset: int | None, limit: int | None) -> ReadInView | None:
        """The read tool's question: the earlier read of this range present whole in the
        view last sent, if any."""
        return self.reads.find(path, offset, limit)
