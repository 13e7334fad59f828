"""The one decision of how a run ended (heron.coding.outcome) and the run handle's abort
(heron.coding.run): what every mode then presents (the modes themselves are driven in
tests/cli/test_run_outcome_contract.py)."""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

from heron.ai.overflow import ErrorKind
from heron.ai.types import AssistantMessage, StopReason, Usage
from heron.coding.outcome import NO_ANSWER_TEXT, OVERFLOW_HINT, RunFailure, RunOutcome, decide
from heron.session.errors import SessionWriteError


def reply(reason: StopReason, text: str = "", error: str | None = None, kind: str | None = None) -> AssistantMessage:
    from heron.ai.types import TextContent

    return AssistantMessage(
        api="x",
        provider="p",
        model="m",
        content=[TextContent(text=text)] if text else [],
        stop_reason=reason,
        error_message=error,
        error_kind=kind,
        usage=Usage(input=10, output=5),
    )


def test_an_answer_is_the_outcome_with_the_usage_of_every_answer() -> None:
    failed = reply(StopReason.ERROR, error="503 overloaded", kind="transient")
    outcome = decide([failed, reply(StopReason.STOP, "done")], unsent=["later"])
    assert outcome.ok and outcome.answer == "done" and outcome.error_kind is None and outcome.explanation is None
    assert (outcome.usage.input, outcome.usage.output, outcome.usage.total_tokens) == (20, 10, 30)
    assert outcome.unsent == ("later",)


def test_a_failed_save_wins_over_an_answer_and_an_abort() -> None:
    error = SessionWriteError(
        "cannot save the session (appending an entry): /s.jsonl: [Errno 28] No space left on device",
        Path("/s.jsonl"),
        OSError(errno.ENOSPC, "No space left on device"),
    )
    outcome = decide([reply(StopReason.ABORTED)], save_error=error, aborted=True)
    assert outcome.stop_reason == StopReason.ERROR and outcome.error_kind == RunFailure.SAVE_FAILED
    assert outcome.explanation == str(error) and outcome.save_error is error and outcome.answer is None


def test_an_abort_wins_over_the_error_it_cut_short() -> None:
    failed = reply(StopReason.ERROR, error="503 overloaded", kind="transient")
    assert decide([failed], aborted=True).stop_reason == StopReason.ABORTED
    assert decide([reply(StopReason.STOP, "came first")], aborted=True).answer == "came first"
    assert decide([], aborted=True).explanation == "aborted"


def test_errors_keep_their_kind_and_an_overflow_says_compaction_did_not_help() -> None:
    overflow = decide([reply(StopReason.ERROR, error="prompt is too long", kind="overflow")])
    assert overflow.error_kind == ErrorKind.OVERFLOW and overflow.error == "prompt is too long"
    assert overflow.explanation == f"prompt is too long\n{OVERFLOW_HINT}"
    odd = decide([reply(StopReason.ERROR, error="?", kind="not-a-kind")])
    assert odd.error_kind == ErrorKind.UNKNOWN
    nothing = decide([])
    assert nothing.error_kind == RunFailure.NO_ANSWER and nothing.explanation == NO_ANSWER_TEXT


def test_an_exception_is_an_internal_error_without_the_key() -> None:
    from heron.coding.secrets import REDACTOR

    key = "sk-ant-" + "a" * 40
    REDACTOR.add([key])  # a key this process uses
    outcome = decide([], failure=RuntimeError(f"boom {key}"))
    assert outcome.error_kind == RunFailure.INTERNAL and outcome.explanation is not None
    assert outcome.explanation.startswith("internal error: RuntimeError: boom") and key not in outcome.explanation


def test_abort_outside_the_agent_loop_cancels_at_once() -> None:
    """A run waiting in a hook (the agent idle) is cancelled by the abort, not left to run."""
    outcome = asyncio.run(_abort_slow(running=False, grace=60))
    assert outcome.aborted and outcome.explanation == "aborted"


def test_a_run_that_ignores_the_abort_is_cancelled_after_the_grace_period() -> None:
    outcome = asyncio.run(_abort_slow(running=True, grace=0.2))
    assert outcome.aborted


async def _abort_slow(*, running: bool, grace: float) -> RunOutcome:
    """A session whose prompt never ends by itself (a hook, a stuck tool) is aborted."""
    from heron.coding.run import Run

    class Slow:
        agent = type("A", (), {"is_running": running, "clear_queues": staticmethod(lambda: [])})()
        store = type("S", (), {"write_error": None})()
        aborted = False

        def subscribe(self, listener: object) -> object:
            return lambda: None

        def abort(self) -> None:
            self.aborted = True

        async def prompt(self, text: str, images: object) -> list[object]:
            await asyncio.sleep(60)
            return []

    session = Slow()
    run = Run(session, "hi")  # type: ignore[arg-type]
    await asyncio.sleep(0)
    assert run.abort(grace) and session.aborted
    outcome = await asyncio.wait_for(run.outcome(), 5)
    assert not run.abort()  # ended: nothing to stop
    return outcome
