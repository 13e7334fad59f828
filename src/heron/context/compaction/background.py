"""Background compaction: the summary of the older history, asked for before it is needed.

A compaction's summary is the longest wait of a long session: the turn stops while the
model reads the whole history. Past a soft mark, heron starts that summary as an asyncio
task beside the turn, and the turn goes on. The mark is ``compaction.backgroundAt`` (0.7)
of what the compaction is decided on (:attr:`~heron.context.pruning.pruning_steps.Pruner.compaction_bar`), compared
with the part of the view only a compaction reduces (:meth:`~heron.context.pruning.pruning_steps.Pruner.unprunable`):
a plain share of the threshold is passed on every climb of a pruning cycle, where the
pruning step then spares the compaction the summary was for. When an automatic
compaction is due, a ready summary is spliced in with no wait; one still running is
waited for (only it: no second summary is started).

What it covers. The cut is chosen when it starts, keeping less recent history than a
compaction at the threshold would (:func:`background_keep`): what the turn adds until the
threshold is reached is kept verbatim too, so the compaction leaves about as much as one
that ran at the threshold. The summary covers the entries before the cut and nothing
after it, so it stays good while those entries are unchanged - and they are, exactly as
long as the summary's start record is on the session's path and no compaction followed
it (the session is a tree: the record's ancestors never change). Moving to another branch
before it, or another compaction, discards it; so does a model or window change (the
request would differ), and a kept part grown past 70% of the threshold (stale: the
compaction would keep too much). Each discard is a ledger record.

When the compaction waits instead (docs/context.md, "Background compaction"). Past the
threshold, while the summary is young (fewer than :data:`YOUNG_REQUESTS` answers since its
start) and the request fits below :meth:`BackgroundSummaries.defer_limit` (the window less
half the reserve), the request is sent as it is and the compaction runs later
(:meth:`BackgroundSummaries.defers`). At a step boundary a summary too weak to write is
renewed with the boundary's cut, and a young one is not waited for
(:meth:`BackgroundSummaries.waits_at_boundary`). Both are read from the session file,
never from whether the summary has arrived, so a resumed process decides the same.

Restart equivalence (docs/context.md, "One view, derived from the session"). Only the
start is written to the session - a ``heron.context`` entry ``op: "background"`` with
the cut, the model and the window - and it never reaches a request; every rule above
reads the records, never whether the summary has arrived.

Each summary request once per session. When its request goes out, that is recorded
(``op: "background_sent"``). A one-shot process waits after its answer for the summary
whose request is out and keeps the answer it did not use (``op: "background_result"``,
:meth:`BackgroundSummaries.finish`); the process that compacts splices it in without a
request. A process that opens the session with a pending record it is not running starts
it again when its request never went out; one sent without a kept answer (the process
was killed, or aborted it) is *held*: sent again only when a compaction waits for it.

The summary request is the one the foreground path sends: both call
:meth:`heron.context.compaction.compactor.Compactor.summarise`. An abort (Esc, rpc ``abort``)
cancels the task; it is asked for again when the compaction needs it. A failed one is recorded
(``ended: "failed"``) and the compaction runs in the foreground; no other starts until
the next compaction is written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from heron.agent.messages import AgentMessage
from heron.ai.abort import AbortSignal
from heron.ai.types import AssistantMessage, ToolResultMessage
from heron.context.compaction.plan import (
    SHRINK_REQUIRED,
    SUMMARY_ALLOWANCE_TOKENS,
    CompactionPlan,
    message_tokens,
    plan_keeping,
    prepare_compaction,
)
from heron.context.records.decisions import PendingSummary
from heron.context.records.ledger import LedgerRecord
from heron.context.window.output_room import OUTPUT_MARGIN_SHARE
from heron.session.entries import MessageEntry

if TYPE_CHECKING:  # the summariser loads with the first summary (none in a short run)
    from heron.context.compaction.summary.summariser import SummaryResult
    from heron.context.policy import ContextPolicy, Settled  # the policy holds this stage, not the reverse

log = logging.getLogger(__name__)

BACKGROUND_ENV = "HERON_BACKGROUND_COMPACTION"  # "0": off whatever the settings say (the test suite)
STALE_THRESHOLD_SHARE = 0.7  # a summary keeping more than this share of the threshold verbatim is stale
MIN_KEEP_SHARE = 0.25  # of the keep-recent budget: the least a background summary keeps
MIN_SUMMARISED_SHARE = 0.1  # of the window: less history than this is not worth a summary ahead
YOUNG_REQUESTS = 4  # a summary started fewer answers ago than this has had no time yet (at a boundary)
DEFER_OUTPUT_SHARE = 0.5  # of the reserve: the output room a request sent past the threshold still keeps

# Asks for the summary of a plan (the compactor's one way to), cancelled through the signal.
SummariseFn = Callable[[CompactionPlan, AbortSignal], Awaitable["SummaryResult"]]


def background_keep(keep_recent: int, bar: int, unprunable: int) -> int:
    """What a summary started now keeps verbatim: the keep-recent budget less the growth
    still to come before the compaction (``unprunable`` up to ``bar``: see
    :attr:`Pruner.compaction_bar`), at least a quarter of the budget - so that the
    compaction keeps about what one asked for then would."""
    return max(int(keep_recent * MIN_KEEP_SHARE), keep_recent - max(0, bar - unprunable))


def answers_since(messages: Sequence[AgentMessage], started_ms: int) -> int:
    """How many answers the session got after ``started_ms`` (a summary's start record)."""
    count = 0
    for message in reversed(messages):
        if message.timestamp <= started_ms:
            break
        count += isinstance(message, AssistantMessage)
    return count


class Running:
    """One background summary: its task, its plan, and how long it took.

    ``on_send``: told when its request goes out. ``held``: its request went out from a
    process that ended without the answer - sent again only when a compaction waits for it.
    ``kept``: the answer a process that ended before the compaction wrote to the session
    (:mod:`heron.context.compaction.background_record`) - no request at all."""

    def __init__(
        self,
        pending: PendingSummary,
        plan: CompactionPlan,
        summarise: SummariseFn,
        store: object,
        *,
        on_send: Callable[[PendingSummary], None] | None = None,
        held: bool = False,
        kept: dict[str, Any] | None = None,
    ) -> None:
        self.pending = pending
        self.plan = plan  # on the path as it is now (``take`` moves it to the current leaf)
        self.store = store  # the session it belongs to
        self.signal = AbortSignal()
        self.started = time.perf_counter()
        self.ended: float | None = None
        self.result: SummaryResult | None = None
        self.error: str | None = None
        self.used = False  # its compaction entry was written
        self.failure_noted = False
        self._waited = 0.0
        self._was_ready = False
        self.held = held
        self.kept = kept is not None
        # Opened when the answer to the request this summary repeats has begun, or when a
        # compaction needs the summary now: see :meth:`BackgroundSummaries.answer_begun`.
        self.gate = asyncio.Event()
        if kept is not None:
            self.gate.set()
        self.task = asyncio.create_task(self._run(summarise, plan, on_send, kept))

    async def _run(
        self,
        summarise: SummariseFn,
        plan: CompactionPlan,
        on_send: Callable[[PendingSummary], None] | None,
        kept: dict[str, Any] | None,
    ) -> None:
        from heron.context.compaction.summary.summariser import SummaryFailed

        try:
            await self.gate.wait()
            self.started = time.perf_counter()  # its own duration, from its request on
            if kept is not None:
                from heron.context.compaction.background_record import result_from

                found = result_from(kept)
                self.result, self.error = (None, found) if isinstance(found, str) else (found, None)
                return
            if on_send is not None and not self.pending.sent:
                on_send(self.pending)
            self.result = await summarise(plan, self.signal)
        except SummaryFailed as exc:
            self.error = str(exc)
        except Exception as exc:  # any failure leaves the foreground path
            log.warning("the background summary failed", exc_info=True)
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.ended = time.perf_counter()

    @property
    def done(self) -> bool:
        return self.task.done()

    @property
    def aborted(self) -> bool:
        return self.signal.aborted or self.task.cancelled()

    @property
    def failed(self) -> bool:
        return self.done and not self.aborted and self.result is None

    def cancel(self) -> None:
        """Stop it (an abort, a discard): its request is aborted, its task cancelled."""
        if not self.task.done():
            self.signal.abort("the background summary was cancelled")
            self.task.cancel()

    async def wait(self) -> SummaryResult | None:
        """Its summary, waiting while it runs; None when it failed or was cancelled."""
        self.gate.set()  # the compaction needs it now: no longer waits for an answer to begin
        start = time.perf_counter()
        self._was_ready = self.task.done() or self.kept  # a kept answer is ready (its task reads it at once)
        if not self.task.done():
            await asyncio.wait({self.task})  # never raises: a cancelled task is only done
        self._waited = time.perf_counter() - start
        return self.result

    def timing(self) -> dict[str, Any]:
        """For the compaction's ledger record: was it ready, how long the turn waited, and
        how long the summary took."""
        took = (self.ended or time.perf_counter()) - self.started
        return {
            "background": "ready" if self._was_ready else "waited",
            "waited_s": round(self._waited, 3),
            "summary_s": round(took, 3),
        }


class BackgroundSummaries:
    """The background summary of one session: started, checked before every request,
    handed to the automatic compaction that uses it."""

    def __init__(
        self, policy: ContextPolicy, summarise: SummariseFn, allowed: Callable[[], bool] = lambda: True
    ) -> None:
        self.policy = policy
        self._summarise = summarise
        self._allowed = allowed  # False while something else decides each compaction's plan (an extension)
        self.running: Running | None = None

    @property
    def enabled(self) -> bool:
        settings = self.policy.settings
        on = settings.background and settings.compaction and self.policy.auto_compaction
        return on and os.environ.get(BACKGROUND_ENV, "") != "0" and self._allowed()

    def sync(self) -> None:
        """Before every request, before any compaction is decided: forget a summary whose
        compaction was written; discard (recorded) one whose history changed; and ask
        again for a recorded one this process is not running (it was started by a process
        that ended, or cancelled by an abort) - so the compaction that follows uses the
        same summary as a process that never stopped."""
        running, policy = self.running, self.policy
        if running is not None:
            if running.used or running.store is not policy.store:  # spent, or another session now
                self.running = None
                if not running.used:
                    running.cancel()
            elif policy.decisions.background != running.pending:
                self._discard(running, "the history it covers changed (another compaction, or another branch)")
            # A failure is recorded when the compaction takes the summary, never here: when a
            # running summary fails depends on the clock, and the deferral and boundary rules
            # read the record, so noting it here would make a process that never stopped
            # decide differently from one per turn (tests/cli/test_frontier_e2e.py).
        pending = policy.decisions.background
        if pending is None or self.running is not None or not self.enabled or policy.decisions.background_failed:
            return
        if (pending.model, pending.window) != (policy.sizes.model_key, policy.sizes.window):
            self._discard(pending, "the model or its window changed")
        else:
            self._launch(pending)

    def answer_begun(self) -> None:
        """The answer to a main request has begun (or the request ended without one): the
        running summary may be sent. It repeats that request's prefix, and a provider's
        cache can serve a request only from one whose answer has begun - sent beside it,
        the summary would pay for the whole prefix (docs/context.md, "Background
        compaction"). The wait is one time-to-first-token, off the turn's path."""
        if self.running is not None and not self.running.held:
            self.running.gate.set()

    async def finish(self, wait: bool) -> None:
        """The process is ending (``heron -p`` after its answer): a summary whose request
        is out is waited for (``wait``; its request has its own bounds, an abort cancels
        it) and, when no compaction used it yet, its answer - or its error - is written to
        the session for the process that compacts
        (:mod:`heron.context.compaction.background_record`): each summary request is sent once
        per session, not once per process. A summary not sent yet is only cancelled (the next
        process sends it)."""
        running, policy = self.running, self.policy
        if running is None or running.used or running.store is not policy.store:
            return
        if wait and running.gate.is_set() and not running.done:
            await asyncio.wait({running.task})
        if running.done and not running.aborted and not running.kept:
            from heron.context.compaction.background_record import result_data

            policy.recorder.note_background(running.pending, result_data(running.result, running.error))
        running.cancel()

    def note_failure(self, running: Running) -> None:
        """A failed summary: recorded (none starts again until the next compaction)."""
        if running.failure_noted:
            return
        running.failure_noted = True
        if self.running is running:
            self.running = None
        self.policy.recorder.end_background("failed", running.error or "unknown error")
        self._ledger(running, "failed", running.error or "unknown error")

    def consider(self, messages: Sequence[AgentMessage], settled: Settled) -> None:
        """After the view of a request is settled (``settled``: the view and its count):
        past the soft mark, discard a stale summary, and start one when none is pending."""
        policy = self.policy
        if not self.enabled or policy.decisions.background_failed:
            return
        load = policy.sizes.load(settled.view, settled.tokens)
        mark = int(policy.pruner.compaction_bar * policy.settings.background_at)
        if load <= mark:
            return
        unprunable = policy.pruner.unprunable(messages, load)
        if unprunable <= mark:
            return  # the pruning step at the threshold would free the room again
        pending = policy.decisions.background
        if pending is not None:
            if not self._stale(pending):
                return
            self._discard(pending, "stale: it would keep too much history verbatim")
        self._start(unprunable)

    def defer_limit(self) -> int:
        """How far past the threshold a request may go while the compaction waits for the
        background summary: the window less half the reserve (the room the threshold keeps
        for the answer; never less than the least output a request needs) and the output
        margin - so the request still has room for a real answer."""
        policy = self.policy
        room = max(
            policy.sizes.min_output, min(policy.sizes.output_limit, int(policy.sizes.reserve * DEFER_OUTPUT_SHARE))
        )
        return policy.sizes.window - room - int(policy.sizes.window * OUTPUT_MARGIN_SHARE)

    def defers(self, messages: Sequence[AgentMessage], load: int) -> bool:
        """Whether the compaction due at the threshold for a view of ``load`` tokens waits:
        a background summary is on its way (its start recorded on the path, still usable),
        it started fewer than :data:`YOUNG_REQUESTS` answers ago, and the request still
        fits below :meth:`defer_limit`. The request is then sent as it is; the compaction
        runs at the first request where one of these no longer holds, with the summary
        that had those requests' time to arrive. The answer depends on the session file
        alone (never on whether the summary has arrived): a process that opens the session
        later defers the same requests."""
        self.sync()
        running, policy = self.running, self.policy
        if running is None or not self.enabled or load > self.defer_limit():
            return False
        pending = running.pending
        if (pending.model, pending.window) != (policy.sizes.model_key, policy.sizes.window) or self._stale(pending):
            return False
        return answers_since(messages, pending.started_ms) < YOUNG_REQUESTS

    @property
    def deferral(self) -> str:
        """Why a deferred request is past the threshold (the invariants ask)."""
        return f"the compaction waits for the background summary until {self.defer_limit():,} tokens"

    def waits_at_boundary(self, messages: Sequence[AgentMessage], estimated_before: int, keep: int) -> bool:
        """At a step boundary where a compaction is wanted (below the threshold), whether it
        waits for a later moment (True: nothing is written now) rather than for a summary:

        - the summary on its way would be too weak to write (:meth:`_weak`: its cut is from
          long before, and the pruning step just taken left little before it): it is given
          up and one with the boundary's own cut (keeping ``keep``) is started instead -
          asking for one now would make the turn wait for all of it;
        - it started fewer than :data:`YOUNG_REQUESTS` requests ago: it has had no time yet.

        The compaction then runs at a later boundary or at the threshold (where
        :meth:`defers` lets it wait further). Decided from the session alone."""
        if not self.enabled or self.policy.decisions.background_failed:
            return False
        self.sync()
        running = self.running
        if running is None:
            return False
        if self._weak(running.pending, estimated_before):
            self._discard(running, "weak at a step boundary: a summary with the boundary's cut is started instead")
            return self._start_keeping(keep)
        return answers_since(messages, running.pending.started_ms) < YOUNG_REQUESTS

    def take(self, signal: AbortSignal | None) -> Running | None:
        """The summary for the automatic compaction due now, its plan moved to the current
        path (cancelled with ``signal``); None when there is none that still fits."""
        self.sync()
        running, policy = self.running, self.policy
        if running is None or not self.enabled:
            return None
        pending = running.pending
        if (pending.model, pending.window) != (policy.sizes.model_key, policy.sizes.window):
            self._discard(running, "the model or its window changed")
            return None
        if self._stale(pending):
            self._discard(running, "stale: it would keep too much history verbatim")
            return None
        store = policy.store
        plan = plan_keeping(store.path_to(store.leaf_id), pending.first_kept_entry_id, policy.tools)
        if plan is None:
            self._discard(running, "its cut is no longer in the history to compact")
            return None
        running.plan = plan
        if signal is not None:
            signal.add_listener(running.cancel)
        return running

    def cancel(self) -> None:
        """An abort: the running summary stops; the next request asks for it again."""
        running, self.running = self.running, None
        if running is not None:
            running.cancel()

    # --- starting and giving up ------------------------------------------------------------

    def _start(self, unprunable: int) -> None:
        settings = self.policy.sizes.plan_settings
        self._start_keeping(background_keep(settings.keep_recent_tokens, self.policy.pruner.compaction_bar, unprunable))

    def _start_keeping(self, keep: int) -> bool:
        """Start the summary of what lies before the last ``keep`` tokens; whether it started."""
        policy, store = self.policy, self.policy.store
        if store.leaf_id is None:
            return False
        settings = dataclasses.replace(policy.sizes.plan_settings, keep_recent_tokens=keep)
        shown = policy.decisions.call_args
        plan = prepare_compaction(store.path_to(store.leaf_id), settings, policy.tools, shown)
        if plan is None or not plan.has_work:
            return False
        summarised = sum(message_tokens(m, shown) for m in (*plan.messages_to_summarize, *plan.turn_prefix_messages))
        if summarised < policy.sizes.window * MIN_SUMMARISED_SHARE:
            return False  # right after a compaction: the summary would save too little to be written
        self._launch(
            policy.recorder.record_background(plan.first_kept_entry_id, policy.sizes.model_key, policy.sizes.window)
        )
        return self.running is not None

    def _launch(self, pending: PendingSummary) -> None:
        store = self.policy.store
        plan = plan_keeping(store.path_to(store.leaf_id), pending.first_kept_entry_id, self.policy.tools)
        if plan is None or not plan.has_work:
            self._discard(pending, "its cut is no longer in the history to compact")
            return
        self.running = Running(
            pending,
            plan,
            self._summarise,
            store,
            on_send=self.policy.recorder.note_background,
            held=pending.sent and pending.result is None,
            kept=pending.result,
        )

    def _stale(self, pending: PendingSummary) -> bool:
        """Whether what the summary leaves verbatim has grown past 70% of the threshold (or
        the keep-recent budget, when that is more)."""
        policy = self.policy
        limit = max(policy.sizes.plan_settings.keep_recent_tokens, int(policy.sizes.threshold * STALE_THRESHOLD_SHARE))
        kept = self._kept(pending)
        return kept is None or kept > limit

    def _weak(self, pending: PendingSummary, estimated_before: int) -> bool:
        """Whether a compaction with this summary would keep so much that it saves less than
        the compactor asks of a background summary (twice the 5% rule): what it leaves
        verbatim, the fixed part and a summary's allowance against ``estimated_before``, the
        view at chars/4 (as those are counted). Read from the session alone (the summary
        may not have arrived): every process decides the same."""
        policy = self.policy
        kept = self._kept(pending)
        if kept is None:
            return True
        after = policy.sizes.fixed_tokens() + kept + SUMMARY_ALLOWANCE_TOKENS
        return after > estimated_before * (1 - 2 * SHRINK_REQUIRED)

    def _kept(self, pending: PendingSummary) -> int | None:
        """What the summary leaves verbatim: its cut to the leaf as the view carries it
        (pruned results as their stubs), at chars/4; None when its cut is not on the path."""
        policy, store = self.policy, self.policy.store
        stubs = policy.decisions.stubs
        total, entry_id = 0, store.leaf_id
        while entry_id is not None:
            entry = store.get(entry_id)
            if isinstance(entry, MessageEntry):
                message = entry.message
                stub = stubs.get(message.tool_call_id) if isinstance(message, ToolResultMessage) else None
                shown = policy.decisions.call_args
                total += math.ceil(len(stub) / 4) if stub is not None else message_tokens(message, shown)
            if entry_id == pending.first_kept_entry_id:
                return total
            entry_id = store.parent_id_of(entry_id)
        return None

    def _discard(self, what: Running | PendingSummary, reason: str) -> None:
        pending = what.pending if isinstance(what, Running) else what
        running = what if isinstance(what, Running) else None
        if self.running is not None and self.running.pending == pending:
            running = self.running
        if running is not None:
            running.cancel()
            if self.running is running:
                self.running = None
        if self.policy.decisions.background == pending:
            self.policy.recorder.end_background("discarded", reason)
        self._ledger(running or pending, "discarded", reason)

    def _ledger(self, what: Running | PendingSummary, outcome: str, reason: str) -> None:
        pending = what.pending if isinstance(what, Running) else what
        detail: dict[str, Any] = {
            "background": outcome,
            "reason": reason,
            "first_kept_entry_id": pending.first_kept_entry_id,
        }
        if isinstance(what, Running):
            detail["summary_s"] = round((what.ended or time.perf_counter()) - what.started, 3)
        self.policy.ledger.add(
            LedgerRecord(kind="compaction", recover="nothing was summarised: the summary was not used", detail=detail)
        )


__all__ = ["BACKGROUND_ENV", "BackgroundSummaries", "Running", "background_keep"]
