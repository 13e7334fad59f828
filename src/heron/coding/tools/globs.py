"""Glob syntax of globset, the matcher behind rg's and fd's ``--glob`` and their ignore files.

grep, find and ls promise the same output whether ``rg``/``fd`` are installed or not, so
the pure-Python walk needs globset's rules, not pathspec's approximation of git: ``*`` and
``?`` stop at ``/``, ``**`` spans directories, ``[...]`` classes, ``{a,b}`` alternatives,
backslash escapes. pathspec has no ``{a,b}`` (models write ``*.{ts,tsx}`` all the time).
A glob becomes one regex matched against ``/``-separated *bytes* paths, as globset does.
"""

from __future__ import annotations

import re
from typing import Any


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


def bytes_regex(regex: str) -> re.Pattern[bytes]:
    """Compile for matching encoded paths: globset's regexes work on bytes, so ``?``
    is one byte and ``[é]`` a class of two bytes; matching ``str`` paths would disagree
    with rg and fd on non-ASCII names."""
    return re.compile(regex.encode("utf-8", "surrogateescape"))


def compile_glob(glob: str) -> re.Pattern[bytes]:
    """A user's glob (grep's ``glob``, find's ``pattern``), strictly parsed, for bytes paths."""
    return bytes_regex(glob_regex(glob))
