"""Sub-agents: the ``task`` tool, agent definitions, and running children (docs/subagents.md)."""

from __future__ import annotations

from heron.coding.subagents.definitions import AgentDefinition, AgentDefinitions, listing_lines, load_definitions
from heron.coding.subagents.manager import SubagentManager, attach_subagents

__all__ = [
    "AgentDefinition",
    "AgentDefinitions",
    "SubagentManager",
    "attach_subagents",
    "listing_lines",
    "load_definitions",
]
