"""The context policy: everything that decides what a request carries, in one component.

The session's context owner (``heron.coding.context_owner``) asks four things of it: the
view for the next request (:meth:`ContextPolicy.pressure`, which prunes and says whether
a compaction is due, then :meth:`ContextPolicy.settle` after that compaction), the
output cap for that request, what to learn from a provider's overflow rejection, and
the read tool's question "is this range already in the view?". Each decision is
appended to the session the moment it is made (:mod:`heron.context.records.decisions`), so a
process that opens the session later derives the same view: nothing that shapes a
request lives only here.

Counting follows one rule: tokens of the view actually being sent, system prompt and
tool definitions included; the provider's last report anchors the count only when the
view has not changed before it since (no pruning step, no compaction, same model).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from heron.context.compaction.plan import (
    SUMMARY_ALLOWANCE_TOKENS,
    CompactionSettings,
    entry_message,
    prepare_compaction,
)
from heron.context.continuity.frontier import FrontierSettings
from heron.context.continuity.todos import TODOS_CUSTOM_TYPE, TodoItem
from heron.context.pruning.cold_cache import COLD_KEEP_TURNS, cache_cold, cache_lifetime
from heron.context.pruning.prune import PRUNE_HIGH_WATER, PRUNE_KEEP_TURNS, PRUNE_LOW_WATER
from heron.context.pruning.pruning_steps import PRUNE_MIN_STEP_SHARE, PruningSteps
from heron.context.records.decisions import (
    DECISION_CUSTOM_TYPE,
    OP_IDLE,
    ContextDecisions,
    PendingSummary,
    auto_compaction_data,
    background_data,
    background_end_data,
    background_result_data,
    background_sent_data,
    flush_data,
    native_data,
)
from heron.context.records.ledger import Ledger
from heron.context.records.ordering import strictly_ordered
from heron.context.tool_output.limits import DEFAULT_LIMITS, ToolLimits
from heron.context.view.build import ReadIndex, ReadInView, View, ViewBuilder
from heron.context.view.call_args import ShortenedCalls
from heron.context.window.budget import Tally, context_message_tokens, request_tokens, tail_pressure
from heron.context.window.budget_notice import NOTICE_FRAMING, notice_data
from heron.context.window.calibrated import CalibratedCounts
from heron.context.window.learned_window import LearnedWindows
from heron.context.window.output_room import does_not_fit, min_output, output_cap, output_limit
from heron.context.window.working_budget import AUTO, WorkingBudget, WorkingBudgetSetting, working_budget
from heron.session.entries import CustomEntry, iso_to_ms
from heron.session.store import SessionStore


def _tally(view: Sequence[AgentMessage]) -> Tally | None:
    """The counts kept while ``view`` was built, when it is a view the builder made."""
    return view.tally if isinstance(view, View) else None


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


class ContextPolicy(LearnedWindows, CalibratedCounts, ShortenedCalls, PruningSteps):
    """Pruning, the compaction trigger, output caps, learned limits and the read index."""

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
        self.store = store
        self.cwd = cwd
        self.tools = tools  # what each tool name in the session is (kinds, files): the session's tool set
        self.settings = settings
        self.ledger = ledger
        self._model = model
        self._fixed_tokens = fixed_tokens
        self.views = ViewBuilder(cwd, tools)
        self.natives = NativeTracker()  # where the latest provider-native block is
        self.decisions = ContextDecisions()
        self.reads = ReadIndex()
        self.last_tokens = 0
        self.last_max_tokens = 0
        self.over_threshold_reason: str | None = None
        self.reload()

    # --- state from the session ----------------------------------------------------------

    def reload(self, store: SessionStore | None = None) -> None:
        """Re-derive every decision from the session path (open, branch, switch file)."""
        if store is not None:
            self.store = store
        leaf = self.store.leaf_id
        entries: list[Any] = []
        if leaf is not None:
            ids, types = self.store.lineage(leaf)
            entries = [
                self.store.get(i) for i, kind in zip(ids, types, strict=True) if kind in ("custom", "compaction")
            ]
        self.decisions = ContextDecisions.from_entries(e for e in entries if e is not None)
        self.views.reset()
        self.reads = ReadIndex()
        self.over_threshold_reason = None

    def _record(self, data: dict[str, Any]) -> CustomEntry:
        with strictly_ordered():
            entry = self.store.append_custom(DECISION_CUSTOM_TYPE, data)
        self.decisions.apply(data, iso_to_ms(entry.timestamp))
        return entry

    # --- sizes -----------------------------------------------------------------------------

    @property
    def model(self) -> Model:
        return self._model()

    @property
    def model_key(self) -> str:
        return f"{self.model.provider}/{self.model.id}"

    @property
    def cache_ttl_s(self) -> int:
        """The prompt cache's lifetime for the current model (heron.context.pruning.cold_cache)."""
        return cache_lifetime(self.model, self.settings.prune_cache_ttl_s)

    @property
    def window(self) -> int:
        """The window heron plans for: the model's, or less when a server enforced less."""
        configured = self.model.context_window
        learned = self.decisions.learned_window(self.model_key)
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

    @property
    def auto_compaction(self) -> bool:
        return self.settings.compaction and self.decisions.auto_compaction

    def fixed_tokens(self) -> int:
        return self._fixed_tokens()

    def view(self, messages: Sequence[AgentMessage]) -> View:
        """The messages a request carries: the decisions applied to ``messages`` (built
        incrementally: extended by what was added since the last call), from the latest
        native compaction block on when this model's provider wrote it."""
        return self.views.apply(native_view(messages, self.model, self.natives.index(messages)), self.decisions)

    def uncovered_native(self, messages: Sequence[AgentMessage]) -> AssistantMessage | None:
        """The reply whose native block the current model cannot read, while the history it
        covered is still unsummarised (:func:`heron.context.compaction.native.uncovered`)."""
        return uncovered(messages, self.model, self.natives.index(messages))

    @property
    def native(self) -> NativeSettings:
        """Provider-native compaction and server-side clearing for the current model."""
        return self.settings.native.for_model(self.model)

    @property
    def pruning(self) -> bool:
        """heron's own pruning: on unless the provider clears old tool results itself."""
        return self.settings.pruning and not (self.native.server_clearing and self.model_key not in self._native_off)

    @property
    def _native_off(self) -> dict[str, str]:
        return self.decisions.native_off

    def native_request(self) -> ContextManagement | None:
        """The server-side context management the next turn asks for (None: none)."""
        return request_fields(
            self.native,
            threshold=self.threshold,
            window=self.window,
            keep_tool_uses=self.settings.prune_keep_turns,
            exclude_tools=self.tools.names("todo"),
            off=self.model_key in self._native_off or not self.settings.compaction,
        )

    def observe(self, answer: AssistantMessage) -> None:
        """What the provider did to the context of the request ``answer`` came from: into
        the ledger; a rejection of the native fields recorded, so heron compacts from now on."""
        if answer.context_management_error is not None and self.model_key not in self._native_off:
            self._record(native_data(self.model_key, False, answer.context_management_error))
        for record in answer_records(answer, self.last_tokens):
            self.ledger.add(record)

    def count(self, view: Sequence[AgentMessage]) -> int:
        model = self.model
        return request_tokens(
            view,
            self.fixed_tokens(),
            floor_ms=self.decisions.last_view_change_ms,
            model=(model.provider, model.id),
            tally=_tally(view),
            ratio=self.ratio,
        )

    def load(self, view: Sequence[AgentMessage], tokens: int) -> int:
        """``tokens`` (the count) plus what chars / 4 misses after the usage anchor, at the
        provider's own rate (:func:`tail_pressure`): what pruning and compaction decide on,
        so a request the provider counts over the threshold is not sent on an undercount."""
        if self.model_key in self.decisions.calibration:
            return tokens  # the calibrated count already has the tail at the server's rate
        model = self.model
        return tokens + tail_pressure(
            view,
            self.fixed_tokens(),
            floor_ms=self.decisions.last_view_change_ms,
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

    @property
    def output_limit(self) -> int:
        return output_limit(self.model, self.window)

    @property
    def min_output(self) -> int:
        return min_output(self.output_limit, self.window)

    def output_cap(self, tokens: int) -> int:
        """The output cap of a request of ``tokens`` (heron.context.window.output_room)."""
        return output_cap(tokens, self.window, self.output_limit, self.min_output)

    # --- before every request ----------------------------------------------------------------

    def pressure(self, messages: list[AgentMessage], signal: AbortSignal) -> Pressure:
        """The first half of preparing the next request: the view counted, pruned down to
        the low-water mark once past the high-water mark, and whether a compaction is due.
        Whoever runs compactions (``heron.coding.context_owner``) runs it when one is, then
        calls :meth:`settle`."""
        self.over_threshold_reason = None
        self.shorten_calls(messages)
        view = self.view(messages)
        tokens = self.count(view)
        load = self.load(view, tokens)  # what the decisions compare: never less than the count
        high, low = self.prune_marks
        stepped = False
        cold = cache_cold(messages, self.cache_ttl_s, warmed_ms=self.decisions.warmed_ms) if self.pruning else None
        plan = self.step_plan(load, cold)
        if plan is not None:
            saved = self.take_step(messages, plan)
            if saved:
                view = self.view(messages)
                tokens = self.count(view)
                # The load before the step was anchored on the provider's report; after it,
                # everything is estimated, and chars/4 misses each message's framing. What
                # the step removed is known, so the view is at least the old load minus that.
                load = max(self.load(view, tokens), load - saved)
                stepped = True
        # A step that could not get below the marks' midpoint: what fills the budget is the
        # conversation itself, which only a compaction removes. Compacting now, while the
        # prefix breaks anyway, spares the string of ever shallower steps that would follow.
        middle = (high + low) // 2
        early = stepped and load > middle and self.auto_compaction and self._worth_compacting(view, load, load - middle)
        pressed = (load > self.threshold or early) and not signal.aborted
        return Pressure(
            view=view,
            tokens=tokens,
            pressed=pressed,
            compact=pressed and (self.auto_compaction or self._last_resort(tokens)),
            early=early and load <= self.threshold,
        )

    def soft_due(self, messages: Sequence[AgentMessage], pressure: Pressure) -> bool:
        """Whether to compact now, at a step boundary (:func:`step_boundary`), below the
        threshold: the view is past the soft threshold, the next step - as large as the
        largest of the last few - would take it past the hard threshold, and the pruning that would run
        there could not spare the compaction. So the compaction that is coming anyway
        falls where the agent is between steps, not in the middle of one, and no
        compaction runs that the threshold alone would not have run. When it is due, the
        pruning step the threshold would have taken first is taken (recorded) here too."""
        share = self.settings.soft_threshold
        if pressure.pressed or share >= 1.0 or not self.auto_compaction:
            return False
        load = self.load(pressure.view, pressure.tokens)
        if load <= self.threshold * share or step_boundary(messages, self.tools) is None:
            return False
        predicted = load + next_step_tokens(pressure.view, self.tools)
        if predicted <= self.threshold:
            return False
        if self.pruning_spares(messages, predicted):
            return False  # the step at the threshold would free the room
        if not self._worth_compacting(pressure.view, load, load - int(self.threshold * share)):
            return False
        if self.pruning:  # the step the threshold would take first: the kept messages carry it
            self.prune(messages, 0, target_saving_tokens=load - self.prune_marks[1])
        return True

    def settle(
        self,
        messages: list[AgentMessage],
        pressure: Pressure,
        rebuilt: list[AgentMessage] | None = None,
        failure: str | None = None,
    ) -> View:
        """The view for the next request, after the compaction :meth:`pressure` asked for
        (``rebuilt``: the conversation it wrote; ``failure``: why it failed, if it did):
        pruned again when still past the threshold. Raises :class:`ContextFull` rather than
        send a request over the window."""
        view, tokens = pressure.view, pressure.tokens
        if rebuilt is not None:
            messages = rebuilt
            view = self.view(messages)
            tokens = self.count(view)
            load = self.load(view, tokens)
            low = self.prune_marks[1]
            if load > self.threshold and self.pruning and self.prune(messages, 0, target_saving_tokens=load - low):
                view = self.view(messages)
                tokens = self.count(view)
        if pressure.pressed and tokens > self.threshold:
            self.over_threshold_reason = f"the compaction failed: {failure}" if failure else self._why_over()
        notice = notice_data(messages, tokens, self.threshold, self.decisions.notice_mark, self.model)
        if notice is not None and tokens + self.scaled(len(notice["text"]) // 4 + NOTICE_FRAMING) <= self.threshold:
            # a budget mark reached: told once, at the end of this request (never pushing it past the threshold)
            self._record(notice)
            view = self.view(messages)
            tokens = self.count(view)
        if tokens + self.min_output > self.window:
            raise ContextFull(self._full(tokens))
        self.last_tokens = tokens
        self.last_max_tokens = self.output_cap(tokens)
        self.reads = view.reads
        return view

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
        plan = prepare_compaction(path, self.plan_settings, self.tools, self.decisions.call_args)
        if plan is None or not plan.has_work:
            return False
        framing = max(0.0, (tokens - self.estimate(view)) / max(1, len(view)))

        def size(messages: Sequence[AgentMessage]) -> float:
            return sum(context_message_tokens(m) for m in messages) + framing * len(messages)

        kept = self.view([m for m in (entry_message(e) for e in path[plan.first_kept_index :]) if m is not None])
        asks = [i for i, m in enumerate(view) if isinstance(m, AssistantMessage)]
        keep = self.settings.prune_keep_turns
        boundary = asks[-keep] if keep and len(asks) >= keep else len(view) if not keep else 0
        removable = min(size(view[:boundary]), size(view) - size(kept)) - SUMMARY_ALLOWANCE_TOKENS
        return removable >= max(excess, int(self.working_window * PRUNE_MIN_STEP_SHARE))

    def _full(self, tokens: int) -> str:
        fixed, why = self.scaled(self.fixed_tokens()), self.over_threshold_reason or "nothing left to reduce"
        return does_not_fit(tokens, self.window, fixed, self.min_output, why)

    def _last_resort(self, tokens: int) -> bool:
        """Whether to compact although heron switched automatic compaction off itself (a
        compaction saved too little): the request does not fit the window, so without one
        nothing can be sent - every later turn would fail. Not when the user switched it
        off, or turned compaction off in the settings."""
        decisions = self.decisions
        off_by_heron = not decisions.auto_compaction and not decisions.auto_compaction_by_user
        return self.settings.compaction and off_by_heron and tokens + self.min_output > self.window

    def _why_over(self) -> str:
        if not self.settings.compaction:
            return "compaction is turned off"
        if not self.decisions.auto_compaction:
            return f"automatic compaction is off: {self.decisions.auto_compaction_reason}"
        return "the kept recent messages alone exceed the threshold"

    # --- the read tool's question ---------------------------------------------------------------

    def find_read(self, path: str, offset: int | None, limit: int | None) -> ReadInView | None:
        """The earlier read of this range present whole in the view last sent, if any."""
        return self.reads.find(path, offset, limit)

    def record_idle(self, data: dict[str, Any]) -> None:
        self._record({"op": OP_IDLE, **data})  # the idle policy's decision (heron.coding.idle)

    def record_todos(self, todos: list[TodoItem]) -> None:
        """A new task list (the todo tool ran): stored, and carried into later compactions."""
        entry = self.store.append_custom(TODOS_CUSTOM_TYPE, {"todos": todos})
        self.decisions.see(entry)

    def record_flush(self, files: list[str], skipped: str | None = None) -> None:
        self._record(flush_data(files, skipped))

    def compacted(self) -> None:
        """A compaction entry was written: a new epoch (flush, budget marks, background
        summary) starts."""
        self.decisions.compacted()

    def record_background(self, first_kept_entry_id: str) -> PendingSummary:
        """A background summary starts (``heron.context.compaction.background``): its cut, model and
        window, so a process that opens the session restarts the same summary."""
        key, window = self.model_key, self.window
        entry = self._record(background_data(PendingSummary(first_kept_entry_id, key, window)))
        return PendingSummary(first_kept_entry_id, key, window, started_ms=iso_to_ms(entry.timestamp))

    def note_background(self, pending: PendingSummary, result: dict[str, Any] | None = None) -> None:
        """The pending background summary's request went out, or (``result``) its answer is
        kept for a later process: recorded while it is still the pending one."""
        if self.decisions.background == pending:
            self._record(background_sent_data(pending) if result is None else background_result_data(pending, result))

    def end_background(self, ended: str, reason: str) -> None:
        """The pending background summary is given up (``ended``: "failed" or "discarded")."""
        if self.decisions.background is not None:
            self._record(background_end_data(ended, reason))

    def disable_auto_compaction(self, reason: str, *, by_user: bool = False) -> None:
        if self.decisions.auto_compaction:
            self._record(auto_compaction_data(False, reason, by_user=by_user))

    def enable_auto_compaction(self, reason: str, *, by_user: bool = False) -> None:
        if not self.decisions.auto_compaction:
            self._record(auto_compaction_data(True, reason, by_user=by_user))
