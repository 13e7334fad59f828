"""``Agent.call_tool``: one call outside any answer (a script's inner call) along the path a
model's call takes - validation, before/after hooks, the tool - with no events."""

from __future__ import annotations

from heron.agent import AfterToolCallResult, Agent, BeforeToolCallResult, ToolCallContext, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider
from heron.ai.types import TextContent, ToolCall
from tests.agent.support import echo_tool


async def test_a_call_takes_the_hooks_and_emits_nothing(faux: FauxProvider) -> None:
    seen: list[str] = []

    async def before(ctx: ToolCallContext) -> BeforeToolCallResult | None:
        seen.append(f"before {ctx.tool_call.id}")
        if ctx.tool_call.arguments.get("text") == "forbidden":
            return BeforeToolCallResult(block=True, reason="not that")
        return None

    async def after(ctx: ToolCallContext, result: ToolResult) -> AfterToolCallResult | None:
        seen.append(f"after {ctx.tool_call.id}")
        return AfterToolCallResult(content=[TextContent(text=result.content[0].text.upper())])  # type: ignore[union-attr]

    agent = Agent(model=faux.model(), tools=[echo_tool()], before_tool_call=before, after_tool_call=after)
    events: list[object] = []
    agent.subscribe(events.append)
    agent.steer("a queued message does not skip it")
    result = await agent.call_tool(ToolCall(id="s.1", name="echo", arguments={"text": "hi"}), AbortSignal())
    assert result.content[0].text == "ECHO: HI" and result.details == {"length": 2}  # type: ignore[union-attr]
    blocked = await agent.call_tool(ToolCall(id="s.2", name="echo", arguments={"text": "forbidden"}), AbortSignal())
    assert blocked.is_error and blocked.content[0].text == "not that"  # type: ignore[union-attr]
    assert seen == ["before s.1", "after s.1", "before s.2"]
    assert events == [] and agent.messages == []


async def test_unknown_tools_and_bad_arguments_are_errors(faux: FauxProvider) -> None:
    agent = Agent(model=faux.model(), tools=[echo_tool()])
    missing = await agent.call_tool(ToolCall(id="a", name="nope", arguments={}), AbortSignal())
    assert missing.is_error and 'Tool "nope" not found' in missing.content[0].text  # type: ignore[union-attr]
    bad = await agent.call_tool(ToolCall(id="b", name="echo", arguments={"txt": 1}), AbortSignal())
    assert bad.is_error and 'Validation failed for tool "echo"' in bad.content[0].text  # type: ignore[union-attr]
