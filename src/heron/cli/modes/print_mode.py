"""``heron -p "task"``: run one task and print the final answer.

Nothing but the answer goes to stdout, so the output can be piped; errors go to stderr
and make the exit code 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

from heron.ai.types import AssistantMessage, StopReason
from heron.cli.app import App, Task, run_task
from heron.cli.notices import RetryNotices, context_warning_text, explain_error
from heron.coding.secrets import redact


def outcome(app: App) -> tuple[str | None, str | None]:
    """The final answer, or the error that ended the run, with no key in either (a
    server's error body may echo the key it was sent)."""
    answer, error = _outcome(app)
    return (None if answer is None else redact(answer)), (None if error is None else redact(error))


def _outcome(app: App) -> tuple[str | None, str | None]:
    """A session that could not be saved is an error even when an answer came (the run was
    stopped, or the answer is not in the session file)."""
    write_error = app.session.store.write_error
    if write_error is not None:
        return None, str(write_error)
    messages = app.session.messages
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    if last is None:
        return None, "the run produced no answer"
    if last.stop_reason == StopReason.ERROR:
        return None, explain_error(last, app.resolved)
    if last.stop_reason == StopReason.ABORTED:
        return None, "aborted"
    return last.text(), None


def install_interrupt(app: App, *, warnings: bool = False) -> None:
    """Ctrl+C aborts the run (the session keeps what was done) instead of a traceback;
    retries are reported on stderr as they happen (a cancelled one as cancelled), and
    with ``warnings`` the runtime's context warnings too (json mode has them as events)."""
    notices = RetryNotices(lambda text, kind: print(f"heron: {redact(text)}", file=sys.stderr, flush=True))
    app.session.subscribe(notices.handle)
    if warnings:
        app.session.subscribe(_print_warning)

    def interrupt() -> None:
        notices.cancel()
        app.session.abort()

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


async def run_print(app: App, task: Task) -> int:
    install_interrupt(app, warnings=True)
    await run_task(app, task)
    answer, error = outcome(app)
    if error is not None:
        print(f"heron: {error}", file=sys.stderr)
        return 1
    try:
        print(answer, flush=True)
    except BrokenPipeError:  # the answer was not all read: not a success for a pipeline
        discard_stdout()
        return 1
    return 0
