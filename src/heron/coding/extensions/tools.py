"""An extension's tool as the agent holds it: the extension's own tool, stopped when the
extension is disabled. The definition stays (the tool list of every request is the same
bytes, so the provider's prompt cache holds); a call answers that it is not available."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from heron.agent.tools import AgentTool, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.ai.types import Tool

if TYPE_CHECKING:
    from pydantic import BaseModel

    from heron.coding.extensions.host import Extension


class GuardedTool(AgentTool["BaseModel"]):
    def __init__(self, tool: AgentTool[Any], extension: Extension) -> None:
        self.inner = tool
        self.extension = extension
        self.name = tool.name
        self.label = tool.label or tool.name
        self.description = tool.description
        self.parameters = tool.parameters
        self.meta = tool.meta  # what the tool is, as the extension declared it

    def definition(self) -> Tool:
        return self.inner.definition()

    def concurrency_key(self, params: BaseModel) -> str | None:
        return self.inner.concurrency_key(params)

    async def execute(
        self, call_id: str, params: BaseModel, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        if not self.extension.enabled:
            return ToolResult.error(f"{self.name} is not available: {self.extension.error or 'its extension is off'}")
        return await self.inner.execute(call_id, params, signal, on_update)
