"""The directory walk behind grep, find and ls, and what the three tools share.

The tools promise the same output whether ``rg``/``fd`` are installed or not, so the
pure-Python walk here reproduces the rules of the ``ignore`` crate that rg and fd are both
built on, rather than pathspec's approximation of git:

* Glob syntax is globset's (what rg's ``--glob``, fd's ``--glob`` and both tools' ignore
  files use): ``*`` and ``?`` stop at ``/``, ``**`` spans directories, ``[...]`` classes,
  ``{a,b}`` alternatives, backslash escapes. pathspec has no ``{a,b}`` (models write
  ``*.{ts,tsx}`` all the time) and matches a pattern against a path's descendants, which
  the walk does not need: an ignored directory is never entered, so every path is judged
  on its own, as git does.
* Ignore files, strongest first: the tool's own file (``.rgignore`` for grep, ``.fdignore``
  for find and ls), then ``.ignore``, then ``.gitignore``, then ``.git/info/exclude``, then
  the global excludes file (``core.excludesFile``, else ``$XDG_CONFIG_HOME/git/ignore``).
  Within one kind the deepest directory that has a matching rule decides; within one file
  the last matching line decides. Files in the directories above the search root count too.
* The three git kinds apply only inside a git repository (a ``.git`` in the directory or
  above it), as in git, rg and fd (fd 8 cannot be told otherwise); ``.gitignore`` files
  above the repository's top are not read.
* Hidden files are walked, ``.git`` never; symbolic links are neither followed nor
  reported by the walk (rg and fd do not follow them by default either).
* Order: depth first, the entries of each directory sorted by name (bytes), which is
  what ``rg --sort path`` prints and what sorting paths component by component gives.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal as signal_module
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from heron.agent.tools import ToolError
from heron.ai.abort import AbortSignal
from heron.coding.tools.env import display_path
from heron.context.limits import ToolLimits, format_size
from heron.context.truncate import Truncation, truncate_head

GIT_DIR = ".git"

Backend = Literal["auto", "external", "python"]

# --- globs ------------------------------------------------------------------------


class GlobError(ValueError):
    """A glob that globset would reject; the message is the reason only."""


# token kinds
_LIT, _ANY, _STAR, _RPREFIX, _RSUFFIX, _RZOM, _CLASS, _ALT = range(8)
_Token = tuple[Any, ...]


def _parse_glob(glob: str, unclosed_class_is_literal: bool) -> list[_Token]:
    branches: list[list[_Token]] = [[]]
    alt_starts: list[int] = []
    unclosed_seen = False
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "?":
            branches[-1].append((_ANY,))
            i += 1
        elif c == "*":
            i = _parse_star(glob, i, branches)
        elif c == "[" and not unclosed_seen:
            parsed = _parse_class(glob, i)
            if parsed is None:
                if not unclosed_class_is_literal:
                    raise GlobError("unclosed character class; missing ']'")
                unclosed_seen = True  # no later '[' can close either
                branches[-1].append((_LIT, "["))
                i += 1
            else:
                token, i = parsed
                branches[-1].append(token)
        elif c == "{":
            alt_starts.append(len(branches))
            branches.append([])
            i += 1
        elif c == "}":
            if not alt_starts:
                raise GlobError("unopened alternate group; missing '{' (escape '}' as '[}]')")
            start = alt_starts.pop()
            alternatives = branches[start:]
            del branches[start:]
            branches[-1].append((_ALT, alternatives))
            i += 1
        elif c == "," and alt_starts:
            branches.append([])
            i += 1
        elif c == "\\":
            if i + 1 >= n:
                raise GlobError("dangling '\\'")
            branches[-1].append((_LIT, glob[i + 1]))
            i += 2
        else:
            branches[-1].append((_LIT, c))
            i += 1
    if len(branches) > 1:
        raise GlobError("unclosed alternate group; missing '}' (escape '{' as '[{]')")
    return branches[0]


def _parse_star(glob: str, i: int, branches: list[list[_Token]]) -> int:
    """``*``, or one of the three ``**`` forms; ``**`` anywhere else is just ``*``."""
    tokens = branches[-1]
    prev = glob[i - 1] if i > 0 else None
    n = len(glob)
    if i + 1 >= n or glob[i + 1] != "*":
        tokens.append((_STAR,))
        return i + 1
    i += 2
    nxt = glob[i] if i < n else None
    if not tokens:
        if nxt is not None and nxt != "/":
            tokens.extend([(_STAR,), (_STAR,)])
        else:
            tokens.append((_RPREFIX,))
            if nxt == "/":
                i += 1
        return i
    if prev != "/" and (len(branches) <= 1 or prev not in (",", "{")):
        tokens.extend([(_STAR,), (_STAR,)])
        return i
    if nxt is None or (nxt in ",}" and len(branches) >= 2):
        is_suffix = True
    elif nxt == "/":
        is_suffix = False
        i += 1
    else:
        tokens.extend([(_STAR,), (_STAR,)])
        return i
    last = tokens.pop()
    if last[0] in (_RPREFIX, _RSUFFIX):
        tokens.append(last)
    else:
        tokens.append((_RSUFFIX,) if is_suffix else (_RZOM,))
    return i


def _parse_class(glob: str, i: int) -> tuple[_Token, int] | None:
    """A ``[...]`` class starting at ``glob[i]``, or ``None`` when it is never closed."""
    j = i + 1
    n = len(glob)
    negated = j < n and glob[j] in "!^"
    if negated:
        j += 1
    ranges: list[list[str]] = []
    first = True
    in_range = False
    while True:
        if j >= n:
            return None
        c = glob[j]
        j += 1
        if c == "]" and not first:
            break
        if c == "-" and not first and not in_range:
            in_range = True
        elif in_range:
            ranges[-1][1] = c
            if c < ranges[-1][0]:
                raise GlobError(f"invalid range; '{ranges[-1][0]}' > '{c}'")
            in_range = False
        else:
            ranges.append([c, c])
        first = False
    if in_range:
        ranges.append(["-", "-"])
    return (_CLASS, negated, [(a, b) for a, b in ranges]), j


def _tokens_regex(tokens: list[_Token]) -> str:
    out: list[str] = []
    for token in tokens:
        kind = token[0]
        if kind == _LIT:
            out.append(re.escape(token[1]))
        elif kind == _ANY:
            out.append("[^/]")
        elif kind == _STAR:
            out.append("[^/]*")
        elif kind == _RPREFIX:
            out.append("(?:/?|.*/)")
        elif kind == _RSUFFIX:
            out.append("/.*")
        elif kind == _RZOM:
            out.append("(?:/|/.*/)")
        elif kind == _CLASS:
            body = "".join(re.escape(a) if a == b else f"{re.escape(a)}-{re.escape(b)}" for a, b in token[2])
            out.append(f"[{'^' if token[1] else ''}{body}]")
        else:  # alternatives; empty ones are dropped, as globset does by default
            parts = [p for p in (_tokens_regex(branch) for branch in token[1]) if p]
            if parts:
                out.append("(?:" + "|".join(parts) + ")")
    return "".join(out)


def glob_regex(glob: str, *, unclosed_class_is_literal: bool = False) -> str:
    """The regex (for ``fullmatch`` against a ``/``-separated path) of a globset glob."""
    tokens = _parse_glob(glob, unclosed_class_is_literal)
    if tokens == [(_RPREFIX,)]:
        return ".*"
    return _tokens_regex(tokens)


def _bytes_regex(regex: str) -> re.Pattern[bytes]:
    """Compile for matching encoded paths: globset's regexes work on bytes, so ``?``
    is one byte and ``[é]`` a class of two bytes; matching ``str`` paths would disagree
    with rg and fd on non-ASCII names."""
    return re.compile(regex.encode("utf-8", "surrogateescape"))


def compile_glob(glob: str) -> re.Pattern[bytes]:
    """A user's glob (grep's ``glob``, find's ``pattern``), strictly parsed, for bytes paths."""
    return _bytes_regex(glob_regex(glob))


# --- ignore files -------------------------------------------------------------------

NONE, IGNORE, WHITELIST = 0, 1, 2


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    regex: str
    whitelist: bool
    only_dir: bool


def gitignore_rule(line: str, *, strict: bool = False) -> IgnoreRule | None:
    """One line of an ignore file, read the way the ``ignore`` crate reads it.

    ``strict`` reports an unparsable glob (something the model typed) instead of skipping
    it (what rg and fd do with a bad line in an ignore file).
    """
    if line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip()
    if not line:
        return None
    whitelist = False
    anchored = False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
    else:
        if line.startswith("!"):
            whitelist = True
            line = line[1:]
        if line.startswith("/"):
            line = line[1:]
            anchored = True
    only_dir = False
    if line.endswith("/"):
        only_dir = True
        line = line[:-1]
        if line.endswith("\\"):
            line = line[:-1]
    actual = line
    if not anchored and "/" not in line and not (actual.startswith("**/") or actual == "**"):
        actual = "**/" + actual
    if actual.endswith("/**"):
        actual += "/*"
    try:
        regex = glob_regex(actual, unclosed_class_is_literal=not strict)
    except GlobError:
        if strict:
            raise
        return None
    return IgnoreRule(regex, whitelist, only_dir)


class IgnoreMatcher:
    """The rules of one ignore file (or one set of override globs).

    All rules are joined into one regex, newest first, so a single ``fullmatch`` finds the
    last matching line (the one that decides) without a Python loop over the rules.
    """

    __slots__ = ("_dirs", "_dirs_white", "_files", "_files_white")

    def __init__(self, rules: list[IgnoreRule]) -> None:
        self._files, self._files_white = self._join([r for r in rules if not r.only_dir])
        self._dirs, self._dirs_white = self._join(rules)

    @staticmethod
    def _join(rules: list[IgnoreRule]) -> tuple[re.Pattern[bytes] | None, list[bool]]:
        if not rules:
            return None, []
        newest_first = list(reversed(rules))
        regex = "|".join(f"({rule.regex})" for rule in newest_first)
        return _bytes_regex(regex), [rule.whitelist for rule in newest_first]

    @classmethod
    def from_text(cls, text: str) -> IgnoreMatcher | None:
        if text.startswith("\ufeff"):
            text = text[1:]
        rules = [rule for line in text.split("\n") if (rule := gitignore_rule(line.removesuffix("\r")))]
        return cls(rules) if rules else None

    @classmethod
    def from_file(cls, path: str | bytes) -> IgnoreMatcher | None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        return cls.from_text(data.decode("utf-8", "replace"))

    def match(self, path: bytes, is_dir: bool) -> int:
        """NONE, IGNORE or WHITELIST for ``path`` (relative to the file's directory)."""
        regex, white = (self._dirs, self._dirs_white) if is_dir else (self._files, self._files_white)
        if regex is None:
            return NONE
        m = regex.fullmatch(path)
        if m is None:
            return NONE
        return WHITELIST if white[(m.lastindex or 1) - 1] else IGNORE


class Overrides:
    """rg's ``--glob``: a matching glob decides before any ignore file does.

    When at least one glob is positive, a file matching none of them is skipped;
    directories are then still judged by the ignore files (so a gitignored directory is
    not entered), but a gitignored *file* that matches the glob is searched, as rg does.
    """

    __slots__ = ("_matcher", "_whitelists")

    def __init__(self, globs: list[str]) -> None:
        """Raises :class:`GlobError` for a glob rg would reject."""
        rules: list[IgnoreRule] = []
        whitelists = 0
        for glob in globs:
            rule = gitignore_rule(glob, strict=True)
            if rule is None:
                continue
            # an override glob means "search this"; a leading '!' means "skip this"
            rules.append(IgnoreRule(rule.regex, not rule.whitelist, rule.only_dir))
            whitelists += 0 if rule.whitelist else 1
        self._matcher = IgnoreMatcher(rules)
        self._whitelists = whitelists

    def match(self, path: bytes, is_dir: bool) -> int:
        result = self._matcher.match(path, is_dir)
        if result == NONE and self._whitelists and not is_dir:
            return IGNORE
        return result


_EXCLUDES_FILE = re.compile(rb'(?im)^\s*excludesfile\s*=\s*"?\s*(\S+?)\s*"?\s*$')


def global_excludes_path() -> str | None:
    """Where git's global excludes live, found the way the ``ignore`` crate finds them."""
    home = os.path.expanduser("~")
    candidates: list[str] = []
    if value := os.environ.get("GIT_CONFIG_GLOBAL"):
        candidates.append(value)
    candidates.append(os.path.join(home, ".gitconfig"))
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    candidates.append(os.path.join(xdg, "git", "config"))
    for config in candidates:
        try:
            with open(config, "rb") as f:
                m = _EXCLUDES_FILE.search(f.read())
        except OSError:
            continue
        if m:
            return m.group(1).decode("utf-8", "replace").replace("~", home)
    return os.path.join(xdg, "git", "ignore")


# --- the walk -----------------------------------------------------------------------


@dataclass(slots=True)
class _Dir:
    """The ignore files of one directory, and the chains a path below it is judged by.

    Paths are bytes, as the file system has them: names that are not UTF-8 survive and
    globs match bytes exactly as rg and fd match them.
    """

    path: bytes  # canonical absolute path, no trailing slash (except b"/")
    custom: IgnoreMatcher | None
    dot_ignore: IgnoreMatcher | None
    gitignore: IgnoreMatcher | None
    exclude: IgnoreMatcher | None
    has_git: bool
    parent: _Dir | None
    # (prefix length, matcher) per kind, deepest first
    chains: tuple[tuple[tuple[int, IgnoreMatcher], ...], ...] = ()
    any_git: bool = False

    def finish(self) -> None:
        dirs: list[_Dir] = []
        node: _Dir | None = self
        while node is not None:
            dirs.append(node)
            node = node.parent
        self.any_git = any(d.has_git for d in dirs)
        custom: list[tuple[int, IgnoreMatcher]] = []
        dot: list[tuple[int, IgnoreMatcher]] = []
        git: list[tuple[int, IgnoreMatcher]] = []
        exclude: list[tuple[int, IgnoreMatcher]] = []
        saw_git = False
        for d in dirs:
            offset = len(d.path) + (0 if d.path.endswith(b"/") else 1)
            if d.custom:
                custom.append((offset, d.custom))
            if d.dot_ignore:
                dot.append((offset, d.dot_ignore))
            if self.any_git and not saw_git:  # a repository's rules stop at its top
                if d.gitignore:
                    git.append((offset, d.gitignore))
                if d.exclude:
                    exclude.append((offset, d.exclude))
            saw_git = saw_git or d.has_git
        self.chains = tuple(tuple(chain) for chain in (custom, dot, git, exclude) if chain)


_GIT = GIT_DIR.encode()


def _git_exclude_file(directory: bytes) -> bytes | None:
    """``info/exclude`` of the repository whose ``.git`` sits in ``directory``."""
    dot_git = os.path.join(directory, _GIT)
    if os.path.isdir(dot_git):
        return os.path.join(dot_git, b"info", b"exclude")
    try:
        with open(dot_git, "rb") as f:
            first = f.readline().strip()
    except OSError:
        return None
    if not first.startswith(b"gitdir:"):
        return None
    git_dir = os.path.join(directory, first[len(b"gitdir:") :].strip())
    try:  # a worktree shares the main repository's excludes
        with open(os.path.join(git_dir, b"commondir"), "rb") as f:
            git_dir = os.path.join(git_dir, f.read().strip())
    except OSError:
        pass
    return os.path.join(git_dir, b"info", b"exclude")


def name_key(name: str) -> bytes:
    """Sort key of one name: its bytes, the order rg and fd sort by."""
    return name.encode("utf-8", "surrogateescape")


def path_key(rel: str) -> tuple[bytes, ...]:
    """Sort key of a relative path: component by component (= depth-first, sorted)."""
    return tuple(name_key(part) for part in rel.split("/"))


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    kind: Literal["file", "dir", "symlink", "other"]
    ignored: bool


class Walker:
    """The files under ``root`` that rg or fd would visit, in their sorted order."""

    def __init__(
        self,
        root: Path,
        *,
        tool_ignore_file: str | None = None,
        overrides: Overrides | None = None,
        global_excludes: bool = True,
    ) -> None:
        self.root = os.fsencode(root)
        self._names = (os.fsencode(tool_ignore_file),) if tool_ignore_file else ()
        self._overrides = overrides
        self._canonical = os.path.realpath(self.root)
        self._global: IgnoreMatcher | None = None
        if global_excludes and (path := global_excludes_path()):
            self._global = IgnoreMatcher.from_file(path)
        parent: _Dir | None = None
        ancestors: list[bytes] = []
        current = os.path.dirname(self._canonical)
        while True:
            ancestors.append(current)
            up = os.path.dirname(current)
            if up == current:
                break
            current = up
        for directory in reversed(ancestors):
            parent = self._load(directory, None, parent)
        self._parent_of_root = parent

    def _load(self, directory: bytes, names: set[bytes] | None, parent: _Dir | None) -> _Dir:
        """The rules of ``directory``; ``names`` (its entries) saves stat calls when known."""

        def has(name: bytes) -> bool:
            return name in names if names is not None else os.path.lexists(os.path.join(directory, name))

        def load(name: bytes) -> IgnoreMatcher | None:
            return IgnoreMatcher.from_file(os.path.join(directory, name)) if has(name) else None

        custom = None
        for name in self._names:
            custom = load(name)
        has_git = has(_GIT)
        exclude = None
        if has_git and (exclude_file := _git_exclude_file(directory)):
            exclude = IgnoreMatcher.from_file(exclude_file)
        node = _Dir(directory, custom, load(b".ignore"), load(b".gitignore"), exclude, has_git, parent)
        node.finish()
        return node

    def _judge(self, node: _Dir, full: bytes, rel: bytes, is_dir: bool) -> bool:
        """Whether the entry at canonical path ``full`` (``rel`` below the root) is skipped."""
        if self._overrides is not None:
            verdict = self._overrides.match(rel, is_dir)
            if verdict != NONE:
                return verdict == IGNORE
        for chain in node.chains:
            for offset, matcher in chain:
                verdict = matcher.match(full[offset:], is_dir)
                if verdict != NONE:
                    return verdict == IGNORE
        if node.any_git and self._global is not None:
            return self._global.match(rel, is_dir) == IGNORE
        return False

    @staticmethod
    def _scan(directory: bytes) -> list[os.DirEntry[bytes]] | None:
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError:
            return None
        entries.sort(key=lambda e: e.name)
        return entries

    def files(self, cancelled: Callable[[], bool] | None = None) -> Iterator[tuple[bytes, bytes]]:
        """``(path relative to root, path to open)`` of every file to search, in order."""
        entries = self._scan(self.root)
        if entries is None:
            return
        root_node = self._load(self._canonical, {e.name for e in entries}, self._parent_of_root)
        # each frame: (rules, canonical dir, relative dir prefix, entries, next index)
        stack: list[tuple[_Dir, bytes, bytes, list[os.DirEntry[bytes]], list[int]]] = [
            (root_node, self._canonical.rstrip(b"/"), b"", entries, [0])
        ]
        while stack:
            node, canonical, prefix, items, index = stack[-1]
            if index[0] >= len(items):
                stack.pop()
                continue
            if cancelled is not None and cancelled():
                return
            entry = items[index[0]]
            index[0] += 1
            name = entry.name
            if name == _GIT:
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = not is_dir and entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if not (is_dir or is_file):
                continue  # symbolic links and special files
            rel = prefix + name
            full = canonical + b"/" + name
            if self._judge(node, full, rel, is_dir):
                continue
            if is_file:
                yield rel, entry.path
                continue
            children = self._scan(entry.path)
            if children is None:
                continue
            child = self._load(full, {e.name for e in children}, node)
            stack.append((child, full, rel + b"/", children, [0]))

    def entries(self) -> list[Entry]:
        """The root's own entries (for ls), ``.git`` left out, each judged by the rules."""
        with os.scandir(self.root) as it:
            items = sorted(it, key=lambda e: e.name)
        node = self._load(self._canonical, {e.name for e in items}, self._parent_of_root)
        base = self._canonical.rstrip(b"/") + b"/"
        out: list[Entry] = []
        for entry in items:
            if entry.name == _GIT:
                continue
            kind = entry_kind(entry)
            ignored = self._judge(node, base + entry.name, entry.name, kind == "dir")
            out.append(Entry(os.fsdecode(entry.name), kind, ignored))
        return out


def entry_kind(entry: os.DirEntry[Any]) -> Literal["file", "dir", "symlink", "other"]:
    try:
        if entry.is_symlink():
            return "symlink"
        if entry.is_dir(follow_symlinks=False):
            return "dir"
        if entry.is_file(follow_symlinks=False):
            return "file"
    except OSError:
        pass
    return "other"


# --- shared by grep, find and ls ------------------------------------------------------


def printable(text: str) -> str:
    """File names that are not valid UTF-8 come back with surrogates; show U+FFFD instead."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def path_joiner(root: Path, cwd: Path) -> Callable[[str], str]:
    """Turns a path relative to the search root into what the model is shown: relative to
    the session cwd when the root is inside it, else absolute."""
    shown = display_path(root, cwd)
    if shown == ".":
        return printable
    prefix = shown if shown.endswith("/") else shown + "/"
    return lambda rel: printable(prefix + rel)


def find_program(*names: str) -> str | None:
    for name in names:
        if found := shutil.which(name):
            return found
    return None


def pick_backend(backend: Backend, program: str | None, tool: str, names: str) -> str | None:
    """The external program to use, or ``None`` for the Python implementation."""
    if backend == "python":
        return None
    if program is None and backend == "external":
        raise ToolError(f"{tool} was asked to use {names}, but it is not installed.")
    return program


def check_path(path: Path, shown: str) -> bool:
    """Errors the model can act on for a missing or unreadable path; whether it is a directory."""
    try:
        is_dir = path.is_dir()
        exists = is_dir or path.exists()
    except OSError as exc:
        raise ToolError(f"Cannot access {shown}: {exc.strerror or exc}") from None
    if not exists:
        raise ToolError(f"Path not found: {shown}")
    if not os.access(path, os.R_OK | (os.X_OK if is_dir else 0)):
        raise ToolError(f"Permission denied: {shown}")
    return is_dir


@dataclass(frozen=True, slots=True)
class CappedOutput:
    text: str
    truncation: Truncation | None


def cap_output(body: str, notices: list[str], limits: ToolLimits, advice: str) -> CappedOutput:
    """Apply the generic line/byte cap to ``body``, then append the notices.

    The cap's own notice comes first among the notices, since it says that what the model
    sees is incomplete in a way no other notice covers.
    """
    cut = truncate_head(body, limits.max_lines, limits.max_bytes)
    all_notices = list(notices)
    if cut.truncated:
        limit = format_size(limits.max_bytes) if cut.truncated_by == "bytes" else f"{limits.max_lines}-line"
        all_notices.insert(
            0,
            f"[Output truncated at the {limit} limit: showing {cut.output_lines} of {cut.total_lines} lines. {advice}]",
        )
    text = cut.content
    if all_notices:
        text += "\n\n" + "\n".join(all_notices)
    return CappedOutput(text, cut if cut.truncated else None)


def truncation_details(truncation: Truncation | None) -> dict[str, Any] | None:
    if truncation is None:
        return None
    data = asdict(truncation)
    del data["content"]
    return data


# --- external programs ----------------------------------------------------------------


class ExternalProcess:
    """An rg or fd run whose stdout is read in chunks; stopped on abort or when enough.

    stderr is collected in the background so a chatty program cannot fill its pipe and
    stall. Stopping is a SIGKILL (the programs only read files) sent with ``os.kill``:
    ``Process.kill()`` first polls the child, which can reap it behind asyncio's child
    watcher (a logged "Unknown child process" and a bogus exit code). A process whose
    output has ended is simply waited for.
    """

    def __init__(self, args: list[str], cwd: str, signal: AbortSignal) -> None:
        self.args = args
        self.cwd = cwd
        self.signal = signal
        self.proc: asyncio.subprocess.Process | None = None
        self._stderr: asyncio.Task[bytes] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._eof = False

    async def __aenter__(self) -> ExternalProcess:
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.args,
                cwd=self.cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise ToolError(f"Could not run {self.args[0]}: {exc.strerror or exc}") from None
        assert self.proc.stderr is not None
        self._stderr = asyncio.create_task(self.proc.stderr.read())
        self._unsubscribe = self.signal.add_listener(self.kill)
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal_module.SIGKILL)

    async def read(self, size: int = 1 << 16) -> bytes:
        assert self.proc is not None and self.proc.stdout is not None
        chunk = await self.proc.stdout.read(size)
        self._eof = self._eof or not chunk
        return chunk

    async def finish(self) -> tuple[int, str]:
        """Exit code and stderr text; the process is killed if its output had not ended."""
        assert self.proc is not None and self._stderr is not None
        if not self._eof:
            self.kill()
        code = await self.proc.wait()
        err = await self._stderr
        return code, err.decode("utf-8", "replace")

    async def __aexit__(self, *exc: object) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self.proc is not None:
            if exc[0] is not None:
                self.kill()
            await self.finish()


async def read_records(process: ExternalProcess, separator: bytes) -> AsyncIterator[bytes]:
    """The ``separator``-terminated records (one byte separator) of the process's stdout.

    A bytearray keeps a single 10 MB JSON line (a minified file) linear to assemble.
    """
    buf = bytearray()
    while True:
        chunk = await process.read()
        if not chunk:
            if buf:
                yield bytes(buf)
            return
        start = len(buf)
        buf += chunk
        if buf.find(separator, start) < 0:
            continue
        last = buf.rfind(separator)
        records = bytes(buf[:last]).split(separator)
        del buf[: last + 1]
        for record in records:
            yield record
