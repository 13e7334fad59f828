"""The idle policy's timer and actions (docs/context.md, "The idle policy").

While a session waits for the user (interactive, rpc, ACP), its prompt cache runs out: a
few minutes after the last request the provider forgets the prefix, and the next request
writes the whole context to the cache again. Shortly before that moment heron decides
(:func:`heron.context.compaction.idle.decide`) whether to warm the cache with a minimal request, to
compact, or to let it expire, and does it. The modes only start and cancel the timer
(:meth:`IdleKeeper.start` when a run ended and input is awaited, :meth:`IdleKeeper.cancel`
when a prompt or command starts a run).

Restart equivalence: every decision is a ``heron.context`` entry ``{"op": "idle", ...}``
on the path; the warm-up request and its one-token answer never enter the conversation.
What a warm-up changes for later requests - the cache counts as used at its time, so the
next request is not taken for a cold one (:mod:`heron.context.pruning.cold_cache`) - is read from
that entry, so a resumed process prepares the same request as one that never stopped. A
compaction is written as every compaction is. Whether the timer is due is judged from the
wall clock against the times in the session file, so a process that resumes an idle
session takes up the same idle period (its warm-ups counted).

One keeper per session (:func:`idle_keeper`), kept beside the session object rather than
in it: ``heron.coding.runtime`` is at its size limit, and nothing in the session needs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from heron.agent.loop import assemble_request
from heron.ai.abort import AbortSignal
from heron.ai.types import AssistantMessage, StopReason
from heron.coding.events import IdleEvent
from heron.context.compaction.idle import WARM_OUTPUT_TOKENS, IdleDecision, decide, lead_seconds
from heron.context.records.decisions import DECISION_CUSTOM_TYPE, OP_IDLE
from heron.session.entries import CustomEntry

if TYPE_CHECKING:
    from heron.agent.agent import Agent
    from heron.ai.types import Model
    from heron.coding.context_owner import ContextOwner
    from heron.coding.events import SessionEvent
    from heron.coding.requests import RequestPath
    from heron.coding.settings import Settings
    from heron.context.policy import ContextPolicy
    from heron.session.store import SessionStore

POLL_S = 5.0  # the timer re-reads the wall clock at least this often (a suspended machine, a shifted clock)


@dataclass(frozen=True, slots=True)
class IdlePeriod:
    """The idle period on the session's path: the latest answer, and the idle records after it."""

    answered_ms: int
    warms: int  # warm-ups tried (a failed one included: it is not tried again and again)
    ended: bool  # the cache was left to expire, or compacted: nothing more to do until the next turn


class IdleHost(Protocol):
    """What the idle keeper uses of its session: the setting, the store and messages its idle
    period is read from, the policy that decides and records, the model whose prices weigh
    a warm-up against a cold request, the request path a warm-up takes, the context owner
    a compaction runs through, and the session's events."""

    @property
    def settings(self) -> Settings: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def policy(self) -> ContextPolicy: ...

    @property
    def model(self) -> Model: ...

    @property
    def requests(self) -> RequestPath: ...

    @property
    def context_owner(self) -> ContextOwner: ...

    def emit(self, event: SessionEvent) -> None: ...


class IdleKeeper:
    """The idle timer of one session and what it does when due."""

    def __init__(self, session: IdleHost) -> None:
        self.session = session
        self._task: asyncio.Task[None] | None = None
        self._signal = AbortSignal()
        self._acting = False

    # --- the timer (the modes start and cancel it) ------------------------------------------

    def start(self) -> None:
        """Wait, in the running event loop, for the moment before the cache expires; a
        second start replaces the first. Nothing starts with ``idle.policy: off``."""
        self.cancel()
        if self.session.settings.idle_policy == "off":
            return
        self._signal = AbortSignal()
        self._task = asyncio.get_running_loop().create_task(self._run(self._signal))

    def cancel(self) -> None:
        """Stop waiting (the user is back). An action under way is aborted: its request
        ends, and an aborted warm-up is not recorded."""
        self._signal.abort()
        if self._task is not None and not self._acting:
            self._task.cancel()

    async def stop(self) -> None:
        """:meth:`cancel`, then wait until an action under way has ended (its request
        aborted): a run must not start beside a warm-up or an idle compaction."""
        self.cancel()
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def wait_done(self) -> None:
        """Until the timer has nothing more to do (tests)."""
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self, signal: AbortSignal) -> None:
        while not signal.aborted:
            wait = self.due_in()
            if wait is None:
                return
            if wait > 0:
                await asyncio.sleep(min(wait, POLL_S))
                continue
            self._acting = True
            try:
                await self.step(signal)
            finally:
                self._acting = False

    # --- when -------------------------------------------------------------------------------

    def period(self) -> IdlePeriod | None:
        """The idle period the session is in, from the session file; None when the session
        is not waiting after an answer (no answer yet, a prompt unanswered, a failed one)."""
        messages = self.session.agent.state.messages
        last = messages[-1] if messages else None
        if not isinstance(last, AssistantMessage) or last.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
            return None
        store = self.session.store
        ids, types = store.lineage(store.leaf_id)
        warms, ended = 0, False
        for entry_id, kind in zip(reversed(ids), reversed(types), strict=True):
            if kind == "message":
                break
            entry = store.get(entry_id) if kind == "custom" else None
            if isinstance(entry, CustomEntry) and entry.custom_type == DECISION_CUSTOM_TYPE:
                data = entry.data if isinstance(entry.data, dict) else {}
                if data.get("op") == OP_IDLE:
                    warms += data.get("action") == "warm"
                    ended = ended or data.get("action") in ("expire", "compact")
        return IdlePeriod(last.timestamp, warms, ended)

    def due_in(self, now_ms: int | None = None) -> float | None:
        """Seconds until the next decision is due (0: now); None when there is none to take
        in this idle period: nothing cached to keep, the period ended, the cache already
        expired, or a run is under way."""
        session = self.session
        ttl = session.policy.sizes.cache_ttl_s
        period = self.period()
        if ttl <= 0 or period is None or period.ended or session.agent.is_running:
            return None
        last_use = max(period.answered_ms, session.policy.decisions.warmed_ms)
        now = int(time.time() * 1000) if now_ms is None else now_ms
        expires = last_use + ttl * 1000
        if now >= expires:
            return None  # too late: it expired while nobody watched (a process that was not running)
        return max(0.0, (expires - lead_seconds(ttl) * 1000 - now) / 1000)

    # --- what -------------------------------------------------------------------------------

    async def step(self, signal: AbortSignal | None = None) -> IdleDecision | None:
        """Decide and act, when a decision is due; the decision taken, or None."""
        session = self.session
        period = self.period()
        if period is None or self.due_in() != 0:
            return None
        from heron.context.view.sent_view import view_as_sent  # with the first idle step only

        policy, setting = session.policy, session.settings.idle_policy
        if setting == "off":
            return None
        view, stubs = view_as_sent(policy, session.agent.state.messages)
        prefix = list(view)
        while prefix and isinstance(prefix[-1], AssistantMessage):
            prefix.pop()  # the last request ended where its answer began
        tokens = policy.sizes.count(view)
        kept = policy.sizes.compaction_settings.keep_recent_tokens
        cold = policy.pruner.cold_request_tokens(session.agent.state.messages)  # what expiring leads to
        decision = decide(
            setting, session.model.cost, context_tokens=tokens, kept_tokens=kept, cold_tokens=cold, warms=period.warms
        )
        signal = signal or AbortSignal()
        detail: dict[str, Any] = {"ttlSeconds": policy.sizes.cache_ttl_s, "contextTokens": tokens, "coldTokens": cold}
        if decision.action == "warm":
            failed = await self._warm(prefix, stubs, signal)
            if signal.aborted:
                return None  # the user came back first: nothing happened worth recording
            if failed:
                detail["failed"] = failed
        self._record(decision, detail)
        if decision.action == "compact":  # abortable: the user coming back ends its summary request
            await session.context_owner.compact(None, "idle", signal=signal)
        return decision

    async def _warm(self, prefix: list[Any], stubs: dict[str, str], signal: AbortSignal) -> str | None:
        """Send the last request's prefix again for one token: the provider refreshes its
        cache of it. The error text when it failed, else None."""
        session = self.session
        agent = session.agent
        state = agent.state
        context = await assemble_request(state.system_prompt, prefix, state.tools, agent.convert_to_llm)
        options = session.requests.side_options(WARM_OUTPUT_TOKENS, signal)
        options.thinking = state.thinking_level  # the cache keeps messages only under the same thinking
        try:
            reply = await session.requests.side_stream("warm", stubs)(state.model, context, options).result()
        except Exception as exc:  # noqa: BLE001 - a broken rule (strict mode), a transport error: recorded as failed
            return str(exc) or type(exc).__name__
        if reply.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
            return reply.error_message or reply.stop_reason.value
        return None

    def _record(self, decision: IdleDecision, detail: dict[str, Any]) -> None:
        self.session.policy.recorder.record_idle({**decision.to_data(), **detail})
        self.session.emit(
            IdleEvent(
                action=decision.action,
                reason=decision.reason,
                costs=decision.costs.to_data() if decision.costs is not None else None,
                failed=detail.get("failed"),
            )
        )


_KEEPERS: weakref.WeakKeyDictionary[IdleHost, IdleKeeper] = weakref.WeakKeyDictionary()


def idle_keeper(session: IdleHost) -> IdleKeeper:
    """The idle timer of ``session``: the one place the modes start and stop it."""
    keeper = _KEEPERS.get(session)
    if keeper is None:
        keeper = _KEEPERS[session] = IdleKeeper(session)
    return keeper
