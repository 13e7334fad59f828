"""``heron``: the interactive mode.

prompt_toolkit reads input, rich prints output. The input line stays live the whole
time, also while the agent works, so a line submitted during a run becomes a steering
message and Ctrl+C is a key press that aborts the run rather than a signal that kills
heron. Output goes through ``patch_stdout``, which prints it above the input line.

Keys (pi's): Enter sends (while a run works: a steering message); Alt+Enter queues a
follow-up, delivered when the run would stop; Shift+Enter (where the terminal reports it)
or Ctrl+J inserts a newline (pastes keep theirs); Up/Down walk the history
(``$HERON_HOME/history``, 0600); Ctrl+P cycles the models; Shift+Tab the permission
modes; Tab completes slash commands;
``@`` offers the project's files as it is typed (Tab picks);
Esc or Ctrl+C aborts the running job, Ctrl+C clears the input when nothing runs; Ctrl+D
on an empty line exits. When heron asks something (a permission, a /rewind choice) the
input line's prompt becomes the question and the next line answers it; Esc or Ctrl+C
declines.

Without a terminal on stdin (``heron < script.txt``) each line is submitted in turn and
the next waits for the previous one to finish.

SIGTERM on a terminal leaves as Ctrl+D does, what runs aborted and no ``end`` reflection
started, exit status 143 (:mod:`heron.cli.modes.termination`); without a terminal it is
Python's own (the line reader blocks in a thread that a signal cannot end cleanly).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Iterable
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app
from prompt_toolkit.application.current import get_app_session
from prompt_toolkit.completion import merge_completers
from prompt_toolkit.filters import Condition, has_completions
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.input.ansi_escape_sequences import ANSI_SEQUENCES
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from rich.console import Console
from rich.text import Text

from heron.ai.types import THINKING_LEVELS
from heron.cli.app_state import App
from heron.cli.modes.termination import Termination
from heron.cli.task_input import Task
from heron.cli.tui.attachments import FileCompleter, FileIndex, mention_before
from heron.cli.tui.commands import SlashCompleter
from heron.cli.tui.controller import Controller
from heron.cli.tui.picker import pick
from heron.cli.tui.resume_offer import offer_resend
from heron.cli.tui.settings_view import COMMON
from heron.coding.idle import idle_keeper
from heron.coding.permissions.modes import MODES
from heron.coding.secrets import redact
from heron.session.private_files import ensure_private_file

log = logging.getLogger(__name__)

PROMPT = "› "  # noqa: RUF001 - the input marker, not a quote
PROMPT_BUSY = "↳ "  # while a job runs: what is typed steers
# while a job runs, what prompt_toolkit waits after an ESC byte: for the rest of an escape
# sequence (ttimeoutlen), then for a key binding it starts (timeoutlen)
ESC_WAIT_BUSY = (0.005, 0.0)
ESC_WAIT_IDLE = (0.5, 1.0)  # its defaults (ttimeoutlen, timeoutlen), kept when idle
EXIT_WINDOW_S = 2.0  # a second Ctrl+C within this, with nothing to abort or clear, exits


def make_console(file: Any = None) -> Console:
    """A console that writes to ``file``, else to whatever ``sys.stdout`` is at print time,
    sized from the terminal or ``COLUMNS``."""
    return Console(file=file, highlight=False, soft_wrap=False, emoji=False)


def run_interactive(app: App, task: Task) -> int:
    main = _run_terminal if _isatty(sys.stdin) and _isatty(sys.stdout) else _run_lines
    try:
        return asyncio.run(main(app, task))
    except KeyboardInterrupt:  # before the loop could take over Ctrl+C
        return 130


async def _submit(controller: Controller, text: str) -> None:
    """One line; a failure is reported and the session goes on (the UI must outlive a
    broken command)."""
    await idle_keeper(controller.session).stop()  # the user is back: no warm-up or idle compaction now
    try:
        await controller.submit(text)
    except Exception as exc:  # shown to the user; the prompt comes back
        log.debug("submitting %r failed", text[:80], exc_info=True)
        controller.error(f"error: {type(exc).__name__}: {exc}")
    finally:
        _watch_idle(controller)  # waiting for the next line: the idle policy watches the cache


def _watch_idle(controller: Controller) -> None:
    """Start the idle timer once heron waits for input: now, or when the job under way has
    ended. A line that starts a run returns at once here (the run goes on beside the input
    line, which steers it): the timer started then would find the run under way and stop,
    so it starts from the job's end instead - and again after a job that follows it."""
    job = controller.job
    if job is None:
        idle_keeper(controller.session).start()
    else:  # the controller's own callback, added first, has ended the job by the time this runs
        job.task.add_done_callback(lambda _task: _watch_idle(controller))


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


# --- a terminal ------------------------------------------------------------------------


async def _run_terminal(app: App, task: Task) -> int:
    from prompt_toolkit.patch_stdout import patch_stdout

    from heron.cli.tui.terminal_writer import TerminalWriter

    # heron's own output: above the input line at once (see terminal_writer); what other
    # code prints to stdout still goes through patch_stdout
    writer = TerminalWriter(get_app_session().output, sys.stdout.encoding or "utf-8")
    console = make_console(writer)
    controller = Controller(app, console)
    controller.renderer.when_written = writer.when_written
    loop = asyncio.get_running_loop()
    prompt = _make_prompt(app, controller)

    def place_in_input(text: str) -> bool:
        application = prompt.app
        if not application.is_running:
            return False
        buffer = prompt.default_buffer
        buffer.text = f"{buffer.text}\n{text}" if buffer.text else text
        buffer.cursor_position = len(buffer.text)
        application.invalidate()
        return True

    def redraw() -> None:
        _key_timeouts(prompt.app, controller)
        if prompt.app.is_running:
            prompt.app.invalidate()

    controller.place_in_input = place_in_input
    controller.on_change = redraw
    controller.picker = pick

    def sigint() -> None:  # between two prompts (the input line handles Ctrl+C itself)
        if not controller.interrupt():
            controller.note("(Ctrl+C twice or Ctrl+D on an empty line exits)")

    def leave() -> None:  # SIGTERM: leave as Ctrl+D does, what runs aborted and no end pass
        controller.quit_requested = True
        if prompt.app.is_running:
            prompt.app.exit(exception=EOFError())

    termination = Termination(app.session, leave)
    termination.install()

    controller.banner()  # before the input line exists: nothing to print around
    if task:
        _echo_task(controller, task)
    with patch_stdout(raw=True):
        if task:
            controller.start_run(task.text, task.images)
        else:  # a resumed session whose last prompt was never answered: send it again?
            offer_resend(controller)
        _watch_idle(controller)  # a resumed session may wait with a warm cache already
        while not controller.quit_requested:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signal.SIGINT, sigint)
            try:
                text = await prompt.prompt_async(default=controller.take_prefill())
            except EOFError:
                break
            except KeyboardInterrupt:
                continue
            await _submit(controller, text)
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, sigint)  # the input line took it: Ctrl+C while exiting
        await controller.shutdown()
    writer.close()
    return termination.exit_code(0)


def _make_prompt(app: App, controller: Controller) -> Any:
    """The input line: history, keys, completion of commands and ``@paths``, status bar."""
    from heron.cli.tui.live_view import live_block

    history = _history(app, controller)

    def extra_names() -> Iterable[tuple[str, str]]:
        s = app.session
        for skill in s.skills.skills:
            yield f"skill:{skill.name}", skill.description[:60]
        for template in s.templates.sorted():
            yield template.name, template.description[:60]
        for name, description in s.extensions.commands.names():
            yield name, description[:60]

    def arguments(name: str) -> Iterable[str]:
        if name == "model":
            return [m.ref for m in controller.models.available_models()]
        if name == "thinking":
            return list(THINKING_LEVELS)
        if name == "settings":
            return [common.name for common in COMMON]
        if name == "mode":
            return list(MODES)
        return []

    def toolbar() -> Any:
        status = controller.status()
        footer = f"{controller.footer().plain}  │  mode {controller.control.mode} (Shift+Tab)"
        if controller.goal_status:
            footer += f"  │  {controller.goal_status}"
        return f" {status}  │  {footer}" if status else f" {footer}"

    def message() -> Any:
        if controller.question is not None:
            return controller.question.label
        if not controller.busy:
            return PROMPT
        live = live_block(controller.renderer, controller.console.width)  # the answer, in place
        return ANSI(f"{live}\n{PROMPT_BUSY}") if live else PROMPT_BUSY

    prompt: PromptSession[str] = PromptSession(
        message=message,
        history=history,
        key_bindings=_key_bindings(controller),
        completer=merge_completers([SlashCompleter(extra_names, arguments), FileCompleter(FileIndex(app.cwd))]),
        # commands complete on Tab; an @path as it is typed (the list follows the letters)
        complete_while_typing=Condition(
            lambda: mention_before(prompt.default_buffer.document.text_before_cursor) is not None
        ),
        bottom_toolbar=toolbar,
        multiline=False,
        prompt_continuation=lambda width, line_number, soft_wrap: " " * width,
        enable_history_search=False,
        refresh_interval=0.5,
    )
    return prompt


def _history(app: App, controller: Controller) -> Any:
    """The input line's history: ``$HERON_HOME/history`` (0600, keys redacted), without the
    answers to questions; in memory when the file cannot be made."""

    class AnswersLeftOut(FileHistory):
        """Answers to questions ("1", "y") are not worth walking back to with Up."""

        def append_string(self, string: str) -> None:
            if controller.question is None:
                super().append_string(string)

        def store_string(self, string: str) -> None:
            super().store_string(redact(string))  # Up recalls the typed text; the file holds no key

    try:
        ensure_private_file(app.home / "history")  # typed text may hold secrets: 0600
        return AnswersLeftOut(str(app.home / "history"))
    except OSError:
        return InMemoryHistory()


def _key_timeouts(application: Any, controller: Controller) -> None:
    """While a job runs or a question waits, Esc is acted on at once. prompt_toolkit
    otherwise waits for what may follow an ESC byte twice: ``ttimeoutlen`` (0.5 s) for the
    rest of an escape sequence, then ``timeoutlen`` (1 s) for a binding it starts (Alt+Enter
    is Esc, Enter). A sequence a terminal sends (an arrow, Alt+Enter) arrives in one read,
    so nothing is lost; when idle, the defaults stay for slow links."""
    fast = controller.busy or controller.question is not None
    application.ttimeoutlen, application.timeoutlen = ESC_WAIT_BUSY if fast else ESC_WAIT_IDLE


def _key_bindings(controller: Controller) -> Any:
    bindings = KeyBindings()
    _map_shift_enter()

    @bindings.add("c-j")  # Ctrl+J, and Shift+Enter where the terminal tells it apart
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("escape", "enter")  # Alt+Enter: queue a follow-up while a run works
    def _follow_up(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if controller.queue_follow_up(buffer.text):
            buffer.append_to_history()
            buffer.reset()
        else:
            buffer.validate_and_handle()  # nothing runs: the same as Enter

    @bindings.add("escape")  # Esc alone aborts the running job, like Ctrl+C
    def _escape(event: KeyPressEvent) -> None:
        controller.interrupt()

    def single_key(key: str) -> Any:
        """A question's one-key answer (``y`` at a permission question): pressed alone on
        an empty line it answers; arriving with more keys in one read (typed ``yes``, a
        paste, ``n use make``) it is text, and the line is read on Enter."""

        @bindings.add(
            key, filter=Condition(lambda: controller.question is not None and not get_app().current_buffer.text)
        )
        def _answer(event: KeyPressEvent) -> None:
            if event.key_processor.input_queue or not controller.answer_key(key):
                event.current_buffer.insert_text(key)

    for key in "yan123":
        single_key(key)

    @bindings.add("c-p")  # pi's model cycling; Up keeps the history
    def _cycle(event: KeyPressEvent) -> None:
        controller.models.cycle_model()

    @bindings.add("s-tab", filter=~has_completions)  # Shift+Tab: the next permission mode
    def _mode(event: KeyPressEvent) -> None:
        controller.control.cycle_mode()

    last_idle_ctrl_c = [-EXIT_WINDOW_S]

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        """Abort the job, else clear the line, else: the first press says a second one
        exits, the second (within :data:`EXIT_WINDOW_S`) exits."""
        if controller.interrupt():
            last_idle_ctrl_c[0] = -EXIT_WINDOW_S
            return
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
            return
        now = time.monotonic()
        if now - last_idle_ctrl_c[0] <= EXIT_WINDOW_S:
            controller.quit_requested = True
            event.app.exit(exception=EOFError)
            return
        last_idle_ctrl_c[0] = now
        controller.note("(Ctrl+C again exits; so does Ctrl+D on an empty line)")

    return bindings


def _map_shift_enter() -> None:
    """Shift+Enter as terminals with extended keyboard reporting send it (the kitty/CSI-u
    form and xterm's modifyOtherKeys form) becomes Ctrl+J: a newline. Terminals that
    send a plain CR for it cannot be told apart from Enter; Ctrl+J works everywhere."""
    for sequence in ("\x1b[13;2u", "\x1b[27;2;13~"):
        ANSI_SEQUENCES[sequence] = Keys.ControlJ


def _echo_task(controller: Controller, task: Task) -> None:
    """The command line's task, shown as if typed (attachments abridged)."""
    first = task.text.strip().splitlines()[-1] if task.text.strip() else ""
    shown = first if len(first) <= 200 else first[:199] + "…"
    extra = f" (+{len(task.images)} image(s))" if task.images else ""
    controller.console.print(Text(f"{PROMPT}{shown}{extra}", style="bold"))


# --- no terminal: one line at a time -------------------------------------------------------


async def _run_lines(app: App, task: Task) -> int:
    """stdin is a pipe or a file: submit each line, waiting for each to finish; the
    same commands work, there is just no live input line (and so no steering). A
    question (a permission, /rewind) takes the next line as its answer."""
    console = make_console()
    controller = Controller(app, console)
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, lambda: controller.interrupt() or os._exit(130))
    if task:
        _echo_task(controller, task)
        controller.start_run(task.text, task.images)
        await controller.wait()
    while not controller.quit_requested:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        text = line.rstrip("\n")
        if not text.strip() and controller.question is None:  # an empty answer is an answer
            continue
        await _submit(controller, text)
        await controller.wait()
    await controller.shutdown()
    return 0
