"""The goal loop: with a goal set, heron goes on by itself after an answer until the goal
is met, blocked, out of budget or capped (docs/continuity.md, "The goal loop").

Every prompt's run goes through :meth:`GoalLoop.run` once its first step has answered.
While the goal on the path is active, heron sends the fixed continuation
(:func:`heron.context.continuity.goal_loop.continuation`) and runs another step, the same way a
prompt runs (Stop hooks, recovery); each step's model calls count against the run's
``--max-turns`` allowance. It stops when:

- the model called the ``goal`` tool with ``complete`` (after the answer that follows it)
  or ``blocked`` (heron adds a failed answer of kind ``goal_blocked`` saying why);
- the evaluator (``goal.evaluator``) judged the goal met;
- ``goal.maxTurns`` / ``--goal-turns`` continuations were sent since the user's last
  prompt (a failed answer of kind ``goal_turns``);
- a step ended in an error (the goal's budget, ``--max-turns``, a provider's error) or
  was aborted (Esc, rpc ``abort``: the loop pauses; the next prompt takes it up).

What the user types meanwhile steers it: a message queued while a step ran is delivered
before its next model call, and one still queued when a step ends is sent instead of the
continuation. A continuation never starts while a permission question is open.

Everything that decides the loop is in the session (:mod:`heron.context.continuity.goal_loop`), and
so is the ``goal`` tool's offer, derived before every request: ``heron -p --continue``
without a task picks a loop up where a killed process left it (:meth:`GoalLoop.resume`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from heron.agent.messages import AgentMessage
from heron.agent.tools import ToolError
from heron.ai.adapt import NO_RESULT_TEXT
from heron.ai.overflow import ErrorKind
from heron.ai.types import AssistantMessage, StopReason, TextContent, ToolCall, ToolResultMessage, UserMessage
from heron.coding.events import GoalLoopEvent
from heron.coding.goal_evaluator import EvaluatorHost, evaluate
from heron.coding.tools.goal import GoalTool
from heron.context.continuity.goal import goal_on_path
from heron.context.continuity.goal_loop import (
    EVALUATION_TYPE,
    VERDICT_TYPE,
    LoopState,
    VerdictStatus,
    blocked_stop_text,
    continuation,
    evaluation_data,
    fold,
    goal_start,
    is_continuation,
    turns_stop_text,
    verdict_data,
)
from heron.context.continuity.path_fold import PathFold
from heron.session.store import SessionStore

if TYPE_CHECKING:
    from heron.agent.agent import Agent
    from heron.coding.control import Control, StepInput
    from heron.coding.events import SessionEvent
    from heron.coding.goal import GoalKeeper
    from heron.coding.settings import Settings

QUESTION_POLL_S = 0.05  # how often a continuation waiting for a permission question looks again
_FAILED = (StopReason.ERROR, StopReason.ABORTED)
_STOPS = {ErrorKind.TURN_LIMIT.value: "max_turns", ErrorKind.GOAL_BUDGET.value: "goal_budget"}


def _full(store: SessionStore, start: int | None = None) -> tuple[LoopState, int]:
    """The loop's state read from the whole path: folded from the goal entry on (``start``:
    its index when the caller knows it, -1 for none)."""
    if store.leaf_id is None:
        return LoopState(), 0
    ids, types = store.lineage(store.leaf_id)
    if start is None:
        _, start = goal_on_path(store.get, ids, types)
    start = goal_start(store.get, ids, types, start)
    state = LoopState()
    for index in range(max(start, 0), len(ids) if start >= 0 else 0):
        state = _step(state, store, ids[index], index)
    return state, len(ids)


def _step(state: LoopState, store: SessionStore, entry_id: str, index: int) -> LoopState:
    kind = store.type_of(entry_id)
    role = store.role_of(entry_id) if kind == "message" else None
    return fold(state, kind, role, lambda: store.get(entry_id))


def resume_point(messages: Sequence[AgentMessage]) -> tuple[AssistantMessage | None, list[ToolCall]]:
    """Where a session's conversation stands, as a request would carry it (failed and
    aborted answers and their results are never sent): the answer it ends with (None when
    it ends with something the model has not answered), and that answer's calls that have
    no result (a process killed while they ran)."""
    skipped: set[str] = set()
    last: AgentMessage | None = None
    for message in messages:
        if isinstance(message, AssistantMessage) and message.stop_reason in _FAILED:
            skipped.update(call.id for call in message.tool_calls())
        elif not (isinstance(message, ToolResultMessage) and message.tool_call_id in skipped):
            last = message
    if not isinstance(last, AssistantMessage):
        return None, []
    return last, last.tool_calls()


class LoopHost(EvaluatorHost, Protocol):
    """What the goal loop uses of its session: the goal and the store its verdicts go in,
    the agent whose messages it reads and whose tools it arranges, the control whose
    permission questions a continuation waits for, and the session's own steps and events
    (a continuation is a step like a user's, with the session's listeners told)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def goal(self) -> GoalKeeper: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def control(self) -> Control: ...

    def emit(self, event: SessionEvent) -> None: ...

    def begin_run(self) -> None: ...

    async def run_step(self, message: StepInput) -> list[AgentMessage]: ...


class GoalLoop:
    """The goal loop of one :class:`CodingSession`: the ``goal`` tool's offer, the steps,
    the stops. ``max_turns``: ``--goal-turns``, else ``goal.maxTurns`` (0: off - the goal
    only leads the requests); ``enabled``: False in a sub-agent, whose parent's loop drives
    the work (it is still offered the tool, so a fork's requests keep its parent's bytes)."""

    def __init__(self, session: LoopHost) -> None:
        self.session = session
        self.max_turns = session.settings.goal.max_turns
        self.evaluator = session.settings.goal.evaluator
        self.enabled = True
        self.running = False  # a run is inside the loop (rpc: a prompt then steers it)
        self._evaluator_error: str | None = None  # why the evaluator could not judge the last step
        self.tool = GoalTool(self._record_verdict)
        # the goal entry's index comes from the goal keeper's own fold (read before every
        # request anyway): a path read whole is not searched for it a second time
        self._fold: PathFold[LoopState] = PathFold(lambda store: _full(store, session.goal.position()), _step)

    # --- the state and the tool ---------------------------------------------------------

    def state(self) -> LoopState:
        return self._fold.get(self.session.store)

    @property
    def looping(self) -> bool:
        return self.enabled and self.max_turns > 0

    @property
    def active(self) -> bool:
        """A run of this session is (or would be, after its current step) in the loop."""
        return self.running or (self.looping and self.state().status == "active")

    def sync_tools(self) -> None:
        """Before every request: the ``goal`` tool offered exactly while the session's state
        says so (:attr:`LoopState.offers_tool`), always last - after the session's tools and
        any added since (MCP tools a search loaded), so a resumed process lists them in the
        same order."""
        agent = self.session.agent
        tools = agent.state.tools
        offered = self.max_turns > 0 and self.state().offers_tool
        wanted = [tool for tool in tools if tool is not self.tool] + ([self.tool] if offered else [])
        if len(wanted) != len(tools) or any(a is not b for a, b in zip(wanted, tools, strict=False)):
            agent.set_tools(wanted)

    def _record_verdict(self, status: VerdictStatus, evidence: str) -> str:
        if not evidence:
            raise ToolError("Give the evidence: what shows the goal is met, or what you need to go on.")
        if self.state().goal is None:
            raise ToolError("No goal is set in this session; the user sets one with /goal.")
        self.session.store.append_custom(VERDICT_TYPE, verdict_data(status, evidence, "tool"))
        if status == "complete":
            return "Recorded: the goal is met. Give your final answer now; heron stops working on its own after it."
        return "Recorded: the goal is blocked. Tell the user what you need; heron stops after your answer."

    # --- whether there is a loop to pick up ---------------------------------------------

    def pending(self) -> bool:
        """A loop stopped mid-way (a killed process, a pause): ``heron -p --continue``
        without a task and the interactive resume pick it up."""
        state = self.state()
        if not self.looping or state.goal is None or not state.started:
            return False  # no prompt since the goal was set: the loop starts with the next one
        answer, calls = resume_point(self.session.agent.state.messages)
        if answer is None or calls:  # a step to finish, whatever it brings
            return not (state.status == "complete" and state.prompted)
        return state.status == "active" and state.continuations < self.max_turns

    def idle_reason(self) -> str:
        """Why there is no loop to pick up (for the usage error of a ``--continue`` without a task)."""
        state = self.state()
        if state.goal is None:
            return "no goal is set"
        if not self.looping:
            return "the goal loop is off (goal.maxTurns / --goal-turns 0)"
        if not state.started:
            return "the goal loop starts with the next prompt"
        if state.verdict is not None and state.status != "active":
            return f"the goal is {state.status}: {state.verdict.evidence}"
        return f"the goal loop stopped at its limit of {self.max_turns} continuations (raise it with --goal-turns N)"

    # --- running ------------------------------------------------------------------------

    async def run(self, added: Sequence[AgentMessage]) -> list[AgentMessage]:
        """After a prompt's first step (``added``): the steps that follow while the goal is
        active; the messages they added."""
        state = self.state()
        if not self.looping or state.goal is None or (state.status == "complete" and state.prompted):
            return []  # no goal, or one met before this prompt: an ordinary run
        return await self._loop(_last_answer(added))

    async def resume(self) -> list[AgentMessage]:
        """The loop from where the session stopped (``heron -p --continue`` without a task,
        the interactive resume): the step under way finished (a call left without a result
        gets the error result a request would carry), then the loop."""
        session = self.session
        session.begin_run()
        session.control.checkpoints.start_before_turn(session.store)
        try:
            return await self._resume()
        finally:
            await session.control.after_prompt()

    async def _resume(self) -> list[AgentMessage]:
        session = self.session
        answer, calls = resume_point(session.agent.state.messages)
        added: list[AgentMessage] = []
        if answer is None or calls:
            for call in calls:
                result = ToolResultMessage(
                    tool_call_id=call.id, tool_name=call.name, content=[TextContent(text=NO_RESULT_TEXT)], is_error=True
                )
                session.agent.append(result)
                added.append(result)
            added += await session.run_step(None)
            answer = _last_answer(added)
        return added + await self._loop(answer)

    async def _loop(self, last: AssistantMessage | None) -> list[AgentMessage]:
        session = self.session
        added: list[AgentMessage] = []
        self.running = True
        try:
            while (end := await self._decide(last)) is None:
                await self._no_question_open()
                queued = session.agent.clear_queues()  # what the user typed: sent instead of the continuation
                step = await session.run_step(queued) if queued else await self._continue()
                added += step
                last = _last_answer(step)
        finally:
            self.running = False
        session.emit(end)
        return added

    async def _decide(self, last: AssistantMessage | None) -> GoalLoopEvent | None:
        """After a step that answered ``last``: the loop's end, or None to take another
        step. The evaluator judges first (unless the user has typed meanwhile); the cap
        counts only steps heron takes by itself."""
        agent = self.session.agent
        end = self._stopped(last)
        if end is None and not agent.has_queued() and self.evaluator and self.state().evaluation is None:
            await self._evaluate()
            end = self._stopped(last)
        if end is None and not agent.has_queued() and self.state().continuations >= self.max_turns:
            self._stop_answer(ErrorKind.GOAL_TURNS, turns_stop_text(self.max_turns))
            end = self._end("goal_turns")
        return end

    async def _continue(self) -> list[AgentMessage]:
        """A step of heron's own: the continuation, with the evaluator's reason if it has one."""
        state = self.state()
        reason = state.evaluation.reason if state.evaluation is not None else None
        error, self._evaluator_error = self._evaluator_error, None
        event = self._event("step", state.continuations + 1, evaluation=reason, evaluator_error=error)
        self.session.emit(event)
        return await self.session.run_step(continuation(state.evaluation))

    def _event(self, state: str, steps: int, **fields: str | None) -> GoalLoopEvent:
        return GoalLoopEvent(state=state, steps=steps, max_turns=self.max_turns, **fields)  # type: ignore[arg-type]

    def _end(self, stop: str, evidence: str | None = None) -> GoalLoopEvent:
        return self._event("end", self.state().continuations, stop=stop, evidence=evidence)

    def _stopped(self, last: AssistantMessage | None) -> GoalLoopEvent | None:
        """The end of the loop after a step that answered ``last``, or None to go on."""
        state = self.state()
        if state.goal is None:
            return self._end("cleared")
        if last is None or last.stop_reason == StopReason.ABORTED:
            return self._end("aborted" if last is not None else "error")
        if last.stop_reason == StopReason.ERROR:
            return self._end(_STOPS.get(last.error_kind or "", "error"), last.error_message)
        if state.verdict is not None and state.status == "complete":
            return self._end("complete", state.verdict.evidence)
        if state.verdict is not None and state.status == "blocked":
            self._stop_answer(ErrorKind.GOAL_BLOCKED, blocked_stop_text(state.verdict.evidence))
            return self._end("blocked", state.verdict.evidence)
        return None

    async def _evaluate(self) -> None:
        """Ask the evaluator about the step just taken and record what it said: "met" as a
        ``complete`` verdict, anything else as the evaluation the next continuation carries."""
        goal = self.state().goal
        if goal is None or self.evaluator is None:
            return
        judgement = await evaluate(self.session, self.evaluator, goal.text, self._last_step())
        store = self.session.store
        if judgement.met:
            evidence = judgement.reason or "the evaluator judged the goal met"
            store.append_custom(VERDICT_TYPE, verdict_data("complete", evidence, "evaluator", judgement.model))
            return
        store.append_custom(EVALUATION_TYPE, evaluation_data(judgement.reason, judgement.model, judgement.error))
        self._evaluator_error = judgement.error

    def _last_step(self) -> list[AgentMessage]:
        """The messages of the step just taken: after the last user message or continuation."""
        messages = self.session.agent.state.messages
        for index in range(len(messages) - 1, -1, -1):
            if isinstance(messages[index], UserMessage) or is_continuation(messages[index]):
                return list(messages[index + 1 :])
        return list(messages)

    def _stop_answer(self, kind: ErrorKind, text: str) -> None:
        """The run ends with a failed answer saying why (as ``--max-turns`` ends one): every
        mode shows it, ``-p`` exits with its code; it is never sent to a model."""
        model = self.session.model
        self.session.agent.append(
            AssistantMessage(
                api=model.api,
                provider=model.provider,
                model=model.id,
                stop_reason=StopReason.ERROR,
                error_message=text,
                error_kind=kind.value,
            )
        )

    async def _no_question_open(self) -> None:
        control = self.session.control
        while control.questions_open:
            await asyncio.sleep(QUESTION_POLL_S)


def _last_answer(messages: Sequence[AgentMessage]) -> AssistantMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
