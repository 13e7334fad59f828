"""The ``todo`` tool: the model's task list, kept by heron through every compaction.

Each call replaces the whole list. The runtime stores every change in the session
(``heron.todos`` entries) and re-injects the list after a compaction, so the plan
survives when the history that wrote it is summarised (see docs/continuity.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from heron.agent.tool_meta import ToolMeta
from heron.agent.tools import AgentTool, ToolError, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.schema_table import builtin_params
from heron.context.continuity.todos import TodoItem, render_todos

if TYPE_CHECKING:
    from heron.coding.tools.params import TodoParams

MAX_ITEMS = 100
MAX_CONTENT = 2_000


class TodoTool(AgentTool["TodoParams"]):
    name = "todo"
    label = "Todo"
    meta = ToolMeta(kind="todo")
    parameters_ref = builtin_params("todo")
    description = (
        "Keep a task list for multi-step work: send the whole list each time (it replaces the previous "
        "one), one item in_progress at a time, mark items completed as soon as they are done. The list "
        "survives compaction."
    )

    def __init__(self, env: ToolEnv) -> None:
        self.env = env

    async def execute(
        self, call_id: str, params: TodoParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        if len(params.todos) > MAX_ITEMS:
            raise ToolError(f"A task list holds at most {MAX_ITEMS} items; merge or drop some.")
        todos = [TodoItem(content=item.content, status=item.status) for item in params.todos]
        done = sum(1 for item in todos if item["status"] == "completed")
        text = f"Task list updated ({done}/{len(todos)} completed):\n{render_todos(todos)}"
        return ToolResult.text(text, details={"todos": todos})
