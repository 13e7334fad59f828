"""Split a shell command line into the simple commands it would run.

A permission rule such as ``Bash(rm:*)`` is about one program; ``echo ok && rm -rf build``
runs two. So before matching, the line is cut into every command it can start: parts
joined by ``&&``, ``||``, ``;``, ``|``, ``&`` or newlines, the bodies of subshells and
groups, command substitutions (``$(...)``, backticks), process substitutions, and the
scripts given to ``bash -c`` / ``sh -c`` / ``eval``. Quotes are removed the way the shell
removes them, so ``r''m`` and ``\\rm`` are ``rm``.

This is deliberately a checker, not a shell: anything it cannot follow for certain (an
unterminated quote, ``case``, a here-document that expands commands) raises
:class:`ShellParseError`, and the caller treats the command as one it cannot vouch for.
A word built at run time (``$CMD``, ``$(echo rm)``) is marked ``dynamic``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from heron.coding.permissions.findings import Hidden
from heron.coding.permissions.hidden import SHELL_STARTUP_VARIABLES, ShellParseError, hidden_in, variable_hides
from heron.coding.permissions.trees import find_roots
from heron.coding.permissions.wrappers import SCRIPT_OPTION_PROGRAMS, unwrap

MAX_DEPTH = 8
__all__ = ["ShellParseError", "SimpleCommand", "Word", "split_commands"]


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    dynamic: bool = False  # contains an expansion: its value is known only when it runs


@dataclass(slots=True)
class SimpleCommand:
    """One program run: its words (assignments and redirections removed)."""

    words: list[Word] = field(default_factory=list)
    writes_files: bool = False  # an output redirection to a file (not /dev/null, not a descriptor)
    targets: list[Word] = field(default_factory=list)  # the files output redirections write
    cwd: str | None = None  # where it runs, when an earlier ``cd`` of the line moved (relative: to the start)
    redirects: list[tuple[str, Word]] = field(default_factory=list)  # every file redirection: (operator, file)
    trees: list[Word] = field(default_factory=list)  # directories it may write anything beneath (trees.py)
    read_trees: list[Word] = field(default_factory=list)  # directories it reads everything beneath (trees.py)
    opaque: str | None = None  # why the checker cannot bound what it does (an interpreter's stdin program …)
    fed: list[Word] | None = None  # given arguments it cannot see: by xargs ([]), by find -exec (its roots)
    implied: bool = False  # a command it may run (``make CC=rm``): checked against deny and ask rules only
    assigned: list[str] = field(default_factory=list)  # its leading ``NAME=value`` assignments
    code_files: list[str] = field(default_factory=list)  # files it runs as code (hidden.py)
    shell_files: list[str] = field(default_factory=list)  # of those, the ones a shell may run

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def dynamic_name(self) -> bool:
        return bool(self.words) and self.words[0].dynamic


_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "(", ")")
_REDIRECTS = ("&>>", "&>", ">>", ">|", ">&", "<<<", "<<-", "<<", "<&", "<>", ">", "<")
_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time", "[[", "]]"}
_SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
# Redirection targets that write no file
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2"})


def split_commands(line: str) -> list[SimpleCommand]:
    """Every simple command ``line`` can run, in order. Raises :class:`ShellParseError`."""
    return _Parser(line, 0).parse()


class _Parser:
    def __init__(self, text: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise ShellParseError("commands nested too deeply")
        self.s = text
        self.i = 0
        self.depth = depth
        self.out: list[SimpleCommand] = []
        self.current = SimpleCommand()
        self.heredocs: list[tuple[str, bool]] = []  # (delimiter, expands)
        self.pending_redirect: str | None = None
        self.pending_fd = ""  # the descriptor a pending redirection names (`2>`): kept for how a rule spells it
        self.cd: str | None = None  # the directory an earlier `cd dir` of this line moved to

    # --- driving ---

    def parse(self) -> list[SimpleCommand]:
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch in " \t":
                self.i += 1
            elif ch == "\\" and self.s.startswith("\\\n", self.i):
                self.i += 2
            elif ch == "#":
                end = self.s.find("\n", self.i)
                self.i = len(self.s) if end < 0 else end
            elif (op := self._operator()) is not None:
                self.i += len(op)
                self._end_command()
                if op == "\n":
                    self._skip_heredocs()
            elif (redirect := self._redirect()) is not None:
                self._start_redirect(redirect)
            else:
                self._add_word(self._word())
        if self.pending_redirect is not None:
            raise ShellParseError(f"a redirection ({self.pending_redirect}) has no target")
        if self.heredocs:
            self._skip_heredocs()
        self._end_command()
        return self.out

    def _operator(self) -> str | None:
        for op in _OPERATORS:
            if self.s.startswith(op, self.i):
                return op
        return None

    def _redirect(self) -> str | None:
        j = self.i
        while j < len(self.s) and self.s[j].isdigit():
            j += 1
        for op in _REDIRECTS:
            if self.s.startswith(op, j):
                if op in (">", "<") and self.s.startswith("(", j + 1):
                    return None  # a process substitution, read as a word
                return self.s[self.i : j + len(op)]
        return None

    def _start_redirect(self, redirect: str) -> None:
        if self.pending_redirect is not None:
            raise ShellParseError("two redirections in a row")
        self.i += len(redirect)
        self.pending_redirect = redirect.lstrip("0123456789")
        self.pending_fd = redirect[: len(redirect) - len(self.pending_redirect)]

    def _add_word(self, word: Word) -> None:
        redirect, self.pending_redirect = self.pending_redirect, None
        if redirect is not None:
            self._redirect_target(redirect, word)
            return
        cmd = self.current
        if not cmd.words and "=" in word.text and _is_assignment(word.text):
            if word.text.split("=", 1)[0] in SHELL_STARTUP_VARIABLES:
                raise ShellParseError(f"{word.text.split('=', 1)[0]} makes a shell run a file the checker cannot see")
            cmd.assigned.append(word.text)
            return
        cmd.words.append(word)

    def _redirect_target(self, redirect: str, word: Word) -> None:
        if redirect in ("<<", "<<-"):
            raw = word.text
            self.heredocs.append((raw, not self._last_word_quoted))
            return
        if redirect == "<<<" or (redirect.endswith("&") and (word.text.isdigit() or word.text == "-")):
            return  # a here-string, or a copy of a descriptor: no file
        if word.text not in _HARMLESS_TARGETS:
            self.current.redirects.append((self.pending_fd + redirect, word))
        if ">" in redirect and word.text not in _HARMLESS_TARGETS:
            self.current.writes_files = True
            self.current.targets.append(word)

    def _end_command(self) -> None:
        cmd = self.current
        self.current = SimpleCommand()
        if self.pending_redirect is not None:
            raise ShellParseError(f"a redirection ({self.pending_redirect}) has no target")
        while cmd.words and not cmd.words[0].dynamic and cmd.words[0].text in _KEYWORDS:
            cmd.words.pop(0)
        if not cmd.words and not cmd.writes_files:
            return
        if cmd.words and cmd.words[0].text in ("case", "select", "function", "coproc"):
            raise ShellParseError(f"`{cmd.words[0].text}` is not followed by the checker")
        if cmd.words and cmd.words[0].text == "for":
            return  # `for x in a b`: the list is words, not a command; substitutions were already split
        cmd.cwd = self.cd
        self.out.append(cmd)
        self._fed(cmd)
        self._nested_scripts(cmd)
        self._hidden(cmd)
        self._follow_cd(cmd)

    def _hidden(self, cmd: SimpleCommand) -> None:
        """What the command (and each program it wraps) hides in its arguments (hidden.py)."""
        texts = [w.text for w in cmd.words]
        if texts and texts[0] in (".", "source") and len(cmd.words) > 1 and cmd.words[1].dynamic:
            raise ShellParseError(f"`{texts[0]}` runs a script built at run time")
        if any(t.startswith(f"{name}=") for t in texts for name in SHELL_STARTUP_VARIABLES):
            raise ShellParseError("the command sets a variable that makes a shell run a file the checker cannot see")
        assigned = Hidden()
        for assignment in cmd.assigned:
            variable_hides(assignment, assigned)
        self._found(cmd, assigned)
        for start in unwrap(texts):
            self._found(cmd, hidden_in(texts[start:]))

    def _found(self, cmd: SimpleCommand, found: Hidden) -> None:
        """What a reader of hidden.py found in ``cmd``: commands to check, files it writes."""
        for script in found.scripts:
            self.out.extend(_Parser(script, self.depth + 1).parse())
        for program in found.programs:
            self.out.append(SimpleCommand(words=[Word(word) for word in program], cwd=self.cd))
        for value in found.implied:
            try:
                implied = _Parser(value, self.depth + 1).parse()
            except ShellParseError as exc:
                cmd.opaque = cmd.opaque or f"it runs {value!r}, which the checker cannot follow ({exc})"
                continue
            for part in implied:
                part.implied = True
            self.out.extend(implied)
        if found.targets:
            cmd.writes_files = True
            cmd.targets.extend(Word(target) for target in found.targets)
        cmd.trees.extend(Word(tree) for tree in found.trees)
        cmd.read_trees.extend(Word(tree) for tree in found.read_trees)
        cmd.code_files.extend(found.code_files)
        cmd.shell_files.extend(found.shell_files)
        cmd.opaque = cmd.opaque or found.opaque

    def _fed(self, cmd: SimpleCommand) -> None:
        """``xargs CMD``, ``parallel CMD``: CMD gets arguments no checker sees, and a word holding
        the replace string (``{}``, ``-I X``) is only known when it runs; ``parallel`` with no
        command runs the lines it reads."""
        texts = [w.text for w in cmd.words]
        starts = unwrap(texts)
        for at, start in enumerate(starts):
            name = texts[start].rsplit("/", 1)[-1]
            if name not in ("xargs", "parallel"):
                continue
            program = starts[at + 1] if at + 1 < len(starts) else len(texts)
            if name == "parallel" and (program >= len(texts) or texts[program].startswith(":::")):
                cmd.opaque = "parallel runs the command lines it reads, which no checker can see"
            marks = _replace_strings(texts[start:program]) if name == "xargs" else ("{", "}")
            cmd.words[program:] = [
                Word(w.text, True) if marks and all(m in w.text for m in marks) else w for w in cmd.words[program:]
            ]
            cmd.fed = []

    def _follow_cd(self, cmd: SimpleCommand) -> None:
        """``cd dir && echo x > f`` writes ``dir/f``: later commands of the line run in ``dir``."""
        if not cmd.words or cmd.words[0].text not in ("cd", "pushd"):
            return
        operands = [w for w in cmd.words[1:] if not w.text.startswith("-")]
        if len(operands) != 1 or operands[0].dynamic:
            return
        target = os.path.expanduser(operands[0].text)
        self.cd = target if os.path.isabs(target) or self.cd is None else os.path.join(self.cd, target)

    def _nested_scripts(self, cmd: SimpleCommand) -> None:
        """``bash -c 'script'`` and ``eval 'script'`` run a script of their own, ``find -exec``
        a command of its own; a shell given no script reads one from its input, which no
        checker can see (``echo 'rm x' | sh``)."""
        starts = unwrap([w.text for w in cmd.words])
        if len(starts) > 1:  # `sudo sh -c …`, `nohup bash -c …`: the wrapped program (and what it wraps)
            self._nested_scripts(SimpleCommand(words=cmd.words[starts[1] :]))
        words = cmd.words
        name = words[0].text.rsplit("/", 1)[-1] if words else ""
        script: list[Word] = []
        if name == "eval":
            script = words[1:]
        elif name in ("find", "fd", "fdfind"):
            self._exec_commands(words)
        elif name in SCRIPT_OPTION_PROGRAMS:
            script = next(
                (
                    words[n + 1 : n + 2]
                    for n, w in enumerate(words)
                    if w.text == "--command"
                    or (w.text.startswith("-") and not w.text.startswith("--") and "c" in w.text[1:])
                ),
                [],
            )
        elif name in _SHELLS:
            for n, word in enumerate(words[1:], 1):
                if word.text.startswith("-") and "c" in word.text[1:] and not word.text.startswith("--"):
                    script = words[n + 1 : n + 2]
                    break
            else:
                if all(w.text.startswith("-") for w in words[1:]) or any(w.text == "-s" for w in words[1:]):
                    raise ShellParseError(f"`{name}` reads the script it runs from its input")
        if not script:
            return
        if any(w.dynamic for w in script):
            raise ShellParseError(f"the script given to `{name}` is built at run time")
        self.out.extend(_Parser(" ".join(w.text for w in script), self.depth + 1).parse())

    def _exec_commands(self, words: list[Word]) -> None:
        """The commands ``find -exec CMD {} ;`` (and ``-execdir``/``-ok``, fd's ``-x``/``-X``) run."""
        starts = {"-exec", "-execdir", "-ok", "-okdir", "-x", "--exec", "-X", "--exec-batch"}
        i = 1
        while i < len(words):
            if words[i].text not in starts:
                i += 1
                continue
            j = i + 1
            while j < len(words) and words[j].text not in (";", "+"):
                j += 1
            inner = SimpleCommand(
                words=[Word(w.text, w.dynamic or "{}" in w.text) for w in words[i + 1 : j]],
                cwd=self.cd,
                fed=[Word(root) for root in find_roots([w.text for w in words])],
            )
            if inner.words:
                self.out.append(inner)
                self._nested_scripts(inner)
                self._hidden(inner)
            i = j + 1

    def _skip_heredocs(self) -> None:
        """The bodies of pending here-documents follow the line: skip them."""
        while self.heredocs:
            delimiter, expands = self.heredocs.pop(0)
            while True:
                if self.i >= len(self.s):
                    raise ShellParseError(f"here-document `{delimiter}` never ends")
                end = self.s.find("\n", self.i)
                line = self.s[self.i : end if end >= 0 else len(self.s)]
                self.i = end + 1 if end >= 0 else len(self.s)
                if line.strip("\t") == delimiter:
                    break
                if expands and ("$(" in line or "`" in line):
                    raise ShellParseError("a here-document runs commands ($(...) or backticks)")

    # --- words ---

    _last_word_quoted = False

    def _word(self) -> Word:
        start = self.i
        parts: list[str] = []
        dynamic = False
        quoted = False
        s = self.s
        while self.i < len(s):
            ch = s[self.i]
            if (
                ch in " \t"
                or self._operator() is not None
                or (parts and self._redirect() is not None and not "".join(parts).isdigit())
            ):
                break
            if ch == "\\":
                if self.i + 1 < len(s) and s[self.i + 1] != "\n":
                    parts.append(s[self.i + 1])
                self.i += 2
                quoted = True
            elif ch == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise ShellParseError("a single quote is never closed")
                parts.append(s[self.i + 1 : end])
                self.i = end + 1
                quoted = True
            elif ch == '"':
                text, dyn = self._double_quoted()
                parts.append(text)
                dynamic |= dyn
                quoted = True
            elif ch == "$" or ch == "`" or (ch in "<>" and s.startswith("(", self.i + 1)):
                parts.append(self._expansion())
                dynamic = True
            else:
                parts.append(ch)
                self.i += 1
        self._last_word_quoted = quoted
        if not parts and not quoted:
            raise ShellParseError(f"unexpected character {s[self.i]!r}")
        raw = s[start : self.i]
        return Word("".join(parts), dynamic or _expands(raw))

    def _double_quoted(self) -> tuple[str, bool]:
        s = self.s
        self.i += 1
        parts: list[str] = []
        dynamic = False
        while True:
            if self.i >= len(s):
                raise ShellParseError("a double quote is never closed")
            ch = s[self.i]
            if ch == '"':
                self.i += 1
                return "".join(parts), dynamic
            if ch == "\\" and self.i + 1 < len(s) and s[self.i + 1] in '"\\$`\n':
                if s[self.i + 1] != "\n":
                    parts.append(s[self.i + 1])
                self.i += 2
            elif ch == "$" or ch == "`":
                parts.append(self._expansion())
                dynamic = True
            else:
                parts.append(ch)
                self.i += 1

    def _expansion(self) -> str:
        """``$name``, ``${...}``, ``$((...))``, ``$(...)``, backticks, ``<(...)``; the
        commands inside a substitution are checked like any other."""
        s = self.s
        start = self.i
        if s.startswith("$((", start):
            end = _matching(s, start + 1, "(", ")")
            self.i = end + 1
            inner = s[start + 3 : end - 1]
            if "$(" in inner or "`" in inner:
                raise ShellParseError("arithmetic that runs commands")
            return s[start : self.i]
        if s.startswith("$(", start) or s[start] in "<>":
            end = _matching(s, start + 1, "(", ")")
            self.out.extend(_Parser(s[start + 2 : end], self.depth + 1).parse())
            self.i = end + 1
            return s[start : self.i]
        if s[start] == "`":
            end = start + 1
            while end < len(s) and s[end] != "`":
                end += 2 if s[end] == "\\" else 1
            if end >= len(s):
                raise ShellParseError("a backtick is never closed")
            self.out.extend(_Parser(s[start + 1 : end].replace("\\`", "`"), self.depth + 1).parse())
            self.i = end + 1
            return s[start : self.i]
        if s.startswith("${", start):
            end = _matching(s, start + 1, "{", "}")
            inner = s[start + 2 : end]
            if "$(" in inner or "`" in inner:
                raise ShellParseError("a parameter expansion that runs commands")
            self.i = end + 1
            return s[start : self.i]
        j = start + 1
        if j < len(s) and (s[j].isalnum() or s[j] == "_"):
            while j < len(s) and (s[j].isalnum() or s[j] == "_"):
                j += 1
        elif j < len(s) and s[j] in "@*#?$!-":
            j += 1
        else:
            self.i = j
            return "$"  # a lone dollar sign is literal
        self.i = j
        return s[start:j]


def _replace_strings(xargs: list[str]) -> tuple[str, ...]:
    """The replace string of ``xargs -I X`` (``-i``, ``--replace``: ``{}``); none: nothing."""
    for n, word in enumerate(xargs):
        if word == "-I" and n + 1 < len(xargs):
            return (xargs[n + 1],)
        if word.startswith("-I") and len(word) > 2:
            return (word[2:],)
        if word.startswith(("-i", "--replace")):
            given = word.split("=", 1)[1] if "=" in word else word[2:] if word.startswith("-i") else ""
            return (given or "{}",)
    return ()


def _matching(s: str, open_at: int, opening: str, closing: str) -> int:
    """Index of the ``closing`` that ends the group opened at ``open_at`` (quote-aware)."""
    depth = 0
    i = open_at
    while i < len(s):
        ch = s[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'":
            end = s.find("'", i + 1)
            if end < 0:
                raise ShellParseError("a single quote is never closed")
            i = end + 1
            continue
        if ch == '"':
            i += 1
            while i < len(s) and s[i] != '"':
                i += 2 if s[i] == "\\" else 1
            i += 1
            continue
        if ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ShellParseError(f"a {opening!r} is never closed")


def _is_assignment(word: str) -> bool:
    name = word.split("=", 1)[0].removesuffix("+")
    return bool(name) and (name[0].isalpha() or name[0] == "_") and all(c.isalnum() or c == "_" for c in name)


def _expands(raw: str) -> bool:
    """Whether the shell would turn this word (as written) into other words: an unquoted
    glob (``/bin/r?``, ``r*``) or brace expansion (``{rm,-rf,x}``)."""
    if "'" in raw or '"' in raw or "\\" in raw:
        raw = _unquoted_part(raw)
    if raw in ("[", "[[", "{", "}"):
        return False
    if "*" in raw or "?" in raw:
        return True
    if "[" in raw and "]" in raw[raw.index("[") + 1 :]:
        return True
    return "{" in raw and "}" in raw and ("," in raw or ".." in raw)


def _unquoted_part(raw: str) -> str:
    """``raw`` with quoted text and escaped characters left out."""
    out: list[str] = []
    i, quote = 0, ""
    while i < len(raw):
        ch = raw[i]
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                i += 1
        elif ch in "'\"":
            quote = ch
        elif ch == "\\":
            i += 1
        else:
            out.append(ch)
        i += 1
    return "".join(out)
