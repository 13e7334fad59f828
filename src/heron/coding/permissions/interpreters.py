"""Code given to an interpreter on the command line or on its standard input.

An interpreter can do anything the user can, so the checker vouches for its code only
when it can read it and it reaches for nothing outside itself:

* a program read from standard input or a descriptor (``python3 - <<EOF``, ``… | python3``,
  ``node /dev/stdin``, ``perl <(…)``) or from a name computed at run time cannot be read
  before it runs: its effect cannot be bounded;
* one-line code (``python3 -c``, ``perl -e``, ``node -e``, ``ruby -e``, ``lua -e``): the
  literal files it deletes, writes or runs are named (``os.remove("f")`` counts as
  ``rm f`` for a deny rule), and code that imports a module, opens a file, evaluates a
  string or reaches for the operating system in any other way (the *markers* of its
  language) cannot be bounded; ``python3 -c 'print(1 + 1)'`` can. PHP's one-line code is
  never vouched for (any string can name a function);
* a script file (``python3 tool.py``) or a module (``python3 -m pytest``) is the project's
  own code and is not read here: for it, as for a Makefile, the sandbox is the boundary.

awk programs are read the same way: ``system()``, pipes and ``print >`` with literal
commands and files are named; with computed ones, or ``@load``, they cannot be bounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from heron.coding.permissions.findings import STRING, Hidden, literal, unseen_source


@dataclass(frozen=True, slots=True)
class Language:
    """How an interpreter takes its program (docstring above)."""

    code: frozenset[str]  # options whose value is code: -c, -e
    values: frozenset[str]  # options that take a value that is not code
    attached: str  # one-letter options whose value follows in the same word (perl's -i.bak, -F:)
    modules: frozenset[str]  # options that run an installed module instead of a script: python's -m
    harmless: frozenset[str]  # options after which no program runs: --version, --help
    markers: re.Pattern[str] | None  # what in one-line code reaches outside it; None: nothing is vouched for
    script: frozenset[str] = frozenset()  # options naming the script file: php's -f
    preludes: frozenset[str] = frozenset()  # options whose value is code run first: perl's -M
    interactive: frozenset[str] = frozenset()  # options that read more code from standard input: -i
    digits: str = ""  # one-letter options whose value is the digits after them (perl's -l, -0)


_PYTHON = re.compile(
    r"\bimport\b|__|\b(?:open|exec|eval|compile|getattr|setattr|delattr|globals|locals|vars|breakpoint|help|memoryview)\b"
)
_PERL = re.compile(
    r"`|->|&\s*[$\{]|\bdo\s*[^\s{]|[}\]>)/|!#,]\s*[msixpodualngcr]*e[msixpodualngcer]*\s*(?:[;})]|$)|"
    r"\b(?:system|exec|fork|unlink|rmdir|mkdir|rename|link|symlink|chmod|chown|chdir|chroot|truncate|utime|open|"
    r"sysopen|opendir|qx|eval|require|use|glob|syscall|kill|socket|connect|pipe|readpipe|dump|File|IO|POSIX|CORE|"
    r"UNIVERSAL)\b"
)
_RUBY = re.compile(
    r"`|%x|\$std(?:out|err)\.reopen|\b(?:system|exec|spawn|fork|open|File|FileUtils|Dir|IO|Kernel|Process|Open3|PTY|"
    r"Pathname|ObjectSpace|require|require_relative|load|eval|instance_eval|class_eval|module_eval|instance_exec|"
    r"send|public_send|__send__|method|const_get|syscall|binding|trap|at_exit|Object|Class|Module|STDOUT|STDERR)\b"
)
_NODE = re.compile(
    r"\b(?:require|import|process|eval|Function|globalThis|global|module|child_process|fs|Deno|Bun|constructor|"
    r"WebAssembly|fetch|Reflect|Proxy)\b"
)
_LUA = re.compile(
    r"\b(?:os|io|require|load|loadstring|dofile|loadfile|package|debug|_G|_ENV|getmetatable|setmetatable|rawget|"
    r"rawset|module)\b|string\.dump"
)
_VERSION = frozenset({"-v", "-V", "--version", "-h", "--help"})
LANGUAGES: dict[str, Language] = {
    "python": Language(
        code=frozenset({"-c"}),
        values=frozenset({"-W", "-X", "--check-hash-based-pycs"}),
        attached="WX",
        modules=frozenset({"-m"}),
        harmless=_VERSION | {"-VV"},
        markers=_PYTHON,
        interactive=frozenset({"-i"}),
    ),
    "perl": Language(
        code=frozenset({"-e", "-E"}),
        values=frozenset({"-I"}),
        attached="ixFCdDIMm",
        modules=frozenset(),
        harmless=_VERSION,
        markers=_PERL,
        digits="l0",
        preludes=frozenset({"-M", "-m"}),
    ),
    "ruby": Language(
        code=frozenset({"-e"}),
        values=frozenset({"-I", "-r", "-C", "-E", "--encoding"}),
        attached="IrCEFKTWx",
        digits="0",
        modules=frozenset(),
        harmless=_VERSION,
        markers=_RUBY,
    ),
    "node": Language(
        code=frozenset({"-e", "--eval", "-p", "--print"}),
        values=frozenset({"-r", "--require", "--import", "--input-type", "--loader", "-C", "--conditions"}),
        attached="",
        modules=frozenset(),
        harmless=_VERSION | {"--check", "-c"},
        markers=_NODE,
        interactive=frozenset({"-i", "--interactive"}),
    ),
    "php": Language(
        code=frozenset({"-r", "-B", "-R", "-E"}),
        values=frozenset({"-c", "-d", "-z", "-t"}),
        attached="",
        modules=frozenset(),
        harmless=_VERSION | {"-m", "-i", "-l"},
        markers=None,
        script=frozenset({"-f"}),
    ),
    "lua": Language(
        code=frozenset({"-e"}),
        values=frozenset({"-l"}),
        attached="",
        modules=frozenset(),
        harmless=_VERSION,
        markers=_LUA,
        interactive=frozenset({"-i"}),
    ),
}
_NAMES = {"python": "python", "perl": "perl", "ruby": "ruby", "node": "node", "nodejs": "node", "php": "php"}
_NAMES |= {"lua": "lua", "luajit": "lua"}

# literal files one-line code deletes, writes or runs
_CODE_CALL = re.compile(
    r"\b(?:os\.(?:remove|unlink|rmdir|removedirs|system|popen|exec\w*|spawn\w*)|shutil\.(?:rmtree|move)|"
    r"subprocess\.\w+|Path\([^)]*\)\.(?:unlink|rmdir|write_\w+)|unlink|rmdir|system|exec|spawnSync|execSync|"
    r"rmSync|unlinkSync|writeFileSync|File\.delete|FileUtils\.rm\w*)(?:\s*\(\s*|\s+)(" + STRING + r")?"
)
_OPEN_WRITE = re.compile(r"\bopen\s*\(\s*" + STRING + r"\s*,\s*['\"][^'\"]*[wax+]")


@dataclass(slots=True)
class _Program:
    """Where an interpreter's command line says its program comes from."""

    code: list[str] = field(default_factory=list)
    prelude: list[str] = field(default_factory=list)  # code run before the program (perl -M)
    script: str | None = None
    stdin: bool = True  # nothing else named a program: it is read from standard input
    nothing_runs: bool = False  # --version, or an installed module (-m)
    interactive: bool = False  # reads more code from standard input after its program


def _program(language: Language, words: list[str]) -> _Program:
    found = _Program()
    n = 1
    while n < len(words):
        word, following = words[n], (words[n + 1] if n + 1 < len(words) else None)
        if word == "--" or not word.startswith("-") or word == "-":
            if not found.code:
                found.script = following if word == "--" else word
                found.stdin = found.script is None
            return found
        if word in language.harmless or word in language.modules:
            found.nothing_runs = True
            return found
        found.interactive |= word in language.interactive
        name, _, value = word.partition("=")
        if name in language.script:
            found.script, found.stdin = value or following, False
            return found
        if name in language.code or name in language.values or name in language.preludes:
            _take(language, name, value or following or "", found)
            n += 1 if value else 2
        elif not word.startswith("--"):
            n += _cluster(language, word, following, found)
        else:
            n += 1
    return found


def _take(language: Language, option: str, value: str, found: _Program) -> None:
    if option in language.code:
        found.code.append(value)
        found.stdin = False
    elif option in language.preludes:
        found.prelude.append(value)


def _cluster(language: Language, word: str, following: str | None, found: _Program) -> int:
    """``-Bc 'code'``, ``-lne 'code'``, ``-i.bak``: how many words the option cluster takes."""
    i = 0
    while (i := i + 1) < len(word):
        char = word[i]
        option, rest = "-" + char, word[i + 1 :]
        if char in language.digits:
            while i + 1 < len(word) and word[i + 1] in "0123456789":
                i += 1
            continue
        found.interactive |= option in language.interactive
        if option in language.code or option in language.preludes or option in language.values:
            _take(language, option, rest or following or "", found)
            return 1 if rest else 2
        if option in language.modules:
            found.nothing_runs = True
            return 1 if rest else 2
        if char in language.attached:
            return 1
    return 1


def interpreter(name: str, words: list[str], found: Hidden) -> None:
    """What ``words`` (an interpreter's command line) runs, deletes or writes, or why that
    cannot be bounded (module docstring)."""
    language = LANGUAGES[_NAMES[name.rstrip("0123456789.")]]
    program = _program(language, words)
    for code in program.prelude:
        _code(name, language, code, found)
    if program.interactive:
        found.cannot_bound(f"`{name}` reads more code from its standard input (interactive)")
    if program.nothing_runs and not program.code:
        return
    if program.script is not None:
        if unseen_source(program.script):
            found.cannot_bound(f"`{name}` runs a program it reads from {program.script}, which no checker can see")
        else:
            found.code_files.append(program.script)
        return
    if program.stdin:
        found.cannot_bound(f"`{name}` reads the program it runs from its standard input, which no checker can see")
        return
    for code in program.code:
        _code(name, language, code, found)


def _code(name: str, language: Language, code: str, found: Hidden) -> None:
    for match in _CODE_CALL.finditer(code):
        call = match.group(0)
        named = literal(match, 2) if match.group(1) else None
        if named is None:
            found.cannot_bound(f"the {name} code deletes, writes or runs something computed when it runs")
        elif re.search(r"system|exec|spawn|popen|subprocess", call, re.IGNORECASE):
            found.scripts.append(named)
        elif re.search(r"write|shutil\.move", call, re.IGNORECASE):
            found.targets.append(named)
        else:
            found.programs.append(["rm", named])
    for match in _OPEN_WRITE.finditer(code):
        named = literal(match)
        if named:
            found.targets.append(named)
    if language.markers is None:
        found.cannot_bound(f"the {name} code can call any function by a name built from strings")
    elif (marker := language.markers.search(code)) is not None:
        found.cannot_bound(f"the {name} code uses `{marker.group(0).strip()}`, which reaches files or programs")


def interpreter_name(program: str) -> str | None:
    """``python3.12`` -> ``python3.12`` when it is an interpreter read here, else None."""
    return program if program.rstrip("0123456789.") in _NAMES else None


# --- awk ---

_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
_AWK_SYSTEM = re.compile(r"\bsystem\s*\(\s*(?:" + STRING + r"|([^)]*))\s*\)")
_AWK_PIPE = re.compile(STRING + r"\s*\|\s*getline|\|&?\s*" + STRING)
_AWK_OUTPUT = re.compile(r"(?<![<>=!])>>?\s*" + STRING)
_AWK_ANY_PIPE = re.compile(r"(?<!\|)\|(?!\|)")
_AWK_REDIRECT = re.compile(r"\bprintf?\b[^;{}\n]*?(?<![<>=!])>>?\s*(.)")
_STRINGS = re.compile(STRING)


def awk(words: list[str], found: Hidden) -> None:
    """awk's ``system()``, its pipes to and from commands and ``print > file``."""
    for n, word in enumerate(words[1:-1], 1):
        if word in ("-f", "--file") and unseen_source(words[n + 1]):
            found.cannot_bound(f"awk runs a program it reads from {words[n + 1]}, which no checker can see")
        elif word in ("-f", "--file"):
            found.code_files.append(words[n + 1])
    program = next((w for w in words[1:] if not w.startswith("-")), "")
    if "@load" in program:
        found.cannot_bound("the awk program loads an extension (@load)")
    for match in _AWK_SYSTEM.finditer(program):
        named = literal(match)
        if named is None:
            found.cannot_bound("awk's system() runs a command built at run time")
        else:
            found.scripts.append(named)
    pipes = _AWK_PIPE.findall(program)
    for match in _AWK_PIPE.finditer(program):
        named = literal(match) if match.group(1) is not None or match.group(2) is not None else literal(match, 3)
        if named:
            found.scripts.append(named)
    bare = _STRINGS.sub('""', program)
    if len(_AWK_ANY_PIPE.findall(bare)) > len(pipes):
        found.cannot_bound("awk pipes to or from a command built at run time")
    if any(match.group(1) not in "\"'" for match in _AWK_REDIRECT.finditer(bare)):
        found.cannot_bound("awk prints to a file whose name is computed when it runs")
    for match in _AWK_OUTPUT.finditer(program):
        named = literal(match)
        if named:
            found.targets.append(named)


CODE_READERS: dict[str, Callable[[list[str], Hidden], None]] = dict.fromkeys(_AWKS, awk)
