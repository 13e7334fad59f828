"""Commands and files that a command line hides inside another program's arguments.

``split_commands`` follows the shell's own ways of running a command (pipes, ``bash -c``,
``eval``, ``find -exec``). Many programs run commands or write files named only in their
arguments, and each was a way around a deny rule: ``env -S 'rm f'``, ``trap 'rm f' EXIT``,
``git -c alias.x='!rm f' x``, awk's ``system("rm f")``, sed's ``e``, tar's
``--remove-files``, ``hash -p /bin/rm x``, a link to ``/bin/rm`` under another name,
``sort -o f``, ``make -f -``, a variable that names a command (``GIT_PAGER='rm f' git log``),
an interpreter's one-line ``os.remove("f")``. This module reads those arguments and says
what they hide: scripts to check like any command line, programs that will run (``rm`` for
``tar --remove-files``), and files that will be written; :mod:`.trees` reads the programs
that delete or write beneath a directory, :mod:`.interpreters` the code given to an
interpreter.

What no reading can settle - a script sourced from a process substitution, ``BASH_ENV``,
a makefile read from standard input, an interpreter's code that reaches for the system -
is a command the rules cannot vouch for (:class:`ShellParseError`, or ``Hidden.opaque`` for
one command), and the engine asks, saying why. The sandbox (docs/permissions.md) is the
boundary; the rules are an explainable first line that does not let a trick through quietly.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from heron.coding.permissions.findings import Hidden, ShellParseError, operands, option_value, unseen_source
from heron.coding.permissions.interpreters import CODE_READERS, interpreter, interpreter_name
from heron.coding.permissions.trees import WRITERS, git_removes, git_work_tree

__all__ = ["SHELL_STARTUP_VARIABLES", "Hidden", "ShellParseError", "hidden_in", "variable_hides"]

_BIN_DIRS = ("/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/", "/usr/local/bin/")
# the environment variables that make a shell run a file before the command
SHELL_STARTUP_VARIABLES = ("BASH_ENV", "ENV", "PROMPT_COMMAND")
# variables whose value is a command another program runs (`GIT_PAGER='rm f' git log`)
_COMMAND_VARIABLES = frozenset(
    {
        "GIT_SSH_COMMAND",
        "GIT_SSH",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_PAGER",
        "GIT_EXTERNAL_DIFF",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "PAGER",
        "MANPAGER",
        "EDITOR",
        "VISUAL",
        "LESSOPEN",
        "LESSCLOSE",
    }
)
# variables that hand a program options or code the checker does not follow
_INJECTING_VARIABLES = frozenset(
    {
        "MAKEFLAGS",
        "GNUMAKEFLAGS",
        "MAKEFILES",
        "PERL5OPT",
        "RUBYOPT",
        "NODE_OPTIONS",
        "TAR_OPTIONS",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "LD_PRELOAD",
        "LD_AUDIT",
        "PS4",
        "SHELLOPTS",
        "BASHOPTS",
        "PYTHONSTARTUP",
        "PYTHONINSPECT",
    }
)
_MAKE_INJECTING = frozenset({"SHELL", ".SHELLFLAGS", "MAKEFLAGS", "MAKEFILES", "MAKE", ".DEFAULT_GOAL"})


def hidden_in(words: list[str]) -> Hidden:
    """What the simple command ``words`` (quotes removed, wrappers included) hides."""
    found = Hidden()
    if not words:
        return found
    name = words[0].rsplit("/", 1)[-1]
    if "/" in words[0] and not words[0].startswith(("/bin/", "/usr/", "/sbin/")):
        found.code_files.append(words[0])  # `./build.sh`: a file of the project, or one just written
        found.shell_files.append(words[0])
    for reader in (_READERS.get(name), WRITERS.get(name), CODE_READERS.get(name)):
        if reader is not None:
            reader(words, found)
    if interpreter_name(name) is not None:
        interpreter(name, words, found)
    for word in words[1:] if name in ("export", "declare", "typeset", "env", "local", "readonly") else []:
        if "=" in word:
            variable_hides(word, found)
    return found


def variable_hides(assignment: str, found: Hidden) -> None:
    """``NAME=value`` before a command (or exported): a value that is a command another
    program will run is checked as one; a variable that injects options or code cannot be
    bounded."""
    name, _, value = assignment.partition("=")
    if name in _COMMAND_VARIABLES and value:
        found.implied.append(value.lstrip("|").replace("%s", "x"))
    elif name in _INJECTING_VARIABLES or name.startswith("GIT_CONFIG_"):
        found.cannot_bound(f"{name} hands the program options or code the checker does not follow")


def _env(words: list[str], found: Hidden) -> None:
    for n, word in enumerate(words[1:], 1):
        if word in ("-S", "--split-string") and n + 1 < len(words):
            found.scripts.append(" ".join(words[n + 1 :]))
            return
        if word.startswith(("--split-string=", "-S")) and word not in ("-S",):
            first = word.split("=", 1)[1] if word.startswith("--") else word[2:]
            found.scripts.append(" ".join([first, *words[n + 1 :]]))
            return


def _trap(words: list[str], found: Hidden) -> None:
    named = [w for w in words[1:] if not w.startswith("-")]
    if len(named) >= 2 and named[0]:
        found.scripts.append(named[0])


def _source(words: list[str], found: Hidden) -> None:
    target = words[1] if len(words) > 1 else ""
    if target.startswith(("/dev/fd/", "/proc/self/fd/", "/dev/stdin")) or target in ("-", ""):
        raise ShellParseError(f"`{words[0]}` runs a script the checker cannot see ({target or 'its input'})")
    found.code_files.append(target)
    found.shell_files.append(target)


def _hash(words: list[str], found: Hidden) -> None:
    for n, word in enumerate(words[1:-1], 1):
        if word == "-p":
            found.programs.append([words[n + 1].rsplit("/", 1)[-1]])


def _link(words: list[str], found: Hidden) -> None:
    """``ln -s /bin/rm x`` (or ``cp /bin/rm x``): the program can now run under another name."""
    for word in words[1:]:
        if word.startswith(_BIN_DIRS):
            found.programs.append([word.rsplit("/", 1)[-1]])


def _git(words: list[str], found: Hidden) -> None:
    n, where = 1, "."
    while n < len(words) and words[n].startswith("-"):
        word, following = words[n], (words[n + 1] if n + 1 < len(words) else "")
        if word == "-C":
            where = following if where == "." or following.startswith("/") else f"{where}/{following}"
        elif word.startswith("-c"):
            _git_setting(following if word == "-c" else word[2:], found)
        n += 2 if word in _GIT_VALUE_OPTIONS else 1
    git_work_tree(["git", *words[n:]], found, where)
    git_removes(["git", *words[n:]], found)


def _git_setting(setting: str, found: Hidden) -> None:
    key, _, script = setting.partition("=")
    key = key.lower()
    if key.startswith("alias.") and script.startswith("!"):
        found.scripts.append(script[1:])
    elif key in ("core.sshcommand", "core.pager", "core.editor", "core.fsmonitor", "diff.external"):
        found.scripts.append(script)
    elif key.startswith(("core.hookspath", "include.", "includeif.")):
        found.cannot_bound(f"git -c {key} makes git run or read what the checker does not follow")


_GIT_VALUE_OPTIONS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix"}
)


def _sed(words: list[str], found: Hidden) -> None:
    for script_file in option_value(words, "-f", "--file"):
        if unseen_source(script_file):
            found.cannot_bound(f"sed runs a script it reads from {script_file}, which no checker can see")
        found.code_files.append(script_file)
    scripts = [words[n + 1] for n, w in enumerate(words[:-1]) if w in ("-e", "--expression")]
    if not scripts:
        scripts = [w for w in words[1:] if not w.startswith("-")][:1]
    for script in scripts:
        if _SED_S_EXEC.search(script):
            raise ShellParseError("sed's `e` flag runs the pattern space as a command")
        for match in _SED_EXEC.finditer(script):
            command = (match.group(1) or "").strip()
            if not command:
                raise ShellParseError("sed's `e` command runs the pattern space as a command")
            found.scripts.append(command)
        for match in re.finditer(r"(?:^|[;\n}])\s*+[0-9$/]*+\s*+w\s++(\S+)", script):
            found.targets.append(match.group(1))


_SED_EXEC = re.compile(r"(?:^|[;{}\n]|[0-9$/!])\s*e(?:\s+([^;\n}]*)|\s*(?=[;\n}]|$))")
_SED_S_EXEC = re.compile(r"s(.).*?\1.*?\1[gpiImM0-9]*e")


def _tar(words: list[str], found: Hidden) -> None:
    for n, word in enumerate(words[1:], 1):
        following = words[n + 1] if n + 1 < len(words) else ""
        if word == "--remove-files":
            found.programs.append(["rm", *[w for w in words[2:] if not w.startswith("-")]])
        elif word.startswith(("--to-command=", "--use-compress-program=", "--info-script=", "--new-volume-script=")):
            found.scripts.append(word.split("=", 1)[1])
        elif word in ("--to-command", "--use-compress-program", "-I", "-F", "--info-script") and following:
            found.scripts.append(following)
        elif word.startswith("--checkpoint-action=exec="):
            found.scripts.append(word.split("exec=", 1)[1])


def _sort(words: list[str], found: Hidden) -> None:
    for n, word in enumerate(words[1:], 1):
        if word in ("-o", "--output") and n + 1 < len(words):
            found.targets.append(words[n + 1])
        elif word.startswith("--output="):
            found.targets.append(word.split("=", 1)[1])
        elif word.startswith("-o") and len(word) > 2:
            found.targets.append(word[2:])


def _shell(words: list[str], found: Hidden) -> None:
    """``bash <(echo rm f)``, ``sh /dev/stdin``: a script file no checker can read first
    (``bash -c`` and a shell reading its input are the splitter's)."""
    named = operands(words, frozenset({"-o", "-O", "+o", "+O", "--rcfile", "--init-file"}))
    if any(w.startswith("-") and "c" in w[1:] and not w.startswith("--") for w in words[1:]):
        return
    if named and unseen_source(named[0]):
        found.cannot_bound(f"`{words[0]}` runs a script it reads from {named[0]}, which no checker can see")
    elif named:
        found.code_files.append(named[0])
        found.shell_files.append(named[0])
    for option in ("--rcfile", "--init-file"):
        if any(unseen_source(value) for value in option_value(words, None, option)):
            found.cannot_bound(f"`{words[0]}` runs a startup file the checker cannot see")


def _alias(words: list[str], found: Hidden) -> None:
    """``alias x=rm``: later ``x f`` runs ``rm f`` (a script can turn aliases on)."""
    for word in words[1:]:
        if "=" in word and not word.startswith("-"):
            found.implied.append(word.split("=", 1)[1])


def _make(words: list[str], found: Hidden) -> None:
    """``make -f -`` (a makefile from standard input or ``<(…)``) and ``--eval`` run rules no
    checker sees; ``make CC=rm`` runs the value of a variable in the Makefile's recipes."""
    makefiles = option_value(words, "-f", "--file") + option_value(words, None, "--makefile")
    for makefile in makefiles:
        if unseen_source(makefile):
            found.cannot_bound(f"make reads a makefile from {makefile}, which no checker can see")
    where = (option_value(words, "-C", "--directory") or ["."])[-1]
    defaults = [f"{where}/{name}" for name in ("GNUmakefile", "makefile", "Makefile")]
    found.code_files.extend(f"{where}/{m}" if not m.startswith("/") and where != "." else m for m in makefiles)
    found.code_files.extend(defaults if not makefiles else [])
    if any(w in ("-E", "--eval") or w.startswith(("--eval=", "-E")) for w in words[1:]):
        found.cannot_bound("make --eval runs rules given on the command line")
    for word in operands(words, frozenset({"-f", "--file", "--makefile", "-C", "--directory", "-I", "-o", "-W", "-j"})):
        name, equals, value = word.partition("=")
        if not equals:
            continue
        name = name.rstrip(":+?!")
        if name in _MAKE_INJECTING:
            found.cannot_bound(f"make's {name} changes how every recipe runs")
        elif value:
            found.implied.append(value)


_READERS: dict[str, Callable[[list[str], Hidden], None]] = {
    "env": _env,
    "trap": _trap,
    ".": _source,
    "source": _source,
    "hash": _hash,
    "ln": _link,
    "cp": _link,
    "install": _link,
    "git": _git,
    "sed": _sed,
    "gsed": _sed,
    "tar": _tar,
    "bsdtar": _tar,
    "sort": _sort,
    "make": _make,
    "alias": _alias,
    **dict.fromkeys(("bash", "sh", "zsh", "dash", "ksh"), _shell),
    "gmake": _make,
}
