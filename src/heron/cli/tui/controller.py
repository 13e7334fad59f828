"""The interactive session's logic, without a terminal: what a submitted line does.

:class:`Controller` owns the one background job that may run at a time (an agent run,
a compaction, a ``!command``, a tree move with a summary) so the input line stays live
while it works: Enter during a run steers, Ctrl+C aborts the job. The prompt_toolkit
front end (:mod:`heron.cli.modes.interactive`) and the line-by-line fallback for a
non-terminal stdin both drive it through :meth:`Controller.submit`, and tests drive it
directly with a recording console.

The slash commands are served by handler objects the controller holds, one per job
(:mod:`~heron.cli.tui.session_commands`, :mod:`~heron.cli.tui.control_commands`,
:mod:`~heron.cli.tui.model_commands`), each seeing the controller only as a
:class:`~heron.cli.tui.command_host.CommandHost`; the controller keeps the job, the
question, the prefill and the footer, and dispatches a command through one table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from heron import __version__
from heron.ai.abort import AbortController, AbortSignal
from heron.ai.overflow import ErrorKind
from heron.ai.types import ImageContent
from heron.cli.app_state import App
from heron.cli.notices import explain_error
from heron.cli.tui.attachments import attach
from heron.cli.tui.command_host import Handler
from heron.cli.tui.commands import COMMANDS, Command, Prompt, Shell, help_lines, parse_input
from heron.cli.tui.context_view import context_curve, context_file_lines, context_files_line, format_context
from heron.cli.tui.control_commands import ControlCommands
from heron.cli.tui.controller_parts import Job, Question
from heron.cli.tui.controller_parts import bash_message as bash_message
from heron.cli.tui.footer import Totals, footer_text
from heron.cli.tui.model_commands import ModelCommands
from heron.cli.tui.pick_items import Picker
from heron.cli.tui.recap import Recap
from heron.cli.tui.render import Renderer
from heron.cli.tui.session_commands import SessionCommands
from heron.coding.goal import is_goal_command, status_text
from heron.coding.outcome import OVERFLOW_HINT, RunFailure, RunOutcome
from heron.coding.run import Run
from heron.coding.runtime import CodingSession
from heron.coding.skills import SkillNotFoundError
from heron.coding.tools.bash import BashTool
from heron.coding.tools.params import BashParams
from heron.session.store import SessionError

log = logging.getLogger(__name__)


class Controller:
    def __init__(self, app: App, console: Console) -> None:
        self.app = app
        self.console = console
        self.renderer = Renderer(console)
        self.renderer.tools = app.session.tool_catalog
        self.renderer.totals = Totals.of(app.session.messages)
        self.job: Job | None = None
        self._run: Run | None = None  # the run job's handle, while it runs
        self.question: Question | None = None  # a line asked for; the next submitted line answers
        self.quit_requested = False
        # text for the next input line (a message to edit after /tree, undelivered steering)
        self.prefill = ""
        # set by the front end: put text into the input line being edited; False if none is
        self.place_in_input: Callable[[str], bool] | None = None
        # set by the front end: something shown in the status line changed
        self.on_change: Callable[[], None] | None = None
        # set by a terminal front end: a searchable selector (picker.pick); without it,
        # /resume, /model and /tree print numbered lists
        self.picker: Picker | None = None
        self._activity = ""
        self._footer: tuple[tuple[Any, ...], Text] | None = None
        self.goal_status: str | None = None  # the goal in the status bar (refreshed with the footer)
        self.renderer.explain = lambda message: explain_error(message, self.app.resolved)
        self.renderer.keep_recent = lambda: self.session.compaction_settings.keep_recent_tokens
        app.session.subscribe(self._on_event)
        # the slash commands' handlers, by job; each sees this controller as a CommandHost
        self.sessions = SessionCommands(self)
        self.control = ControlCommands(self)
        self.models = ModelCommands(self)
        self._handlers: dict[str, Handler] = {
            "help": self._cmd_help,
            "quit": self._cmd_quit,
            "compact": self._cmd_compact,
            "context": self._cmd_context,
            **self.models.commands(),
            **self.sessions.commands(),
            **self.control.commands(),
        }
        self.control.install_asker()

    @property
    def session(self) -> CodingSession:
        return self.app.session

    # --- output --------------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        self.renderer.handle(event)
        if self.renderer.activity != self._activity:
            self._activity = self.renderer.activity
            self.changed()
        elif getattr(event, "type", "") == "message_update":
            self.changed()  # the live line shows the text not printed yet

    def changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def print_text(self, text: Text) -> None:
        """Lines with paths and ids are not wrapped by rich (the terminal wraps them), so
        they can be copied whole."""
        self.console.print(text, soft_wrap=True)

    def note(self, message: str, style: str = "dim") -> None:
        self.renderer.note(message, style)

    def error(self, message: str) -> None:
        self.renderer.note(message, "bold red")

    def footer(self) -> Text:
        """The footer figures; cached until something they depend on changes, because the
        status bar asks on every redraw and estimating a long context walks it."""
        s = self.session
        messages = s.messages
        totals = self.renderer.totals
        key = (
            len(messages),
            id(messages[-1]) if messages else 0,
            s.model.ref,
            s.window,  # the learned window, when the server enforced less than the model's
            s.thinking_level,
            totals.input,
            totals.output,
            totals.cost,
            id(s.store),
        )
        if self._footer is None or self._footer[0] != key:
            tokens = s.estimate_request_tokens(messages)
            text = footer_text(s.model.id, totals, tokens, s.window, s.threshold, s.thinking_level)
            self._footer = (key, text)
        return self._footer[1].copy()

    def print_footer(self) -> None:
        self.renderer.reset_section()
        line = Text("─ " if self.renderer.bullet == "●" else "- ", style="dim")
        line.append_text(self.footer())
        if self.control.mode != "default":  # the permission mode, when it is not the usual one
            line.append(f" · mode {self.control.mode}", style="yellow")
        self.goal_status = status_text(*self.session.goal.spent())
        if self.goal_status:
            line.append(f" · {self.goal_status}", style="magenta")
        self.print_text(line)
        self.renderer.reset_section()

    def status(self) -> str:
        """One line for a status bar: what runs now, and how to steer or stop it."""
        job = self.job
        if self.question is not None:
            return "answer above · Esc or Ctrl+C declines"
        if job is None:
            return ""
        if job.aborting:
            return "aborting…"
        if job.kind == "run":
            activity = self.renderer.activity or "working"  # the text itself is in place, above
            return f"{activity} · Enter steers · Alt+Enter queues · Esc aborts"
        what = {
            "compact": "compacting",
            "shell": "running a shell command",
            "tree": "summarising the branch",
            "rewind": "rewinding",
        }
        return f"{what.get(job.kind, job.kind)} · Ctrl+C aborts"

    def recap(self) -> None:
        """The earlier conversation of a resumed session: its last turns, tool output
        folded (docs/interactive.md), then the footer."""
        Recap(self.renderer).show(self.session.messages, self.app.settings.resume_turns)
        self.print_footer()

    def banner(self) -> None:
        s = self.session
        store = s.store
        where = str(store.path) if store.path is not None else "in memory (--no-session)"
        self.print_text(Text(f"heron {__version__} · {s.model.ref} · {self.app.cwd}", style="bold"))
        self.print_text(Text(f"session {where}", style="dim"))
        self.print_text(Text(context_files_line(s.context_files, self.app.cwd), style="dim"))
        count = len(s.messages)
        if count:
            self.print_text(Text(f"resumed: {count} messages in the context", style="dim"))
            self.recap()
        self.print_text(Text("Enter sends · Ctrl+J newline · /help commands · Esc aborts · Ctrl+D exits", style="dim"))

    # --- jobs -----------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.job is not None

    def start_job(self, kind: str, work: Awaitable[Any], abort: Callable[[], object] | None = None) -> Job:
        task = asyncio.ensure_future(work)

        def cancel() -> None:
            task.cancel()

        job = Job(kind=kind, task=task, abort=abort or cancel)
        self.job = job
        task.add_done_callback(lambda t: self._job_done(job, t))
        self.changed()
        return job

    def _job_done(self, job: Job, task: asyncio.Task[Any]) -> None:
        if self.job is job:
            self.job = None
        if task.cancelled():
            self.note(f"{job.kind} cancelled", "yellow")
        else:
            exc = task.exception()
            if exc is not None and job.kind != "run":  # a run's failure is in its outcome
                log.debug("%s failed", job.kind, exc_info=exc)  # the user sees the message below
                self.error(f"{job.kind} failed: {exc}")
        if job.kind == "run":
            run, self._run = self._run, None
            self._after_run(run.result() if run is not None and run.task is task else None)
        elif job.kind in ("compact", "tree"):
            self.print_footer()
        self.changed()

    def _after_run(self, outcome: RunOutcome | None) -> None:
        """The end of a run, from its outcome: what the answers shown did not say (a session
        that could not be saved, an internal error, an overflow compaction could not cure),
        and the steering messages that were not sent, back in the input."""
        if outcome is not None and outcome.error_kind in (RunFailure.SAVE_FAILED, RunFailure.INTERNAL):
            self.error(outcome.explanation or "the run failed")
        elif outcome is not None and outcome.error_kind == ErrorKind.OVERFLOW:
            self.note(OVERFLOW_HINT, "yellow")  # the failed answer's own error is shown already
        texts = list(outcome.unsent) if outcome is not None else []
        if texts:
            self.note(
                f"{len(texts)} steering message(s) not delivered before the run ended: back in the input", "yellow"
            )
            self.set_prefill("\n".join(texts))
        self.print_footer()

    async def wait(self) -> None:
        """Until no job runs, or the job asks a question (the line-by-line mode and tests:
        the next line is its answer)."""
        while self.job is not None and self.question is None:
            await asyncio.wait({self.job.task}, timeout=0.05)
            await asyncio.sleep(0)  # let the done callback run

    async def ask_line(self, label: str, say: str | None = None, keys: str = "") -> str | None:
        """The next line the user submits, as the answer to a question (``say`` is printed
        first, in full; ``label`` becomes the input line's prompt, kept short because the
        terminal redraws it); None when they press Ctrl+C or Esc, or the input ends.
        Questions are asked one at a time: a second waits for the first. ``keys``
        answer at once when pressed alone on an empty line (:meth:`answer_key`)."""
        while self.question is not None and not self.quit_requested:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.shield(self.question.answer)
            await asyncio.sleep(0)
        if self.quit_requested:
            return None
        if say:
            self.print_text(Text(say, style="bold"))
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        question = Question(label, future, keys)
        self.question = question
        self.changed()
        try:
            return await future
        finally:
            if self.question is question:
                self.question = None
            self.changed()

    def answer_question(self, text: str | None) -> bool:
        """Give the waiting question its answer; False when none waits."""
        question = self.question
        if question is None or question.answer.done():
            return False
        question.answer.set_result(text)
        self.question = None  # at once: the next line is not for it (the asker resumes later)
        return True

    def answer_key(self, key: str) -> bool:
        """A single-key answer (``y`` at a permission question): shown as if typed, then
        given; False when no question waits for that key."""
        question = self.question
        if question is None or key not in question.keys:
            return False
        self.print_text(Text(f"{question.label}{key}", style="dim"))
        return self.answer_question(key)

    def interrupt(self) -> bool:
        """Ctrl+C: abort the job; False when there is none (or it is already aborting),
        so the front end clears the input instead. A question waiting is declined instead."""
        if self.answer_question(None):
            return True
        if self.quit_requested:  # exiting: what is left (a memory reflection) is dropped
            self.session.abort()
            return True
        job = self.job
        if job is None or job.aborting:
            return False
        job.aborting = True
        if job.kind == "run":
            self.renderer.retries.cancel()  # a retry being waited for is cancelled, not "succeeded"
        job.abort()
        self.changed()
        return True

    async def shutdown(self) -> None:
        self.quit_requested = True  # no further questions: each would be declined
        self.answer_question(None)
        if self.job is not None:
            self.job.aborting = True
            self.job.abort()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.wait(), timeout=10)
        if self.session.control.memory_watch.end_pass_due:  # memory.reflect: end (docs/memory.md)
            self.note("reflecting on the project memory before exiting (Ctrl+C drops the pass)", "dim")
        await self.session.context_owner.finish_background(wait=False)  # a summary that came back is kept

    def set_prefill(self, text: str) -> None:
        if self.place_in_input is not None and self.place_in_input(text):
            return
        self.prefill = f"{self.prefill}\n{text}" if self.prefill else text

    def take_prefill(self) -> str:
        text, self.prefill = self.prefill, ""
        return text

    # --- input ------------------------------------------------------------------------

    def start_run(self, text: str, images: Sequence[ImageContent] = (), *, resend: bool = False) -> None:
        self.renderer.reset_section()
        self.renderer.retries.reset()
        run = self._run = Run(self.session, text, images, resolved=self.app.resolved, resend=resend)
        self.start_job("run", run.task, abort=run.abort)

    async def submit(self, text: str) -> None:
        """Handle one submitted line. Long work starts a job and returns at once. While a
        question waits, the line is its answer."""
        if self.answer_question(text):
            return
        if not text.strip():
            return
        parsed = parse_input(text)
        if self.job is not None:
            await self._submit_while_busy(parsed)
            return
        if isinstance(parsed, Shell):
            self.start_shell(parsed.command, keep=parsed.keep)
        elif isinstance(parsed, Command):
            await self.run_command(parsed)
        elif parsed.slash is not None:
            self._slash_prompt(parsed)
        else:
            self._start_with_files(parsed.text)

    def _start_with_files(self, text: str) -> None:
        """A prompt with its ``@file`` mentions and pasted image paths attached."""
        attached = attach(text, self.app.cwd, self.session.model)
        for note in attached.notes:
            self.note(note, "yellow")
        if attached.files:
            self.note(f"attached: {', '.join(attached.files)}", "dim")
        self.start_run(attached.text, attached.images)

    def _slash_prompt(self, parsed: Prompt) -> None:
        """``/skill:name``, a prompt template or an extension's command: the session expands
        (or runs) it when prompting."""
        if self.session.extensions.commands.match(parsed.text) is not None or is_goal_command(parsed.text):
            self.start_run(parsed.text)  # /goal: answered by the session, as in every mode
            return
        try:
            expanded = self.session.expand_input(parsed.text)
        except SkillNotFoundError as exc:
            self.error(str(exc))
            return
        if expanded == parsed.text:
            self.error(f"unknown command /{parsed.slash} (/help lists the commands)")
            return
        self.start_run(parsed.text)

    async def _submit_while_busy(self, parsed: Command | Shell | Prompt) -> None:
        job = self.job
        assert job is not None
        if isinstance(parsed, Command) and COMMANDS[parsed.name].while_running:
            await self.run_command(parsed)
            return
        if isinstance(parsed, Prompt) and is_goal_command(parsed.text):
            self.note(f"busy ({job.kind}): /goal waits until the run ends", "yellow")
            return
        if isinstance(parsed, Prompt) and job.kind == "run" and not job.aborting:
            try:
                text = self.session.expand_input(parsed.text)
            except SkillNotFoundError as exc:
                self.error(str(exc))
                return
            self.session.steer(text)
            first = text.strip().splitlines()[0] if text.strip() else ""
            self.note(f"↳ steering queued: {first[:80]} (delivered before the next step)", "cyan")
            return
        self.note(f"busy ({job.kind}): wait for it to finish, or press Ctrl+C to abort it", "yellow")

    def queue_follow_up(self, text: str) -> bool:
        """Alt+Enter while a run works: ``text`` is delivered when the agent would stop
        (pi's follow-up), not before its next step like Enter's steering. False when no
        run is going (the caller submits the line as usual)."""
        job = self.job
        if job is None or job.kind != "run" or job.aborting or not text.strip() or is_goal_command(text):
            return False  # /goal: submitted as usual, which says it waits for the run
        expanded = self.session.expand_input(text)
        self.session.follow_up(expanded)
        first = expanded.strip().splitlines()[0]
        self.note(f"↳ follow-up queued: {first[:80]} (delivered when this run would stop)", "cyan")
        return True

    def _reset_window(self) -> None:
        if self.busy:
            self.error("/context reset-window: wait for the run to end (or Esc)")
            return
        dropped = self.session.context_owner.forget_learned_window("the user asked for it (/context reset-window)")
        if dropped is None:
            self.note(f"no window was learnt for {self.session.policy.sizes.model_key}: nothing to reset")
        else:
            self.note(
                f"forgot the learnt window of {dropped:,} tokens; planning with {self.session.policy.sizes.window:,}"
            )

    # --- shell commands ---------------------------------------------------------------

    def start_shell(self, command: str, *, keep: bool) -> None:
        if not command:
            self.error("usage: !command (output joins the context) or !!command (shown only)")
            return
        controller = AbortController()
        self.start_job("shell", self._shell(command, keep, controller.signal), abort=controller.abort)

    async def _shell(self, command: str, keep: bool, signal: AbortSignal) -> None:
        s = self.session
        self.renderer.reset_section()
        tool = BashTool(s.env)
        call_id = f"user-{time.time_ns()}"
        result = await tool.execute(call_id, BashParams(command=command), signal, lambda _partial: None)
        message = bash_message(command, result, keep=keep)
        s.agent.messages.append(message)
        s.store.append_message(message)
        self.renderer.shell_result(message)

    # --- slash commands ---------------------------------------------------------------

    async def run_command(self, command: Command) -> None:
        try:
            result = self._handlers[command.name](command.args)
            if asyncio.iscoroutine(result):
                await result
        except (SessionError, LookupError, ValueError, OSError) as exc:
            self.error(f"/{command.name}: {exc}")

    def _cmd_help(self, args: str) -> None:
        self.renderer.reset_section()
        self.print_text(Text("Commands", style="bold"))
        for line in help_lines():
            self.print_text(Text(line))
        s = self.session
        skills = [f"/skill:{skill.name}" for skill in s.skills.skills]
        templates = [f"/{t.name}" for t in s.templates.sorted()]
        if skills:
            self.print_text(Text("  skills: " + " ".join(skills), style="dim"))
        if templates:
            self.print_text(Text("  templates: " + " ".join(templates), style="dim"))
        if commands := [f"/{name}" for name, _ in s.extensions.commands.names()]:
            self.print_text(Text("  extension commands: " + " ".join(commands), style="dim"))

    def _cmd_quit(self, args: str) -> None:
        self.quit_requested = True
        if self.job is not None:
            self.interrupt()

    def _cmd_compact(self, args: str) -> None:
        self.renderer.reset_section()
        self.start_job("compact", self.session.compact(args.strip() or None))

    def _cmd_context(self, args: str) -> None:
        self.renderer.reset_section()
        if args.strip() == "reset-window":
            self._reset_window()
            return
        if args.strip():
            self.error("usage: /context, or /context reset-window (forget a window learnt from a rejection)")
            return
        self.print_text(Text(format_context(self.session.context_breakdown(), curve=context_curve(self.session))))
        for line in context_file_lines(self.session.context_files, self.app.cwd):
            self.print_text(Text(line))
