"""The context engine as a library: one object over a session store, one plan per request.

heron's own request path (``heron.coding.context_owner``) and any other agent loop (the
pydantic-ai adapter, :mod:`heron.context.pydantic_ai`) drive the same functions through
here: the tool results of a step budgeted (:meth:`ContextEngine.budget_results`: cut to a
preview, the whole text spilled to a file, a notice saying where), then before every
request the view counted and pruned (:meth:`ContextPolicy.pressure`), the compaction it
calls for run through the caller's own model (:class:`heron.context.compaction.compactor.Compactor`,
given a :data:`SummaryAsk`), and the view settled (:meth:`ContextPolicy.settle`).

Every decision is appended to the store the moment it is taken, so a process that opens
the same store later derives the same view, byte for byte: the engine keeps nothing that
shapes a request in memory. What one preparation found is returned as an immutable
:class:`RequestPlan` - the view, its count, the window, the reserve, the output cap, the
compaction written and the decisions recorded - rather than left in fields for the next
hook to read. See docs/context-library.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heron.agent.messages import AgentMessage
from heron.agent.tool_meta import ToolCatalog
from heron.ai.abort import AbortSignal
from heron.ai.types import Context, Model, ToolResultMessage, UserMessage
from heron.context.policy import ContextPolicy, PolicySettings, Settled
from heron.context.records.decisions import DECISION_CUSTOM_TYPE
from heron.context.records.ledger import Ledger, LedgerRecord
from heron.context.tool_output.limits import ToolLimits
from heron.context.view.build import session_messages
from heron.session.entries import CompactionEntry, CustomEntry, Entry
from heron.session.store import SessionStore

if TYPE_CHECKING:
    from heron.context.compaction.compactor import CompactionOutcome, Compactor
    from heron.context.compaction.summary.shared_summary import SharedAsk, SharedPrefix
    from heron.context.compaction.summary.summariser import SummaryAsk
    from heron.context.rules.invariants import Violation
    from heron.context.tool_output.results import BudgetOutcome


@dataclass(frozen=True, slots=True)
class RequestPlan:
    """What one request carries and why, as a value: read by whoever sends it, learns
    from its answer or shows it; nothing of it is kept in the engine for later."""

    view: Sequence[AgentMessage]  # the messages the request carries, decisions applied (never changed after)
    tokens: int  # the view's count (system prompt and tools included)
    window: int  # the window planned for (the model's, or a learnt smaller one)
    threshold: int  # past this many tokens a request is not sent before compacting
    reserve: int  # room kept free for the answer and a summary
    max_tokens: int  # the output cap of this request
    compaction: CompactionOutcome | None  # the compaction run while preparing, if any
    decisions: tuple[Entry, ...]  # the decisions recorded while preparing, in order
    over_threshold: str | None = None  # why the view is still past the threshold (nothing more could go)
    turn_prompt: UserMessage | None = None  # the prompt of the turn the request belongs to (None: none running)


def plan_of(
    policy: ContextPolicy,
    settled: Settled,
    compaction: CompactionOutcome | None = None,
    decisions: Sequence[Entry] = (),
    turn_prompt: UserMessage | None = None,
) -> RequestPlan:
    """The plan of the view ``policy`` has just settled (``settled``: what
    :meth:`ContextPolicy.settle` returned - the view, its count and output cap), with the
    compaction run and the decisions recorded while preparing it: what the request path
    sends, and what overflow learning and calibration read of the request afterwards.
    heron's context owner and :meth:`ContextEngine.prepare_request` both make it this way."""
    sizes = policy.sizes
    return RequestPlan(
        view=settled.view,
        tokens=settled.tokens,
        window=sizes.window,
        threshold=sizes.threshold,
        reserve=sizes.reserve,
        max_tokens=settled.max_tokens,
        compaction=compaction,
        decisions=tuple(decisions),
        over_threshold=settled.over_threshold,
        turn_prompt=turn_prompt,
    )


def is_decision(entry: Entry) -> bool:
    """A compaction or a context decision (not a message, a ledger record, a label)."""
    return isinstance(entry, CompactionEntry) or (
        isinstance(entry, CustomEntry) and entry.custom_type == DECISION_CUSTOM_TYPE
    )


def recorded_since(store: SessionStore, start: str | None) -> list[Entry]:
    """The decisions appended on the store's current path after the entry ``start`` (None:
    from the path's root), oldest first. Read from the leaf back to ``start`` by parent
    links, so preparing a request costs what it appended, not the whole session."""
    found: list[Entry] = []
    at = store.leaf_id
    while at is not None and at != start:
        if store.type_of(at) in ("custom", "compaction"):  # only these are decoded
            entry = store.get(at)
            if entry is not None and is_decision(entry):
                found.append(entry)
        at = store.parent_id_of(at)
    found.reverse()
    return found


def spill_records(outcomes: Sequence[BudgetOutcome], names: dict[str, str]) -> list[LedgerRecord]:
    """One ledger record per result spilled, saying where its whole text is."""
    return [
        LedgerRecord(
            kind="spill",
            ref=outcome.call_id,
            tool=names.get(outcome.call_id),
            chars_before=outcome.chars_before,
            chars_after=outcome.chars_after,
            recover=f"read {outcome.spill_path} with offset/limit, or grep it",
            detail=outcome.to_json(),
        )
        for outcome in outcomes
        if outcome.spilled
    ]


def budget_results(
    results: list[ToolResultMessage], limits: ToolLimits, spill_dir: Path, max_spill_bytes: int
) -> tuple[list[ToolResultMessage], list[LedgerRecord]]:
    """The tool results of one step within their budgets (one result, all of the step's),
    and the ledger records of what was spilled. Blocking (it writes the spill files)."""
    from heron.context.tool_output.results import apply_turn_budget  # with the first tool results, not at start

    new_results, outcomes = apply_turn_budget(results, limits, spill_dir, max_spill_bytes)
    return new_results, spill_records(outcomes, {r.tool_call_id: r.tool_name for r in results})


def shared_prefix(
    policy: ContextPolicy,
    messages: Sequence[AgentMessage],
    ask_for: Callable[[dict[str, str]], SharedAsk],
    before_ms: int | None = None,
) -> SharedPrefix:
    """What a summary request repeating the conversation's cached prefix needs: the view the
    last main request carried (derived from the session: :func:`view_as_sent`), the
    function that sends it (``ask_for`` the pruning that view applies) and how a request of
    some messages is counted."""
    from heron.context.compaction.summary.shared_summary import SharedPrefix
    from heron.context.view.sent_view import view_as_sent  # with the first compaction

    view, stubs = view_as_sent(policy, messages, before_ms)
    return SharedPrefix(
        views=[view],
        ask=ask_for(stubs),
        tokens=lambda sent: max(policy.sizes.count(sent), policy.sizes.estimate(sent)),
    )


def _check_window(model: Model) -> None:
    """The engine plans within the model's window: a description without one (0, or less)
    is the caller's mistake, said at once rather than as a request that cannot fit."""
    if model.context_window <= 0:
        raise ValueError(
            f"model {model.provider}/{model.id}: context_window must be a positive number of tokens, "
            f"not {model.context_window} (the window the server enforces)"
        )


class ContextEngine:
    """heron's context management over one session store, for any agent loop.

    ``model``: the model description (its window and output limit are what the engine
    plans for); ``fixed_tokens``: what the system prompt and tool definitions of the next
    request count, asked afresh before each count; ``tools``: what each tool name is
    (reads, commands: how a pruned result says to get it back)."""

    def __init__(
        self,
        store: SessionStore,
        model: Model,
        *,
        settings: PolicySettings | None = None,
        cwd: Path | None = None,
        tools: ToolCatalog | None = None,
        fixed_tokens: Callable[[], int] = lambda: 0,
    ) -> None:
        _check_window(model)
        self.store = store
        self.model = model
        self.cwd = Path(cwd) if cwd is not None else Path(store.header.cwd)
        self.ledger = Ledger()
        self.policy = ContextPolicy(
            store,
            cwd=self.cwd,
            settings=settings if settings is not None else PolicySettings(),
            ledger=self.ledger,
            model=lambda: self.model,
            fixed_tokens=fixed_tokens,
            tools=tools if tools is not None else ToolCatalog(),
        )
        self._compactor: Compactor | None = None

    @classmethod
    def open(cls, path: str | Path, model: Model, **kwargs: Any) -> ContextEngine:
        """The engine over the session file ``path``: opened when it exists, else created
        there (written with the first message)."""
        _check_window(model)  # before the file is opened (and locked) or created
        target = Path(path)
        cwd = kwargs.pop("cwd", None)
        if target.exists():
            store = SessionStore.open(target)
        else:
            store = SessionStore.create(cwd if cwd is not None else Path.cwd(), path=target)
        return cls(store, model, cwd=cwd, **kwargs)

    def close(self) -> None:
        """Release the session file (its lock: another engine or process may then open it).
        The engine can still be read; appending needs a new one."""
        self.store.close()

    def __enter__(self) -> ContextEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def compactor(self) -> Compactor:
        """The compactor over this engine's policy, made (and its module loaded) when first needed."""
        if self._compactor is None:
            from heron.context.compaction.compactor import Compactor

            self._compactor = Compactor(self.policy, cwd=self.cwd)
        return self._compactor

    @property
    def limits(self) -> ToolLimits:
        """The tool-result limits for the window planned for."""
        return self.policy.sizes.tool_limits.for_window(self.policy.sizes.window)

    def messages(self) -> list[AgentMessage]:
        """The conversation the store holds on its current path (the latest compaction's
        summary and what it kept first), before any decision is applied."""
        return session_messages(self.store, self.store.leaf_id, self.policy.settings.frontier)

    def append(self, message: AgentMessage) -> None:
        """Record a message of the conversation (a prompt, an answer, a tool result)."""
        self.store.append_message(message)

    def budget_results(
        self, results: list[ToolResultMessage], spill_dir: str | os.PathLike[str], max_spill_bytes: int
    ) -> list[ToolResultMessage]:
        """:func:`budget_results` at this engine's limits, its spills recorded in the ledger
        (``spill_dir``: a path or its text, as a caller outside heron may give it)."""
        new_results, records = budget_results(results, self.limits, Path(spill_dir), max_spill_bytes)
        for record in records:
            self.ledger.add(record)
        return new_results

    async def prepare_request(
        self,
        ask: SummaryAsk,
        messages: list[AgentMessage] | None = None,
        *,
        shared_ask: SharedAsk | None = None,
        signal: AbortSignal | None = None,
        turn_prompt: UserMessage | None = None,
    ) -> RequestPlan:
        """The plan of the next request over ``messages`` (default: the store's
        conversation): pruned, compacted through ``ask`` when due, within the window.
        ``shared_ask``: sends a summary request that repeats the last request's prefix
        (the same system prompt and tools, the view up to the cut, then the summary
        instruction), so a provider's prompt cache serves it; ``ask`` is then the fallback
        (a history too long for one request, an answer that overflowed or called a tool).
        ``turn_prompt``: the prompt of the running turn, carried in the plan (the rules
        check it is present). Raises :class:`heron.context.policy.ContextFull` rather than plan a request over
        the window."""
        signal = signal if signal is not None else AbortSignal()
        policy = self.policy
        messages = self.messages() if messages is None else messages
        start = self.store.leaf_id
        pressure = policy.pressure(messages, signal)
        outcome: CompactionOutcome | None = None
        rebuilt: list[AgentMessage] | None = None
        if pressure.compact:
            conversation = messages
            shared = (
                (lambda: shared_prefix(policy, conversation, lambda stubs: shared_ask))
                if shared_ask is not None
                else None
            )
            outcome = await self.compactor.run(
                messages, ask=ask, model=self.model, reason="threshold", early=pressure.early, shared=shared
            )
            if outcome.entry_id is not None:  # written: the conversation it rebuilt
                rebuilt = outcome.messages if outcome.messages is not None else self.messages()
        settled = policy.settle(messages, pressure, rebuilt, outcome.error if outcome is not None else None)
        return plan_of(policy, settled, outcome, recorded_since(self.store, start), turn_prompt)

    def check(self, plan: RequestPlan, context: Context, turn_prompt: UserMessage | None = None) -> list[Violation]:
        """The rules every request obeys (:mod:`heron.context.rules.invariants`: within the
        window, every call answered, pruned results stay pruned, summaries first, the
        turn's prompt present...) checked on ``plan`` as ``context`` - the provider request
        built from its view, with the system prompt and tool definitions it is sent with.
        Each broken rule is also a ledger record."""
        from heron.context.rules.invariants import RequestSnapshot, check_request  # only when checked

        decisions = self.policy.decisions
        snapshot = RequestSnapshot(
            view=plan.view,
            context=context,
            max_tokens=plan.max_tokens,
            window=plan.window,
            reserve=plan.reserve,
            stubs=decisions.stubs,
            cwd=self.cwd,
            turn_prompt=turn_prompt,
            floor_ms=decisions.last_view_change_ms,
            model=(self.model.provider, self.model.id),
            over_threshold_reason=plan.over_threshold,
            tools=self.policy.tools,
        )
        violations = check_request(snapshot)
        for violation in violations:
            self.ledger.add(LedgerRecord(kind="invariant", recover=violation.message, detail={"rule": violation.rule}))
        return violations
