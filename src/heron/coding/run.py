"""A run handle: one prompt of a :class:`CodingSession`, started with text and images,
aborted with a grace period, awaited for its :class:`RunOutcome`.

Every drive mode runs prompts through it, so aborting and ending a run is written once:

- :meth:`Run.abort` asks the session to stop (the agent's own abort: tool calls get
  results, the partial answer is kept as aborted). Outside the agent loop (a retry
  back-off, a compaction, a hook) nothing would notice that in time, so the task is
  cancelled at once; a run that does not stop within ``grace`` seconds is cancelled too.
- :meth:`Run.outcome` waits for the end and decides how it ended
  (:func:`heron.coding.outcome.decide`). The steering and follow-up messages still
  queued then were not sent: they are taken off the queues and reported.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from heron.agent.events import MessageEndEvent
from heron.agent.messages import AgentMessage
from heron.ai.types import AssistantMessage, ImageContent, TextContent
from heron.coding.compact_command import compact_focus, compaction_reply
from heron.coding.events import GoalEvent, GoalLoopEvent
from heron.coding.memory_reflect import REFLECT_COMMAND, ReflectHost, reflect
from heron.coding.model_choice import ResolvedModel
from heron.coding.outcome import RunOutcome, decide
from heron.coding.unanswered import ResendHost, resend_unanswered
from heron.session.unanswered import unanswered_prompt

if TYPE_CHECKING:
    from heron.coding.context_owner import ContextOwner
    from heron.coding.events import SessionEvent
    from heron.coding.goal_loop import GoalLoop

# How long an aborted run may take to stop by itself before its task is cancelled.
ABORT_GRACE_S = 5.0


def message_text(message: Any) -> str:
    """The text of a queued (user) message."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


class RunHost(ResendHost, ReflectHost, Protocol):
    """What a run uses of its session: its events (the answers, a heron command's reply),
    its prompt and abort, the context owner (``/compact``), the goal loop it may pick up,
    and what a reflection (``/memory reflect``) and a resent prompt use."""

    @property
    def context_owner(self) -> ContextOwner: ...

    @property
    def goal_loop(self) -> GoalLoop: ...

    def subscribe(self, listener: Callable[[SessionEvent], None]) -> Callable[[], None]: ...

    def abort(self) -> None: ...


class Run:
    """One prompt of ``session``, running as a task from construction on (call it on the
    event loop). ``resolved`` is how the model and key were chosen, for the explanation of
    a refused key. ``resend``: instead of ``text``, send the session's unanswered prompt
    again (:func:`heron.coding.unanswered.resend_unanswered`), or pick its goal loop up
    (:func:`pick_up`)."""

    def __init__(
        self,
        session: RunHost,
        text: str,
        images: Sequence[ImageContent] = (),
        *,
        resolved: ResolvedModel | None = None,
        resend: bool = False,
    ) -> None:
        self.session = session
        self._resolved = resolved
        self._answers: list[AssistantMessage] = []
        self._aborted = False
        self._force: asyncio.TimerHandle | None = None
        self._outcome: RunOutcome | None = None
        self._reply: tuple[str, bool] | None = None  # a heron command's answer (/goal, /compact)
        self._goal: dict[str, Any] | None = None  # how the goal loop ended, if one ran
        self._unsubscribe = session.subscribe(self._on_event)
        focus = None if resend or images else compact_focus(text)
        if resend:
            start = pick_up(session)
        elif focus is not None:
            start = self._compact(focus)
        elif not images and text.strip() == REFLECT_COMMAND:
            start = self._reflect()
        else:
            start = session.prompt(text, list(images))
        self.task: asyncio.Task[Any] = asyncio.ensure_future(start)

    async def _compact(self, focus: str) -> None:
        """``/compact [focus]``: a manual compaction, answered in place of the model."""
        end = await self.session.context_owner.compact(focus or None, "manual")
        self._reply = compaction_reply(end)

    async def _reflect(self) -> None:
        """``/memory reflect``: the memory reflection pass now, answered in place of the model."""
        self._reply = await reflect(self.session, "command")

    def _on_event(self, event: object) -> None:
        if isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            self._answers.append(event.message)
        elif isinstance(event, GoalEvent):
            self._reply = (event.reply, event.error)
        elif isinstance(event, GoalLoopEvent) and event.state == "end":
            self._goal = event.report()

    @property
    def done(self) -> bool:
        return self.task.done()

    @property
    def aborted(self) -> bool:
        """An abort was asked for (the outcome may still be an answer that came first)."""
        return self._aborted

    def abort(self, grace: float = ABORT_GRACE_S) -> bool:
        """Stop the run; False when it had already ended."""
        if self.task.done():
            return False
        self._aborted = True
        running = self.session.agent.is_running
        self.session.abort()
        if not running or grace <= 0:
            self.task.cancel()
        elif self._force is None:
            self._force = asyncio.get_running_loop().call_later(grace, self._cancel)
        return True

    def _cancel(self) -> None:
        if not self.task.done():
            self.task.cancel()

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the end (None: as long as it takes); True
        when it ended. Cancelling the wait leaves the run alone."""
        done, _ = await asyncio.wait({self.task}, timeout=timeout)
        return bool(done)

    async def outcome(self) -> RunOutcome:
        """How the run ended, once it has (decided once; later calls get the same)."""
        await self.wait()
        return self.result()

    def result(self) -> RunOutcome:
        """The outcome of a run that has ended, for a caller told so by :attr:`task` (a
        done callback): decided now, so a message queued until then counts as unsent."""
        if not self.task.done():
            raise RuntimeError("the run has not ended")
        if self._outcome is None:
            self._outcome = self._decide()
        return self._outcome

    def _decide(self) -> RunOutcome:
        if self._force is not None:
            self._force.cancel()
        self._unsubscribe()
        task = self.task
        cancelled = task.cancelled()
        failure = None if cancelled else task.exception()
        unsent = [message_text(m) for m in self.session.agent.clear_queues()]
        return decide(
            self._answers,
            save_error=self.session.store.write_error,
            failure=failure,
            aborted=self._aborted or cancelled,
            unsent=unsent,
            resolved=self._resolved,
            reply=self._reply,
            goal=self._goal,
        )


async def pick_up(session: RunHost) -> list[AgentMessage] | None:
    """A run without a task: the session's unanswered prompt sent again, else its goal loop
    picked up where it stopped (None when there is neither)."""
    if unanswered_prompt(session.store) is not None:
        return await resend_unanswered(session)
    if session.goal_loop.pending():
        return await session.goal_loop.resume()
    return None
