"""What a tool is, declared by the tool: its kind and the files a call touches.

Every layer that treats tools differently (pruning, re-injection and de-dup of reads,
compaction's file lists, permission path rules, hooks, ACP kinds, how a call is shown)
reads this metadata instead of comparing tool names, so a renamed built-in tool, an
extension's tool or an MCP tool that reads a file gets the same treatment as ``read``.

The kinds (one per tool; keep the set small):

``read``
    The result *is* the content of the files the call names (or a page of one): such a
    read can be de-duplicated against an earlier one, re-injected after a compaction,
    listed among a compaction's "files read".
``edit`` / ``write``
    The call changes the files it names: ``edit`` replaces pieces of a file, ``write``
    replaces (or creates) the whole file.
``execute``
    The call runs a program; ``command`` gives the shell command line when it is one
    (permission ``Bash`` rules and hooks' ``command`` read it).
``search``
    The call finds or lists things (files, matches, history, tools, the values of a
    query) without its result being a file's content.
``todo``
    The call replaces the session's task list (its details hold the list); the context
    layer records it and carries it through compactions.
``delegate``
    The call starts a sub-agent whose own calls are checked one by one.
``goal``
    The call reports on the session's goal (met, or blocked); the goal loop reads the
    verdict it records.
``compact``
    The call asks heron to compact the context before the next request (its ``focus``
    argument: what the summary must keep); the context layer finds the request in the
    conversation and acts on it.
``other``
    Anything else (the default).

A layer that sees only stored messages - the view rebuilt from the session file - gets
the metadata through a :class:`ToolCatalog` keyed by the names the messages carry, built
from the session's tool set: a process that resumes the session with the same tools
derives the same answers, hence the same request bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from heron.ai.types import ToolCall

ToolKind = Literal["read", "edit", "write", "execute", "search", "todo", "delegate", "goal", "compact", "other"]
TOOL_KINDS: tuple[ToolKind, ...] = (
    "read",
    "edit",
    "write",
    "execute",
    "search",
    "todo",
    "delegate",
    "goal",
    "compact",
    "other",
)
Access = Literal["read", "write"]


@dataclass(frozen=True, slots=True)
class PathUse:
    """One file (or directory) a call touches, as the call's arguments name it.

    ``path`` is as written (relative to the working directory, ``~``, a leading ``@``
    allowed: :meth:`resolved` gives the absolute form). ``walks``: a directory whose whole
    tree the call reads (a search); ``listing``: of that tree, only the names (not the
    files' contents). ``offset``/``limit``: the lines of the file a read returns (1-based
    first line, count), ``None`` for all of it."""

    path: str
    access: Access = "read"
    walks: bool = False
    listing: bool = False
    offset: int | None = None
    limit: int | None = None

    def resolved(self, cwd: Path) -> str:
        """The absolute, normalised path (``~`` expanded, a leading ``@`` dropped)."""
        text = self.path[1:] if self.path.startswith("@") else self.path
        path = Path(os.path.expanduser(text))
        if not path.is_absolute():
            path = cwd / path
        return os.path.normpath(str(path))


PathsOf = Callable[[Mapping[str, Any]], list[PathUse]]
CommandOf = Callable[[Mapping[str, Any]], str | None]


@dataclass(frozen=True, slots=True)
class ToolMeta:
    """A tool's declaration of what it is (see the module docstring).

    ``paths``: the files a call with these arguments touches (``None``: the tool touches
    no files; permission path rules never apply to it). ``command``: the shell command a
    call runs (``execute`` tools that run one). ``aliases``: other names rules and hook
    matchers may use for this tool (Claude Code's ``Grep``, ``Glob``, ``LS``...).
    ``calls_tools``: the call runs a program that calls the session's other tools (``script``);
    such a tool is not offered to those programs, so one never starts another."""

    kind: ToolKind = "other"
    paths: PathsOf | None = None
    command: CommandOf | None = None
    aliases: tuple[str, ...] = ()
    calls_tools: bool = False

    def __post_init__(self) -> None:
        if self.kind not in TOOL_KINDS:
            raise ValueError(f"unknown tool kind {self.kind!r}; one of {', '.join(TOOL_KINDS)}")

    def uses(self, arguments: Mapping[str, Any]) -> list[PathUse]:
        """The files a call touches; a paths function that fails on odd arguments (the
        model wrote them) touches none."""
        if self.paths is None or not isinstance(arguments, Mapping):
            return []
        try:
            return [u for u in self.paths(arguments) if isinstance(u, PathUse) and u.path]
        except (TypeError, ValueError, KeyError, AttributeError):
            return []

    def command_of(self, arguments: Mapping[str, Any]) -> str | None:
        if self.command is None or not isinstance(arguments, Mapping):
            return None
        try:
            value = self.command(arguments)
        except (TypeError, ValueError, KeyError, AttributeError):
            return None
        return value if isinstance(value, str) else None

    @property
    def reads_files(self) -> bool:
        """A tool whose calls read files (``Read`` permission rules cover it)."""
        return self.paths is not None and self.kind in ("read", "search")

    @property
    def changes_files(self) -> bool:
        """A tool whose calls change files (``Edit`` permission rules cover it)."""
        return self.paths is not None and self.kind in ("edit", "write")


OTHER = ToolMeta()


def arg_str(arguments: Mapping[str, Any], key: str) -> str | None:
    """A non-empty string argument, else ``None`` (for paths functions)."""
    value = arguments.get(key)
    return value if isinstance(value, str) and value.strip() else None


def arg_int(arguments: Mapping[str, Any], key: str) -> int | None:
    value = arguments.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def path_argument(key: str = "path", access: Access = "read") -> PathsOf:
    """The usual paths function: the file named by one argument."""

    def paths(arguments: Mapping[str, Any]) -> list[PathUse]:
        raw = arg_str(arguments, key)
        return [PathUse(raw, access)] if raw is not None else []

    return paths


def tree_argument(key: str = "path", *, listing: bool) -> PathsOf:
    """A search's paths function: the directory (or file) one argument names, the working
    directory when it names none; ``listing``: only names are read, not contents."""

    def paths(arguments: Mapping[str, Any]) -> list[PathUse]:
        return [PathUse(arg_str(arguments, key) or ".", "read", walks=True, listing=listing)]

    return paths


def command_argument(key: str = "command") -> CommandOf:
    """The usual command function: the shell command line one argument holds."""

    def command(arguments: Mapping[str, Any]) -> str | None:
        value = arguments.get(key)
        return value if isinstance(value, str) else None

    return command


class HasMeta(Protocol):
    name: str
    meta: ToolMeta


class ToolCatalog:
    """Tool metadata by the name a conversation's messages carry.

    Built from the session's tools - a fixed list, or ``source``, called for the current
    list (tools added by an extension or loaded by ``tool_search`` count from then on; the
    catalog is rebuilt when the list is replaced). ``fallback`` answers for names the tools
    do not define (a session continued with fewer tools still treats its older calls by
    what they were). An unknown name is ``other`` and touches nothing."""

    def __init__(
        self,
        tools: Iterable[HasMeta] = (),
        *,
        source: Callable[[], Sequence[HasMeta]] | None = None,
        fallback: Callable[[str], ToolMeta | None] | None = None,
    ) -> None:
        self._source = source
        self._fallback = fallback
        self._seen: tuple[int, int] | None = None
        self._metas: dict[str, ToolMeta] = {}
        self._fallen: dict[str, ToolMeta] = {}
        self._generation = 0
        self._fill(tools)

    def generation(self) -> int:
        """Changes whenever the tool list does (a cache of what kinds decided checks it)."""
        self._current()
        return self._generation

    def _fill(self, tools: Iterable[HasMeta]) -> None:
        self._generation += 1
        self._metas = {}
        for tool in tools:
            self._metas.setdefault(tool.name, getattr(tool, "meta", OTHER))

    def _current(self) -> dict[str, ToolMeta]:
        if self._source is not None:
            tools = self._source()
            seen = (id(tools), len(tools))
            if seen != self._seen:
                self._fill(tools)
                self._seen = seen
        return self._metas

    def meta(self, name: str) -> ToolMeta:
        found = self._current().get(name) or self._fallen.get(name)
        if found is None:
            found = (self._fallback(name) if self._fallback is not None else None) or OTHER
            self._fallen[name] = found
        return found

    def kind(self, name: str) -> ToolKind:
        return self.meta(name).kind

    def uses(self, call: ToolCall) -> list[PathUse]:
        return self.meta(call.name).uses(call.arguments)

    def names(self, kind: ToolKind) -> list[str]:
        """The session's own tools of ``kind`` (not the fallback's), in order."""
        return [name for name, meta in self._current().items() if meta.kind == kind]


EMPTY_CATALOG = ToolCatalog()
