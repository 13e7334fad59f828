"""Harness overhead of heron.agent.

1. 1,000 tool turns in one run against a zero-latency provider that answers with a
   fixed tool call (and, in a second row, the faux provider, which also serialises the
   whole request every call): microseconds per turn spent in heron, and peak memory.
2. The context pipeline before every call (on a realistic mix: a compaction summary,
   then user / assistant / tool-result turns with a UI note every 10 turns and a
   user-run command every 25) (transform_context -> convert_to_llm -> tool
   definitions) as the message list grows to 10,000 messages: microseconds per call.
   Linear growth per call is expected (each call looks at every message once); the
   figure that matters is that it stays small and does not grow faster than n.
"""

from __future__ import annotations

import asyncio
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import median, parser, table, write_json
from heron.agent import (
    Agent,
    AgentContext,
    BashExecutionMessage,
    CompactionSummaryMessage,
    FunctionTool,
    LoopConfig,
    ToolParams,
    ToolResult,
    UINote,
)
from heron.agent.loop import build_request_context
from heron.agent.messages import AgentMessage
from heron.ai.abort import AbortSignal
from heron.ai.builder import MessageBuilder
from heron.ai.events import AssistantEvent
from heron.ai.options import StreamOptions
from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.ai.registry import register_provider
from heron.ai.types import (
    AssistantMessage,
    Context,
    Model,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


class NoopParams(ToolParams):
    n: int = 0


async def noop(call_id: str, params: NoopParams, signal: AbortSignal, on_update: object) -> ToolResult:
    return ToolResult.text("ok")


class ZeroLatencyProvider:
    """Answers with one tool call until ``turns`` calls were made, then with text; it never
    looks at the request, so what is measured is heron, not a provider."""

    api = "bench-zero"

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.calls = 0

    def describe_error(self, exc: BaseException) -> None:
        return None

    async def stream(
        self, model: Model, context: Context, options: StreamOptions, builder: MessageBuilder
    ) -> AsyncIterator[AssistantEvent]:
        self.calls += 1
        if self.calls <= self.turns:
            yield builder.start_tool_call(0, f"call_{self.calls}", "noop")
            yield builder.tool_call_delta(0, '{"n": 1}')
            builder.stop_reason = StopReason.TOOL_USE
        else:
            yield builder.start_text(0)
            yield builder.text_delta(0, "done")
        builder.usage.input = 10
        builder.usage.output = 5


async def run_turns(turns: int, provider: str) -> tuple[float, int]:
    tool = FunctionTool("noop", "Does nothing", NoopParams, noop)
    if provider == "zero":
        zero = ZeroLatencyProvider(turns)
        register_provider(zero)  # type: ignore[arg-type]
        model = Model(id="zero", api="bench-zero", provider="bench")
    else:
        faux = FauxProvider.install("faux-overhead")
        faux.queue(*[tool_call("noop", {"n": 1}) for _ in range(turns)], text("done"))
        model = faux.model()
    agent = Agent(model=model, system_prompt="bench", tools=[tool])
    events = 0

    def count(_: object) -> None:
        nonlocal events
        events += 1

    agent.subscribe(count)
    start = time.perf_counter()
    await agent.prompt("go")
    elapsed = time.perf_counter() - start
    assert len(agent.messages) == 2 * turns + 2, len(agent.messages)
    return elapsed / turns * 1e6, events


def peak_memory(turns: int) -> float:
    tracemalloc.start()
    asyncio.run(run_turns(turns, "zero"))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1e6


def synthetic_messages(n: int) -> list[AgentMessage]:
    messages: list[AgentMessage] = [CompactionSummaryMessage(summary="Earlier work: " + "s" * 400)]
    i = 0
    while len(messages) < n:
        i += 1
        messages.append(UserMessage(content=[TextContent(text=f"request {i} " + "u" * 200)]))
        messages.append(
            AssistantMessage(
                api="faux",
                provider="faux",
                model="m",
                stop_reason=StopReason.TOOL_USE,
                content=[TextContent(text="checking"), ToolCall(id=f"c{i}", name="noop", arguments={"n": i})],
            )
        )
        result = ToolResultMessage(tool_call_id=f"c{i}", tool_name="noop", content=[TextContent(text="r" * 500)])
        messages.append(result)
        if i % 10 == 0:
            messages.append(UINote(text="card"))
        if i % 25 == 0:
            messages.append(BashExecutionMessage(command="ls", output="a\nb", exit_code=0))
    return messages[:n]


async def pipeline_us(n: int, repeats: int) -> float:
    tool = FunctionTool("noop", "Does nothing", NoopParams, noop)
    context = AgentContext(system_prompt="bench", messages=synthetic_messages(n), tools=[tool])
    config = LoopConfig(model=Model(id="m", api="faux", provider="faux"))
    signal = AbortSignal()
    await build_request_context(context, config, signal)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        await build_request_context(context, config, signal)
        times.append(time.perf_counter() - start)
    return median(times) * 1e6


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    turns = 100 if args.quick else 1000
    zero_us, events = asyncio.run(run_turns(turns, "zero"))
    faux_us, _ = asyncio.run(run_turns(turns, "faux"))
    peak_mb = peak_memory(turns)
    sizes = [100, 1_000] if args.quick else [100, 1_000, 10_000]
    pipeline = {n: asyncio.run(pipeline_us(n, 5 if args.quick else 51)) for n in sizes}
    rows = [
        [f"{turns} tool turns, zero-latency provider: us/turn", f"{zero_us:.0f}", "< 500"],
        [f"{turns} tool turns, faux provider (serialises each request): us/turn", f"{faux_us:.0f}", ""],
        [f"peak traced memory over {turns} turns (MB)", f"{peak_mb:.1f}", ""],
        ["events emitted per turn", f"{events / turns:.1f}", ""],
    ]
    for n, us in pipeline.items():
        rows.append([f"pipeline per call at {n:,} messages: us", f"{us:.0f}", "linear in n"])
    print(table(["measure", "value", "target"], rows))
    write_json(
        "agent_overhead",
        {
            "turns": turns,
            "zero_latency_us_per_turn": round(zero_us, 1),
            "faux_us_per_turn": round(faux_us, 1),
            "peak_traced_mb": round(peak_mb, 2),
            "pipeline_us_per_call": {str(n): round(us, 1) for n, us in pipeline.items()},
        },
        args.json,
        args.quick,
    )


if __name__ == "__main__":
    main()
