"""The one path every model request of a session takes.

A session sends two sorts of request: the **turns** of its agent, and **side requests**
that are not part of the conversation - the summaries of a compaction (the history, the
running turn's prefix, chunks and their merge), a branch summary when leaving a branch,
and the turns of the silent memory flush before an automatic compaction. All of them:

- carry typed :class:`StreamOptions` built here: the session's api key and id, the
  configured timeouts (``timeouts.firstByteMs``, ``idleMs``, ``requestMs``,
  ``readingTokensPerSecond``) and retry policy (``retry.*``), a retry callback that emits
  ``retry_start`` / ``retry_end``, and for a local server the prompt-reading speed
  measured by earlier answers (kept across processes);
- are sent by the same function (the agent's send, captured once), after the context
  rules are checked on what is sent (:mod:`heron.context.rules.invariants`);
- are announced to the request observers (:class:`RequestObserver`: tracing makes one
  ``chat`` span of each, see :mod:`heron.coding.tracing`).

A turn is checked on the view the policy prepared for it. A side request gets its own
snapshot (:meth:`RequestPath.side_snapshot`): its view is what its context carries, and
its reserve is nothing - it is never followed by an answer that must fit after it, so it
must fit the window with its own output cap, not the compaction threshold (a summary is
asked for precisely because the conversation is past the threshold).

The path sees of its session only what it uses (:class:`RequestHost`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from heron.agent.loop import StreamFn, assemble_request
from heron.agent.messages import AgentMessage
from heron.ai.abort import AbortSignal
from heron.ai.events import RetryEvent
from heron.ai.options import RetryPolicy, StreamOptions
from heron.ai.reading import is_local_server
from heron.ai.stream import AssistantEventStream, observed_stream
from heron.ai.types import AssistantMessage, Context, Model, StopReason
from heron.coding.events import ContextWarningEvent, RetryEndEvent, RetryStartEvent, SessionEvent
from heron.context.records.ledger import LedgerRecord
from heron.context.rules.check_mode import mode_from

if TYPE_CHECKING:
    # The rules load when they are checked (HERON_CHECK_CONTEXT or context.checkInvariants),
    # the summariser's types with the first summary: not on a plain run's path.
    # The types of RequestHost's members: named in annotations only.
    from pathlib import Path

    from heron.agent.agent import Agent
    from heron.agent.tool_meta import ToolCatalog
    from heron.coding.settings import Settings
    from heron.context.compaction.summary.shared_summary import SharedAsk
    from heron.context.compaction.summary.summariser import SummaryAsk
    from heron.context.engine import RequestPlan
    from heron.context.policy import ContextPolicy
    from heron.context.records.ledger import Ledger
    from heron.context.rules.invariants import IncrementalCheck, RequestSnapshot, Violation
    from heron.session.store import SessionStore

log = logging.getLogger(__name__)

SUMMARY_CACHE_SUFFIX = "/summary"
RequestKind = Literal[
    "turn", "summary", "branch_summary", "flush", "reflection", "goal_check", "warm"
]  # warm: heron.coding.idle
RequestEnd = Callable[[AssistantMessage], None]


class RequestObserver(Protocol):
    """Told of every request as it is sent; the callable it returns gets the answer."""

    def request_started(self, kind: RequestKind, model: Model, context: Context) -> RequestEnd: ...


class RequestHost(Protocol):
    """What the request path uses of its session: the settings (rule checks, timeouts,
    retries), the key, the session id and home its options carry, the model and agent whose
    state a request is made of, the policy and the request plan a turn's rules are checked
    against (with the working directory and the tools' catalog), the ledger a broken rule is
    recorded in, and the session's events and retry count."""

    @property
    def settings(self) -> Settings: ...

    @property
    def api_key(self) -> str | None: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def home(self) -> Path: ...

    @property
    def cwd(self) -> Path: ...

    @property
    def model(self) -> Model: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def policy(self) -> ContextPolicy: ...

    @property
    def request_plan(self) -> RequestPlan | None: ...

    @property
    def tool_catalog(self) -> ToolCatalog: ...

    @property
    def ledger(self) -> Ledger: ...

    def emit(self, event: SessionEvent) -> None: ...

    def note_retry(self, attempt: int) -> None: ...


class RequestPath:
    """Options, rule checks, sending and observers for one session's requests."""

    def __init__(self, session: RequestHost, send: StreamFn) -> None:
        self.session = session
        self._send = send
        self.check_mode = mode_from(session.settings.check_invariants)
        self._checks: IncrementalCheck | None = None  # warn mode: a turn's request costs what it added
        self.observers: list[RequestObserver] = []

    # --- options ---------------------------------------------------------------------------

    def retry_policy(self) -> RetryPolicy:
        retry = self.session.settings.retry
        return RetryPolicy(
            max_retries=retry.max_retries if retry.enabled else 0,
            base_delay=retry.base_delay_ms / 1000,
            max_delay=retry.max_delay_ms / 1000,
        )

    def options(
        self,
        *,
        max_tokens: int | None,
        on_retry: Callable[[RetryEvent], None] | None = None,
        signal: AbortSignal | None = None,
    ) -> StreamOptions:
        """Typed options with the session's key, id, timeouts and retry policy, and for a
        local server the reading speed measured before (:mod:`heron.coding.reading_speeds`)."""
        session, timeouts = self.session, self.session.settings.timeouts
        options = StreamOptions(
            api_key=session.api_key,
            session_id=session.store.session_id,
            max_tokens=max_tokens,
            signal=signal,
            retry=self.retry_policy(),
            on_retry=on_retry,
            first_byte_ms=timeouts.first_byte_ms,
            idle_ms=timeouts.idle_ms,
            request_ms=timeouts.request_ms,
            assumed_reading_speed=timeouts.reading_tokens_per_second,
        )
        model = session.model
        if is_local_server(model):
            from heron.coding.reading_speeds import measured_speed, record_sample

            home = session.home
            options.reading_speed = measured_speed(home, model)
            options.on_reading = lambda sample: record_sample(home, model, sample)
        return options

    def turn_options(self, context: Context) -> StreamOptions:
        """The agent's options: the output cap the policy computed for this view."""
        policy, plan = self.session.policy, self.session.request_plan
        planned = plan.max_tokens if plan is not None else policy.sizes.output_cap(0)  # none: before the first plan
        options = self.options(max_tokens=planned, on_retry=self._turn_retry)
        options.thinking = self.session.agent.state.thinking_level
        options.context_management = policy.native_request()
        return options

    def _turn_retry(self, event: RetryEvent) -> None:
        self.session.note_retry(event.attempt)  # its retry_end comes with the answer's message_end
        self.session.emit(_retry_start(event))

    # --- sending -----------------------------------------------------------------------------

    def send_turn(self, model: Model, context: Context, options: StreamOptions) -> AssistantEventStream:
        """The agent's send: the context rules checked on the view the policy prepared."""
        session, policy, plan = self.session, self.session.policy, self.session.request_plan
        if self.check_mode != "off" and plan is not None:
            from heron.context.rules.invariants import IncrementalCheck, RequestSnapshot, check_request

            snapshot = RequestSnapshot(
                view=plan.view,
                context=context,
                max_tokens=options.max_tokens or 0,
                window=plan.window,
                reserve=plan.reserve,
                stubs=policy.decisions.stubs,
                cwd=session.cwd,
                turn_prompt=plan.turn_prompt,
                floor_ms=policy.decisions.last_view_change_ms,
                model=(model.provider, model.id),
                over_threshold_reason=plan.over_threshold,
                tools=session.tool_catalog,
            )
            strict = self.check_mode == "strict"  # strict (the tests) checks each request whole
            if strict:
                self.report(check_request(snapshot))
            else:
                self._checks = self._checks or IncrementalCheck()
                self.report(self._checks.check(snapshot))
        return self._observed("turn", model, context, self._send(model, context, options))

    def side_snapshot(
        self, model: Model, context: Context, options: StreamOptions, stubs: dict[str, str] | None = None
    ) -> RequestSnapshot:
        """A side request's snapshot: its view is its context's messages; no reserve.
        ``stubs``: the pruning the view it repeats was built with (a shared summary repeats
        the last main request, from before a step taken since)."""
        from heron.context.rules.invariants import RequestSnapshot

        policy = self.session.policy
        return RequestSnapshot(
            view=list(context.messages),
            context=context,
            max_tokens=options.max_tokens or 0,
            window=policy.sizes.window,
            reserve=0,
            stubs=policy.decisions.stubs if stubs is None else stubs,
            cwd=self.session.cwd,
            floor_ms=policy.decisions.last_view_change_ms,
            model=(model.provider, model.id),
            tools=self.session.tool_catalog,
        )

    def side_stream(self, kind: RequestKind, stubs: dict[str, str] | None = None) -> StreamFn:
        """The send function of side requests of ``kind`` (the flush agent uses it)."""

        def send(model: Model, context: Context, options: StreamOptions) -> AssistantEventStream:
            if self.check_mode != "off":
                from heron.context.rules.invariants import check_request

                self.report(check_request(self.side_snapshot(model, context, options, stubs)))
            retries: list[RetryEvent] = []

            def on_retry(event: RetryEvent) -> None:
                retries.append(event)
                self.session.emit(_retry_start(event))

            options.on_retry = on_retry
            stream = self._send(model, context, options)
            return self._observed(kind, model, context, stream, lambda message: self._retry_end(retries, message))

        return send

    def side_options(self, max_tokens: int | None, signal: AbortSignal | None = None) -> StreamOptions:
        return self.options(max_tokens=max_tokens, signal=signal)

    def summary_ask(self, kind: RequestKind = "summary", signal: AbortSignal | None = None) -> SummaryAsk:
        """How the context layer's summariser sends its requests: through this path, with
        the session's model. A rule the request breaks (strict mode) fails the summary."""
        send = self.side_stream(kind)

        async def ask(context: Context, max_tokens: int) -> AssistantMessage:
            model = self.session.model
            options = self.side_options(max_tokens, signal)
            # The prompt-cache key of the session's summaries: they share the summariser's
            # prefix with each other, none with the conversation, whose cache they would
            # otherwise displace (the memory flush does share it, and keeps the session's).
            options.session_id = f"{options.session_id}{SUMMARY_CACHE_SUFFIX}" if options.session_id else None
            from heron.context.rules.invariants import ContextInvariantError  # what a strict check raises

            try:
                stream = send(model, context, options)
            except ContextInvariantError as exc:
                return _failed(model, f"the {kind.replace('_', ' ')} request breaks the context rules: {exc}")
            return await stream.result()

        return ask

    def shared_summary_ask(self, stubs: dict[str, str], signal: AbortSignal | None = None) -> SharedAsk:
        """How a shared summary request is sent (docs/context.md, "The summary request"):
        assembled from the view's prefix by the function that assembles every turn's
        request (the session's system prompt, its tools, the same conversion), with the
        session's own prompt-cache key and thinking level (Anthropic drops the cached
        messages when thinking changes), and tool choice "none" where the API has it.
        ``stubs``: the pruning of the view it repeats, for the context rules."""
        send = self.side_stream("summary", stubs)

        async def ask(messages: list[AgentMessage], max_tokens: int) -> AssistantMessage:
            agent = self.session.agent
            state = agent.state
            context = await assemble_request(state.system_prompt, messages, state.tools, agent.convert_to_llm)
            options = self.side_options(max_tokens, signal)
            options.thinking = state.thinking_level
            options.tool_choice = "none"
            from heron.context.rules.invariants import ContextInvariantError  # what a strict check raises

            try:
                stream = send(state.model, context, options)
            except ContextInvariantError as exc:
                return _failed(state.model, f"the summary request breaks the context rules: {exc}")
            return await stream.result()

        return ask

    def _retry_end(self, retries: Sequence[RetryEvent], message: AssistantMessage) -> None:
        if not retries:
            return
        success = message.stop_reason != StopReason.ERROR
        self.session.emit(
            RetryEndEvent(success=success, attempt=len(retries), final_error=None if success else message.error_message)
        )

    def _observed(
        self,
        kind: RequestKind,
        model: Model,
        context: Context,
        stream: AssistantEventStream,
        also: RequestEnd | None = None,
    ) -> AssistantEventStream:
        """``stream``, telling the observers (and ``also``) of its answer when it ends."""
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s", self.plan_line(kind))
        ends = [observer.request_started(kind, model, context) for observer in self.observers]
        if also is not None:
            ends.append(also)
        if not ends:
            return stream

        def tell(final: AssistantMessage) -> None:
            for end in ends:
                end(final)

        return observed_stream(stream, tell)

    def plan_line(self, kind: RequestKind) -> str:
        """What heron planned for the request it is sending, for ``HERON_LOG=debug``: a
        turn's count (in the server's tokens once calibrated) against the window, so the
        server's own count of the same request can be set beside it (the ``real_server``
        tests do). A side request's plan is its summariser's, not counted here."""
        if kind != "turn":
            return f"request {kind}"
        plan, ratio = self.session.request_plan, self.session.policy.sizes.ratio
        if plan is None:
            return "request turn"
        return (
            f"request turn: planned {plan.tokens} tokens, window {plan.window}, "
            f"ratio {ratio:.3f}, max_tokens {plan.max_tokens}"
        )

    # --- rule violations ---------------------------------------------------------------------

    def report(self, violations: Sequence[Violation]) -> None:
        """Each broken rule: a ledger record and a warning; under strict, an error."""
        session = self.session
        for violation in violations:
            log.warning("%s", violation)
            session.ledger.add(
                LedgerRecord(kind="invariant", recover=violation.message, detail={"rule": violation.rule})
            )
            session.emit(ContextWarningEvent(kind="invariant", message=str(violation)))
        if self.check_mode == "strict" and violations:
            from heron.context.rules.invariants import STRICT_LOG, ContextInvariantError

            STRICT_LOG.add(violations)
            raise ContextInvariantError("; ".join(str(v) for v in violations))


def _retry_start(event: RetryEvent) -> RetryStartEvent:
    return RetryStartEvent(
        attempt=event.attempt, max_attempts=event.max_retries, delay=event.delay, error_message=event.error_message
    )


def _failed(model: Model, text: str) -> AssistantMessage:
    return AssistantMessage(
        content=[],
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason=StopReason.ERROR,
        error_message=text,
    )
