"""The coding tools: read, write, edit, bash, search_history, todo and task by default;
grep, find, ls and json_query on request.

``task`` (sub-agents, :mod:`heron.coding.subagents`) needs the session it runs in, so
:func:`create_tools` leaves it out and the runtime adds it (docs/subagents.md).

``search_history`` is on by default because it is the way back to whatever compaction
and pruning took out of the context (see docs/recall.md); ``json_query`` is asked for by
name (``--tools``, ``defaultTools``)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from heron.agent.tools import AgentTool
from heron.coding.tools.env import ToolEnv
from heron.context.limits import ToolLimits

DEFAULT_TOOLS: tuple[str, ...] = ("read", "bash", "edit", "write", "search_history", "todo", "task")
ALL_TOOLS: tuple[str, ...] = (
    "read",
    "bash",
    "edit",
    "write",
    "grep",
    "find",
    "ls",
    "search_history",
    "json_query",
    "todo",
    "task",
)
SESSION_TOOLS: frozenset[str] = frozenset({"task"})  # built by the runtime, not here


class UnknownToolError(ValueError):
    pass


def create_tools(env: ToolEnv, names: Sequence[str] | None = None) -> list[AgentTool[Any]]:
    """The named tools (default: :data:`DEFAULT_TOOLS`), in a fixed order so that the
    tool definitions sent with every request stay byte-identical (prompt caching)."""
    wanted = list(names) if names is not None else list(DEFAULT_TOOLS)
    unknown = [n for n in wanted if n not in ALL_TOOLS]
    if unknown:
        raise UnknownToolError(f"unknown tool(s): {', '.join(unknown)}; available: {', '.join(ALL_TOOLS)}")
    # Only the tools asked for are imported: grep, find and ls (and their walker) are not
    # needed by the default set, and every module loaded delays the first request.
    factories: dict[str, tuple[str, str]] = {
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
    }
    tools: list[AgentTool[Any]] = []
    for name in ALL_TOOLS:
        if name in wanted and name not in SESSION_TOOLS:
            module, cls = factories[name]
            tools.append(getattr(importlib.import_module(module), cls)(env))
    return tools


def set_limits(env: ToolEnv, tools: Sequence[AgentTool[Any]], limits: ToolLimits) -> None:
    """The limits follow the window in use (a model switch, a learnt window). Several tools
    state their caps in their descriptions, written when they are built, so each built-in tool
    is re-described the way :func:`create_tools` would describe it now: the definitions sent
    say what the tools do, and match those of a new process started on the same window."""
    env.limits = limits
    for tool in tools:
        if tool.name in ALL_TOOLS and tool.name not in SESSION_TOOLS and type(tool).__module__.startswith(__name__):
            tool.description = type(tool)(env).description  # type: ignore[call-arg]


__all__ = ["ALL_TOOLS", "DEFAULT_TOOLS", "SESSION_TOOLS", "ToolEnv", "UnknownToolError", "create_tools", "set_limits"]
