"""What a line typed at the interactive prompt is: a slash command, a shell command
(``!cmd``, ``!!cmd``) or a prompt for the model; and Tab completion for commands.

Parsing is a pure function so it can be tested without a terminal; only the completer
touches prompt_toolkit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document


@dataclass(frozen=True, slots=True)
class CommandSpec:
    name: str
    usage: str
    help: str
    # allowed while the agent runs (read-only, or quitting)
    while_running: bool = False


COMMANDS: dict[str, CommandSpec] = {
    spec.name: spec
    for spec in (
        CommandSpec("help", "/help", "this list", while_running=True),
        CommandSpec("model", "/model [provider/id]", "list the available models, or switch model"),
        CommandSpec("thinking", "/thinking [level]", "show or set the thinking level (off … xhigh)"),
        CommandSpec("compact", "/compact [focus]", "summarise older history now, optionally with a focus"),
        CommandSpec(
            "context",
            "/context [reset-window]",
            "what the context window holds, and the ledger; reset-window forgets a learnt window",
            while_running=True,
        ),
        CommandSpec("tree", "/tree [N [--summary]]", "show the session tree; move to entry N (with a branch summary)"),
        CommandSpec("fork", "/fork [N]", "continue in a new session file holding the path to entry N (or the leaf)"),
        CommandSpec(
            "handoff",
            "/handoff [focus]",
            "continue in a fresh child session started from the frontier; its first prompt opens for editing",
        ),
        CommandSpec("new", "/new", "start a new session"),
        CommandSpec("resume", "/resume [N|id-prefix]", "list this directory's sessions, or switch to one"),
        CommandSpec("session", "/session", "file, id, name and counts of this session", while_running=True),
        CommandSpec("name", "/name [NAME]", "show or set the session's name"),
        CommandSpec("cost", "/cost", "tokens and cost of this session, by model", while_running=True),
        CommandSpec("agents", "/agents", "the agent definitions the task tool can use", while_running=True),
        CommandSpec("mcp", "/mcp", "the MCP servers of this session: state and tools", while_running=True),
        CommandSpec(
            "mode",
            "/mode [NAME]",
            "show the permission mode, or switch (default, plan, accept-edits, bypass)",
            while_running=True,
        ),
        CommandSpec(
            "rewind",
            "/rewind [N [code|conversation|both]]",
            "put files and/or the conversation back to right before user turn N",
        ),
        CommandSpec("settings", "/settings [NAME VALUE]", "show the common settings, or change one (saved)"),
        CommandSpec("export", "/export [path]", "write the session as a self-contained HTML file"),
        CommandSpec(
            "memory", "/memory", "the project memory's changes: date, reason, session, files", while_running=True
        ),
        CommandSpec("quit", "/quit", "leave heron (also Ctrl+D on an empty line)", while_running=True),
    )
}
ALIASES = {"exit": "quit", "q": "quit", "h": "help", "?": "help"}

_COMMAND = re.compile(r"^/([A-Za-z?][\w:.?-]*)(?:\s+(.*))?$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Command:
    """A built-in slash command; ``args`` is the rest of the line, stripped."""

    name: str
    args: str = ""
    kind: Literal["command"] = "command"


@dataclass(frozen=True, slots=True)
class Shell:
    """``!cmd`` (``keep``: its output joins the context) or ``!!cmd`` (shown only)."""

    command: str
    keep: bool
    kind: Literal["shell"] = "shell"


@dataclass(frozen=True, slots=True)
class Prompt:
    """Text for the model. ``slash`` names a ``/word`` that is not a built-in command:
    a skill (``/skill:name``), a prompt template, or a mistake - the session decides."""

    text: str
    slash: str | None = None
    kind: Literal["prompt"] = "prompt"


Input = Command | Shell | Prompt


def parse_input(text: str) -> Input:
    """Classify one submitted line (or several, for multi-line input)."""
    stripped = text.strip()
    if stripped.startswith("!!"):
        return Shell(stripped[2:].strip(), keep=False)
    if stripped.startswith("!"):
        return Shell(stripped[1:].strip(), keep=True)
    if stripped.startswith("/"):
        match = _COMMAND.match(stripped)
        if match is None:  # "/usr/bin/python is slow": a path, not a command
            return Prompt(stripped)
        name = match.group(1)
        args = (match.group(2) or "").strip()
        canonical = ALIASES.get(name.lower(), name.lower())
        if canonical in COMMANDS:
            return Command(canonical, args)
        return Prompt(stripped, slash=name)
    return Prompt(text.strip("\n"))


def split_args(args: str) -> list[str]:
    return args.split()


def help_lines() -> list[str]:
    width = max(len(spec.usage) for spec in COMMANDS.values())
    lines = [f"  {spec.usage:<{width}}  {spec.help}" for spec in COMMANDS.values()]
    lines += [
        f"  {'/goal [TEXT|clear]':<{width}}  show, set or clear the session's goal (--budget N for a token budget)",
        f"  {'/skill:name [args]':<{width}}  use a skill; /template [args] expands a prompt template",
        f"  {'!command':<{width}}  run a shell command; its output joins the context",
        f"  {'!!command':<{width}}  run a shell command without adding it to the context",
        f"  {'@path':<{width}}  attach a file (Tab or typing completes project paths); image paths attach images",
        "",
        "  Enter sends · Shift+Enter or Ctrl+J inserts a newline · Up/Down: history · Ctrl+P: next model",
        "  Shift+Tab: next permission mode (default → accept-edits → plan)",
        "  While heron works: Enter queues a steering message (delivered before its next step),",
        "  Alt+Enter a follow-up (delivered when it would stop); Esc or Ctrl+C aborts.",
        "  Ctrl+C when idle clears the input; on an empty line, Ctrl+C twice or Ctrl+D exits.",
        "  Pickers (/resume, /model, /tree, /fork, /mode): type to filter, arrows, Enter picks, Esc cancels.",
    ]
    return lines


class SlashCompleter(Completer):
    """Tab completion for ``/command`` names (built-ins, skills, templates) and for the
    arguments some commands take (model refs, thinking levels)."""

    def __init__(
        self,
        extra_names: Callable[[], Iterable[tuple[str, str]]] = lambda: (),
        arguments: Callable[[str], Iterable[str]] = lambda name: (),
    ) -> None:
        self.extra_names = extra_names
        self.arguments = arguments

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or "\n" in text:
            return
        if " " not in text:
            word = text[1:].lower()
            names = [(spec.name, spec.help) for spec in COMMANDS.values()] + list(self.extra_names())
            for name, meta in names:
                if name.lower().startswith(word):
                    yield Completion("/" + name, start_position=-len(text), display_meta=meta)
            return
        name, _, arg = text[1:].partition(" ")
        canonical = ALIASES.get(name.lower(), name.lower())
        if " " in arg.strip():
            return
        for candidate in self.arguments(canonical):
            if candidate.lower().startswith(arg.lower()):
                yield Completion(candidate, start_position=-len(arg))
