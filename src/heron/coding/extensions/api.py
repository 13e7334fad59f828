"""What an extension's ``register(api)`` is given: :class:`ExtensionAPI`.

Registration is collected into a :class:`Registration` and only takes effect when
``register`` returns: an extension whose ``register`` raises (or asks for a tool name
that is taken) leaves nothing behind, so a half-registered extension never runs.
See docs/extensions.md for the reference and a complete example.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from heron.agent.messages import AgentMessage
from heron.agent.tool_meta import (
    Access,
    CommandOf,
    PathsOf,
    PathUse,
    ToolKind,
    ToolMeta,
    command_argument,
    path_argument,
)
from heron.agent.tools import (
    AfterToolCallResult,
    AgentTool,
    BeforeToolCallResult,
    FunctionTool,
    ToolResult,
    UpdateCallback,
)
from heron.ai.abort import AbortSignal
from heron.coding.extensions.compaction import CompactHandler, CompactionAnswer, CompactionInput

ExtensionSource = Literal["user", "project", "entry-point"]
if TYPE_CHECKING:  # extension tools bring their own models; pydantic is not loaded for them
    from pydantic import BaseModel

P = TypeVar("P", bound="BaseModel")
H = TypeVar("H", bound=Callable[..., Any])

NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-:.")


class ExtensionError(ValueError):
    """A registration heron refuses (a taken tool name, a bad command name); raised inside
    ``register`` so the extension is disabled with this message."""


@dataclass(frozen=True, slots=True)
class ToolCallInfo:
    """One tool call, as a ``before_tool_call`` / ``after_tool_call`` handler sees it."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]


BeforeHandler = Callable[[ToolCallInfo], "BeforeToolCallResult | Awaitable[BeforeToolCallResult | None] | None"]
AfterHandler = Callable[[ToolCallInfo, ToolResult], Any]
TransformHandler = Callable[[list[AgentMessage]], Any]
EventHandler = Callable[[Any], Any]
CommandHandler = Callable[[str], "str | Awaitable[str | None] | None"]


@dataclass(frozen=True, slots=True)
class ExtensionCommand:
    """``/name args``: the handler gets ``args``; a string it returns is sent to the model
    as the prompt, ``None`` means the command did all there was to do."""

    name: str
    description: str
    handler: CommandHandler
    extension: str


@dataclass(frozen=True, slots=True)
class ExtensionTemplate:
    name: str
    body: str
    description: str


@dataclass(slots=True)
class Registration:
    """Everything one extension asked for."""

    events: list[tuple[str, EventHandler]] = field(default_factory=list)
    before: list[BeforeHandler] = field(default_factory=list)
    after: list[AfterHandler] = field(default_factory=list)
    transforms: list[TransformHandler] = field(default_factory=list)
    tools: list[AgentTool[Any]] = field(default_factory=list)
    commands: list[ExtensionCommand] = field(default_factory=list)
    templates: list[ExtensionTemplate] = field(default_factory=list)
    compaction: list[CompactHandler] = field(default_factory=list)


def block(reason: str) -> BeforeToolCallResult:
    """What a ``before_tool_call`` handler returns to stop a call; the model sees ``reason``."""
    return BeforeToolCallResult(block=True, reason=reason)


def _check_name(kind: str, name: str) -> str:
    if not isinstance(name, str) or not name or not set(name) <= NAME_CHARS:
        raise ExtensionError(f"{kind} name {name!r} must be letters, digits, '_', '-', ':' or '.'")
    return name


class ExtensionAPI:
    """Handed to ``register(api)``. Every method may be used as a decorator where it takes
    a handler (``@api.on("agent_end")``, ``@api.before_tool_call``)."""

    def __init__(
        self,
        name: str,
        source: ExtensionSource,
        path: str,
        *,
        cwd: Path,
        home: Path,
        taken_tools: Callable[[], set[str]],
    ) -> None:
        self.name = name  # the module's name (file stem, or the entry point's name)
        self.source = source
        self.path = path  # the file, or "entry point <name> = <value>"
        self.cwd = cwd
        self.home = home
        self._taken_tools = taken_tools
        self.registration = Registration()

    # --- observing and steering the run --------------------------------------------------

    def on(self, event_type: str, handler: EventHandler | None = None) -> Any:
        """Call ``handler(event)`` for every session event of ``event_type`` (the ``type``
        field: ``agent_end``, ``tool_execution_end``, ``message_end``, ``compaction_end``,
        ``ledger``, ...; ``"*"`` for all). Sync or async; what it returns is ignored."""

        def add(fn: EventHandler) -> EventHandler:
            self.registration.events.append((event_type, fn))
            return fn

        return add(handler) if handler is not None else add

    def before_tool_call(self, handler: H) -> H:
        """``handler(call: ToolCallInfo)`` before a tool runs (after heron's permissions and
        PreToolUse hooks allowed it): return ``api.block(reason)`` to stop it, a
        ``BeforeToolCallResult(arguments=...)`` to change its arguments, or None."""
        self.registration.before.append(handler)
        return handler

    def after_tool_call(self, handler: H) -> H:
        """``handler(call, result: ToolResult)`` after a tool ran: return a ``ToolResult`` (or
        an ``AfterToolCallResult``) to replace what the model sees, or None to keep it."""
        self.registration.after.append(handler)
        return handler

    def transform_context(self, handler: H) -> H:
        """``handler(messages) -> messages | None`` on the messages of every request, after
        heron's own pruning; the result must keep the context rules (docs/extensions.md)
        or it is not used for that request."""
        self.registration.transforms.append(handler)
        return handler

    def before_compact(self, handler: H) -> H:
        """``handler(input: CompactionInput) -> CompactionAnswer | None`` before every
        compaction (automatic, requested or manual), before anything is summarised: cancel
        it, supply the summary, or keep another range; None lets heron compact as usual
        (docs/extensions.md, "Pluggable compaction")."""
        self.registration.compaction.append(handler)
        return handler

    block = staticmethod(block)

    # --- adding things -----------------------------------------------------------------

    def add_tool(self, tool: AgentTool[Any]) -> AgentTool[Any]:
        """A tool the model can call. Its name may not be a built-in's, another
        extension's or an MCP tool's: that is an :class:`ExtensionError`."""
        name = _check_name("tool", getattr(tool, "name", ""))
        if not getattr(tool, "description", None) or not isinstance(getattr(tool, "parameters", None), type):
            raise ExtensionError(f"tool {name!r} needs a description and a pydantic parameters model")
        mine = {t.name for t in self.registration.tools}
        if name in self._taken_tools() or name in mine:
            raise ExtensionError(f"tool name {name!r} is already taken (a built-in, MCP or other extension tool)")
        self.registration.tools.append(tool)
        return tool

    def tool(
        self,
        name: str,
        description: str,
        parameters: type[P],
        *,
        kind: ToolKind = "other",
        paths: str | PathsOf | None = None,
        command: str | CommandOf | None = None,
    ) -> Callable[[Any], Any]:
        """Decorator: ``@api.tool("word_count", "Count words", Params)`` on
        ``async def fn(call_id, params, signal, on_update) -> ToolResult`` (or
        ``async def fn(params)``).

        ``kind`` says what the tool is (``read``, ``edit``, ``write``, ``execute``,
        ``search``, ``todo``, ``delegate``, ``other``); ``paths`` the files a call touches:
        the name of the argument holding the path (read for ``read``/``search`` tools,
        written for ``edit``/``write`` ones) or a function from the arguments to
        :class:`~heron.agent.tool_meta.PathUse` values; ``command`` likewise the shell
        command an ``execute`` tool runs. The tool then gets what a built-in tool of that
        kind gets: de-dup and re-injection of reads, permission path rules, hooks' names,
        ACP kinds (docs/extensions.md)."""
        meta = _meta(kind, paths, command)

        def add(fn: Callable[..., Awaitable[ToolResult]]) -> Callable[..., Awaitable[ToolResult]]:
            async def run(call_id: str, params: P, signal: AbortSignal, on_update: UpdateCallback) -> ToolResult:
                if _arity(fn) == 1:
                    return await fn(params)
                return await fn(call_id, params, signal, on_update)

            self.add_tool(FunctionTool(name, description, parameters, run, meta=meta))
            return fn

        return add

    def add_command(self, name: str, handler: CommandHandler, description: str = "") -> None:
        """``/name args`` typed at a prompt (interactive, print, rpc): see :class:`ExtensionCommand`."""
        name = _check_name("command", name.lstrip("/"))
        self.registration.commands.append(ExtensionCommand(name, description, handler, self.name))

    def command(self, name: str, description: str = "") -> Callable[[H], H]:
        def add(fn: H) -> H:
            self.add_command(name, fn, description)
            return fn

        return add

    def add_template(self, name: str, body: str, description: str = "") -> None:
        """A prompt template, used like a ``.heron/prompts/<name>.md`` file (``$1``, ``$@`` ...);
        a template file of the same name wins."""
        name = _check_name("template", name.lstrip("/"))
        if not isinstance(body, str) or not body.strip():
            raise ExtensionError(f"template {name!r} has an empty body")
        self.registration.templates.append(ExtensionTemplate(name, body, description))


def _arity(fn: Callable[..., Any]) -> int:
    try:
        return len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return 4


__all__ = [
    "AfterToolCallResult",
    "BeforeToolCallResult",
    "CompactionAnswer",
    "CompactionInput",
    "ExtensionAPI",
    "ExtensionError",
    "PathUse",
    "ToolCallInfo",
    "ToolMeta",
    "ToolResult",
    "block",
]


def _meta(kind: ToolKind, paths: str | PathsOf | None, command: str | CommandOf | None) -> ToolMeta:
    """The metadata ``api.tool`` declares; a wrong kind is an :class:`ExtensionError`."""
    access: Access = "write" if kind in ("edit", "write") else "read"
    try:
        return ToolMeta(
            kind=kind,
            paths=path_argument(paths, access) if isinstance(paths, str) else paths,
            command=command_argument(command) if isinstance(command, str) else command,
        )
    except ValueError as exc:
        raise ExtensionError(str(exc)) from None
