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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from heron.agent.agent import Agent
from heron.agent.messages import AgentMessage
from heron.agent.tools import AgentTool
from heron.ai.abort import AbortSignal, sleep_or_abort
from heron.ai.options import RetryPolicy
from heron.ai.overflow import RETRYABLE, ErrorKind
from heron.ai.types import AssistantMessage, ImageContent, StopReason, TextContent, UserMessage
from heron.coding.events import (
    CompactionEndEvent,
    CompactionReason,
    ContextWarningEvent,
    RetryStartEvent,
    SessionEvent,
)
from heron.coding.settings import Settings
from heron.coding.tools import set_limits
from heron.coding.tools.env import ToolEnv
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


class RecoveryHooks:
    """:class:`Recoverable`, implemented over a coding session's agent, store and policy
    (CodingSession inherits it; kept here, next to the decisions that use it)."""

    agent: Agent
    store: SessionStore
    policy: ContextPolicy
    env: ToolEnv
    tools: list[AgentTool[Any]]
    settings: Settings
    request_plan: RequestPlan | None
    _retrying: int

    async def compact(self, focus: str | None = None, reason: CompactionReason = "manual") -> CompactionEndEvent | None:
        raise NotImplementedError

    def drop_failed_answer(self) -> str | None:
        """Take a failed answer out of the live context and off the session's path: the
        leaf moves back to its parent, so the retry becomes a sibling branch and the
        failed message stays in the file. Returns the failed entry's id."""
        failed = self.agent.state.messages.pop()
        leaf = self.store.leaf_id
        if leaf is None:
            return None
        entry = self.store.get(leaf)
        if not isinstance(entry, MessageEntry) or entry.message is not failed:
            return None
        parent = self.store.parent_id_of(leaf)
        if parent is not None:
            self.store.branch(parent)
        else:
            self.store.reset_leaf()
        return leaf

    def restore_failed_answer(self, entry_id: str | None, message: AssistantMessage) -> None:
        if entry_id is not None:
            self.store.branch(entry_id)
        self.agent.state.messages.append(message)

    def _sent(self) -> dict[str, int]:
        """The rejected request's count and output cap, from its plan (0 before the first)."""
        plan = self.request_plan
        return {"tokens": plan.tokens if plan else 0, "max_tokens": plan.max_tokens if plan else 0}

    def implausible_overflow(self, failed: AssistantMessage) -> bool:
        return self.policy.windows.implausible_overflow(failed, **self._sent())

    def learn_window(self, failed: AssistantMessage) -> int | None:
        windows = self.policy.windows
        learned = windows.learn_from_overflow(failed, accepted_tokens=self._accepted_tokens(), **self._sent())
        if learned is None:
            return None
        self.fit_tool_limits()
        return learned.window

    def fit_tool_limits(self) -> None:
        """Size the tools' output limits to the window the context is planned in (a learnt
        window or the working budget included: heron.context.window.working_budget)."""
        set_limits(self.env, self.tools, self.settings.tool_limits.for_window(self.policy.sizes.working_window))

    def _accepted_tokens(self) -> int:
        """heron's count of the last request the server answered (0: none on this path): a
        learned window never goes below a size the server has already served."""
        messages = self.agent.state.messages
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if isinstance(message, AssistantMessage) and message.stop_reason not in _FAILED:
                return self.estimate_request_tokens(messages[:index])
        return 0

    def estimate_request_tokens(self, messages: list[AgentMessage]) -> int:
        raise NotImplementedError

    async def compact_for_overflow(self) -> bool:
        end = await self.compact(reason="overflow")
        return end is not None and end.entry_id is not None

    async def continue_run(self) -> list[AgentMessage]:
        return await self.agent.continue_()

    _turn_prompt: UserMessage | None

    def _fit_prompt(self, text: str) -> str:
        raise NotImplementedError

    def refit_prompt(self) -> bool:
        """The running turn's prompt, when the window a rejection taught leaves it no room
        (no tool call yet), made what it would have been had the window been known: its
        head and the file holding it (:mod:`heron.coding.oversized`). The prompt as sent
        stays in the file on a side branch; the entries recorded after it (the learned
        window, the ledger) are recorded again after the branch point, so the path keeps
        its decisions."""
        prompt, messages = self._turn_prompt, self.agent.state.messages
        if prompt is None or not messages or messages[-1] is not prompt or self.store.leaf_id is None:
            return False
        text = prompt.text()
        fitted = self._fit_prompt(text)
        if fitted == text:
            return False
        path = self.store.path_to(self.store.leaf_id)
        at = next((i for i in range(len(path) - 1, -1, -1) if isinstance(path[i], MessageEntry)), None)
        if at is None or path[at].message is not prompt:  # type: ignore[union-attr]
            return False
        after = [e for e in path[at + 1 :] if isinstance(e, CustomEntry)]
        if at > 0:
            self.store.branch(path[at - 1].id)
        else:
            self.store.reset_leaf()
        for entry in after:
            self.store.append_custom(entry.custom_type, entry.data)
        images = (
            [b for b in prompt.content if isinstance(b, ImageContent)] if not isinstance(prompt.content, str) else []
        )
        fitted_prompt = UserMessage(content=[TextContent(text=fitted), *images])
        self.store.append_message(fitted_prompt)
        messages[-1] = fitted_prompt
        self._turn_prompt = fitted_prompt
        self.policy.reload(self.store)
        return True

    def note_retry(self, attempt: int) -> None:
        self._retrying = attempt
