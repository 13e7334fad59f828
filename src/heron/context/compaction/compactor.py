"""Running a compaction: plan, summarise, size the result, then (only then) write it.

The history stays exactly as it is until the compaction entry is written. Before writing,
the new view is assembled and counted - summary, re-injected files, the running turn's
prompt when the cut splits that turn, the kept messages with their recorded pruning - so
that:

- a compaction never leaves the context larger than it found it: the re-injected block
  gets only the room the summary left (or is skipped), and a result that would still not
  be smaller is not written at all;
- a compaction that saves less than 5% is written but switches automatic compaction off
  for the session (recorded, so a resumed process keeps it off) instead of compacting
  again on every request.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heron.agent.messages import AgentMessage, CompactionSummaryMessage
from heron.ai.types import Model, UserMessage
from heron.context.compaction.background import Running
from heron.context.compaction.plan import (
    SHRINK_REQUIRED,
    CompactionChoice,
    CompactionPlan,
    entry_message,
    prepare_compaction,
)
from heron.context.compaction.reinject import REINJECT_TOKENS, REINJECT_WINDOW_SHARE, candidates, reinjected_text
from heron.context.compaction.summary.shared_summary import SharedPrefix
from heron.context.compaction.summary.summariser import SummaryAsk, SummaryFailed, SummaryResult, summarise, supplied
from heron.context.continuity.children import children_on_path
from heron.context.continuity.frontier import compaction_frontier
from heron.context.records.ledger import LedgerRecord
from heron.context.records.ordering import strictly_ordered
from heron.context.view.build import (
    DETAIL_CHILDREN,
    DETAIL_KEPT_PROMPT,
    DETAIL_REINJECTED,
    DETAIL_TODOS,
    injected_messages,
    session_messages,
)
from heron.context.window.budget import estimate_message_tokens
from heron.session.entries import MessageEntry

if TYPE_CHECKING:
    from heron.context.policy import ContextPolicy  # the policy holds this stage, not the reverse

DETAIL_CHOSEN_BY = "heronChosenBy"  # who shaped a compaction (an extension), in its entry's details


@dataclass(slots=True)
class CompactionOutcome:
    tokens_before: int
    tokens_after: int = 0
    entry_id: str | None = None
    summary: str | None = None
    skipped: str | None = None  # why nothing was written
    error: str | None = None
    auto_disabled: str | None = None  # automatic compaction switched off, and why
    messages: list[AgentMessage] | None = None  # the rebuilt conversation, when written
    estimated_before: int = 0  # the size before, estimated like tokens_after (no usage anchor)


@dataclass(frozen=True, slots=True)
class _Draft:
    """The compaction entry's details and the new view's estimated size, before writing."""

    details: dict[str, Any]
    tokens_after: int
    reinjected: bool
    kept_prompt: str | None


class Compactor:
    """Compactions of one session, through its policy (for counting and decisions)."""

    def __init__(self, policy: ContextPolicy, *, cwd: Path) -> None:
        self.policy = policy
        self.cwd = cwd

    async def run(
        self,
        messages: list[AgentMessage],
        *,
        ask: SummaryAsk,
        model: Model,
        reason: str,
        focus: str | None = None,
        turn_prompt: UserMessage | None = None,
        early: bool = False,
        before_write: Callable[[], Awaitable[None]] | None = None,
        keep_recent_tokens: int | None = None,
        choose: Callable[[CompactionPlan], Awaitable[CompactionChoice | None]] | None = None,
        shared: Callable[[], SharedPrefix | None] | None = None,
        ready: Running | None = None,
    ) -> CompactionOutcome:
        """Summarise through ``ask`` (the session's request path) and write the entry,
        unless the result would not shrink the context. ``early``: asked for below the
        threshold (after a shallow pruning step), where a small saving is not written.
        ``before_write`` runs once the entry is certain to be written, just before it is
        (the memory flush: exactly one for each compaction that happens, none otherwise).
        ``keep_recent_tokens``: less recent history kept than the settings say (a
        compaction at a step boundary: the step just finished needs no verbatim copy).
        ``choose``: asked with the plan before anything is summarised (an extension may
        cancel, supply the summary, or keep another range). ``shared``: the prefix a summary
        request repeats (cut looked for in its views, then the current one), called only
        when one is asked for now: a ready background summary skips the view as sent.
        ``ready``: the background summary to splice in, waited for while it runs."""
        policy = self.policy
        current = policy.view(messages)
        before = policy.sizes.count(current)
        estimated_before = policy.sizes.estimate(current)
        plan = ready.plan if ready is not None else self._plan(keep_recent_tokens)
        if plan is None:
            return CompactionOutcome(tokens_before=before, skipped="nothing to compact")
        choice = await choose(plan) if choose is not None else None
        if choice is not None and choice.cancel:
            return CompactionOutcome(tokens_before=before, skipped=f"cancelled by {choice.source}")
        if choice is not None and choice.plan is not None:
            plan = choice.plan
        timing: dict[str, Any] = {}
        try:
            if choice is not None and choice.summary is not None:
                result = supplied(plan, choice.summary, policy.sizes.window)
            else:
                mine = ready if choice is None else None  # an extension chose: not the background summary
                now = _with_view(shared, current)
                plan, result, timing = await self._summary(plan, ask, model, focus, mine, keep_recent_tokens, now)
        except SummaryFailed as exc:
            return CompactionOutcome(tokens_before=before, error=str(exc))
        if choice is not None:
            result.details[DETAIL_CHOSEN_BY] = choice.source
        draft = self._draft(plan, result, turn_prompt, before, estimated_before, early)
        if timing.get("background") in ("ready", "waited") and draft.tokens_after > estimated_before * (
            1 - 2 * SHRINK_REQUIRED
        ):
            # It would keep too much of what came after it to be worth writing (or to keep
            # automatic compaction on): the summary a compaction asks for now, instead.
            fallback = self._plan(keep_recent_tokens)
            if fallback is not None:
                try:
                    plan, result, fresh = await self._summary(
                        fallback, ask, model, focus, None, keep_recent_tokens, now
                    )
                except SummaryFailed as exc:
                    return CompactionOutcome(tokens_before=before, error=str(exc))
                timing = {**fresh, "background": "kept_too_much", "waited_s": fresh["waited_s"] + timing["waited_s"]}
                draft = self._draft(plan, result, turn_prompt, before, estimated_before, early)
        for record in result.records:
            policy.ledger.add(record)
        refused = self._refused(draft, before, estimated_before, early)
        if refused is not None:
            return refused
        if before_write is not None:
            await before_write()
        outcome = self._write(plan, result, draft, reason, before, estimated_before, timing)
        if ready is not None:  # spent: spliced in, or replaced by a fresh one (its ledger record says which)
            ready.used = True
        return outcome

    async def summarise(
        self,
        plan: CompactionPlan,
        ask: SummaryAsk,
        *,
        model: Model,
        focus: str | None = None,
        shared: SharedPrefix | None = None,
    ) -> SummaryResult:
        """The summary of ``plan``: the one place a compaction asks for it, in the foreground
        and in the background alike (:mod:`heron.context.compaction.background`); ``shared``:
        the request repeats the conversation's cached prefix
        (:mod:`heron.context.compaction.summary.shared_summary`)."""
        return await summarise(
            plan,
            ask,
            model=model,
            reserve_tokens=self.policy.sizes.compaction_settings.reserve_tokens,
            focus=focus,
            window=self.policy.sizes.window,
            shared=shared,
        )

    async def _summary(
        self,
        plan: CompactionPlan,
        ask: SummaryAsk,
        model: Model,
        focus: str | None,
        ready: Running | None,
        keep_recent_tokens: int | None,
        shared: Callable[[], SharedPrefix | None] | None = None,
    ) -> tuple[CompactionPlan, SummaryResult, dict[str, Any]]:
        """The plan and summary the compaction writes, and how long the turn waited for it:
        the background summary's when there is one (waiting only for it while it runs),
        else - or when it failed - one asked for now."""
        if ready is not None:
            result = await ready.wait()
            if result is not None:
                return plan, result, ready.timing()
            if ready.aborted:
                raise SummaryFailed("the compaction was aborted")
            fallback = self._plan(keep_recent_tokens)  # it failed: the foreground path
            if fallback is None:
                raise SummaryFailed(f"the background summary failed: {ready.error}")
            plan = fallback
        start = time.perf_counter()
        prefix = shared() if shared is not None else None
        result = await self.summarise(plan, ask, model=model, focus=focus, shared=prefix)
        took = round(time.perf_counter() - start, 3)
        mode = "failed" if ready is not None else "none"
        return plan, result, {"background": mode, "waited_s": took, "summary_s": took}

    def _plan(self, keep_recent_tokens: int | None = None) -> CompactionPlan | None:
        store = self.policy.store
        if store.leaf_id is None:
            return None
        settings = self.policy.sizes.plan_settings
        if keep_recent_tokens is not None:
            keep = min(settings.keep_recent_tokens, keep_recent_tokens)
            settings = dataclasses.replace(settings, keep_recent_tokens=keep)
        plan = prepare_compaction(
            store.path_to(store.leaf_id), settings, self.policy.tools, self.policy.decisions.call_args
        )
        return plan if plan is not None and plan.has_work else None

    def _draft(
        self,
        plan: CompactionPlan,
        result: SummaryResult,
        turn_prompt: UserMessage | None,
        before: int,
        estimated_before: int,
        early: bool,
    ) -> _Draft:
        """The new view assembled and estimated (no usage anchor, like ``estimated_before``):
        the summary, the task list, the sub-agents, the kept prompt, the kept messages, and
        the re-injected files in the room that leaves."""
        policy = self.policy
        kept_entries = plan.path[plan.first_kept_index :]
        kept = [m for m in (entry_message(e) for e in kept_entries) if m is not None]
        details: dict[str, Any] = dict(result.details)
        prompt_id = self._prompt_entry(turn_prompt, {e.id for e in kept_entries})
        head: list[AgentMessage] = [
            CompactionSummaryMessage(summary=result.summary, tokens_before=before, timestamp=int(time.time() * 1000))
        ]
        if prompt_id is not None and turn_prompt is not None:
            details[DETAIL_KEPT_PROMPT] = prompt_id
        if policy.decisions.todos:
            details[DETAIL_TODOS] = list(policy.decisions.todos)
            head += injected_messages({DETAIL_TODOS: details[DETAIL_TODOS]}, 0)
        children = children_on_path(plan.path)
        if children:
            details[DETAIL_CHILDREN] = children
            head += injected_messages({DETAIL_CHILDREN: children}, 0)
        head += self._frontier(kept)
        bare = policy.sizes.estimate(policy.view([*head, *self._prompt(turn_prompt, prompt_id), *kept]))
        room = self._reinject_room(bare, estimated_before, early)
        summarised = [*plan.messages_to_summarize, *plan.turn_prefix_messages]
        text = reinjected_text(candidates(summarised, kept, self.cwd, self.policy.tools), self.cwd, room)
        after = bare
        if text is not None:
            details[DETAIL_REINJECTED] = text
            after += sum(estimate_message_tokens(m) for m in injected_messages({DETAIL_REINJECTED: text}, 0))
        return _Draft(details=details, tokens_after=after, reinjected=text is not None, kept_prompt=prompt_id)

    def _frontier(self, kept: list[AgentMessage]) -> list[AgentMessage]:
        """The skills and recent steps the view will put after the new compaction's summary
        (:mod:`heron.context.continuity.frontier`): counted before the files get their room."""
        store = self.policy.store
        if store.leaf_id is None:
            return []
        ids, types = store.lineage(store.leaf_id)
        return compaction_frontier(store.get, ids, types, len(ids), kept, 0, self.policy.settings.frontier)

    def _refused(self, draft: _Draft, before: int, estimated_before: int, early: bool) -> CompactionOutcome | None:
        """Nothing is written when the result would not be smaller (automatic compaction
        is then switched off), or, for an early one, would save too little."""
        after = draft.tokens_after
        if early and after > estimated_before * (1 - SHRINK_REQUIRED):
            return CompactionOutcome(
                tokens_before=before,
                tokens_after=after,
                skipped=f"an early compaction would save too little ({estimated_before:,} -> {after:,} tokens)",
            )
        if after >= estimated_before:
            reason_text = f"the summary would not shrink the context ({estimated_before:,} -> {after:,} tokens)"
            self.policy.recorder.disable_auto_compaction(reason_text)
            return CompactionOutcome(
                tokens_before=before, tokens_after=after, skipped=reason_text, auto_disabled=reason_text
            )
        return None

    def _write(
        self,
        plan: CompactionPlan,
        result: SummaryResult,
        draft: _Draft,
        reason: str,
        before: int,
        estimated_before: int,
        timing: dict[str, Any],
    ) -> CompactionOutcome:
        policy = self.policy
        with strictly_ordered():
            entry = policy.store.append_compaction(
                summary=result.summary,
                first_kept_entry_id=plan.first_kept_entry_id,
                tokens_before=before,
                details=draft.details,
            )
        policy.recorder.compacted()
        summarised_chars = sum(estimate_message_tokens(m) for m in plan.messages_to_summarize) * 4
        policy.ledger.add(
            LedgerRecord(
                kind="compaction",
                ref=entry.id,
                chars_before=summarised_chars,
                chars_after=len(result.summary),
                recover="every message stays in the session file; /tree shows them; search_history finds them",
                detail={
                    "reason": reason,
                    "first_kept_entry_id": plan.first_kept_entry_id,
                    "split_turn": plan.split_turn,
                    "tokens_before": before,
                    "tokens_after": draft.tokens_after,
                    "reinjected": draft.reinjected,
                    "kept_prompt": draft.kept_prompt,
                    "summary_request": result.usage.to_detail(),
                    "threshold": policy.sizes.threshold,
                    "working_budget": policy.sizes.budget.to_detail(),
                    **timing,
                },
            )
        )
        outcome = CompactionOutcome(
            tokens_before=before, entry_id=entry.id, summary=result.summary, estimated_before=estimated_before
        )
        return self._rebuilt(outcome)

    def _reinject_room(self, bare: int, estimated_before: int, early: bool) -> int:
        """Tokens the re-injected files may take. Never more than the summary saved (the
        context must not grow), and never above the pruning low-water mark: a compaction
        leaves headroom for the next turns instead of refilling it at once. An early one
        (asked for below the threshold) keeps twice the saving a compaction must make."""
        policy = self.policy
        low = policy.sizes.prune_marks[1]
        room = min(
            REINJECT_TOKENS, int(policy.sizes.window * REINJECT_WINDOW_SHARE), estimated_before - bare - 1, low - bare
        )
        if early:
            room = min(room, int(estimated_before * (1 - 2 * SHRINK_REQUIRED)) - bare)
        return room

    def _rebuilt(self, outcome: CompactionOutcome) -> CompactionOutcome:
        """The conversation after the new compaction entry, and what its size means."""
        policy, store = self.policy, self.policy.store
        outcome.messages = session_messages(store, store.leaf_id, policy.settings.frontier)
        after = outcome.tokens_after = policy.sizes.estimate(policy.view(outcome.messages))
        if after > policy.sizes.threshold:
            policy.ledger.add(
                LedgerRecord(
                    kind="compaction",
                    ref=outcome.entry_id,
                    chars_before=after * 4,
                    chars_after=after * 4,
                    recover="the kept recent messages alone exceed the threshold",
                    detail={"over_threshold": True, "tokens": after, "threshold": policy.sizes.threshold},
                )
            )
        if after > outcome.estimated_before * (1 - SHRINK_REQUIRED):
            outcome.auto_disabled = (
                f"the last compaction saved less than {SHRINK_REQUIRED:.0%} "
                f"({outcome.estimated_before:,} -> {after:,} tokens)"
            )
            policy.recorder.disable_auto_compaction(outcome.auto_disabled)
        return outcome

    def _prompt_entry(self, prompt: UserMessage | None, kept_ids: set[str]) -> str | None:
        """The entry of the running turn's prompt, when the compaction would summarise it."""
        if prompt is None:
            return None
        store = self.policy.store
        if store.leaf_id is None:
            return None
        ids, types = store.lineage(store.leaf_id)
        for entry_id, kind in zip(reversed(ids), reversed(types), strict=True):
            if kind != "message":
                continue
            entry = store.get(entry_id)
            if isinstance(entry, MessageEntry) and _same_message(entry.message, prompt):
                return None if entry_id in kept_ids else entry_id
        return None

    @staticmethod
    def _prompt(prompt: UserMessage | None, prompt_id: str | None) -> list[AgentMessage]:
        return [prompt] if prompt is not None and prompt_id is not None else []


def _with_view(
    shared: Callable[[], SharedPrefix | None] | None, current: list[AgentMessage]
) -> Callable[[], SharedPrefix | None] | None:
    """``shared`` with the current view added to those its cut is looked for in."""
    if shared is None:
        return None

    def prefix() -> SharedPrefix | None:
        found = shared()
        return None if found is None else dataclasses.replace(found, views=[*found.views, current])

    return prefix


def _same_message(stored: AgentMessage, prompt: UserMessage) -> bool:
    if stored is prompt:
        return True
    return (
        isinstance(stored, UserMessage)
        and stored.timestamp == prompt.timestamp
        and stored.to_json_dict() == prompt.to_json_dict()
    )
