"""The coding tools: read, write, edit, bash by default; grep, find, ls on request."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heron.agent.tools import AgentTool
from heron.coding.tools.env import ToolEnv

DEFAULT_TOOLS: tuple[str, ...] = ("read", "bash", "edit", "write")
ALL_TOOLS: tuple[str, ...] = ("read", "bash", "edit", "write", "grep", "find", "ls")


class UnknownToolError(ValueError):
    pass


def create_tools(env: ToolEnv, names: Sequence[str] | None = None) -> list[AgentTool[Any]]:
    """The named tools (default: read, bash, edit, write), in a fixed order so that the
    tool definitions sent with every request stay byte-identical (prompt caching)."""
    wanted = list(names) if names is not None else list(DEFAULT_TOOLS)
    unknown = [n for n in wanted if n not in ALL_TOOLS]
    if unknown:
        raise UnknownToolError(f"unknown tool(s): {', '.join(unknown)}; available: {', '.join(ALL_TOOLS)}")
    from heron.coding.tools.bash import BashTool
    from heron.coding.tools.edit import EditTool
    from heron.coding.tools.find import FindTool
    from heron.coding.tools.grep import GrepTool
    from heron.coding.tools.ls import LsTool
    from heron.coding.tools.read import ReadTool
    from heron.coding.tools.write import WriteTool

    factories: dict[str, Any] = {
        "read": ReadTool,
        "bash": BashTool,
        "edit": EditTool,
        "write": WriteTool,
        "grep": GrepTool,
        "find": FindTool,
        "ls": LsTool,
    }
    return [factories[name](env) for name in ALL_TOOLS if name in wanted]


__all__ = ["ALL_TOOLS", "DEFAULT_TOOLS", "ToolEnv", "UnknownToolError", "create_tools"]
