"""The directory walk behind grep, find and ls: the files rg or fd would visit, in their order.

* Within one kind of ignore file the deepest directory that has a matching rule decides.
  Files in the directories above the search root count too.
* The three git kinds apply only inside a git repository (a ``.git`` in the directory or
  above it), as in git, rg and fd (fd 8 cannot be told otherwise); ``.gitignore`` files
  above the repository's top are not read.
* Hidden files are walked, ``.git`` never; symbolic links are neither followed nor
  reported by the walk (rg and fd do not follow them by default either).
* Order: depth first, the entries of each directory sorted by name (bytes), which is
  what ``rg --sort path`` prints and what sorting paths component by component gives.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from heron.coding.tools.ignore import IGNORE, NONE, IgnoreMatcher, Overrides, global_excludes_path

GIT_DIR = ".git"


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
