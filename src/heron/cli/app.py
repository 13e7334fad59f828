"""From parsed arguments to a running mode: settings, model, session file, runtime.

Everything a mode needs is gathered here once (:class:`App`), so the four modes only
present a :class:`CodingSession`; rpc's ``new_session`` / ``switch_session`` / ``fork``
and interactive's ``/new`` and ``/resume`` use the same helpers.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import mimetypes
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from heron.ai.models import ModelRegistry, heron_home
from heron.ai.types import ImageContent
from heron.cli.clean_input import clean_arguments, read_text_stream
from heron.coding.prompt import resolve_prompt_text
from heron.coding.secrets import redact
from heron.coding.settings import (
    SETUP_POINTER,
    ResolvedModel,
    Settings,
    SetupError,
    load_settings,
    resolve_model,
    setup_help,
)
from heron.session.jsonl import clean_text
from heron.session.paths import latest_session, list_sessions, resolve_session
from heron.session.store import SessionError, SessionStore

if TYPE_CHECKING:  # imported in build_app: a set-up error is reported without loading the agent
    from heron.coding.mcp.setup import SessionMcp
    from heron.coding.runtime import CodingSession

IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}


class UsageError(RuntimeError):
    """Bad arguments: the message says what to do instead. Exit code 2."""


@dataclass
class Task:
    """What the user asked, with ``@file`` attachments resolved."""

    text: str
    images: list[ImageContent] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.text.strip() or self.images)


@dataclass
class App:
    args: argparse.Namespace
    cwd: Path
    home: Path
    settings: Settings
    registry: ModelRegistry
    resolved: ResolvedModel
    session: CodingSession
    mcp: SessionMcp | None = None  # the MCP servers of this process (docs/mcp.md)

    def new_store(self) -> SessionStore:
        if self.args.no_session:
            return SessionStore.in_memory(self.cwd)
        return SessionStore.create(self.cwd, home=self.home)

    def open_store(self, ref: str) -> SessionStore:
        path = resolve_session(ref, home=self.home)
        return SessionStore.open(path)

    def fork_store(self, entry_id: str | None) -> SessionStore:
        return self.session.store.fork(entry_id, home=self.home)


def read_attachment(token: str, cwd: Path) -> tuple[str, ImageContent | None]:
    """``@path``: a text file becomes a tagged block of the prompt, an image an image block."""
    path = Path(os.path.expanduser(token[1:]))
    if not path.is_absolute():
        path = cwd / path
    if not path.is_file():
        raise UsageError(f"{token}: no such file")
    mime = mimetypes.guess_type(path.name)[0] or ""
    if mime in IMAGE_TYPES:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f'<file path="{token[1:]}">(image attached)</file>', ImageContent(data=data, mime_type=mime)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{token}: not a text file ({exc.reason})") from exc
    return f'<file path="{token[1:]}">\n{text}\n</file>', None


# How long a task given on the command line waits for piped stdin to show data (or end)
# before going on without it: `producer | heron -p "review"` has its data by then, while
# an open pipe that never writes (a CI runner, a parent process) must not block the run.
STDIN_WAIT_SECONDS = 1.0


def gather_task(args: argparse.Namespace, cwd: Path, stdin: TextIO | None = None) -> Task:
    """The task from ``-p``, the positional words, piped stdin and ``@file`` arguments.

    Piped stdin (print and json modes): with no task on the command line it is the task,
    read to its end; with a task, it is added only if it has data within
    :data:`STDIN_WAIT_SECONDS` - or always, read to its end, when ``-`` is one of the words.
    """
    parts: list[str] = []
    images: list[ImageContent] = []
    files: list[str] = []
    words = list(args.messages)
    if args.print_prompt:
        # `-p` takes the next word as its value, so in `heron -p @main.py "explain"` the
        # attachment is that value: a single @word there is a file like any other.
        words.insert(0, args.print_prompt)
    wants_stdin = "-" in words
    words = [word for word in words if word != "-"]
    for n, word in enumerate(words):
        is_value = n == 0 and bool(args.print_prompt) and word == args.print_prompt
        if word.startswith("@") and len(word) > 1 and not (is_value and any(c.isspace() for c in word)):
            block, image = read_attachment(word, cwd)
            files.append(block)
            if image is not None:
                images.append(image)
        else:
            parts.append(word)
    blocks = [*files, " ".join(parts)]
    stream = stdin if stdin is not None else sys.stdin
    if (
        args.mode in (None, "print", "json")
        and (args.print_prompt is not None or wants_stdin)
        and not _isatty(stream)
        and (wants_stdin or not words or _has_data(stream, STDIN_WAIT_SECONDS))
    ):
        # Piped text is a block of its own: joined to the words with a space, its lines
        # would run into the task ("Explain: <first line of the file>").
        blocks.append(read_text_stream(stream).strip("\n"))
    text = "\n\n".join(block for block in blocks if block.strip())
    return Task(text=clean_text(text.strip()), images=images)


def _has_data(stream: TextIO, timeout: float) -> bool:
    """Whether reading ``stream`` would not block (data, or its end) within ``timeout``."""
    import select

    try:
        fd = stream.fileno()
    except (AttributeError, ValueError, OSError):
        return True  # not a descriptor (a test's StringIO): reading cannot block
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    except (OSError, ValueError):
        return True
    return bool(ready)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return True


def choose_store(args: argparse.Namespace, cwd: Path, home: Path) -> SessionStore:
    if args.no_session:
        return SessionStore.in_memory(cwd)
    if args.session:
        return SessionStore.open(resolve_session(args.session, home=home))
    if args.continue_session:
        newest = latest_session(cwd, home=home)
        return SessionStore.open(newest) if newest is not None else SessionStore.create(cwd, home=home)
    if args.resume:
        return SessionStore.open(pick_session(cwd, home))
    return SessionStore.create(cwd, home=home)


def pick_session(cwd: Path, home: Path) -> Path:
    """``--resume``: list this directory's sessions and read a number from the terminal."""
    sessions = list_sessions(cwd, home=home)
    if not sessions:
        raise UsageError(f"no sessions for {cwd} yet; start one with `heron`")
    if not sys.stdin.isatty():
        raise UsageError("--resume needs a terminal to pick from; use --session PATH|ID instead")
    for number, summary in enumerate(sessions[:30], 1):
        title = summary.name or (summary.first_message or "(empty)").splitlines()[0][:70]
        print(f"{number:>3}. {title}  ({summary.message_count} messages, {summary.id[:8]})", file=sys.stderr)
    answer = input("session number: ").strip()
    if not answer.isdigit() or not 1 <= int(answer) <= min(30, len(sessions)):
        raise UsageError(f"not a session number: {answer!r}")
    return sessions[int(answer) - 1].path


def check_arguments(args: argparse.Namespace, mode: str) -> None:
    """Reject what cannot mean anything, before any file is read: one line saying why."""
    sources = [
        flag
        for flag, on in (
            ("-c/--continue", args.continue_session),
            ("-r/--resume", args.resume),
            ("--session", bool(args.session)),
            ("--no-session", args.no_session),
        )
        if on
    ]
    if len(sources) > 1:
        raise UsageError(f"{' and '.join(sources)} cannot be used together: each picks the session to use")
    if mode == "rpc" and (args.messages or args.print_prompt is not None):
        raise UsageError("--mode rpc takes no task: send it as a prompt command on stdin (docs/rpc.md)")
    if args.base_url is not None:
        check_base_url(args.base_url)
    base = Path(args.cwd).expanduser() if args.cwd else Path.cwd()
    for flag, value in (("--system-prompt", args.system_prompt), ("--append-system-prompt", args.append_system_prompt)):
        if value is not None and looks_like_path(value) and not (base / os.path.expanduser(value.strip())).is_file():
            raise UsageError(f"{flag} {value}: no such file (give the prompt text itself, or an existing file)")


def check_base_url(url: str) -> None:
    """``--base-url localhost:11434/v1`` has no scheme: the SDKs would read ``localhost``
    as the scheme and fail much later with a confusing error."""
    text = url.strip()
    if not text:
        raise UsageError("--base-url is empty; give the server's URL, e.g. http://localhost:11434/v1")
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest.strip("/"):
        bare = rest if sep else text
        raise UsageError(f"--base-url {url}: not an http(s) URL; did you mean http://{bare.lstrip('/')}?")


def looks_like_path(value: str) -> bool:
    """One word naming a file (``prompts/system.md``, ``~/p.txt``, ``./x``): not prompt
    text, which has spaces. A missing file is then a mistake, not the prompt."""
    text = value.strip()
    if not text or any(c.isspace() for c in text):
        return False
    return "/" in text or text.startswith(("~", ".")) or Path(text).suffix.lower() in (".md", ".txt", ".prompt")


def build_app(args: argparse.Namespace) -> App:
    cwd = Path(args.cwd).expanduser().resolve() if args.cwd else Path.cwd()
    if not cwd.is_dir():
        raise UsageError(f"--cwd {args.cwd}: not a directory")
    os.chdir(cwd)
    home = heron_home()
    settings = load_settings(cwd, home)
    registry = ModelRegistry.load()
    for warning in settings.warnings:
        print(f"heron: warning: {warning}", file=sys.stderr)
    try:
        resolved = resolve_model(
            settings, registry, args.model, args.base_url, args.api_key, getattr(args, "api", None)
        )
    except SetupError as exc:
        raise _with_models_json_cause(exc, registry) from exc
    for error in registry.errors:
        print(f"heron: warning: {error}", file=sys.stderr)
    from heron.coding.runtime import CodingSession

    tools = [t.strip() for t in args.tools.split(",") if t.strip()] if args.tools else None
    store = choose_store(args, cwd, home)
    from heron.coding.mcp import any_config

    mcp: SessionMcp | None = None  # no config file: no MCP code loaded at all
    if any_config(cwd, home):
        from heron.coding.mcp.config import project_trusted
        from heron.coding.mcp.setup import start_session_servers

        mcp = start_session_servers(
            cwd,
            home,
            trusted=project_trusted(cwd, home, getattr(args, "trust", False)),
            window=resolved.model.context_window,
        )
        for warning in mcp.warnings:
            print(f"heron: warning: {warning}", file=sys.stderr)
    session = CodingSession(
        cwd=cwd,
        model=resolved.model,
        api_key=resolved.api_key,
        store=store,
        settings=settings,
        tools=tools,
        thinking_level=args.thinking,
        # a value naming an existing file is that file's content
        system_prompt=_prompt_text(args.system_prompt, cwd),
        append_system_prompt=_prompt_text(args.append_system_prompt, cwd),
        home=home,
        extra_tools=mcp.tools if mcp is not None else [],
    )
    _apply_control_flags(args, session)
    for warning in session.extensions.load(trusted=session.control.trusted):  # docs/extensions.md
        print(f"heron: warning: {warning}", file=sys.stderr)
    if mcp is not None:
        mcp.bind(session.agent, session.store)
    _trace(session, getattr(args, "otel", None))
    return App(
        args=args, cwd=cwd, home=home, settings=settings, registry=registry, resolved=resolved, session=session, mcp=mcp
    )


def _apply_control_flags(args: argparse.Namespace, session: CodingSession) -> None:
    """``--trust``, ``--permission-mode``, ``--allow`` (docs/permissions.md)."""
    control = session.control
    if getattr(args, "trust", False):
        control.trust()
    if getattr(args, "permission_mode", None):
        control.set_mode(args.permission_mode)  # ValueError: reported as a usage error
    problems = control.allow(list(getattr(args, "allow", None) or []))
    if problems:
        raise UsageError(problems[0])
    for warning in control.warnings:
        print(f"heron: warning: {warning}", file=sys.stderr)


def _trace(session: CodingSession, otel: str | None) -> None:
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
    import atexit

    from heron.coding.tracing import SessionTracer, flush_tracing, get_tracer

    SessionTracer(session, get_tracer(mode))
    atexit.register(flush_tracing)


def _prompt_text(value: str | None, cwd: Path) -> str | None:
    """A ``--system-prompt`` value: the text, or the content of the file it names."""
    return clean_text(resolve_prompt_text(value, cwd)) if value is not None else None


def _with_models_json_cause(exc: SetupError, registry: ModelRegistry) -> SetupError:
    """A broken models.json is usually why no model resolved: say that first (file, line,
    problem), then the resolver's own message, shortened to a pointer when it is the
    whole set-up text."""
    if not registry.errors:
        return exc
    message = str(exc)
    if message == setup_help(registry):
        message = f"no model is configured (models.json could not be used).\n{SETUP_POINTER}"
    causes = "\n".join(f"heron: {error}" for error in registry.errors)
    return SetupError(f"{causes}\n{message}")


def run_app(args: argparse.Namespace) -> int:
    mode = args.mode or ("print" if args.print_prompt is not None else "interactive")
    args.mode = mode
    clean_arguments(args)
    if getattr(args, "setup_help", False):
        print(setup_help(ModelRegistry.load()))
        return 0
    from heron.coding.secrets import REDACTOR, install_log_redaction

    REDACTOR.add([getattr(args, "api_key", None)])  # before any error could quote it; the session adds the rest
    if (log_problem := install_log_redaction()) is not None:
        print(f"heron: warning: {log_problem}", file=sys.stderr)
    if mode == "acp":  # sessions are opened by the editor, each with its own cwd (docs/editors.md)
        from heron.cli.acp.server import run_acp

        return run_acp(args)
    try:
        check_arguments(args, mode)
        cwd = Path(args.cwd).expanduser() if args.cwd else Path.cwd()
        task = gather_task(args, cwd.resolve()) if mode != "rpc" else Task(text="")
        if mode in ("print", "json") and not task:
            raise UsageError('no task given: heron -p "what to do" (or pipe it on stdin)')
        if mode == "interactive":  # before the session starts the project's servers and hooks
            from heron.cli.tui.trust_question import maybe_ask_trust

            maybe_ask_trust(cwd.resolve(), heron_home(), getattr(args, "trust", False))
        app = build_app(args)
    except SetupError as exc:
        text = redact(str(exc))
        print(text if text.startswith("heron") else f"heron: {text}", file=sys.stderr)
        return exc.exit_code
    except (UsageError, SessionError, LookupError, ValueError) as exc:
        print(f"heron: {redact(str(exc))}", file=sys.stderr)
        return 2
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
