"""The coding tools: read, write, edit, bash, search_history, todo, task and script by
default; grep, find, ls and json_query on request.

``task`` (sub-agents, :mod:`heron.coding.subagents`) needs the session it runs in, so
:func:`create_tools` leaves it out and the runtime adds it (docs/subagents.md).

``search_history`` is on by default because it is the way back to whatever compaction
and pruning took out of the context (see docs/recall.md); ``json_query`` and ``compact``
(the model asks for a compaction, docs/context.md) are asked for by name (``--tools``,
``defaultTools``)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from heron.agent.tool_meta import ToolMeta
from heron.agent.tools import AgentTool
from heron.coding.tool_names import ALL_TOOLS, DEFAULT_TOOLS
from heron.coding.tools.env import ToolEnv
from heron.context.tool_output.limits import ToolLimits

SCRIPT_TOOL = "script"  # the registration name the ``script.enabled`` setting removes
SESSION_TOOLS: frozenset[str] = frozenset({"task"})  # built by the runtime, not here
TASK_META = ToolMeta(kind="delegate")  # the task tool's (it lives in heron.coding.subagents)
GOAL_TOOL = "goal"  # offered by the goal loop while a goal is active, never chosen (heron.coding.tools.goal)
GOAL_META = ToolMeta(kind="goal")


# The built-in tools' classes, by their registration names.
_FACTORIES: dict[str, tuple[str, str]] = {
    "read": ("heron.coding.tools.read", "ReadTool"),
    "bash": ("heron.coding.tools.bash", "BashTool"),
    "edit": ("heron.coding.tools.edit", "EditTool"),
    "write": ("heron.coding.tools.write", "WriteTool"),
    "grep": ("heron.coding.tools.grep", "GrepTool"),
    "find": ("heron.coding.tools.find", "FindTool"),
    "ls": ("heron.coding.tools.ls", "LsTool"),
    "search_history": ("heron.coding.tools.search_history", "SearchHistoryTool"),
    "json_query": ("heron.coding.tools.json_query", "JsonQueryTool"),
    "todo": ("heron.coding.tools.todo", "TodoTool"),
    "compact": ("heron.coding.tools.compact", "CompactTool"),
    "script": ("heron.coding.tools.script", "ScriptTool"),
}


class UnknownToolError(ValueError):
    pass


def _tool_class(name: str) -> type[AgentTool[Any]]:
    module, cls = _FACTORIES[name]
    found: type[AgentTool[Any]] = getattr(importlib.import_module(module), cls)
    return found


def builtin_meta(name: str) -> ToolMeta | None:
    """The metadata of the built-in tool registered as ``name`` (``None``: there is none):
    what a session's stored calls of a built-in tool are when the session is continued
    without that tool (:class:`heron.agent.tool_meta.ToolCatalog`'s fallback)."""
    if name in SESSION_TOOLS:
        return TASK_META
    if name == GOAL_TOOL:
        return GOAL_META
    return _tool_class(name).meta if name in _FACTORIES else None


def create_tools(env: ToolEnv, names: Sequence[str] | None = None) -> list[AgentTool[Any]]:
    """The named tools (default: :data:`DEFAULT_TOOLS`), in a fixed order so that the
    tool definitions sent with every request stay byte-identical (prompt caching)."""
    wanted = list(names) if names is not None else list(DEFAULT_TOOLS)
    unknown = [n for n in wanted if n not in ALL_TOOLS]
    if unknown:
        raise UnknownToolError(f"unknown tool(s): {', '.join(unknown)}; available: {', '.join(ALL_TOOLS)}")
    # Only the tools asked for are imported: grep, find and ls (and their walker) are not
    # needed by the default set, and every module loaded delays the first request.
    tools: list[AgentTool[Any]] = []
    for name in ALL_TOOLS:
        if name in wanted and name not in SESSION_TOOLS:
            tools.append(_tool_class(name)(env))  # type: ignore[call-arg]
    return tools


def set_limits(env: ToolEnv, tools: Sequence[AgentTool[Any]], limits: ToolLimits) -> None:
    """The limits follow the window in use (a model switch, a learnt window). Several tools
    state their caps in their descriptions, written when they are built, so each built-in tool
    is re-described the way :func:`create_tools` would describe it now: the definitions sent
    say what the tools do, and match those of a new process started on the same window."""
    env.limits = limits
    built_in = {cls for _, cls in _FACTORIES.values()}
    for tool in tools:  # by class: a built-in tool registered under another name is one too
        if type(tool).__module__.startswith(__name__ + ".") and type(tool).__name__ in built_in:
            tool.description = type(tool)(env).description  # type: ignore[call-arg]


__all__ = [
    "ALL_TOOLS",
    "DEFAULT_TOOLS",
    "GOAL_META",
    "GOAL_TOOL",
    "SCRIPT_TOOL",
    "SESSION_TOOLS",
    "TASK_META",
    "ToolEnv",
    "UnknownToolError",
    "builtin_meta",
    "create_tools",
    "set_limits",
]
