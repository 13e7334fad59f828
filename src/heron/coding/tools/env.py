"""What every coding tool is given: where it works, its limits, and shared read state.

Tools are constructed from a :class:`ToolEnv` rather than reading globals, so the
runtime can give each session its own cwd, limits scaled to the model's window, and a
spill directory; and tests can build one in a temp folder.
"""

from __future__ import annotations

import os
import time
import unicodedata
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from heron.agent.tools import AgentTool, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.models import heron_home
from heron.ai.types import ToolCall
from heron.coding.tools.names import unquote_names
from heron.context.tool_output.limits import DEFAULT_LIMITS, ToolLimits
from heron.context.tool_output.spill import SPILL_MAX_BYTES

if TYPE_CHECKING:
    from heron.coding.sandbox import Confinement

# The ``path`` parameter of read, write and edit: one wording, sent with every request.
PATH_DESCRIPTION = "File path, relative to the working directory or absolute."


@dataclass(frozen=True, slots=True)
class ReadRecord:
    """One successful read: which range, of which version of the file, when."""

    path: str
    offset: int | None
    limit: int | None
    mtime_ns: int
    size: int
    at: float


ViewLookup = Callable[[str, int | None, int | None], "ReadRecord | None"]


class FileReadTracker:
    """Reads since the last compaction.

    ``read`` uses it to answer a repeated read of an unchanged range with a short stub
    (the content is still in the context), and ``edit`` to refuse to edit a file that
    changed on disk since the model last read it. Compaction calls :meth:`reset`,
    because after it the earlier content is no longer in the context.
    """

    def __init__(self) -> None:
        self.view_lookup: ViewLookup | None = None
        self._reads: dict[tuple[str, int | None, int | None], ReadRecord] = {}
        self._last_by_path: dict[str, ReadRecord] = {}
        self._since_reset: dict[str, float] = {}

    def record(self, path: Path, offset: int | None, limit: int | None, mtime_ns: int, size: int) -> ReadRecord:
        key = str(path)
        rec = ReadRecord(key, offset, limit, mtime_ns, size, time.time())
        self._last_by_path[key] = rec  # a script's read counts for the stale-write check
        if IN_SCRIPT.get() is not self:  # but its content never reached the conversation
            self._reads[(key, offset, limit)] = rec
            self._since_reset[key] = rec.at
        return rec

    def previous(self, path: Path, offset: int | None, limit: int | None) -> ReadRecord | None:
        """The earlier read of this range whose content the model still has. With a view
        lookup (the coding runtime sets one), the answer comes from the view last sent -
        so it holds across a restart and is None once that content was pruned or
        summarised; without one, from the reads of this process. A script's program never
        gets the stub: the content it points to is in the conversation, not in the program's
        hands (:data:`IN_SCRIPT`)."""
        if IN_SCRIPT.get() is self:
            return None
        if self.view_lookup is not None:
            return self.view_lookup(str(path), offset, limit)
        return self._reads.get((str(path), offset, limit))

    def last_read(self, path: Path) -> ReadRecord | None:
        return self._last_by_path.get(str(path))

    def note_write(self, path: Path, mtime_ns: int, size: int) -> None:
        """After heron itself wrote the file, it is as current as if just read (also when
        it was never read: a later write or edit then notices another process's change)."""
        key = str(path)
        last = self._last_by_path.get(key)
        offset, limit = (last.offset, last.limit) if last is not None else (None, None)
        self._last_by_path[key] = ReadRecord(key, offset, limit, mtime_ns, size, time.time())
        for k in [k for k in self._reads if k[0] == key]:
            del self._reads[k]

    def read_paths(self) -> list[str]:
        """Paths read since the last reset, most recent last."""
        return sorted(self._since_reset, key=self._since_reset.__getitem__)

    def reset(self) -> None:
        """Forget what was read (the stale-edit check keeps each file's last read)."""
        self._reads.clear()
        self._since_reset.clear()


# The read tracker of the session whose tool runs for a ``script``'s program rather than for
# the model: what it reads goes to the program, not into the conversation, so a read is never
# answered with the "already in the conversation" stub and is not remembered as being there.
# The tracker, not a flag: a sub-agent the script starts has its own, and its reads are its own.
IN_SCRIPT: ContextVar[FileReadTracker | None] = ContextVar("heron_in_script", default=None)


class ClientFiles(Protocol):
    """Files a client has open, e.g. an editor driving heron over ACP (docs/editors.md).

    When a session has one, ``edit`` matches against the text the client holds (unsaved
    changes included) and ``write`` and ``edit`` give the new text to the client rather
    than replacing the file themselves, so the change lands in the editor's buffer and
    undo history instead of behind its back. ``read_text`` returns None when the client
    does not hold the file: it is read from disk then."""

    async def read_text(self, path: Path) -> str | None: ...

    async def write_text(self, path: Path, text: str) -> None: ...


class ToolHost(Protocol):
    """The session's tools as a ``script``'s program calls them (docs/script.md): each call
    takes the path a model's call takes (permissions, hooks, redaction, checkpoints, the
    ledger) without becoming part of the conversation. The runtime provides it."""

    def callable_tools(self) -> list[AgentTool[Any]]:
        """The tools a program may call (never one that itself runs programs calling tools)."""
        ...

    async def call(self, call: ToolCall, signal: AbortSignal) -> ToolResult: ...


@dataclass(eq=False, repr=False)
class ToolEnv:
    """What the built-in tools share within a session: the directory, limits, read tracker
    and the hooks into the runtime. Mutable because the session sets some of it after start;
    one per session, compared by identity and never printed, so no generated ``__eq__`` or
    ``__repr__`` (two functions fewer compiled at import)."""

    cwd: Path
    limits: ToolLimits = DEFAULT_LIMITS
    session_id: str | None = None
    # The sessions this one was handed off from (nearest first): search_history's scope 'session' reaches them.
    lineage: tuple[str, ...] = ()
    home: Path = field(default_factory=heron_home)
    reads: FileReadTracker = field(default_factory=FileReadTracker)
    shell: str | None = None  # None: $SHELL if it is bash/zsh/sh, else /bin/bash, else sh
    spill_max_bytes: int = SPILL_MAX_BYTES  # the ``spill.maxBytes`` setting: cap of one full-output file
    # The environment of a bash child, made at each call; None: heron's without credential-named variables.
    child_env: Callable[[], dict[str, str]] | None = None
    bash_default_timeout: float | None = 600.0  # ``bash.defaultTimeoutMs``: a command given no timeout
    bash_max_timeout: float | None = 3600.0  # ``bash.maxTimeoutMs``: the longest timeout the model may ask for
    client_files: ClientFiles | None = None  # None: write and edit work on the files themselves
    # Puts a command's argv in the session's sandbox (docs/permissions.md, "Sandbox"); None: run it as it is.
    confine: Callable[[list[str], Path], Confinement] | None = None
    # A call that asked to run outside the sandbox: (argv, cwd, call id) -> unconfined only when the
    # session's permission check approved that call id, else as ``confine``. None: as ``confine``.
    confine_outside: Callable[[list[str], Path, str], Confinement] | None = None
    tool_host: ToolHost | None = None  # what a script's calls go through; None: scripts cannot call tools
    script_max_timeout: float = 120.0  # ``script.maxTimeoutMs``: a script's longest (and default) run
    script_max_calls: int = 200  # ``script.maxCalls``: tool calls one script may make

    def spill_dir(self) -> Path:
        """Where oversized results of this session are written."""
        return self.home / "tool-output" / (self.session_id or "no-session")


_SPACES = {
    ch: " "
    for ch in (
        "\u00a0",
        "\u2000",
        "\u2001",
        "\u2002",
        "\u2003",
        "\u2004",
        "\u2005",
        "\u2006",
        "\u2007",
        "\u2008",
        "\u2009",
        "\u200a",
        "\u202f",
        "\u205f",
        "\u3000",
    )
}


def resolve_path(raw: str, cwd: Path) -> Path:
    """A path as the model wrote it, made absolute.

    Models write ``@src/a.py`` (the mention syntax users type), ``~/x``, or paths with a
    non-breaking space copied from rendered text; none of that should make a read fail.
    If the literal path does not exist but its normalised spelling does, that one wins.
    """
    text = raw.strip()
    if text.startswith("@"):
        text = text[1:]
    candidates = [text]
    unquoted = unquote_names(text)  # a name a listing showed as $'new\nline' (names.py)
    if unquoted != text:
        candidates.insert(0, unquoted)
    normalised = "".join(_SPACES.get(ch, ch) for ch in text)
    if normalised != text:
        candidates.append(normalised)
    nfc = unicodedata.normalize("NFC", normalised)
    nfd = unicodedata.normalize("NFD", normalised)
    candidates.extend(c for c in (nfc, nfd) if c not in candidates)
    resolved = [_absolute(c, cwd) for c in candidates]
    for path in resolved:
        try:
            if path.exists():
                return path
        except OSError:  # e.g. a directory on the way may not be entered: the tool reports it
            continue
    return resolved[0]


def _absolute(text: str, cwd: Path) -> Path:
    path = Path(os.path.expanduser(text)) if text.startswith("~") else Path(text)
    if not path.is_absolute():
        path = cwd / path
    return Path(os.path.normpath(path))


def display_path(path: Path, cwd: Path) -> str:
    """Relative to cwd when inside it (what the model should write back), else absolute."""
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)
