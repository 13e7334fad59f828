"""After a run that ended in an error: what to do about it, decided by the error's kind.

``heron.ai`` classifies every failure (``overflow``, ``rate_limit``, ``transient``,
``auth``, ``invalid_request``, ...) and carries the kind, the HTTP status and
``retry-after`` on the failed assistant message. The runtime reads the kind, never the
error text:

- ``overflow`` (the provider rejected the request as too long): the failed answer leaves
  the live context (it stays in the file, on a side branch), the session learns the
  window the server really enforces, compacts, and retries once. A second overflow is
  reported, not looped. A rejection whose stated count is implausible against heron's
  own (more than ten times apart) teaches nothing: the request is retried once after
  compaction (or as it was, when there is nothing to compact), the window unchanged.
- ``rate_limit`` / ``transient`` after content had streamed (``heron.ai`` already retried
  failures that happened before any content): the broken answer is dropped and the
  request retried, with heron.ai's own backoff formula and ``retry-after``.
- anything else is reported as it is.

:class:`SessionRecovery` carries these out on a session, which holds it as a part and sees
only what it reads of the session (:class:`RecoveryHost`); it also tells each retry's end
(``retry_end``), heron.ai's and its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from heron.agent.agent import Agent
from heron.agent.messages import AgentMessage
from heron.ai.abort import AbortSignal, sleep_or_abort
from heron.ai.options import RetryPolicy
from heron.ai.overflow import RETRYABLE, ErrorKind
from heron.ai.types import AssistantMessage, ImageContent, StopReason, TextContent, UserMessage
from heron.coding.events import (
    CompactionEndEvent,
    CompactionReason,
    ContextWarningEvent,
    RetryEndEvent,
    RetryStartEvent,
    SessionEvent,
)
from heron.context.engine import RequestPlan
from heron.context.policy import ContextPolicy
from heron.session.entries import CustomEntry, MessageEntry
from heron.session.store import SessionStore


class Recoverable(Protocol):
    """What recovery needs from the session (CodingSession implements it)."""

    @property
    def messages(self) -> list[AgentMessage]: ...

    def drop_failed_answer(self) -> str | None: ...

    def restore_failed_answer(self, entry_id: str | None, message: AssistantMessage) -> None: ...

    def learn_window(self, failed: AssistantMessage) -> int | None: ...

    def implausible_overflow(self, failed: AssistantMessage) -> bool: ...

    async def compact_for_overflow(self) -> bool: ...

    def refit_prompt(self) -> bool: ...

    async def continue_run(self) -> list[AgentMessage]: ...

    def note_retry(self, attempt: int) -> None: ...


def failed_kind(message: AgentMessage | None) -> ErrorKind | None:
    """The kind of a failed answer, or None when the message is not a failure."""
    if not isinstance(message, AssistantMessage) or message.stop_reason != StopReason.ERROR:
        return None
    try:
        return ErrorKind(message.error_kind or "unknown")
    except ValueError:
        return ErrorKind.UNKNOWN


async def recover(
    session: Recoverable,
    added: list[AgentMessage],
    *,
    policy: RetryPolicy,
    signal: AbortSignal,
    emit: Callable[[SessionEvent], None],
    sleep: Callable[[float, AbortSignal], Awaitable[bool]] = sleep_or_abort,
) -> list[AgentMessage]:
    attempts = 0
    overflowed = False
    while True:
        last = session.messages[-1] if session.messages else None
        kind = failed_kind(last)
        if kind is None or not isinstance(last, AssistantMessage):
            return added
        if kind == ErrorKind.OVERFLOW and not overflowed:
            overflowed = True
            failed_entry = session.drop_failed_answer()
            doubtful = session.implausible_overflow(last)
            window = None if doubtful else session.learn_window(last)
            if doubtful:
                emit(ContextWarningEvent(kind="overflow_doubted", message=_DOUBTED))
            if window is not None:
                emit(
                    ContextWarningEvent(
                        kind="window_learned",
                        message=(
                            "the server rejected a request as too long; "
                            f"planning for a {window:,}-token window from now on"
                        ),
                    )
                )
            compacted = await session.compact_for_overflow()
            if not compacted and window is None and not doubtful:  # nothing would change: report it as it was
                session.restore_failed_answer(failed_entry, last)
                return added
            if window is not None:
                session.refit_prompt()  # a prompt too large for the window learned: its head and a file
            added += await session.continue_run()
            continue
        if kind not in RETRYABLE or not last.content or attempts >= policy.max_retries:
            return added
        delay = policy.delay(attempts, last.retry_after)
        attempts += 1
        session.note_retry(attempts)
        emit(
            RetryStartEvent(
                attempt=attempts, max_attempts=policy.max_retries, delay=delay, error_message=last.error_message or ""
            )
        )
        if not await sleep(delay, signal):
            return added
        session.drop_failed_answer()
        added += await session.continue_run()


_FAILED = (StopReason.ERROR, StopReason.ABORTED)
_DOUBTED = (
    "the server rejected a request as too long, but the size it states is far from heron's count "
    "of that request; retrying once without lowering the window"
)


class RecoveryHost(Protocol):
    """What :class:`SessionRecovery` uses of the session (CodingSession implements it)."""

    @property
    def agent(self) -> Agent: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def policy(self) -> ContextPolicy: ...

    @property
    def request_plan(self) -> RequestPlan | None: ...

    turn_prompt: UserMessage | None  # the running turn's prompt; a refit replaces it

    async def compact(
        self, focus: str | None = None, reason: CompactionReason = "manual"
    ) -> CompactionEndEvent | None: ...

    def estimate_request_tokens(self, messages: Sequence[AgentMessage]) -> int: ...

    def fit_prompt(self, text: str) -> str: ...

    def fit_tool_limits(self) -> None: ...

    def emit(self, event: SessionEvent) -> None: ...


class SessionRecovery:
    """:class:`Recoverable`, implemented over a coding session's agent, store and policy
    (the session holds one and hands it to :func:`recover`; kept here, next to the
    decisions that use it)."""

    def __init__(self, session: RecoveryHost) -> None:
        self.session = session
        self._retrying = 0  # the attempt of the retry running (0: none)

    @property
    def messages(self) -> list[AgentMessage]:
        return self.session.agent.messages

    def drop_failed_answer(self) -> str | None:
        """Take a failed answer out of the live context and off the session's path: the
        leaf moves back to its parent, so the retry becomes a sibling branch and the
        failed message stays in the file. Returns the failed entry's id."""
        store = self.session.store
        failed = self.session.agent.state.messages.pop()
        leaf = store.leaf_id
        if leaf is None:
            return None
        entry = store.get(leaf)
        if not isinstance(entry, MessageEntry) or entry.message is not failed:
            return None
        parent = store.parent_id_of(leaf)
        if parent is not None:
            store.branch(parent)
        else:
            store.reset_leaf()
        return leaf

    def restore_failed_answer(self, entry_id: str | None, message: AssistantMessage) -> None:
        if entry_id is not None:
            self.session.store.branch(entry_id)
        self.session.agent.state.messages.append(message)

    def _sent(self) -> dict[str, int]:
        """The rejected request's count and output cap, from its plan (0 before the first)."""
        plan = self.session.request_plan
        return {"tokens": plan.tokens if plan else 0, "max_tokens": plan.max_tokens if plan else 0}

    def implausible_overflow(self, failed: AssistantMessage) -> bool:
        return self.session.policy.windows.implausible_overflow(failed, **self._sent())

    def learn_window(self, failed: AssistantMessage) -> int | None:
        windows = self.session.policy.windows
        learned = windows.learn_from_overflow(failed, accepted_tokens=self._accepted_tokens(), **self._sent())
        if learned is None:
            return None
        self.session.fit_tool_limits()
        return learned.window

    def _accepted_tokens(self) -> int:
        """heron's count of the last request the server answered (0: none on this path): a
        learned window never goes below a size the server has already served."""
        messages = self.session.agent.state.messages
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if isinstance(message, AssistantMessage) and message.stop_reason not in _FAILED:
                return self.session.estimate_request_tokens(messages[:index])
        return 0

    async def compact_for_overflow(self) -> bool:
        end = await self.session.compact(reason="overflow")
        return end is not None and end.entry_id is not None

    async def continue_run(self) -> list[AgentMessage]:
        return await self.session.agent.continue_()

    def refit_prompt(self) -> bool:
        """The running turn's prompt, when the window a rejection taught leaves it no room
        (no tool call yet), made what it would have been had the window been known: its
        head and the file holding it (:mod:`heron.coding.oversized`). The prompt as sent
        stays in the file on a side branch; the entries recorded after it (the learned
        window, the ledger) are recorded again after the branch point, so the path keeps
        its decisions."""
        session, store = self.session, self.session.store
        prompt, messages = session.turn_prompt, session.agent.state.messages
        if prompt is None or not messages or messages[-1] is not prompt or store.leaf_id is None:
            return False
        text = prompt.text()
        fitted = session.fit_prompt(text)
        if fitted == text:
            return False
        path = store.path_to(store.leaf_id)
        at = next((i for i in range(len(path) - 1, -1, -1) if isinstance(path[i], MessageEntry)), None)
        if at is None or path[at].message is not prompt:  # type: ignore[union-attr]
            return False
        after = [e for e in path[at + 1 :] if isinstance(e, CustomEntry)]
        if at > 0:
            store.branch(path[at - 1].id)
        else:
            store.reset_leaf()
        for entry in after:
            store.append_custom(entry.custom_type, entry.data)
        images = (
            [b for b in prompt.content if isinstance(b, ImageContent)] if not isinstance(prompt.content, str) else []
        )
        fitted_prompt = UserMessage(content=[TextContent(text=fitted), *images])
        store.append_message(fitted_prompt)
        messages[-1] = fitted_prompt
        session.turn_prompt = fitted_prompt
        session.policy.reload(store)
        return True

    def note_retry(self, attempt: int) -> None:
        """A retry began (heron.ai's before any content, or :func:`recover`'s): the
        answer's end says how it ended."""
        self._retrying = attempt

    def answer_ended(self, message: AssistantMessage) -> None:
        """An answer ended: after a retry, its ``retry_end`` event."""
        if not self._retrying:
            return
        success = message.stop_reason != StopReason.ERROR
        self.session.emit(
            RetryEndEvent(
                success=success,
                attempt=self._retrying,
                final_error=None if success else message.error_message,
            )
        )
        self._retrying = 0
