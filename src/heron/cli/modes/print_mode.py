"""``heron -p "task"``: run one task and print the final answer.

Nothing but the answer goes to stdout, so the output can be piped; a run that did not
answer (an error, an abort, a session that could not be saved) writes its outcome's
explanation to stderr and makes the exit code 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

from heron.cli.app_state import App
from heron.cli.notices import RetryNotices, context_warning_text
from heron.cli.task_input import Task
from heron.coding.outcome import RunOutcome
from heron.coding.run import Run
from heron.coding.secrets import redact


def failure_line(outcome: RunOutcome) -> str | None:
    """The one stderr line of a run that did not answer (print and json mode); None when
    it answered. The explanation is the outcome's, as every mode shows it."""
    if outcome.ok:
        return None
    return f"heron: {outcome.explanation}"


def install_interrupt(app: App, run: Run, *, warnings: bool = False) -> None:
    """Ctrl+C aborts ``run`` (the session keeps what was done) instead of a traceback;
    retries are reported on stderr as they happen (a cancelled one as cancelled), and
    with ``warnings`` the runtime's context warnings too (json mode has them as events)."""
    notices = RetryNotices(lambda text, kind: print(f"heron: {redact(text)}", file=sys.stderr, flush=True))
    app.session.subscribe(notices.handle)
    if warnings:
        app.session.subscribe(_print_warning)

    def interrupt() -> None:
        notices.cancel()
        run.abort()

    loop = asyncio.get_running_loop()
    # Not available off the main thread or on some platforms: then Ctrl+C just stops heron.
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, interrupt)


def _print_warning(event: object) -> None:
    text = context_warning_text(event)
    if text is not None:
        print(f"heron: warning: {text}", file=sys.stderr, flush=True)


def discard_stdout() -> None:
    """The reader of our stdout went away (``heron -p ... | head``): point the descriptor
    at /dev/null, so that neither later writes nor the flush at exit raise again and
    print a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


WAIT_NOTE_S = 2.0  # a longer wait for the background summary after the answer is said on stderr


async def run_print(app: App, task: Task) -> int:
    run = Run(app.session, task.text, task.images, resolved=app.resolved, resend=task.resend)
    install_interrupt(app, run, warnings=True)
    outcome = await run.outcome()
    line = failure_line(outcome)
    if line is not None:
        print(line, file=sys.stderr)
        await finish_background(app)
        return 1
    try:
        print(redact(outcome.answer or ""), flush=True)
    except BrokenPipeError:  # the answer was not all read: not a success for a pipeline
        discard_stdout()
        return 1
    await finish_background(app)
    return 0


async def finish_background(app: App) -> None:
    """After the answer: a background summary whose request is out is waited for and kept
    in the session (each summary is asked for once per session); Ctrl+C stops the wait.
    A wait longer than :data:`WAIT_NOTE_S` is said on stderr, so a lingering process is
    not a mystery."""
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, app.session.abort)
    waiting = asyncio.ensure_future(app.session.finish_background())
    done, _ = await asyncio.wait({waiting}, timeout=WAIT_NOTE_S)
    if not done:
        note = "waiting for the background summary to finish (the next heron --continue uses it; Ctrl+C stops)"
        print(f"heron: {note}", file=sys.stderr, flush=True)
    await waiting
