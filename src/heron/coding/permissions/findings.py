"""What reading one command's arguments found: the shared vocabulary of the readers.

The readers (:mod:`.hidden` for programs that run commands, :mod:`.trees` for programs
that write or delete files beyond their named arguments, :mod:`.interpreters` for code given
to an interpreter) each fill a :class:`Hidden`. When a reader meets what no reading can
settle it says so: :class:`ShellParseError` for a line the checker cannot follow at all,
``Hidden.opaque`` for one command whose effect it cannot bound (an interpreter reading its
program from standard input, ``make -f -``, ``bash <(…)``). Either way the engine asks
instead of allowing (docs/permissions.md, "Commands the rules cannot vouch for").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class ShellParseError(ValueError):
    """The command uses shell syntax the checker cannot follow with certainty."""


@dataclass(slots=True)
class Hidden:
    """What one simple command hides in its arguments."""

    scripts: list[str] = field(default_factory=list)  # command lines it runs
    programs: list[list[str]] = field(default_factory=list)  # programs it runs, as words
    targets: list[str] = field(default_factory=list)  # files (or ``dir/-``: a directory's files) it writes
    trees: list[str] = field(default_factory=list)  # directories it may write anything beneath (``tar -x -C d``)
    read_trees: list[str] = field(default_factory=list)  # directories it reads everything beneath (``grep -r``)
    implied: list[str] = field(default_factory=list)  # values it may run as commands (``make CC=…``)
    code_files: list[str] = field(default_factory=list)  # files it runs as code (a script, a makefile)
    shell_files: list[str] = field(default_factory=list)  # of those, the ones a shell may run: read when they exist
    opaque: str | None = None  # why its effect cannot be bounded, when it cannot

    def cannot_bound(self, why: str) -> None:
        if self.opaque is None:
            self.opaque = why


# A quoted string literal in code: group 1 the double-quoted text, group 2 the single-quoted.
STRING = r"""(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')"""
_UNSEEN_PREFIXES = ("/dev/stdin", "/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/", "/dev/tcp/", "/dev/udp/")
_PROC_FD = re.compile(r"^/proc/[0-9]+/fd/")


def literal(match: re.Match[str], first: int = 1) -> str | None:
    """The text of the quoted string a pattern captured (double or single quoted)."""
    double, single = match.group(first), match.group(first + 1)
    return double if double is not None else single


def unseen_source(word: str) -> bool:
    """Whether a file a program reads code from (a script, a makefile) is one no checker can
    read before it runs: standard input (``-``, ``/dev/stdin``, a descriptor), a process
    substitution (``<(…)``) or a name computed at run time (``$F``)."""
    return (
        word in ("-", "")
        or word.startswith(_UNSEEN_PREFIXES)
        or bool(_PROC_FD.match(word))
        or word.startswith(("<(", ">("))
        or "$" in word
        or "`" in word
    )


def operands(words: list[str], value_options: frozenset[str] = frozenset()) -> list[str]:
    """The words after the program that are not options (nor the values of ``value_options``)."""
    out: list[str] = []
    n = 1
    while n < len(words):
        word = words[n]
        if word == "--":
            return out + words[n + 1 :]
        if word.startswith("-") and len(word) > 1:
            n += 2 if word in value_options else 1
            continue
        out.append(word)
        n += 1
    return out


def option_value(words: list[str], short: str | None, long: str | None) -> list[str]:
    """Every value of an option: ``-C dir``, ``-Cdir``, ``--directory dir``, ``--directory=dir``."""
    values: list[str] = []
    for n, word in enumerate(words[1:], 1):
        following = words[n + 1] if n + 1 < len(words) else None
        if long is not None and word.startswith(long + "="):
            values.append(word.split("=", 1)[1])
        elif word in (long, short) and following is not None:
            values.append(following)
        elif short is not None and word.startswith(short) and len(word) > len(short) and not word.startswith("--"):
            values.append(word[len(short) :])
    return values
