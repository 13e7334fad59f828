"""The interactive session's logic, without a terminal: what a submitted line does.

:class:`Controller` owns the one background job that may run at a time (an agent run,
a compaction, a ``!command``, a tree move with a summary) so the input line stays live
while it works: Enter during a run steers, Ctrl+C aborts the job. The prompt_toolkit
front end (:mod:`heron.cli.modes.interactive`) and the line-by-line fallback for a
non-terminal stdin both drive it through :meth:`Controller.submit`, and tests drive it
directly with a recording console.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from heron.ai.abort import AbortController, AbortSignal
from heron.ai.models import ENV_API_KEYS, ModelNotFoundError, env_api_key
from heron.ai.types import AssistantMessage, ImageContent, Model, TextContent, ThinkingLevel, UserMessage
from heron.cli.app import App
from heron.cli.notices import explain_error
from heron.cli.sessions_cmd import render_tree
from heron.cli.tui.commands import COMMANDS, Command, Prompt, Shell, help_lines, parse_input
from heron.cli.tui.context_view import format_context
from heron.cli.tui.controller_parts import Job, session_rows
from heron.cli.tui.controller_parts import bash_message as bash_message
from heron.cli.tui.export import default_export_path, write_export
from heron.cli.tui.render import Renderer, Totals, footer_text, format_tokens
from heron.coding.runtime import CodingSession
from heron.coding.settings import CUSTOM_PROVIDER, ResolvedModel, SetupError, resolve_model
from heron.coding.skills import SkillNotFoundError
from heron.coding.tools.bash import BashParams, BashTool
from heron.session.entries import MessageEntry
from heron.session.paths import SessionSummary, list_sessions
from heron.session.store import SessionError, SessionStore

log = logging.getLogger(__name__)

THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")
MODELS_LISTED = 60
SESSIONS_LISTED = 30
TREE_LINES = 400


class Controller:
    def __init__(self, app: App, console: Console) -> None:
        self.app = app
        self.console = console
        self.renderer = Renderer(console)
        self.renderer.totals = Totals.of(app.session.messages)
        self.job: Job | None = None
        self.quit_requested = False
        # text for the next input line (a message to edit after /tree, undelivered steering)
        self.prefill = ""
        # set by the front end: put text into the input line being edited; False if none is
        self.place_in_input: Callable[[str], bool] | None = None
        # set by the front end: something shown in the status line changed
        self.on_change: Callable[[], None] | None = None
        self._listing: list[SessionSummary] = []
        self._activity = ""
        self._footer: tuple[tuple[Any, ...], Text] | None = None
        self.renderer.explain = lambda message: explain_error(message, self.app.resolved)
        app.session.subscribe(self._on_event)

    @property
    def session(self) -> CodingSession:
        return self.app.session

    # --- output --------------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        self.renderer.handle(event)
        if self.renderer.activity != self._activity:
            self._activity = self.renderer.activity
            self._changed()
        elif getattr(event, "type", "") == "message_update":
            self._changed()  # the live line shows the text not printed yet

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def _print(self, text: Text) -> None:
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
        key = (len(messages), id(messages[-1]) if messages else 0, s.model.ref, s.model.context_window,
               s.thinking_level, totals.input, totals.output, totals.cost, id(s.store))
        if self._footer is None or self._footer[0] != key:
            tokens = s.estimate_request_tokens(messages)
            text = footer_text(s.model.id, totals, tokens, s.model.context_window, s.threshold, s.thinking_level)
            self._footer = (key, text)
        return self._footer[1].copy()

    def print_footer(self) -> None:
        self.renderer.reset_section()
        line = Text("─ " if self.renderer.bullet == "●" else "- ", style="dim")
        line.append_text(self.footer())
        self._print(line)
        self.renderer.reset_section()

    def status(self) -> str:
        """One line for a status bar: what runs now, and how to steer or stop it."""
        job = self.job
        if job is None:
            return ""
        if job.aborting:
            return "aborting…"
        if job.kind == "run":
            activity = self.renderer.activity or "working"
            live = self.renderer.live_text()
            if live:
                return f"{activity}: {live}"
            return f"{activity} · Enter steers · Alt+Enter queues · Esc aborts"
        what = {"compact": "compacting", "shell": "running a shell command", "tree": "summarising the branch"}
        return f"{what.get(job.kind, job.kind)} · Ctrl+C aborts"

    def banner(self) -> None:
        from heron import __version__

        s = self.session
        store = s.store
        where = str(store.path) if store.path is not None else "in memory (--no-session)"
        self._print(Text(f"heron {__version__} · {s.model.ref} · {self.app.cwd}", style="bold"))
        self._print(Text(f"session {where}", style="dim"))
        count = len(s.messages)
        if count:
            self._print(Text(f"resumed: {count} messages in the context", style="dim"))
        self._print(Text(
            "Enter sends · Ctrl+J newline · /help commands · Esc aborts · Ctrl+D exits", style="dim"))

    # --- jobs -----------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.job is not None

    def start_job(self, kind: str, work: Coroutine[Any, Any, Any], abort: Callable[[], None] | None = None) -> Job:
        task = asyncio.ensure_future(work)

        def cancel() -> None:
            task.cancel()

        job = Job(kind=kind, task=task, abort=abort or cancel)
        self.job = job
        task.add_done_callback(lambda t: self._job_done(job, t))
        self._changed()
        return job

    def _job_done(self, job: Job, task: asyncio.Task[Any]) -> None:
        if self.job is job:
            self.job = None
        if task.cancelled():
            self.note(f"{job.kind} cancelled", "yellow")
        else:
            exc = task.exception()
            if exc is not None:
                log.debug("%s failed", job.kind, exc_info=exc)  # the user sees the message below
                self.error(f"{job.kind} failed: {exc}")
        if job.kind == "run":
            self._after_run()
        elif job.kind in ("compact", "tree"):
            self.print_footer()
        self._changed()

    def _after_run(self) -> None:
        leftover = self.session.agent.clear_queues()
        texts = [m.text() for m in leftover if isinstance(m, UserMessage)]
        if texts:
            self.note(f"{len(texts)} steering message(s) not delivered before the run ended: back in the input",
                      "yellow")
            self.set_prefill("\n".join(texts))
        self.print_footer()

    async def wait(self) -> None:
        """Until no job runs (the line-by-line mode and tests)."""
        while self.job is not None:
            await asyncio.wait({self.job.task})
            await asyncio.sleep(0)  # let the done callback run

    def interrupt(self) -> bool:
        """Ctrl+C: abort the job; False when there is none (or it is already aborting),
        so the front end clears the input instead."""
        job = self.job
        if job is None or job.aborting:
            return False
        job.aborting = True
        if job.kind == "run":
            self.renderer.retries.cancel()  # a retry being waited for is cancelled, not "succeeded"
        job.abort()
        self._changed()
        return True

    async def shutdown(self) -> None:
        if self.job is not None:
            self.job.aborting = True
            self.job.abort()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.wait(), timeout=10)

    def set_prefill(self, text: str) -> None:
        if self.place_in_input is not None and self.place_in_input(text):
            return
        self.prefill = f"{self.prefill}\n{text}" if self.prefill else text

    def take_prefill(self) -> str:
        text, self.prefill = self.prefill, ""
        return text

    # --- input ------------------------------------------------------------------------

    def start_run(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        self.renderer.reset_section()
        self.renderer.retries.reset()
        self.start_job("run", self.session.prompt(text, list(images)), abort=self.session.abort)

    async def submit(self, text: str) -> None:
        """Handle one submitted line. Long work starts a job and returns at once."""
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
            self.start_run(parsed.text)

    def _slash_prompt(self, parsed: Prompt) -> None:
        """``/skill:name`` or a prompt template: the session expands it when prompting."""
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
        if job is None or job.kind != "run" or job.aborting or not text.strip():
            return False
        expanded = self.session.expand_input(text)
        self.session.follow_up(expanded)
        first = expanded.strip().splitlines()[0]
        self.note(f"↳ follow-up queued: {first[:80]} (delivered when this run would stop)", "cyan")
        return True

    def cycle_model(self) -> None:
        """Ctrl+P: the next of :meth:`available_models` (those with a key, or needing none)."""
        models = self.available_models()
        if len(models) < 2:
            self.note("no other model to switch to (/model lists them)")
            return
        current = self.session.model
        refs = [m.ref for m in models]
        following = models[(refs.index(current.ref) + 1) % len(models)] if current.ref in refs else models[0]
        self._cmd_model(following.ref)

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
        handler = getattr(self, "_cmd_" + command.name)
        try:
            result = handler(command.args)
            if asyncio.iscoroutine(result):
                await result
        except (SessionError, LookupError, ValueError, OSError) as exc:
            self.error(f"/{command.name}: {exc}")

    def _cmd_help(self, args: str) -> None:
        self.renderer.reset_section()
        self._print(Text("Commands", style="bold"))
        for line in help_lines():
            self._print(Text(line))
        s = self.session
        skills = [f"/skill:{skill.name}" for skill in s.skills.skills]
        templates = [f"/{t.name}" for t in s.templates.sorted()]
        if skills:
            self._print(Text("  skills: " + " ".join(skills), style="dim"))
        if templates:
            self._print(Text("  templates: " + " ".join(templates), style="dim"))

    def _cmd_quit(self, args: str) -> None:
        self.quit_requested = True
        if self.job is not None:
            self.interrupt()

    # /model

    def available_models(self) -> list[Model]:
        """Models of the current provider, of providers with a key in the environment,
        and of providers that need none (local servers from models.json)."""
        current = self.session.model
        out = [current]
        for model in self.app.registry.all():
            if (model.provider, model.id) == (current.provider, current.id):
                continue
            if model.provider == current.provider or model.provider not in ENV_API_KEYS or env_api_key(model.provider):
                out.append(model)
        return out

    def resolve(self, ref: str) -> ResolvedModel:
        """A model for ``/model ref``, with its API key. An id the catalogue lacks, while
        the current model is a ``--base-url`` one, is taken as another model of that server."""
        current = self.session.model
        cli_key = getattr(self.app.args, "api_key", None)
        try:
            model = self.app.registry.find(ref)
        except ModelNotFoundError:
            if current.provider == CUSTOM_PROVIDER and current.base_url:
                # "custom/other-model" names the server's model "other-model": the
                # provider prefix is heron's, the server never knew it
                prefix = f"{CUSTOM_PROVIDER}/"
                model_id = ref[len(prefix):] if ref.startswith(prefix) else ref
                custom = dataclasses.replace(current, id=model_id, name=model_id)
                return ResolvedModel(custom, self.session.api_key, "/model", self.app.resolved.key_source)
            raise
        key = cli_key if cli_key and model.provider == current.provider else None
        return resolve_model(self.app.settings, self.app.registry, model.ref, None, key)

    def _cmd_model(self, args: str) -> None:
        s = self.session
        ref = args.strip()
        if not ref:
            models = self.available_models()
            self.renderer.reset_section()
            self._print(Text(f"model: {s.model.ref} (window {format_tokens(s.model.context_window)})",
                                    style="bold"))
            for model in models[:MODELS_LISTED]:
                mark = "*" if model is s.model or (model.provider, model.id) == (s.model.provider, s.model.id) else " "
                extra = " reasoning" if model.reasoning else ""
                self._print(Text(f" {mark} {model.ref}  ({format_tokens(model.context_window)}{extra})"))
            if len(models) > MODELS_LISTED:
                self._print(Text(f"   … {len(models) - MODELS_LISTED} more (Tab completes /model names)",
                                        style="dim"))
            self._print(Text("switch with /model provider/id", style="dim"))
            return
        try:
            resolved = self.resolve(ref)
        except SetupError as exc:
            self.error(str(exc))
            return
        s.set_model(resolved.model, resolved.api_key)
        self.app.resolved = resolved  # what a refused key is explained from
        self.note(f"model: {resolved.model.ref} (window {format_tokens(resolved.model.context_window)})", "green")

    def _cmd_thinking(self, args: str) -> None:
        s = self.session
        level = args.strip().lower()
        if not level:
            self.note(f"thinking: {s.thinking_level} (levels: {', '.join(THINKING_LEVELS)})", "")
            return
        chosen = next((known for known in THINKING_LEVELS if known == level), None)
        if chosen is None:
            self.error(f"unknown thinking level {level!r}; use one of {', '.join(THINKING_LEVELS)}")
            return
        s.set_thinking_level(chosen)
        hint = "" if s.model.reasoning or level == "off" else " (this model does not declare reasoning support)"
        self.note(f"thinking: {level}{hint}", "green")

    def _cmd_compact(self, args: str) -> None:
        self.renderer.reset_section()
        self.start_job("compact", self.session.compact(args.strip() or None))

    def _cmd_context(self, args: str) -> None:
        self.renderer.reset_section()
        self._print(Text(format_context(self.session.context_breakdown())))

    # /tree, /fork

    def _entry_target(self, number: str) -> tuple[str | None, str | None, int]:
        """Where entry ``number`` puts the leaf, and the text to edit: choosing a user
        message goes to just before it, with the message back in the input to edit."""
        store: SessionStore = self.session.store
        if not number.isdigit():
            raise ValueError(f"not an entry number: {number!r} (/tree shows the numbers)")
        index = int(number)
        ids = store.ids()
        if not 0 <= index < len(ids):
            raise ValueError(f"no entry {index}; the session has entries 0-{len(ids) - 1}")
        entry = store.entry_at(index)
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
            text = "".join(b.text for b in entry.message.content if isinstance(b, TextContent)) \
                if not isinstance(entry.message.content, str) else entry.message.content
            return store.parent_id_of(ids[index]), text, index
        return ids[index], None, index

    async def _cmd_tree(self, args: str) -> None:
        s = self.session
        words = args.split()
        if not words:
            store: SessionStore = s.store
            if len(store) == 0:
                self.note("the session has no entries yet")
                return
            lines = render_tree(store, width=max(20, self.console.width - 40))
            self.renderer.reset_section()
            if len(lines) > TREE_LINES:
                self._print(Text(f"… {len(lines) - TREE_LINES} earlier lines", style="dim"))
                lines = lines[-TREE_LINES:]
            for line in lines:
                self._print(Text(line, style="bold" if line.endswith("<- leaf") else ""))
            self._print(Text("/tree N moves to entry N; /tree N --summary also summarises the branch left",
                                    style="dim"))
            return
        summarize = any(w in ("--summary", "-s") for w in words[1:])
        target, text, index = self._entry_target(words[0])
        if summarize:
            self.start_job("tree", self._navigate(target, True, text, index))
        else:
            await self._navigate(target, False, text, index)

    async def _navigate(self, target: str | None, summarize: bool, text: str | None, index: int) -> None:
        summary = await self.session.navigate(target, summarize=summarize)
        where = f"entry {index}" if text is None else f"just before entry {index} (its text is in the input)"
        self.note(f"moved to {where}; {len(self.session.messages)} messages in the context", "green")
        if summary:
            self.note("the branch left behind was summarised into the context", "green")
        if text is not None:
            self.set_prefill(text)

    def _switch(self, store: SessionStore, what: str) -> None:
        s = self.session
        old = s.store
        s.switch_store(store)
        if old is not store:
            old.close()
        self.renderer.totals = Totals.of(s.messages)
        where = str(store.path) if store.path is not None else "in memory"
        self.note(f"{what}: {where} ({len(s.messages)} messages in the context)", "green")

    def _cmd_fork(self, args: str) -> None:
        number = args.strip()
        if not number:
            self._switch(self.app.fork_store(None), "forked")
            return
        target, text, _ = self._entry_target(number)
        if target is None:  # before the first entry: nothing to copy
            self._switch(self.app.new_store(), "new session")
        else:
            self._switch(self.app.fork_store(target), "forked")
        if text is not None:
            self.set_prefill(text)

    def _cmd_new(self, args: str) -> None:
        self._switch(self.app.new_store(), "new session")

    def _cmd_resume(self, args: str) -> None:
        ref = args.strip()
        current = self.session.store.path
        if not ref:
            self._listing = list_sessions(self.app.cwd, home=self.app.home)[:SESSIONS_LISTED]
            if not self._listing:
                self.note("no saved sessions for this directory")
                return
            self.renderer.reset_section()
            for number, summary in enumerate(self._listing, 1):
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(summary.modified))
                title = summary.name or " ".join((summary.first_message or "(no messages)").split())[:60]
                mark = "*" if current is not None and summary.path == current else " "
                self._print(Text(
                    f"{mark}{number:>3}. {when}  {summary.id[:8]}  {summary.message_count:>4} msgs  {title}"))
            self._print(Text("/resume N or /resume <id prefix> switches", style="dim"))
            return
        path: Path | None = None
        if ref.isdigit() and len(ref) <= 3:
            listing = self._listing or list_sessions(self.app.cwd, home=self.app.home)[:SESSIONS_LISTED]
            if 1 <= int(ref) <= len(listing):
                path = listing[int(ref) - 1].path
        if path is not None and current is not None and path.resolve() == current.resolve():
            self.note("that is the current session")
            return
        if path is not None:
            store = SessionStore.open(path)
        else:
            from heron.session.paths import resolve_session

            found = resolve_session(ref, home=self.app.home)
            if current is not None and found.resolve() == current.resolve():
                self.note("that is the current session")
                return
            store = SessionStore.open(found)
        self._switch(store, "resumed")
        self._recap()

    def _recap(self) -> None:
        """The last exchange of a resumed session, so the user knows where it stopped."""
        messages = self.session.messages
        last_user = next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
        last_answer = next((m for m in reversed(messages) if isinstance(m, AssistantMessage) and m.text().strip()),
                           None)
        if last_user is not None:
            first = last_user.text().strip().splitlines()[0] if last_user.text().strip() else ""
            self.note(f"last prompt: {first[:100]}")
        if last_answer is not None:
            self.renderer.reset_section()
            text = last_answer.text().strip()
            lines = text.splitlines()
            if len(lines) > 20:
                text = "\n".join(lines[:20]) + "\n\n…"
            self.console.print(Markdown(text, hyperlinks=False))
        self.print_footer()

    def _cmd_session(self, args: str) -> None:
        self.renderer.reset_section()
        for key, value in session_rows(self.session, self.renderer.totals):
            self._print(Text(f"{key:>11}: {value}"))

    def _cmd_name(self, args: str) -> None:
        store: SessionStore = self.session.store
        name = args.strip()
        if not name:
            self.note(f"name: {store.name}" if store.name else "the session has no name; /name NAME sets one", "")
            return
        store.set_name(name)
        self.note(f"session named {name!r}", "green")

    def _cmd_export(self, args: str) -> None:
        store: SessionStore = self.session.store
        raw = args.strip()
        path = Path(raw).expanduser() if raw else default_export_path(self.app.cwd, store.session_id)
        if not path.is_absolute():
            path = self.app.cwd / path
        written = write_export(store, path, model=self.session.model.ref)
        self.note(f"exported to {written}", "green")
