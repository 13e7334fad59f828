"""``heron -p "task"``: run one task and print the final answer.

Nothing but the answer goes to stdout, so the output can be piped; a run that did not
answer writes its outcome's explanation to stderr, and the exit code says why
(:func:`exit_code`): 1 an error or an abort, 4 a limit stopped it (``--max-turns``,
``--goal-turns``, the goal's budget: the session is saved, ``--continue`` goes on), 5 the
goal is blocked (the model needs the user), 143 SIGTERM (the run aborted in order:
:mod:`heron.cli.modes.termination`). A goal loop's end is one more stderr line.

On a terminal the answer is printed with its control characters shown as text (an
answer must not clear the screen, retitle the window or write the clipboard); piped or
redirected, it is the model's text byte for byte (keys redacted), as a program or a
file expects it (docs/interactive.md, "Nothing from outside heron controls the
terminal"). What heron says on stderr is always shown that way: it may quote a server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from typing import TextIO

from heron.ai.overflow import ErrorKind
from heron.cli.app_state import App
from heron.cli.modes.termination import Termination
from heron.cli.notices import RetryNotices, context_warning_text
from heron.cli.task_input import Task
from heron.cli.terminal_text import visible
from heron.coding.events import loop_end_line
from heron.coding.outcome import RunOutcome
from heron.coding.run import Run
from heron.coding.secrets import redact

LIMIT_EXIT = 4  # a limit stopped the run: --max-turns, --goal-turns, the goal's token budget
BLOCKED_EXIT = 5  # the goal is blocked: the model cannot go on without the user
_LIMITS = frozenset({ErrorKind.TURN_LIMIT, ErrorKind.GOAL_BUDGET, ErrorKind.GOAL_TURNS})


def exit_code(outcome: RunOutcome) -> int:
    """0 answered (a goal loop: the goal is complete), 4 stopped by a limit, 5 the goal is
    blocked, 1 anything else that did not answer (print and json mode; docs/continuity.md)."""
    if outcome.ok:
        return 0
    if outcome.error_kind in _LIMITS:
        return LIMIT_EXIT
    return BLOCKED_EXIT if outcome.error_kind == ErrorKind.GOAL_BLOCKED else 1


def goal_line(outcome: RunOutcome) -> str | None:
    """The goal loop's end, when one ran: why it stopped and after how many continuations."""
    return f"heron: {redact(loop_end_line(outcome.goal))}" if outcome.goal is not None else None


def failure_line(outcome: RunOutcome) -> str | None:
    """The one stderr line of a run that did not answer (print and json mode); None when
    it answered. The explanation is the outcome's, as every mode shows it."""
    if outcome.ok:
        return None
    return visible(f"heron: {outcome.explanation}")


def answer_text(answer: str, stream: TextIO) -> str:
    """The answer as ``stream`` gets it: control characters shown as text on a terminal,
    the text as it is (keys redacted) for a pipe or a file (module docstring)."""
    return visible(answer) if stream.isatty() else redact(answer)


def install_interrupt(app: App, run: Run, *, warnings: bool = False) -> Termination:
    """Ctrl+C aborts ``run`` (the session keeps what was done) instead of a traceback, and
    so does SIGTERM, which also drops a memory reflection and makes the exit status 143
    (the :class:`Termination` returned); retries are reported on stderr as they happen (a
    cancelled one as cancelled), and with ``warnings`` the runtime's context warnings too
    (json mode has them as events)."""
    notices = RetryNotices(lambda text, kind: print(visible(f"heron: {text}"), file=sys.stderr, flush=True))
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
    termination = Termination(app.session, run.abort)
    termination.install()
    return termination


def _print_warning(event: object) -> None:
    text = context_warning_text(event)
    if text is not None:
        print(visible(f"heron: warning: {text}"), file=sys.stderr, flush=True)


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
    termination = install_interrupt(app, run, warnings=True)
    outcome = await run.outcome()
    line, goal = failure_line(outcome), goal_line(outcome)
    if line is not None:
        print(line, file=sys.stderr)
        if goal is not None:
            print(goal, file=sys.stderr)
        await finish_background(app)
        return termination.exit_code(exit_code(outcome))
    try:
        print(answer_text(outcome.answer or "", sys.stdout), flush=True)
    except BrokenPipeError:  # the answer was not all read: not a success for a pipeline
        discard_stdout()
        return termination.exit_code(1)
    if goal is not None:
        print(goal, file=sys.stderr)
    await finish_background(app)
    return termination.exit_code(0)


async def finish_background(app: App) -> None:
    """After the answer: a background summary whose request is out is waited for and kept
    in the session (each summary is asked for once per session); Ctrl+C stops the wait.
    A wait longer than :data:`WAIT_NOTE_S` is said on stderr, so a lingering process is
    not a mystery."""
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, app.session.abort)
    waiting = asyncio.ensure_future(app.session.context_owner.finish_background())
    done, _ = await asyncio.wait({waiting}, timeout=WAIT_NOTE_S)
    if not done:
        note = "waiting for the background summary to finish (the next heron --continue uses it; Ctrl+C stops)"
        if app.session.control.memory_watch.reflecting:
            note = "waiting for the memory reflection to finish (Ctrl+C drops it, putting the notes back)"
        print(f"heron: {note}", file=sys.stderr, flush=True)
    await waiting
