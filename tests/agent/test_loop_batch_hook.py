"""The after_tool_batch hook sees every result of one answer before they are added."""

from __future__ import annotations

from heron.agent import Agent, FunctionTool, ToolParams, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, FauxReply, text
from heron.ai.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage


class P(ToolParams):
    n: int


async def run(call_id: str, params: P, signal: AbortSignal, on_update: object) -> ToolResult:
    return ToolResult.text("x" * params.n)


def two_calls() -> FauxReply:
    calls = [ToolCall(id="a", name="t", arguments={"n": 5}), ToolCall(id="b", name="t", arguments={"n": 9})]
    return FauxReply(content=list(calls))


async def test_hook_replaces_results_in_place(faux: FauxProvider) -> None:
    seen: list[list[str]] = []

    async def shrink(assistant: AssistantMessage, results: list[ToolResultMessage]) -> list[ToolResultMessage]:
        seen.append([r.tool_call_id for r in results])
        return [
            ToolResultMessage(tool_call_id=r.tool_call_id, tool_name=r.tool_name, content=[TextContent(text="small")])
            for r in results
        ]

    agent = Agent(model=faux.model(), tools=[FunctionTool("t", "d", P, run)], after_tool_batch=shrink)
    faux.queue(two_calls(), text("done"))
    await agent.prompt("go")
    assert seen == [["a", "b"]]
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [r.text() for r in results] == ["small", "small"]


async def test_broken_hook_keeps_original_results(faux: FauxProvider) -> None:
    async def broken(assistant: AssistantMessage, results: list[ToolResultMessage]) -> list[ToolResultMessage]:
        raise RuntimeError("boom")

    async def dropping(assistant: AssistantMessage, results: list[ToolResultMessage]) -> list[ToolResultMessage]:
        return results[:1]

    for hook in (broken, dropping):
        agent = Agent(model=faux.model(), tools=[FunctionTool("t", "d", P, run)], after_tool_batch=hook)
        faux.queue(two_calls(), text("done"))
        await agent.prompt("go")
        results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
        assert [len(r.text()) for r in results] == [5, 9]
