"""From parsed arguments to a running mode: the command's entry and dispatch.

The arguments become a :class:`~heron.coding.session_spec.SessionSpec` and the session is
built by the assembly every mode shares (:func:`heron.coding.assembly.assemble_session`);
what a mode is given (:class:`~heron.cli.app_state.App`), the task (:mod:`heron.cli.task_input`)
and the argument checks (:mod:`heron.cli.usage`) live in modules of their own, so the modes
never import this one, which imports them.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from heron.ai.models import ModelRegistry, heron_home
from heron.ai.types import TextContent, UserMessage
from heron.cli import boot
from heron.cli.app_state import App, store_spec
from heron.cli.clean_input import clean_arguments
from heron.cli.task_input import Task, gather_task, resend_task
from heron.cli.terminal_text import visible
from heron.cli.usage import UsageError, check_arguments
from heron.coding.prompt import resolve_prompt_text
from heron.coding.secrets import REDACTOR, install_log_redaction
from heron.coding.session_spec import ModelChoice, SessionSpec, tool_names
from heron.coding.settings import SetupError, setup_help
from heron.context.continuity.goal import GoalError, check_text, parse_budget
from heron.session.jsonl import clean_text
from heron.session.store import SessionError

if TYPE_CHECKING:
    from heron.coding.tracing import TracedSession


def warn(text: str) -> None:
    print(visible(f"heron: warning: {text}"), file=sys.stderr)


def build_app(args: argparse.Namespace, task: Task | None = None) -> App:
    """The session the arguments describe; ``task``, the prompt it will be sent first, is
    written to the session file before any network call (heron.coding.first_prompt)."""
    cwd = Path(args.cwd).expanduser().resolve() if args.cwd else Path.cwd()
    if not cwd.is_dir():
        raise UsageError(f"--cwd {args.cwd}: not a directory")
    os.chdir(cwd)
    home = heron_home()
    spec = SessionSpec(
        cwd=cwd,
        model=ModelChoice(
            args.model,
            args.base_url,
            args.api_key,
            getattr(args, "api", None),
            getattr(args, "context_window", None),
            getattr(args, "max_tokens", None),
        ),
        home=home,
        tools=tool_names(args.tools),
        thinking_level=args.thinking,
        # a value naming an existing file is that file's content
        system_prompt=_prompt_text(args.system_prompt, cwd),
        append_system_prompt=_prompt_text(args.append_system_prompt, cwd),
        trust=bool(getattr(args, "trust", False)),
        permission_mode=getattr(args, "permission_mode", None),
        sandbox=getattr(args, "sandbox", None),
        allow=tuple(getattr(args, "allow", None) or ()),
        mcp=True,
        first_prompt=_first_prompt(task),
    )
    goal = _goal_flags(args)
    # imported here: a set-up error is reported without loading the agent
    from heron.coding.assembly import assemble_session, resolve_spec

    if args.resume and not args.no_session:
        spec = _resume_spec(args, spec, cwd, home)
    else:  # the session file first: a resumed session's own server is the model's default
        spec = resolve_spec(dataclasses.replace(spec, store=store_spec(args, cwd, home)), warn)
    session = assemble_session(spec, warn)
    from heron.coding.run_limits import apply_max_turns

    apply_max_turns(
        session.agent, session.settings, getattr(args, "max_turns", None), interactive=args.mode == "interactive"
    )
    if goal is not None:
        session.goal.adopt(*goal)
    if (goal_turns := getattr(args, "goal_turns", None)) is not None:
        session.goal_loop.max_turns = goal_turns  # checked by check_arguments
    _trace(session, getattr(args, "otel", None))
    assert spec.settings is not None and spec.registry is not None  # resolved above
    return App(
        args=args,
        cwd=cwd,
        home=home,
        settings=spec.settings,
        registry=spec.registry,
        resolved=spec.resolved,
        session=session,
        mcp=session.mcp,
    )


def _first_prompt(task: Task | None) -> UserMessage | None:
    """The task as the prompt message it becomes (None: no task, or one sent again)."""
    if not task or task.resend:
        return None
    return UserMessage(content=[TextContent(text=task.text), *task.images])


def _goal_flags(args: argparse.Namespace) -> tuple[str, int | None] | None:
    """``--goal`` and ``--goal-budget``, checked before any session is opened."""
    text, budget = getattr(args, "goal", None), getattr(args, "goal_budget", None)
    if text is None and budget is None:
        return None

    try:
        if text is None:
            raise GoalError("--goal-budget needs --goal TEXT (in a session: /goal --budget N)")
        return check_text(text), parse_budget(budget) if budget is not None else None
    except GoalError as exc:
        raise UsageError(f"--goal: {exc}") from None


def _resume_spec(args: argparse.Namespace, spec: SessionSpec, cwd: Path, home: Path) -> SessionSpec:
    """``--resume``: settings and model first, so the picker asks only when they work -
    unless no model flag was given, when the picked session's own server may be the
    model (docs/sessions.md, "Resuming")."""
    from heron.coding.assembly import resolve_spec

    shown: set[str] = set()

    def warn_once(text: str) -> None:
        """Resolving twice says the same things twice; what only the picked session's
        resolve says (its own server's probe, its model) is still shown."""
        if text not in shown:
            shown.add(text)
            warn(text)

    try:
        resolve_spec(spec, warn_once)
    except SetupError:
        if args.model or args.base_url:
            raise
    return resolve_spec(dataclasses.replace(spec, store=store_spec(args, cwd, home)), warn_once)


def _trace(session: TracedSession, otel: str | None) -> None:
    """``--otel console`` or an OTLP endpoint in the environment: spans of every run
    (docs/tracing.md). Without either, OpenTelemetry is never imported."""
    from heron.coding.tracing_switch import tracing_mode

    mode = tracing_mode(otel)
    if mode is None:
        return
    from heron.coding.tracing import missing_packages

    problem = missing_packages(mode)
    if problem is not None:
        print(f"heron: warning: {problem}; running without traces", file=sys.stderr)
        return

    from heron.coding.tracing import SessionTracer, flush_tracing, get_tracer

    SessionTracer(session, get_tracer(mode))
    atexit.register(flush_tracing)


def _prompt_text(value: str | None, cwd: Path) -> str | None:
    """A ``--system-prompt`` value: the text, or the content of the file it names."""
    return clean_text(resolve_prompt_text(value, cwd)) if value is not None else None


def _hand_off(app: App, task: Task) -> Task:
    """``-p --continue --handoff [focus]``: the child of the continued session becomes the
    session, and its draft first prompt (the focus, else the default) is the task: print
    mode is not interactive, so the draft is sent as it is (docs/sessions.md, "Handoff")."""
    from heron.coding.handoff import HandoffError, hand_off

    try:
        made = hand_off(app.session, task.text)
    except HandoffError as exc:
        raise UsageError(f"--handoff: {exc}") from None
    app.switch(made.child)
    print(visible(f"heron: handed off to {made.child.path}"), file=sys.stderr)
    return Task(text=made.draft, images=task.images)


def run_app(args: argparse.Namespace) -> int:
    mode = args.mode or ("print" if args.print_prompt is not None else "interactive")
    args.mode = mode
    clean_arguments(args)
    if getattr(args, "setup_help", False):
        print(setup_help(ModelRegistry.load()))
        return 0

    REDACTOR.add([getattr(args, "api_key", None)])  # before any error could quote it; the session adds the rest
    if (log_problem := install_log_redaction()) is not None:
        print(f"heron: warning: {log_problem}", file=sys.stderr)
    if mode == "acp":  # sessions are opened by the editor, each with its own cwd (docs/editors.md)
        if getattr(args, "goal", None) is not None or getattr(args, "goal_budget", None) is not None:
            print("heron: --goal: ACP sessions are opened by the editor; type /goal there", file=sys.stderr)
            return 2
        if getattr(args, "goal_turns", None) is not None:
            print("heron: --goal-turns: ACP sessions take goal.maxTurns from the settings", file=sys.stderr)
            return 2
        from heron.cli.acp.server import run_acp

        return run_acp(args)
    try:
        check_arguments(args, mode)
        cwd = Path(args.cwd).expanduser() if args.cwd else Path.cwd()
        task = gather_task(args, cwd.resolve()) if mode != "rpc" else Task(text="")
        resumed = bool(args.continue_session or args.resume or args.session)
        if mode in ("print", "json") and not task and not resumed:
            raise UsageError('no task given: heron -p "what to do" (or pipe it on stdin)')
        if mode == "interactive":  # before the session starts the project's servers and hooks
            from heron.cli.tui.trust_question import maybe_ask_trust

            maybe_ask_trust(cwd.resolve(), heron_home(), getattr(args, "trust", False))
        handoff = getattr(args, "handoff", False)  # the task is the child's first prompt, not the parent's
        app = build_app(args, task if mode != "rpc" and not handoff else None)
        if handoff:
            task = _hand_off(app, task)
        elif mode in ("print", "json") and not task:  # a resumed session: its unanswered prompt
            task = resend_task(app.session)
    except SetupError as exc:
        text = visible(str(exc))
        print(text if text.startswith("heron") else f"heron: {text}", file=sys.stderr)
        return exc.exit_code
    except (UsageError, SessionError, LookupError, ValueError) as exc:
        print(visible(f"heron: {exc}"), file=sys.stderr)
        return 2
    boot.session_built()  # what start-up made is frozen, collection resumes
    if mode == "print":
        from heron.cli.modes.print_mode import run_print

        return asyncio.run(run_print(app, task))
    if mode == "json":
        from heron.cli.modes.json_mode import run_json

        return asyncio.run(run_json(app, task))
    if mode == "rpc":
        from heron.cli.modes.rpc_mode import run_rpc

        return asyncio.run(run_rpc(app))
    from heron.cli.modes.interactive import run_interactive

    return run_interactive(app, task)
