"""The tool host of a session: how a ``script``'s program calls the session's tools.

Each call goes through the agent's own path for a model's call
(:meth:`heron.agent.agent.Agent.call_tool`: validation, ``before_tool_call`` - permissions,
hooks, the checkpoint wait of a tool that changes files, extensions - the tool,
``after_tool_call`` - redaction, PostToolUse hooks) and then into the ledger as any result
is (a read the tool cut, an output it spilled), so nothing a script does escapes what a
plain call would meet. The calls are not messages: the script's result records them in its
details (docs/script.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from heron.agent.tools import AgentTool, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.types import TextContent, ToolCall
from heron.context.records.ledger import tool_records

if TYPE_CHECKING:
    from heron.agent.agent import Agent
    from heron.agent.tool_meta import ToolCatalog
    from heron.context.records.ledger import Ledger


class ToolHostSession(Protocol):
    """What a script's calls use of their session: the agent whose path a call takes, the
    catalog that says which tools call tools, and the ledger the results are recorded in."""

    @property
    def agent(self) -> Agent: ...

    @property
    def tool_catalog(self) -> ToolCatalog: ...

    @property
    def ledger(self) -> Ledger: ...


class SessionToolHost:
    """:class:`heron.coding.tools.env.ToolHost` for one session."""

    def __init__(self, session: ToolHostSession) -> None:
        self.session = session

    def callable_tools(self) -> list[AgentTool[Any]]:
        catalog = self.session.tool_catalog
        return [tool for tool in self.session.agent.state.tools if not catalog.meta(tool.name).calls_tools]

    async def call(self, call: ToolCall, signal: AbortSignal) -> ToolResult:
        if self.session.tool_catalog.meta(call.name).calls_tools:
            return ToolResult.error(f"A script cannot run the {call.name} tool (one script never starts another)")
        result = await self.session.agent.call_tool(call, signal)
        chars = sum(len(b.text) for b in result.content if isinstance(b, TextContent))
        for record in tool_records(call.id, call.name, result.details, chars):
            self.session.ledger.add(record)
        return result
