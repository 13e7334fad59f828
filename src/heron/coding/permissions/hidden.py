"""Commands and files that a command line hides inside another program's arguments.

``split_commands`` follows the shell's own ways of running a command (pipes, ``bash -c``,
``eval``, ``find -exec``). Many programs run commands or write files named only in their
arguments, and each was a way around a deny rule: ``env -S 'rm f'``, ``trap 'rm f' EXIT``,
``git -c alias.x='!rm f' x``, awk's ``system("rm f")``, sed's ``e``, tar's
``--remove-files``, ``hash -p /bin/rm x``, a link to ``/bin/rm`` under another name,
``sort -o f``, ``tar -x -C dir``, an interpreter's one-line ``os.remove("f")``. This module
reads those arguments and says what they hide: scripts to check like any command line,
programs that will run (``rm`` for ``tar --remove-files``), and files that will be written.

What no reading can settle - a script sourced from a process substitution, ``BASH_ENV``,
an interpreter's code that deletes or runs something computed at run time - raises
:class:`ShellParseError`: the rules cannot vouch for it and the engine asks, saying why.
The rules remain an explainable first line; the sandbox (docs/permissions.md) is the boundary.
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


_AWKS = {"awk", "gawk", "mawk", "nawk", "busybox-awk"}
_INTERPRETERS = {"python", "python3", "python2", "perl", "ruby", "node", "nodejs", "php"}
_CODE_OPTIONS = {"-c", "-e", "-E", "-r", "--eval", "-p"}
_BIN_DIRS = ("/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/", "/usr/local/bin/")
# the environment variables that make a shell run a file before the command
SHELL_STARTUP_VARIABLES = ("BASH_ENV", "ENV", "PROMPT_COMMAND")

_STRING = r"""(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')"""
_AWK_SYSTEM = re.compile(r"\bsystem\s*\(\s*(?:" + _STRING + r"|([^)]*))\s*\)")
_AWK_PIPE = re.compile(_STRING + r"\s*\|\s*getline|\|\s*" + _STRING)
_AWK_OUTPUT = re.compile(r"(?<![<>=!])>>?\s*" + _STRING)
_SED_EXEC = re.compile(r"(?:^|[;{}\n]|[0-9$/!])\s*e(?:\s+([^;\n}]*)|\s*(?=[;\n}]|$))")
_SED_S_EXEC = re.compile(r"s(.).*?\1.*?\1[gpiImM0-9]*e")
_CODE_CALL = re.compile(
    r"\b(?:os\.(?:remove|unlink|rmdir|removedirs|system|popen|exec\w*|spawn\w*)|shutil\.(?:rmtree|move)|"
    r"subprocess\.\w+|Path\([^)]*\)\.(?:unlink|rmdir|write_\w+)|unlink|rmdir|system|exec|spawnSync|execSync|"
    r"rmSync|unlinkSync|writeFileSync|File\.delete|FileUtils\.rm\w*)(?:\s*\(\s*|\s+)(" + _STRING + r")?"
)
_OPEN_WRITE = re.compile(r"\bopen\s*\(\s*" + _STRING + r"\s*,\s*['\"][^'\"]*[wax+]")


def _literal(match: re.Match[str], first: int = 1) -> str | None:
    """The text of the quoted string a pattern captured (double or single quoted)."""
    double, single = match.group(first), match.group(first + 1)
    return double if double is not None else single


def hidden_in(words: list[str]) -> Hidden:
    """What the simple command ``words`` (quotes removed, wrappers included) hides."""
    found = Hidden()
    if not words:
        return found
    name = words[0].rsplit("/", 1)[-1]
    reader = _READERS.get(name)
    if reader is not None:
        reader(words, found)
    elif name in _AWKS:
        _awk(words, found)
    elif name.rstrip("0123456789.") in _INTERPRETERS:
        _interpreter(name, words, found)
    return found


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
    operands = [w for w in words[1:] if not w.startswith("-")]
    if len(operands) >= 2 and operands[0]:
        found.scripts.append(operands[0])


def _source(words: list[str], found: Hidden) -> None:
    target = words[1] if len(words) > 1 else ""
    if target.startswith(("/dev/fd/", "/proc/self/fd/", "/dev/stdin")) or target in ("-", ""):
        raise ShellParseError(f"`{words[0]}` runs a script the checker cannot see ({target or 'its input'})")


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
    for n, word in enumerate(words[1:], 1):
        value = words[n + 1] if word == "-c" and n + 1 < len(words) else word[2:] if word.startswith("-c") else ""
        key, _, script = value.partition("=")
        if key.lower().startswith("alias.") and script.startswith("!"):
            found.scripts.append(script[1:])
        elif key.lower() in ("core.sshcommand", "core.pager", "core.editor", "core.fsmonitor", "diff.external"):
            found.scripts.append(script)


def _sed(words: list[str], found: Hidden) -> None:
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
        for match in re.finditer(r"(?:^|[;\n}])\s*[0-9$/]*\s*w\s+(\S+)", script):
            found.targets.append(match.group(1))


def _tar(words: list[str], found: Hidden) -> None:
    first = words[1] if len(words) > 1 else ""
    extracting = any(w in ("-x", "--extract", "--get") for w in words) or (not first.startswith("-") and "x" in first)
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
        elif extracting and word in ("-C", "--directory") and following:
            found.targets.append(following.rstrip("/") + "/-")
        elif extracting and word.startswith("--directory="):
            found.targets.append(word.split("=", 1)[1].rstrip("/") + "/-")


def _sort(words: list[str], found: Hidden) -> None:
    for n, word in enumerate(words[1:], 1):
        if word in ("-o", "--output") and n + 1 < len(words):
            found.targets.append(words[n + 1])
        elif word.startswith("--output="):
            found.targets.append(word.split("=", 1)[1])
        elif word.startswith("-o") and len(word) > 2:
            found.targets.append(word[2:])


def _awk(words: list[str], found: Hidden) -> None:
    program = next((w for w in words[1:] if not w.startswith("-")), "")
    for match in _AWK_SYSTEM.finditer(program):
        literal = _literal(match)
        if literal is None:
            raise ShellParseError("awk's system() runs a command built at run time")
        found.scripts.append(literal)
    for match in _AWK_PIPE.finditer(program):
        literal = _literal(match) if match.group(1) is not None or match.group(2) is not None else _literal(match, 3)
        if literal:
            found.scripts.append(literal)
    for match in _AWK_OUTPUT.finditer(program):
        literal = _literal(match)
        if literal:
            found.targets.append(literal)


def _interpreter(name: str, words: list[str], found: Hidden) -> None:
    """One-line code (``python -c``, ``perl -e``, ``node -e``): what it deletes, writes or runs,
    when it names it as a literal; when it computes it, the rules cannot vouch for it."""
    code = next((words[n + 1] for n, w in enumerate(words[:-1]) if w in _CODE_OPTIONS), None)
    if code is None:
        return
    for match in _CODE_CALL.finditer(code):
        call = match.group(0)
        literal = _literal(match, 2) if match.group(1) else None
        if literal is None:
            raise ShellParseError(f"the {name} code deletes, writes or runs something computed when it runs")
        if re.search(r"system|exec|spawn|popen|subprocess", call, re.IGNORECASE):
            found.scripts.append(literal)
        elif re.search(r"write|shutil\.move", call, re.IGNORECASE):
            found.targets.append(literal)
        else:
            found.programs.append(["rm", literal])
    for match in _OPEN_WRITE.finditer(code):
        literal = _literal(match)
        if literal:
            found.targets.append(literal)


_READERS = {
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
}
