"""How a run ended, decided once for every drive mode.

Print, json, rpc, ACP, batch and the interactive mode each show the end of a run in
their own shape (an exit code and a line on stderr, a ``run_end`` event, an ACP stop
reason or error, a batch result record, a line in the conversation). What they show is
decided here, from what the run left behind: the answers it streamed, whether the
session could still be saved, whether it was aborted, and an unexpected exception. So a
failed save, a provider error after its retries, an abort and an overflow that
compaction could not cure end the same way, with the same words, everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from heron.ai.overflow import ErrorKind
from heron.ai.types import AssistantMessage, Cost, StopReason, Usage
from heron.coding.model_choice import ResolvedModel, auth_hint
from heron.coding.recovery import failed_kind
from heron.coding.secrets import redact
from heron.session.errors import SessionWriteError

AUTH_STATUSES = (401, 403)
ABORTED_TEXT = "aborted"
NO_ANSWER_TEXT = "the run produced no answer"
OVERFLOW_HINT = (
    "the conversation does not fit the model's context window, even after compacting it: "
    "start a new session, or use a model with a larger window"
)


class RunFailure(StrEnum):
    """Kinds of failure that are the run's, not the provider's (those are
    :class:`heron.ai.overflow.ErrorKind`)."""

    SAVE_FAILED = "save_failed"  # the session could not be saved; the run was stopped
    NO_ANSWER = "no_answer"  # nothing answered (an extension command, a blocking hook)
    INVALID_COMMAND = "invalid_command"  # a heron command (/goal) with bad input, or one (/compact) that did nothing
    INTERNAL = "internal"  # an exception escaped the run (a bug)


@dataclass(frozen=True)
class RunOutcome:
    """The end of one run. ``stop_reason`` is ``stop``, ``length``, ``aborted`` or
    ``error``; ``explanation`` is the text every mode shows (no key in it), set unless
    the run answered; ``error`` is the provider's own message when one failed."""

    stop_reason: StopReason
    answer: str | None = None
    error_kind: ErrorKind | RunFailure | None = None
    error: str | None = None
    explanation: str | None = None
    save_error: SessionWriteError | None = None
    failure: BaseException | None = None
    usage: Usage = field(default_factory=Usage)
    answers: tuple[AssistantMessage, ...] = ()
    unsent: tuple[str, ...] = ()
    goal: dict[str, Any] | None = None  # the goal loop's end: steps, max_turns, stop, evidence

    @property
    def ok(self) -> bool:
        return self.stop_reason in (StopReason.STOP, StopReason.LENGTH)

    @property
    def aborted(self) -> bool:
        return self.stop_reason == StopReason.ABORTED


def explain_error(message: AssistantMessage, resolved: ResolvedModel | None) -> str:
    """The error text of a failed answer, with what to do about a refused key (the
    interactive mode shows it under each failed answer; a run's outcome starts with it)."""
    text = message.error_message or "the request failed"
    if resolved is not None and message.error_status in AUTH_STATUSES:
        text += "\n" + auth_hint(resolved)
    return text


def total_usage(answers: Sequence[AssistantMessage]) -> Usage:
    """Tokens and dollars of every answer of a run (failed ones included: they were paid)."""
    usage, cost = Usage(), Cost()
    for message in answers:
        used = message.usage
        usage.input += used.input
        usage.output += used.output
        usage.cache_read += used.cache_read
        usage.cache_write += used.cache_write
        usage.total_tokens += used.total_tokens or used.context_tokens()
        cost.input += used.cost.input
        cost.output += used.cost.output
        cost.cache_read += used.cost.cache_read
        cost.cache_write += used.cost.cache_write
        cost.total += used.cost.total
    usage.cost = cost
    return usage


def decide(
    answers: Sequence[AssistantMessage],
    *,
    save_error: SessionWriteError | None = None,
    failure: BaseException | None = None,
    aborted: bool = False,
    unsent: Sequence[str] = (),
    resolved: ResolvedModel | None = None,
    reply: tuple[str, bool] | None = None,
    goal: dict[str, Any] | None = None,
) -> RunOutcome:
    """The one decision. In order: an exception, then a session that could not be saved
    (an error even when an answer came: the run was stopped, or the answer is not in the
    file), then an abort (asked for, or the last answer was cut by one), then the last
    answer's own end. ``reply``: a heron command (``/goal``, ``/compact``) answered in
    place of the model - its text, and whether it refused bad input or did nothing.
    ``goal``: how the goal loop ended, when one ran (:class:`heron.coding.events.GoalLoopEvent`)."""
    last = answers[-1] if answers else None
    if isinstance(failure, SessionWriteError):  # a write outside the recorder (the prompt's own)
        save_error, failure = save_error or failure, None

    def end(reason: StopReason, **fields: Any) -> RunOutcome:
        return RunOutcome(
            reason, usage=total_usage(answers), answers=tuple(answers), unsent=tuple(unsent), goal=goal, **fields
        )

    if failure is not None:
        text = redact(f"internal error: {type(failure).__name__}: {failure}")
        return end(StopReason.ERROR, error_kind=RunFailure.INTERNAL, explanation=text, failure=failure)
    if save_error is not None:
        text = redact(str(save_error))
        return end(StopReason.ERROR, error_kind=RunFailure.SAVE_FAILED, explanation=text, save_error=save_error)
    finished = last is not None and last.stop_reason in (StopReason.STOP, StopReason.LENGTH)
    if (last is not None and last.stop_reason == StopReason.ABORTED) or (aborted and not finished):
        return end(StopReason.ABORTED, explanation=ABORTED_TEXT)
    if last is None and reply is not None:
        if reply[1]:
            return end(StopReason.ERROR, error_kind=RunFailure.INVALID_COMMAND, error=reply[0], explanation=reply[0])
        return end(StopReason.STOP, answer=reply[0])
    if last is None:
        return end(StopReason.ERROR, error_kind=RunFailure.NO_ANSWER, explanation=NO_ANSWER_TEXT)
    if last.stop_reason == StopReason.ERROR:
        kind = failed_kind(last)
        text = explain_error(last, resolved)
        if kind == ErrorKind.OVERFLOW:  # recovery has compacted and retried already
            text += "\n" + OVERFLOW_HINT
        error = redact(last.error_message or "the request failed")
        return end(StopReason.ERROR, error_kind=kind, error=error, explanation=redact(text))
    reason = StopReason.LENGTH if last.stop_reason == StopReason.LENGTH else StopReason.STOP
    return end(reason, answer=last.text())
