"""Bad arguments, caught before any file is read: :class:`UsageError` and the checks.

Kept apart from the command's entry module (:mod:`heron.cli.app`) so the modes and the
ACP server can raise and use them without importing the module that dispatches to them.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


class UsageError(RuntimeError):
    """Bad arguments: the message says what to do instead. Exit code 2."""


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
    if getattr(args, "handoff", False):
        check_handoff(mode, sources)
    if mode == "rpc" and (args.messages or args.print_prompt is not None):
        raise UsageError("--mode rpc takes no task: send it as a prompt command on stdin (docs/rpc.md)")
    if args.base_url is not None:
        check_base_url(args.base_url)
    check_limits(getattr(args, "context_window", None), getattr(args, "max_tokens", None))
    goal_turns = getattr(args, "goal_turns", None)
    if goal_turns is not None and goal_turns < 0:
        raise UsageError(f"--goal-turns {goal_turns}: give how many times heron may go on by itself (0: never)")
    base = Path(args.cwd).expanduser() if args.cwd else Path.cwd()
    for flag, value in (("--system-prompt", args.system_prompt), ("--append-system-prompt", args.append_system_prompt)):
        if value is not None and looks_like_path(value) and not (base / os.path.expanduser(value.strip())).is_file():
            raise UsageError(f"{flag} {value}: no such file (give the prompt text itself, or an existing file)")


def check_handoff(mode: str, sources: list[str]) -> None:
    """``--handoff`` starts a child of the session it continues, in print or json mode."""
    if mode not in ("print", "json"):
        raise UsageError(
            f"--handoff is for -p and --mode json; in --mode {mode} use /handoff or the rpc handoff command"
        )
    if not sources or sources == ["--no-session"]:
        raise UsageError("--handoff needs the session to hand off: -c/--continue, -r/--resume or --session")


MIN_CONTEXT_WINDOW = 512  # below this no request of heron's fits: a typo, not a window


def check_limits(window: int | None, max_tokens: int | None) -> None:
    """``--context-window`` and ``--max-tokens``: positive, and the output within the window."""
    if window is not None and window < MIN_CONTEXT_WINDOW:
        raise UsageError(f"--context-window {window}: too small; give the server's window in tokens (>= 512)")
    if max_tokens is not None and max_tokens < 1:
        raise UsageError(f"--max-tokens {max_tokens}: give a positive number of tokens")
    if window is not None and max_tokens is not None and max_tokens >= window:
        raise UsageError(f"--max-tokens {max_tokens} leaves no room for the prompt in a {window}-token window")


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
