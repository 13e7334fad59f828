"""The one owner of a session's context decisions: when to prune or compact, and running
the compaction.

Before every request the agent asks :meth:`ContextOwner.prepare` for the view. It asks
the policy to count and prune (:meth:`ContextPolicy.pressure`), runs the compaction the
policy says is due - giving the model its silent memory flush once that compaction is
certain to be written, just before it is, so there is one flush for each automatic
compaction and none when a pruning step frees the room - and lets the policy finish the
view (:meth:`ContextPolicy.settle`). Manual ``/compact``, the compaction after an
overflow and the summary of a branch being left come here too. Nothing calls back up:
the policy decides, this object acts, and ``CodingSession`` only delegates. The owner
sees of its session only what it uses (:class:`OwnedSession`).

Summary and flush requests go through the session's request path
(:class:`heron.coding.requests.RequestPath`): typed options with the configured timeouts
and retries, the context rules checked, traced - a summary request that never answers
ends the compaction with an error within ``timeouts.*``, and the session goes on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from heron.agent.messages import AgentMessage
from heron.ai.abort import AbortSignal
from heron.ai.prompt_cache import caches_prompts
from heron.ai.types import Model, ThinkingLevel, UserMessage
from heron.coding.events import (
    CompactionEndEvent,
    CompactionReason,
    CompactionStartEvent,
    ContextWarningEvent,
    SessionEvent,
)
from heron.coding.model_limits import serves_beside
from heron.context.compaction.background import BackgroundSummaries
from heron.context.compaction.boundaries import compaction_request
from heron.context.compaction.native import entry_of, kept_from
from heron.context.compaction.plan import CompactionChoice, CompactionPlan, entry_message, replan_at
from heron.context.engine import RequestPlan, plan_of, recorded_since, shared_prefix
from heron.context.policy import ContextPolicy, Pressure, Settled

if TYPE_CHECKING:
    # The compactor, the summariser and the rules' checks load with the first compaction
    # or summary: a run that never compacts (every ``-p`` run below the soft mark) does
    # not import them (tests/cli/test_print_import_set.py).
    from pathlib import Path

    from heron.agent.agent import Agent
    from heron.agent.tools import AgentTool
    from heron.coding.control import Control
    from heron.coding.extensions import ExtensionHost
    from heron.coding.memory import MemoryKeeper
    from heron.coding.requests import RequestPath
    from heron.coding.settings import Settings
    from heron.context.compaction.compactor import CompactionOutcome, Compactor
    from heron.context.compaction.summary.shared_summary import SharedPrefix
    from heron.context.compaction.summary.summariser import SummaryResult
    from heron.context.records.ledger import Ledger
    from heron.session.store import SessionStore

BACKGROUND_REASONS = (
    "threshold",
    "boundary",
    "overflow",
    "idle",
)  # the automatic compactions a background summary serves
BOUNDARY_KEEP_SHARE = 0.5  # of keep_recent_tokens, kept by a compaction at a step boundary
NATIVE_SWITCH = "heron:native-switch"  # recorded as the compaction's chooser
BRANCH_SUMMARY_TOKENS = 20_000  # at most this much of a branch (a quarter of the window at most)


class OwnedSession(Protocol):
    """What the context owner uses of its session: the policy that decides, the store and
    agent whose path and messages a compaction reads and replaces, the model and request
    path its summaries go by, the control its hooks and compaction requests come from, the
    extensions that may choose the cut, the memory (and what its flush is given: the ledger,
    tools, thinking level), the settings (a shared summary request), the tool limits that
    follow the window, the request count before a compaction, and the session's events."""

    @property
    def policy(self) -> ContextPolicy: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def cwd(self) -> Path: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def model(self) -> Model: ...

    @property
    def thinking_level(self) -> ThinkingLevel: ...

    @property
    def tools(self) -> list[AgentTool[Any]]: ...

    @property
    def ledger(self) -> Ledger: ...

    @property
    def requests(self) -> RequestPath: ...

    @property
    def control(self) -> Control: ...

    @property
    def extensions(self) -> ExtensionHost: ...

    @property
    def memory(self) -> MemoryKeeper: ...

    def estimate_request_tokens(self, messages: Sequence[AgentMessage]) -> int: ...

    def fit_tool_limits(self) -> None: ...

    def emit(self, event: SessionEvent) -> None: ...


class ContextOwner:
    """Pruning, compaction and the memory flush of one session."""

    def __init__(self, session: OwnedSession) -> None:
        self.session = session
        self._compactor: Compactor | None = None
        self.background = BackgroundSummaries(
            session.policy,
            self._background_summary,
            allowed=lambda: not session.extensions.shapes_compaction and serves_beside(session.model),
        )
        self._handled: set[str] = set()  # the compact calls acted on
        self._turn_compacted: UserMessage | None = None  # the prompt of the turn that compacted last

    @property
    def compactor(self) -> Compactor:
        """The session's compactor, made (and its module loaded) when first needed."""
        if self._compactor is None:
            from heron.context.compaction.compactor import Compactor

            self._compactor = Compactor(self.session.policy, cwd=self.session.cwd)
        return self._compactor

    async def prepare(
        self, messages: list[AgentMessage], signal: AbortSignal, turn_prompt: UserMessage | None = None
    ) -> RequestPlan:
        """The plan of the next request (pruned, compacted when due, within the window):
        its view and numbers, the compaction run for it and the decisions recorded while
        preparing it. ``turn_prompt``: the prompt of the running turn (None: none), carried
        in the plan and kept by a compaction."""
        session, policy = self.session, self.session.policy
        start = session.store.leaf_id
        if policy.windows.expire_learned_window(messages) is not None:
            self._follow_window()
        switched = await self._native_switch(messages, signal, turn_prompt)
        if switched is not None:
            messages = list(session.agent.state.messages)
        settled, outcome = await self._settle(messages, signal, turn_prompt)
        decisions = recorded_since(session.store, start)
        return plan_of(policy, settled, outcome or switched, decisions, turn_prompt)

    async def _settle(
        self, messages: list[AgentMessage], signal: AbortSignal, turn_prompt: UserMessage | None
    ) -> tuple[Settled, CompactionOutcome | None]:
        """:meth:`prepare`'s decisions: the settled view, with the outcome of the compaction
        run for it when one ran."""
        policy = self.session.policy
        self.background.sync()
        pressure = policy.pressure(messages, signal)
        reason: CompactionReason = "threshold"
        if (
            pressure.compact
            and not pressure.early
            and self.background.defers(messages, policy.sizes.load(pressure.view, pressure.tokens))
        ):
            settled = policy.settle(messages, pressure)  # past the threshold, within the limit: sent as it is
            if settled.over_threshold is not None:
                settled = dataclasses.replace(settled, over_threshold=self.background.deferral)
            return settled, None
        if pressure.compact:
            end, outcome = await self._compact(None, reason, early=pressure.early, signal=signal, turn=turn_prompt)
        else:
            wanted = self._wanted(messages, pressure, signal, turn_prompt)
            if wanted is None:
                settled = policy.settle(messages, pressure)
                self.background.consider(messages, settled)
                return settled, None
            reason, focus = wanted
            if reason == "boundary" and self.background.waits_at_boundary(
                messages, policy.sizes.raw_estimate(policy.view(messages)), self._boundary_keep()
            ):
                return policy.settle(messages, pressure, messages), None  # with the pruning step the boundary took
            end, outcome = await self._compact(focus, reason, early=True, signal=signal, turn=turn_prompt)
        rebuilt = list(self.session.agent.state.messages) if end.entry_id is not None else None
        if rebuilt is None and reason == "boundary":
            rebuilt = messages  # not written: the view again, with the pruning step the boundary took
        settled = policy.settle(messages, pressure, rebuilt, end.error)
        if not signal.aborted:
            self.background.sync()
            self.background.consider(rebuilt if rebuilt is not None else messages, settled)
        return settled, outcome

    def _background_summary(self, plan: CompactionPlan, signal: AbortSignal) -> Awaitable[SummaryResult]:
        """A background summary: the compactor's own request (sharing the cached prefix
        where the foreground one would), on the session's request path."""
        session = self.session
        ask = session.requests.summary_ask("summary", signal)
        pending = session.policy.decisions.background
        shared = self.shared_prefix(signal, None if pending is None else pending.started_ms)
        return self.compactor.summarise(plan, ask, model=session.model, shared=shared)

    def cancel_background(self) -> None:
        """An abort (Esc, rpc ``abort``): the background summary stops cleanly."""
        self.background.cancel()

    async def finish_background(self, wait: bool = True) -> None:
        """Before the process ends: the background summary whose request is out is waited
        for (``wait``: a one-shot process) and its answer kept in the session, so no later
        process asks for it again (``heron.context.compaction.background``; the session's ``abort``
        ends the wait)."""
        await self.background.finish(wait=wait)
        await self.session.control.memory_watch.finish()  # memory.reflect: end (docs/memory.md)

    async def _native_switch(
        self, messages: list[AgentMessage], signal: AbortSignal, turn_prompt: UserMessage | None
    ) -> CompactionOutcome | None:
        """Heron's own summary of what a provider-native compaction covered, the first time
        a request goes to a model that cannot read that block (docs/context.md): a
        compaction kept from the reply that carries the block. Its outcome when one was written."""
        session = self.session
        message = session.policy.uncovered_native(messages)
        if message is None or not session.policy.settings.compaction:
            return None
        store = session.store
        entry_id = entry_of(store, store.leaf_id, message)
        if entry_id is None or kept_from(store, store.leaf_id, entry_id):
            return None
        end, outcome = await self._compact(None, "native_switch", signal=signal, keep_from=entry_id, turn=turn_prompt)
        return outcome if end.entry_id is not None else None

    def forget_learned_window(self, reason: str) -> int | None:
        """``/context reset-window`` and rpc ``reset_window``: plan with the configured window
        again (recorded); the dropped window, or None when none was learned."""
        dropped = self.session.policy.windows.forget_window(reason)
        if dropped is not None:
            self._follow_window()
        return dropped

    def _follow_window(self) -> None:
        """Tool output limits follow the window heron plans for."""
        self.session.fit_tool_limits()

    def _wanted(
        self, messages: list[AgentMessage], pressure: Pressure, signal: AbortSignal, turn_prompt: UserMessage | None
    ) -> tuple[CompactionReason, str | None] | None:
        """A compaction below the threshold: asked for (the model's ``compact`` call, a
        hook), or at a step boundary past the soft threshold. At most one compaction a
        turn; each is held to the 5% rule (``early``)."""
        policy = self.session.policy
        asked = self.session.control.take_compact_request()
        if signal.aborted or not policy.settings.compaction or self._compacted_this_turn(turn_prompt):
            return None
        request = compaction_request(messages, policy.tools)
        if request is not None and request.call_id not in self._handled:
            self._handled.add(request.call_id)
            return "requested", request.focus
        if asked is not None:
            return "requested", asked[0]
        return ("boundary", None) if policy.soft_due(messages, pressure) else None

    def _boundary_keep(self) -> int:
        """What a compaction at a step boundary keeps: the step just finished needs no verbatim copy."""
        return int(self.session.policy.sizes.compaction_settings.keep_recent_tokens * BOUNDARY_KEEP_SHARE)

    def _compacted_this_turn(self, prompt: UserMessage | None) -> bool:
        return prompt is not None and self._turn_compacted is prompt

    async def compact(
        self,
        focus: str | None = None,
        reason: CompactionReason = "manual",
        *,
        early: bool = False,
        signal: AbortSignal | None = None,
        keep_from: str | None = None,
        turn_prompt: UserMessage | None = None,
    ) -> CompactionEndEvent:
        """Summarise old history into a compaction entry and rebuild the context from the
        session. The end event says what happened (``entry_id`` set when one was written,
        ``skipped`` or ``error`` otherwise). ``keep_from``: the entry the kept part starts
        at (a native block's reply), instead of the keep-recent budget's cut;
        ``turn_prompt``: the prompt of the running turn (None: none), kept verbatim."""
        end, _ = await self._compact(focus, reason, early=early, signal=signal, keep_from=keep_from, turn=turn_prompt)
        return end

    async def _compact(
        self,
        focus: str | None,
        reason: CompactionReason,
        *,
        early: bool = False,
        signal: AbortSignal | None = None,
        keep_from: str | None = None,
        turn: UserMessage | None = None,
    ) -> tuple[CompactionEndEvent, CompactionOutcome]:
        """:meth:`compact`, with the compactor's outcome (for the request plan)."""
        session = self.session
        await session.control.pre_compact(reason)
        before = session.estimate_request_tokens(session.agent.state.messages)
        automatic = reason not in ("manual", "native_switch")  # a native switch summarises what was compacted
        flush = self._flush if automatic and self._flush_wanted(before) else None
        keep = None
        if reason == "boundary":
            keep = self._boundary_keep()
        choose = self._keeping(keep_from) if keep_from is not None else None
        if keep_from is not None:
            keep = 0  # any plan with work; ``choose`` moves its cut to ``keep_from``
        session.emit(CompactionStartEvent(reason=reason, tokens_before=before))
        ready = self.background.take(signal) if reason in BACKGROUND_REASONS and focus is None else None
        outcome = await self.compactor.run(
            session.agent.state.messages,
            ask=session.requests.summary_ask("summary", signal),
            model=session.model,
            reason=reason,
            focus=focus,
            turn_prompt=turn,
            early=early,
            before_write=flush,
            keep_recent_tokens=keep,
            choose=choose or (lambda plan: session.extensions.before_compact(plan, reason, focus, signal)),
            shared=lambda: self.shared_prefix(signal),  # only when a summary is asked for now
            ready=ready,
        )
        if ready is not None and ready.failed:
            self.background.note_failure(ready)
        aborted = signal is not None and signal.aborted
        if outcome.error and reason != "manual" and not aborted:  # a manual one answers with the error
            message = f"the automatic compaction failed: {outcome.error}; the session goes on without it"
            session.emit(ContextWarningEvent(kind="compaction_failed", message=message))
        if outcome.auto_disabled:
            message = f"automatic compaction is off: {outcome.auto_disabled}"
            session.emit(ContextWarningEvent(kind="auto_compaction_off", message=message))
        if outcome.messages is not None:
            session.agent.state.messages[:] = outcome.messages
            if session.requests.check_mode != "off":
                from heron.context.rules.invariants import check_compaction

                session.requests.report(check_compaction(outcome.estimated_before, outcome.tokens_after))
            if reason == "manual":
                session.policy.recorder.enable_auto_compaction("a manual compaction succeeded")
            elif outcome.auto_disabled is None and not session.policy.decisions.auto_compaction_by_user:
                # one that ran although heron had switched it off (the request did not fit), and saved enough
                session.policy.recorder.enable_auto_compaction("a compaction saved enough again")
        end = _end_event(reason, before, outcome)
        if end.entry_id is not None:
            self._turn_compacted = turn
        session.emit(end)
        return end, outcome

    def shared_prefix(self, signal: AbortSignal | None = None, before_ms: int | None = None) -> SharedPrefix | None:
        """What a summary request sharing the conversation's cached prefix needs, or None
        when the summary gets a request of its own: ``compaction.request`` is "separate",
        or the model's server keeps no prompt cache (:func:`heron.ai.prompt_cache.caches_prompts`).
        ``before_ms``: the prefix as sent at that moment (a background summary's start)."""
        session = self.session
        if session.settings.compaction.request != "shared" or not caches_prompts(session.model):
            return None

        messages = session.agent.state.messages
        return shared_prefix(
            session.policy, messages, lambda stubs: session.requests.shared_summary_ask(stubs, signal), before_ms
        )

    def _keeping(self, entry_id: str) -> Callable[[CompactionPlan], Awaitable[CompactionChoice | None]]:
        tools = self.session.policy.tools

        async def choose(plan: CompactionPlan) -> CompactionChoice | None:
            try:
                return CompactionChoice(source=NATIVE_SWITCH, plan=replan_at(plan, entry_id, tools))
            except ValueError as exc:
                return CompactionChoice(source=f"{NATIVE_SWITCH} ({exc})", cancel=True)

        return choose

    def _flush_wanted(self, tokens: int) -> bool:
        """Only when a compaction will summarise something: more history than it keeps."""
        policy = self.session.policy
        history = tokens - policy.sizes.fixed_tokens()
        if history <= policy.sizes.compaction_settings.keep_recent_tokens:
            return False
        return self.session.memory.flush_wanted(policy.decisions.flushed)

    async def _flush(self) -> None:
        session = self.session
        await session.memory.flush(
            session.policy,
            session.ledger,
            model=session.model,
            tools=session.tools,
            system_prompt=session.agent.state.system_prompt,
            messages=session.agent.state.messages,
            send=session.requests.side_stream("flush"),
            options=session.requests.side_options,
            thinking=session.thinking_level,
        )
        session.fit_tool_limits()

    async def branch_summary(self, entry_id: str | None) -> str | None:
        """The summary of the branch being left for ``entry_id`` (from the leaf back to the
        common ancestor), or None when there is nothing to summarise. Raises
        :class:`~heron.context.compaction.summary.summariser.SummaryFailed` when the request
        fails: nothing moves then."""
        from heron.context.compaction.summary.summariser import summarise_branch

        session = self.session
        store, old_leaf = session.store, session.store.leaf_id
        if old_leaf is None or old_leaf == entry_id:
            return None
        target_path = set(store.path_ids(entry_id)) if entry_id is not None else set()
        abandoned = [e for e in store.path_to(old_leaf) if e.id not in target_path]
        messages = [m for m in (entry_message(e) for e in abandoned) if m is not None]
        if not messages:
            return None
        budget = min(BRANCH_SUMMARY_TOKENS, session.policy.sizes.window // 4)
        ask = session.requests.summary_ask("branch_summary")
        return await summarise_branch(messages, ask, model=session.model, budget_tokens=budget) or None


def _end_event(reason: CompactionReason, before: int, outcome: CompactionOutcome) -> CompactionEndEvent:
    return CompactionEndEvent(
        reason=reason,
        tokens_before=before,
        tokens_after=outcome.tokens_after,
        entry_id=outcome.entry_id,
        summary=outcome.summary,
        skipped=outcome.skipped,
        error=outcome.error,
        auto_disabled=outcome.auto_disabled,
    )


__all__ = ["ContextOwner", "OwnedSession"]
