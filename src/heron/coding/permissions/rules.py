"""Permission rules in Claude Code's syntax: ``Tool`` or ``Tool(specifier)``.

* ``Bash(npm run test:*)`` - a command starting with those words; ``Bash(make)`` - exactly
  that command; ``Bash(git * main)`` - ``*`` stands for anything.
* ``Read(./secrets/**)``, ``Edit(src/**)``, ``Write(/etc/**)`` - gitignore-like paths:
  relative ones from the project root, ``/`` or ``//`` from the file system root, ``~/``
  from the home directory; a pattern without a slash (``.env*``) matches that name at any
  depth; a pattern without wildcards matches the path and everything under it.
* ``mcp__server__tool`` (one tool), ``mcp__server`` or ``mcp__server__*`` (all of a server's).

Tool names are matched by what the tools declare (:mod:`heron.agent.tool_meta`), with
Claude Code's names and heron's: ``Read`` covers every tool that reads files (a ``read`` or
``search`` tool with declared paths: read, grep, find, ls, json_query, and an extension's
or MCP tool that says so), ``Edit`` every tool that changes one (``edit`` and ``write``
kinds), ``Write`` the ``write`` kind (as a deny or ask rule, ``edit`` too: both change the
file), ``Bash`` every ``execute`` tool; any other name matches a tool's own name or one of
its aliases (``Grep``, ``Glob``, ``LS``, ``MultiEdit``); ``bash(...)`` / ``read(...)`` work as well.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from heron.agent.tool_meta import ToolMeta

Behavior = Literal["allow", "ask", "deny"]

# Claude Code's names for what tools do -> the tools a rule naming one covers, by what they
# declare: (as an allow rule, as a deny or ask rule). `deny Write(/etc/**)` is about changing
# /etc, by any tool that changes files; `allow Write(src/**)` allows only whole-file writes.
_Covers = Callable[[ToolMeta], bool]
_KIND_RULES: dict[str, tuple[_Covers, _Covers]] = {
    "read": (lambda meta: meta.reads_files, lambda meta: meta.reads_files),
    "edit": (lambda meta: meta.changes_files, lambda meta: meta.changes_files),
    "write": (lambda meta: meta.changes_files and meta.kind == "write", lambda meta: meta.changes_files),
    "bash": (lambda meta: meta.kind == "execute", lambda meta: meta.kind == "execute"),
}

_RULE = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)


class RuleError(ValueError):
    """A rule that cannot be read; the message says how it should look."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One permission rule as written (``Tool(specifier)``) and where it came from, so a
    decision can name the settings file (or ``--allow``) that made it."""

    tool: str  # as written
    specifier: str | None
    behavior: Behavior
    source: str  # where it came from: a settings file path, or --allow

    @property
    def text(self) -> str:
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"

    def covers_tool(self, tool_name: str, meta: ToolMeta) -> bool:
        """Whether this rule is about ``tool_name``, a tool that declares ``meta``."""
        name = self.tool.lower()
        if name.startswith("mcp__"):
            server_rule = name.removesuffix("__*")
            return tool_name.lower() == name or (
                tool_name.lower().startswith(server_rule + "__") and server_rule.count("__") == 1
            )
        by_kind = _KIND_RULES.get(name)
        if by_kind is not None:
            allows, restricts = by_kind
            return (allows if self.behavior == "allow" else restricts)(meta)
        return name == tool_name.lower() or name in (alias.lower() for alias in meta.aliases)


def parse_rule(text: str, behavior: Behavior, source: str) -> Rule:
    if not isinstance(text, str) or not text.strip():
        raise RuleError('a rule must be a non-empty string like "Bash(npm run test:*)" or "Read(./secrets/**)"')
    match = _RULE.match(text)
    if match is None:
        raise RuleError(f'{text!r} is not a rule: write Tool or Tool(specifier), e.g. "Bash(make:*)"')
    tool, specifier = match.group(1), match.group(2)
    if specifier is not None:
        specifier = specifier.strip()
        if not specifier or specifier in ("*", "**"):
            specifier = None  # Bash(*) is the same as Bash
    return Rule(tool=tool, specifier=specifier, behavior=behavior, source=source)


# --- bash commands ---------------------------------------------------------------


def command_matches(specifier: str, words: list[str], wildcard_words: frozenset[int] = frozenset()) -> bool:
    """Whether a command (its words, quotes removed) matches a Bash rule's specifier.

    ``wildcard_words``: indexes of words computed at run time; for a deny rule they may
    be anything, so they match any word of the rule."""
    if specifier.endswith(":*"):
        prefix = specifier[:-2].split()
        if len(words) < len(prefix):
            return False
        return all(i in wildcard_words or words[i] == want for i, want in enumerate(prefix))
    if "*" in specifier:
        pattern = "^" + ".*".join(re.escape(part) for part in specifier.split("*")) + "$"
        return re.match(pattern, " ".join(words), re.DOTALL) is not None
    return " ".join(words) == " ".join(specifier.split())


def suggest_bash_rule(words: list[str]) -> str:
    """The rule a user would add to allow this command: its program (and a subcommand
    for the tools that have them, so allowing ``git status`` does not allow ``git push``)."""
    if not words:
        return "Bash"
    head = words[:2] if len(words) > 1 and words[0] in _SUBCOMMAND_TOOLS and not words[1].startswith("-") else words[:1]
    return f"Bash({' '.join(head)}:*)"


_SUBCOMMAND_TOOLS = frozenset(
    {
        "git",
        "npm",
        "pnpm",
        "yarn",
        "cargo",
        "go",
        "docker",
        "kubectl",
        "pip",
        "uv",
        "poetry",
        "make",
        "gh",
        "bun",
        "deno",
        "dotnet",
        "mvn",
        "gradle",
    }
)


# --- paths ---------------------------------------------------------------------------


def path_pattern(specifier: str, root: Path) -> re.Pattern[str]:
    """A regex over absolute, normalised paths for a path rule's specifier."""
    spec = specifier
    if spec.startswith("~/") or spec == "~":
        base = os.path.expanduser("~")
        spec = spec[2:]
    elif spec.startswith("/"):
        base = "/"
        spec = spec.lstrip("/")
    else:
        base = str(root)
        spec = spec[2:] if spec.startswith("./") else spec
    anywhere = "/" not in spec.rstrip("/")  # `.env*`: that name at any depth below the base
    spec = spec.rstrip("/")
    body = _glob_to_regex(spec)
    prefix = re.escape(base.rstrip("/")) + "/"
    if anywhere and spec:
        prefix += "(?:.*/)?"
    return re.compile(f"^{prefix}{body}(?:/.*)?$", re.DOTALL)


def pattern_base(specifier: str, root: Path) -> Path:
    """Where every path a path rule matches lies: the literal beginning of its pattern
    (``locked/**`` -> the project's ``locked``, ``/etc/*.conf`` -> ``/etc``; a name without a
    slash, ``*.lock``, matches at any depth, so the project itself)."""
    spec = specifier
    if spec.startswith("~/") or spec == "~":
        base, spec = os.path.expanduser("~"), spec[2:]
    elif spec.startswith("/"):
        base, spec = "/", spec.lstrip("/")
    else:
        base, spec = str(root), spec[2:] if spec.startswith("./") else spec
    spec = spec.rstrip("/")
    if "/" not in spec:
        return Path(base)
    literal: list[str] = []
    for part in spec.split("/"):
        if "*" in part or "?" in part:
            break
        literal.append(part)
    return Path(os.path.normpath(os.path.join(base, *literal)))


def _glob_to_regex(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def suggest_path_rule(tool: str, meta: ToolMeta, path: Path) -> str:
    kind = "Read" if meta.reads_files else "Edit" if meta.changes_files else tool
    return f"{kind}({path})"
