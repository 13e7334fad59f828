"""Entry point of the ``heron`` command.

Parses arguments before importing anything heavy, so ``heron --version`` answers in the
time Python takes to start; the runtime and a mode are imported only to run a task.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from typing import NoReturn

from heron import __version__
from heron.cli import boot

MODES = ("interactive", "print", "json", "rpc", "acp")
# The same as heron.coding.settings.API_CHOICES, repeated so `heron --help` imports nothing.
API_CHOICES = ("openai-chat", "openai-responses", "anthropic-messages", "google-gemini")
THINKING = ("off", "minimal", "low", "medium", "high", "xhigh")


class SuggestingParser(argparse.ArgumentParser):
    """An unknown option is answered with the closest known ones (``--modle``: did you
    mean ``--model``?), as git does."""

    def error(self, message: str) -> NoReturn:
        unknown = [word for word in message.partition("unrecognized arguments: ")[2].split() if word.startswith("-")]
        known = [option for action in self._actions for option in action.option_strings]
        hints = []
        for word in unknown:
            close = difflib.get_close_matches(word.split("=", 1)[0], known, n=2, cutoff=0.6)
            if close:
                hints.append(f"{word}: did you mean {' or '.join(close)}?")
        super().error("; ".join([message, *hints]))


def build_parser() -> argparse.ArgumentParser:
    parser = SuggestingParser(
        prog="heron",
        description="A coding agent that manages its context window.",
        epilog="Other commands: `heron sessions --help` (list and inspect session files), "
        "`heron rewind --help` (undo turns: code, conversation or both), `heron mcp --help` (MCP servers), "
        "`heron batch --help` (many tasks at once), `heron compact --help` (summarise a session's history now).",
    )
    parser.add_argument("--version", action="version", version=f"heron {__version__}")
    _task_arguments(parser)
    _session_arguments(parser)
    _model_arguments(parser)
    _workspace_arguments(parser)
    _permission_arguments(parser)
    parser.add_argument(
        "--otel",
        choices=("console",),
        default=None,
        help="print OpenTelemetry spans of the run (OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set)",
    )
    parser.add_argument("--setup-help", action="store_true", help="print how to configure a model and key, and exit")
    return parser


def _task_arguments(parser: argparse.ArgumentParser) -> None:
    """What to do and how to show it: the task, ``-p`` and the output mode."""
    parser.add_argument("messages", nargs="*", help="the task; @path arguments attach files")
    parser.add_argument(
        "-p",
        "--print",
        dest="print_prompt",
        nargs="?",
        const="",
        default=None,
        metavar="TASK",
        help="run one task, print the final answer and exit (reads piped stdin too)",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default=None,
        help="output mode (default: interactive, or print with -p; acp: for editors)",
    )
    parser.add_argument(
        "--goal",
        default=None,
        metavar="TEXT",
        help="the session's goal: at the head of every request, kept through compactions (/goal in a session)",
    )
    parser.add_argument(
        "--goal-budget",
        default=None,
        metavar="TOKENS",
        help="a token budget for --goal (200000, 200k, 1.5m): the run stops when it is spent",
    )
    parser.add_argument(
        "--goal-turns",
        type=int,
        default=None,
        metavar="N",
        help="with a goal, go on by itself at most N times after an answer (default: goal.maxTurns, else 20; 0: off)",
    )
    parser.add_argument(
        "--max-turns",
        type=int,
        default=None,
        metavar="N",
        help="stop a prompt's run after N model calls (default: limits.maxTurns, else 200; interactive: no limit)",
    )


def _session_arguments(parser: argparse.ArgumentParser) -> None:
    """Which session file the run writes: new, continued, resumed, a given one, or none."""
    parser.add_argument(
        "-c",
        "--continue",
        dest="continue_session",
        action="store_true",
        help="continue the newest session of this directory",
    )
    parser.add_argument("-r", "--resume", action="store_true", help="pick a session of this directory to resume")
    parser.add_argument("--session", default=None, metavar="PATH|ID", help="open a session file or id prefix")
    parser.add_argument("--no-session", action="store_true", help="keep everything in memory, write no file")
    parser.add_argument(
        "--handoff",
        action="store_true",
        help="with -p --continue: start a child session from the frontier and run the message (the focus) there",
    )


def _model_arguments(parser: argparse.ArgumentParser) -> None:
    """Which model answers, over which API and server, with which key."""
    parser.add_argument(
        "--model", default=None, metavar="PROVIDER/ID", help="the model, e.g. anthropic/claude-sonnet-4-5"
    )
    parser.add_argument("--thinking", choices=THINKING, default=None, help="thinking level")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible server, e.g. http://localhost:11434/v1")
    parser.add_argument(
        "--api",
        choices=API_CHOICES,
        default=None,
        help="the wire API (default: the model's; openai-chat for --base-url servers)",
    )
    parser.add_argument(
        "--context-window",
        type=int,
        default=None,
        metavar="TOKENS",
        help="the model's context window (default: configured, else asked of a local server)",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        metavar="TOKENS",
        help="the output limit sent with each request (default: configured, else a quarter of the window)",
    )
    parser.add_argument(
        "--api-key",
        default=None,
        help="API key (default: the provider's environment variable; HERON_API_KEY for --base-url)",
    )


def _workspace_arguments(parser: argparse.ArgumentParser) -> None:
    """What the agent works with: its tools, its directory and its system prompt."""
    from heron.coding.tool_names import tools_help  # no imports of its own: --help stays light

    parser.add_argument(
        "--tools",
        default=None,
        metavar="LIST",
        help=f"comma-separated tools ({tools_help()})",
    )
    parser.add_argument("--cwd", default=None, help="work in this directory")
    parser.add_argument("--system-prompt", default=None, help="replace the system prompt (text or a file)")
    parser.add_argument("--append-system-prompt", default=None, help="append to the system prompt (text or a file)")


def _permission_arguments(parser: argparse.ArgumentParser) -> None:
    """What the agent may do without asking, and whether the project is trusted."""
    parser.add_argument(
        "--permission-mode",
        default=None,
        metavar="MODE",
        help="default, plan (read-only), accept-edits or bypass (docs/permissions.md)",
    )
    parser.add_argument(
        "--sandbox",
        default=None,
        metavar="MODE",
        help="where commands may write: workspace-write (default), read-only or off (docs/permissions.md)",
    )
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="RULE",
        help="allow tool calls matching RULE, e.g. --allow 'Bash(make:*)' (repeatable)",
    )
    parser.add_argument(
        "--trust",
        action="store_true",
        help="trust this project: run its hooks, use its allow rules, start its .mcp.json servers (remembered)",
    )


def main(argv: list[str] | None = None) -> int:
    """``heron``. Output cut short by its reader (``heron --setup-help | head``) ends the
    command quietly, not with a traceback."""
    try:
        code = _main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush goes nowhere
        return 0
    return code


def _main(argv: list[str] | None) -> int:
    own_process = argv is None  # heron's own process, not a test or a program calling main()
    if own_process:
        boot.begin()  # the process-wide start-up tricks (heron.cli.boot), before heavy imports
        from heron.cli.proc_scrub import scrub_process_block

        scrub_process_block()  # its keys out of /proc/<pid>/environ and cmdline
    args_list = list(sys.argv[1:] if argv is None else argv)
    if own_process and args_list and args_list[0] in ("rewind", "sessions", "mcp", "batch", "memory"):
        boot.session_built()  # these commands build no coding session: collect as usual
        boot.serve_dataclass_code()
    if args_list and args_list[0] == "rewind":
        from heron.cli import rewind_cmd

        return rewind_cmd.main(args_list[1:])
    if args_list and args_list[0] in ("sessions", "mcp", "memory") and args_list[:2] != ["memory", "reflect"]:
        from heron.cli import mcp_cmd, memory_cmd, sessions_cmd

        if args_list[:2] == ["mcp", "add"]:  # `mcp add fs python3 -m mod`: -m is the command's
            args_list = args_list[:2] + mcp_cmd.add_argv(args_list[2:])
        if args_list == ["sessions"]:  # bare `heron sessions` lists, as `heron mcp` does not need
            args_list.append("list")
        sub = argparse.ArgumentParser(prog="heron")
        commands = sub.add_subparsers(dest="command", metavar="COMMAND")
        {"sessions": sessions_cmd, "mcp": mcp_cmd, "memory": memory_cmd}[args_list[0]].add_parser(commands)
        parsed = sub.parse_args(args_list)
        result: int = parsed.handler(parsed)
        return result
    if args_list and args_list[0] == "batch":
        from heron.cli import batch_cmd

        return batch_cmd.main(args_list[1:])
    if args_list and args_list[0] == "compact":
        args = compact_arguments(args_list[1:])
    elif args_list[:2] == ["memory", "reflect"]:
        args = reflect_arguments(args_list[2:])
    else:
        args = build_parser().parse_args(args_list)
    if own_process:
        boot.serve_dataclass_code()
    from heron.cli.app import run_app

    code = run_app(args)
    if own_process:
        boot.end()
    return code


def compact_arguments(argv: list[str]) -> argparse.Namespace:
    """``heron compact [FOCUS...]``: the main command's options, run as ``heron -p
    "/compact FOCUS"`` on the newest session of this directory unless ``--session`` names
    another (docs/sessions.md, "Compacting from a shell")."""
    parser = build_parser()
    parser.prog = "heron compact"
    parser.usage = "heron compact [FOCUS ...] [--session PATH|ID | --continue] [options]"
    parser.description = (
        "Summarise the older history of a session now, as /compact does: the newest session of this "
        "directory (--continue, the default) or --session PATH|ID. FOCUS: what the summary must keep."
    )
    args = parser.parse_args(argv)
    if args.print_prompt is not None:
        parser.error("the focus is given as words, not with -p: heron compact keep the API decisions")
    if args.mode not in (None, "print", "json"):
        parser.error(f"--mode {args.mode}: compact runs in print or json mode")
    if args.no_session or args.resume:
        parser.error("name the session with --session PATH|ID, or leave it out for the newest (--continue)")
    args.print_prompt = " ".join(["/compact", *args.messages])
    args.messages = []
    args.continue_session = args.continue_session or not args.session
    return args


def reflect_arguments(argv: list[str]) -> argparse.Namespace:
    """``heron memory reflect``: the main command's options, run as ``heron -p "/memory reflect"``
    on the newest session of this directory unless ``--session`` names another (docs/memory.md)."""
    parser = build_parser()
    parser.prog = "heron memory reflect"
    parser.usage = "heron memory reflect [--session PATH|ID | --continue] [options]"
    parser.description = "Tidy the project memory now with the model, from what a session showed (one commit)."
    args = parser.parse_args(argv)
    if args.print_prompt is not None or args.messages:
        parser.error("heron memory reflect takes no prompt")
    if args.mode not in (None, "print", "json"):
        parser.error(f"--mode {args.mode}: reflect runs in print or json mode")
    if args.no_session or args.resume:
        parser.error("name the session with --session PATH|ID, or leave it out for the newest (--continue)")
    args.print_prompt = "/memory reflect"
    args.continue_session = args.continue_session or not args.session
    return args


if __name__ == "__main__":
    raise SystemExit(main())
