"""before_tool_call / after_tool_call hooks."""

from __future__ import annotations

from typing import Any

from heron.agent import (
    AfterToolCallResult,
    AgentTool,
    BeforeToolCallResult,
    FunctionTool,
    ToolCallContext,
    ToolResult,
)
from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.types import AssistantMessage, ImageContent, TextContent, ToolResultMessage
from tests.agent.support import (
    TextParams,
    UpdateFn,
    assert_tool_results_paired,
    calls,
    last_assistant,
    make_agent,
    results_of,
    text_of,
)


class Counter:
    def __init__(self) -> None:
        self.seen: list[str] = []

        async def run(call_id: str, params: TextParams, signal: AbortSignal, on_update: UpdateFn) -> ToolResult:
            self.seen.append(params.text)
            return ToolResult.text(f"wrote {params.text}", details={"bytes": len(params.text)})

        self.tool: AgentTool[Any] = FunctionTool("write", "Write text.", TextParams, run)


async def run_with(faux: FauxProvider, reply: FauxReply, **hooks: Any) -> tuple[Counter, dict[str, ToolResultMessage]]:
    counter = Counter()
    agent = make_agent(faux, [counter.tool], **hooks)
    faux.queue(reply, text("ok"))
    await agent.prompt("go")
    assert_tool_results_paired(agent.messages)
    assert last_assistant(agent.messages).text() == "ok"
    return counter, results_of(agent.messages)


async def test_before_hook_blocks_with_reason(faux: FauxProvider) -> None:
    contexts: list[ToolCallContext] = []
    last_messages: list[Any] = []

    async def before(ctx: ToolCallContext) -> BeforeToolCallResult | None:
        contexts.append(ctx)
        last_messages.append(ctx.messages[-1])
        if ctx.params.text == "rm -rf /":  # type: ignore[attr-defined]
            return BeforeToolCallResult(block=True, reason="Refused: destructive command.")
        return None

    reply = calls(("write", {"text": "rm -rf /"}, "c1"), ("write", {"text": "hello"}, "c2"))
    counter, results = await run_with(faux, reply, before_tool_call=before)
    assert counter.seen == ["hello"]
    assert results["c1"].is_error
    assert text_of(results["c1"]) == "Refused: destructive command."
    assert not results["c2"].is_error
    # the hook saw the validated params, the call, the tool and the conversation so far
    first = contexts[0]
    assert first.tool_call.id == "c1"
    assert first.tool.name == "write"
    assert isinstance(first.params, TextParams)
    assert isinstance(last_messages[0], AssistantMessage)
    assert last_messages[0].tool_calls()[0] is first.tool_call
    # the reason reached the model
    assert text_of(faux.requests[-1].messages[-2]) == "Refused: destructive command."  # type: ignore[arg-type]


async def test_before_hook_blocks_without_reason(faux: FauxProvider) -> None:
    async def before(ctx: ToolCallContext) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=True)

    counter, results = await run_with(faux, tool_call("write", {"text": "x"}, "c1"), before_tool_call=before)
    assert counter.seen == []
    assert results["c1"].is_error
    assert text_of(results["c1"]) == "Tool call was blocked."


async def test_before_hook_rewrites_arguments(faux: FauxProvider) -> None:
    async def before(ctx: ToolCallContext) -> BeforeToolCallResult:
        return BeforeToolCallResult(arguments={"text": ctx.tool_call.arguments["text"].upper()})

    counter, results = await run_with(faux, tool_call("write", {"text": "quiet"}, "c1"), before_tool_call=before)
    assert counter.seen == ["QUIET"]
    assert text_of(results["c1"]) == "wrote QUIET"
    assert not results["c1"].is_error


async def test_before_hook_invalid_rewrite_is_reported(faux: FauxProvider) -> None:
    async def before(ctx: ToolCallContext) -> BeforeToolCallResult:
        return BeforeToolCallResult(arguments={"text": 42, "mode": "append"})

    counter, results = await run_with(faux, tool_call("write", {"text": "ok"}, "c1"), before_tool_call=before)
    assert counter.seen == []
    body = text_of(results["c1"])
    assert results["c1"].is_error
    assert body.startswith('Validation failed for tool "write":')
    assert "  - text: Input should be a valid string" in body
    assert "  - mode: unexpected argument" in body
    assert '"text": 42' in body


async def test_before_hook_that_raises(faux: FauxProvider) -> None:
    async def before(ctx: ToolCallContext) -> BeforeToolCallResult:
        raise RuntimeError("policy server down")

    counter, results = await run_with(faux, tool_call("write", {"text": "x"}, "c1"), before_tool_call=before)
    assert counter.seen == []
    assert results["c1"].is_error
    assert text_of(results["c1"]) == "The before_tool_call hook failed, so the tool was not run: policy server down"


async def test_before_hook_is_not_called_for_invalid_calls(faux: FauxProvider) -> None:
    called: list[str] = []

    async def before(ctx: ToolCallContext) -> None:
        called.append(ctx.tool_call.id)

    reply = calls(("write", {}, "c1"), ("missing", {}, "c2"), ("write", {"text": "y"}, "c3"))
    counter, results = await run_with(faux, reply, before_tool_call=before)
    assert called == ["c3"]
    assert counter.seen == ["y"]
    assert results["c1"].is_error and results["c2"].is_error and not results["c3"].is_error


async def test_after_hook_replaces_content_details_and_error_flag(faux: FauxProvider) -> None:
    seen_results: list[ToolResult] = []
    image = ImageContent(data="aGk=", mime_type="image/png")

    async def after(ctx: ToolCallContext, result: ToolResult) -> AfterToolCallResult:
        seen_results.append(result)
        return AfterToolCallResult(
            content=[TextContent(text="[redacted]"), image], details={"audited": True}, is_error=True
        )

    counter, results = await run_with(faux, tool_call("write", {"text": "secret"}, "c1"), after_tool_call=after)
    assert counter.seen == ["secret"]
    assert text_of(seen_results[0]) == "wrote secret"
    result = results["c1"]
    assert result.content == [TextContent(text="[redacted]"), image]
    assert result.details == {"audited": True}
    assert result.is_error


async def test_after_hook_partial_change_keeps_the_rest(faux: FauxProvider) -> None:
    async def after(ctx: ToolCallContext, result: ToolResult) -> AfterToolCallResult:
        return AfterToolCallResult(details={"extra": 1})

    _, results = await run_with(faux, tool_call("write", {"text": "abc"}, "c1"), after_tool_call=after)
    assert text_of(results["c1"]) == "wrote abc"
    assert results["c1"].details == {"extra": 1}
    assert not results["c1"].is_error


async def test_after_hook_can_clear_an_error(faux: FauxProvider) -> None:
    async def before(ctx: ToolCallContext) -> BeforeToolCallResult:
        return BeforeToolCallResult(arguments={"text": "fixed"})

    async def after(ctx: ToolCallContext, result: ToolResult) -> AfterToolCallResult | None:
        # the hook context follows the rewritten params
        assert ctx.params.text == "fixed"  # type: ignore[attr-defined]
        return AfterToolCallResult(is_error=False) if result.is_error else None

    _, results = await run_with(
        faux, tool_call("write", {"text": "orig"}, "c1"), before_tool_call=before, after_tool_call=after
    )
    assert text_of(results["c1"]) == "wrote fixed"
    assert not results["c1"].is_error


async def test_after_hook_returning_none_keeps_the_result(faux: FauxProvider) -> None:
    async def after(ctx: ToolCallContext, result: ToolResult) -> None:
        return None

    _, results = await run_with(faux, tool_call("write", {"text": "abc"}, "c1"), after_tool_call=after)
    assert text_of(results["c1"]) == "wrote abc"
    assert results["c1"].details == {"bytes": 3}


async def test_after_hook_that_raises(faux: FauxProvider) -> None:
    async def after(ctx: ToolCallContext, result: ToolResult) -> AfterToolCallResult:
        raise ValueError("audit log full")

    counter, results = await run_with(faux, tool_call("write", {"text": "abc"}, "c1"), after_tool_call=after)
    assert counter.seen == ["abc"]  # the tool did run
    result = results["c1"]
    assert result.is_error
    assert [b.text for b in result.content if isinstance(b, TextContent)] == [
        "The after_tool_call hook failed: audit log full",
        "wrote abc",
    ]
    assert result.details == {"bytes": 3}
