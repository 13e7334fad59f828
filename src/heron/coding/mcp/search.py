"""``tool_search``: MCP tool definitions loaded on demand when sending them all would be
too expensive.

Servers with hundreds of tools can publish definitions worth tens of thousands of
tokens, paid on every request. Past :data:`DEFER_SHARE` of the window the MCP tools are
held back: the model sees one ``tool_search`` tool whose description names them, and a
search adds the matching tools to the session's tool list, so they are sent from the
next request on (their full schemas are also in the search result). The tool list then
changes once per search, which costs one prompt-cache miss, far less than carrying every
definition every time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import Field

from heron.agent.tool_meta import ToolMeta
from heron.agent.tools import AgentTool, ToolParams, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.ai.tokens import estimate_text_tokens
from heron.coding.mcp.tools import McpTool

DEFER_SHARE = 0.10
MAX_RESULTS = 10
_WORD = re.compile(r"[a-z0-9]+")


def definition_tokens(tools: Sequence[AgentTool[Any]]) -> int:
    """What the definitions cost on every request (chars/4 of their JSON)."""
    total = 0
    for tool in tools:
        d = tool.definition()
        total += estimate_text_tokens(
            json.dumps({"name": d.name, "description": d.description, "parameters": d.parameters}, ensure_ascii=False)
        )
    return total


def should_defer(tools: Sequence[AgentTool[Any]], window: int) -> bool:
    return bool(tools) and definition_tokens(tools) > DEFER_SHARE * window


class ToolSearchParams(ToolParams):
    query: str = Field(
        description='Words to match in tool names and descriptions, or "select:NAME1,NAME2" for exact names'
    )
    max_results: int = Field(default=5, ge=1, le=MAX_RESULTS, description="How many tools to load (at most 10)")


Activate = Callable[[list[AgentTool[Any]]], None]


class ToolSearch(AgentTool[ToolSearchParams]):
    name = "tool_search"
    meta = ToolMeta(kind="search")
    label = "tool search"
    parameters = ToolSearchParams

    def __init__(self, deferred: Sequence[McpTool]) -> None:
        self.deferred = list(deferred)
        self.loaded: set[str] = set()
        self.activate: Activate | None = None
        names = ", ".join(t.name for t in self.deferred)
        self.description = (
            "Load the definitions of MCP tools that are not sent by default (there are too many to send "
            "them all). Search by words or select exact names; the tools found become callable from your "
            f"next step. Available: {names}"
        )

    async def execute(
        self, call_id: str, params: ToolSearchParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        found = self.find(params.query, params.max_results)
        if not found:
            return ToolResult.text(
                f"No MCP tool matches {params.query!r}. Tools: " + ", ".join(t.name for t in self.deferred)
            )
        new = [t for t in found if t.name not in self.loaded]
        if new and self.activate is not None:
            self.activate(list(new))
            self.loaded.update(t.name for t in new)
        blocks = [
            json.dumps({"name": t.name, "description": t.description, "input_schema": t.schema}, ensure_ascii=False)
            for t in found
        ]
        usable = "now callable" if self.activate is not None else "not callable in this session"
        return ToolResult.text(
            f"{len(found)} tool(s) found, {usable}:\n" + "\n".join(blocks), details={"loaded": [t.name for t in found]}
        )

    def restore(self, searches: Iterable[Sequence[str]]) -> None:
        """Load again what earlier searches of this session loaded (each search's names, in
        order), as one tool-list change: a session continued in a new process then sends
        the same tool list, in the same order, as the process that searched would have.
        Names the servers no longer offer are skipped."""
        by_name = {t.name: t for t in self.deferred}
        new: list[AgentTool[Any]] = []
        for names in searches:
            for name in names:
                tool = by_name.get(name)
                if tool is not None and name not in self.loaded:
                    self.loaded.add(name)
                    new.append(tool)
        if new and self.activate is not None:
            self.activate(new)

    def find(self, query: str, limit: int) -> list[McpTool]:
        text = query.strip()
        if text.lower().startswith("select:"):
            wanted = [w.strip() for w in text[7:].split(",") if w.strip()]
            by_name = {t.name: t for t in self.deferred}
            return [by_name[w] for w in wanted if w in by_name][:MAX_RESULTS]
        words = set(_WORD.findall(text.lower()))
        if not words:
            return []
        scored: list[tuple[int, int, McpTool]] = []
        for n, tool in enumerate(self.deferred):
            name_words = set(_WORD.findall(tool.name.lower()))
            desc_words = set(_WORD.findall(tool.description.lower()))
            score = 3 * _matches(words, name_words) + _matches(words, desc_words)
            if score:
                scored.append((-score, n, tool))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [tool for _, _, tool in scored[:limit]]


def _matches(query: set[str], words: set[str]) -> int:
    """Query words found in ``words``, also as a prefix ("issue" finds "issues")."""
    return sum(1 for q in query if any(w.startswith(q) for w in words))
