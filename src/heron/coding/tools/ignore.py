"""Ignore files, read the way the ``ignore`` crate (shared by rg and fd) reads them.

Kinds, strongest first: the tool's own file (``.rgignore`` for grep, ``.fdignore`` for
find and ls), then ``.ignore``, then ``.gitignore``, then ``.git/info/exclude``, then the
global excludes file (``core.excludesFile``, else ``$XDG_CONFIG_HOME/git/ignore``). Within
one file the last matching line decides (see :mod:`heron.coding.tools.walker` for how the
kinds and directories combine). pathspec matches a pattern against a path's descendants;
that is not needed here, since an ignored directory is never entered, so every path is
judged on its own, as git does.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from heron.coding.tools.globs import GlobError, bytes_regex, glob_regex

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
        return bytes_regex(regex), [rule.whitelist for rule in newest_first]

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
