"""Per-request cost of heron.ai as the history grows: prompt -> request at the server.

A session is simulated through the real adapters against a local server on 127.0.0.1
speaking each wire format: every turn appends a user message, an assistant message (text
and a tool call with ~200 characters of arguments) and a ~2,000-character tool result,
then sends the next request. The figure is the time from calling ``heron.ai.stream`` to
the moment heron hands the finished request to httpx's transport (its own work: adapt,
convert, serialise); the time until the server has received the whole body is shown
too (it also moves the bytes, which grow with the history). Each sampled turn is the
median of the nine requests ending at it.

A warm-up request first pays for imports and the connection. Targets: at turn 200 at
most 3 ms and within 1.5x of turn 1; at turn 1,000 no more than at turn 10 (x1.5
tolerance for noise on a shared machine).
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import anthropic_turn, openai_turn

from _common import median, parser, table, write_json
from heron.ai import (
    AssistantMessage,
    Context,
    Model,
    StopReason,
    StreamOptions,
    TextContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    stream,
)
from heron.ai.options import NO_RETRY

APIS = ("openai-chat", "openai-responses", "anthropic-messages", "google-gemini")
WINDOW = 9  # requests per sampled turn


class Handoff:
    """When heron hands each request to the network layer (httpx's transport): the end
    of heron's own per-request work."""

    def __init__(self) -> None:
        import httpx

        self.times: list[float] = []
        original = httpx.AsyncHTTPTransport.handle_async_request
        times = self.times

        async def timed(transport: Any, request: Any) -> Any:
            times.append(time.perf_counter())
            return await original(transport, request)

        httpx.AsyncHTTPTransport.handle_async_request = timed  # type: ignore[method-assign]


HANDOFF = Handoff()


class TimedServer(LocalServer):
    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []
        self.lock = threading.Lock()

    def _record(self, request: Recorded) -> None:
        self.arrivals.append(time.perf_counter())
        super()._record(request)


def responses_turn(text: str) -> bytes:
    item = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    response = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": [item],
        "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
    }
    events = [
        {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {
            "type": "response.output_text.delta",
            "output_index": 0,
            "item_id": "msg_1",
            "content_index": 0,
            "delta": text,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def gemini_turn(text: str) -> bytes:
    chunk = {
        "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12},
    }
    return f"data: {json.dumps(chunk)}\r\n\r\n".encode()


REPLIES = {
    "openai-chat": lambda: openai_turn("ok"),
    "openai-responses": lambda: responses_turn("ok"),
    "anthropic-messages": lambda: anthropic_turn("ok"),
    "google-gemini": lambda: gemini_turn("ok"),
}


def model_for(api: str, server: LocalServer) -> Model:
    base = server.url + ("/v1" if api.startswith("openai") else "")
    return Model(id="bench-model", api=api, provider=f"bench-{api}", base_url=base, max_tokens=4096)


TOOLS = [
    Tool(
        name=name,
        description=f"The {name} tool. " + "Guidance for the model. " * 40,
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path"],
        },
    )
    for name in ("read", "bash", "edit", "write")
]


def add_turn(messages: list[Any], n: int, api: str) -> None:
    messages.append(UserMessage(content=f"Turn {n}: please look at file_{n}.py and fix the bug. " * 3))
    call = ToolCall(id=f"call_{n}", name="read", arguments={"path": f"src/file_{n}.py", "content": "x" * 160})
    messages.append(
        AssistantMessage(
            api=api,
            provider=f"bench-{api}",
            model="bench-model",
            content=[TextContent(text=f"Reading file_{n}.py first."), call],
            stop_reason=StopReason.TOOL_USE,
        )
    )
    messages.append(
        ToolResultMessage(
            tool_call_id=f"call_{n}",
            tool_name="read",
            content=[TextContent(text=f"line {n}: " + "def f(): return 1\n" * 110)],
        )
    )


async def session(
    api: str, turns: int, samples: list[int]
) -> tuple[dict[int, float], dict[int, float], dict[int, int]]:
    server = TimedServer()
    server.fallback = Reply(body=REPLIES[api]())
    model = model_for(api, server)
    messages: list[Any] = []
    wanted = {t for s in samples for t in range(max(1, s - WINDOW + 1), s + 1)}
    costs: dict[int, float] = {}
    arrivals: dict[int, float] = {}
    sizes: dict[int, int] = {}
    try:
        # Warm-up: the first request pays for imports and the connection, not the history.
        warm = Context(messages=[UserMessage(content="warm up")], tools=TOOLS)
        await stream(model, warm, StreamOptions(api_key="sk-bench", retry=NO_RETRY)).result()
        for turn in range(1, turns + 1):
            add_turn(messages, turn, api)
            context = Context(system_prompt="You are a coding agent. " * 60, messages=list(messages), tools=TOOLS)
            options = StreamOptions(api_key="sk-bench", retry=NO_RETRY, session_id="bench-session")
            count, handed = len(server.arrivals), len(HANDOFF.times)
            start = time.perf_counter()
            result = await stream(model, context, options).result()
            if result.stop_reason == StopReason.ERROR:
                raise RuntimeError(f"{api}: {result.error_message}")
            if turn in wanted:
                costs[turn] = (HANDOFF.times[handed] - start) * 1000
                arrivals[turn] = (server.arrivals[count] - start) * 1000
                sizes[turn] = len(server.requests[-1].body)
            server.requests.clear()
    finally:
        server.close()

    def at(values: dict[int, float], s: int) -> float:
        return median([values[t] for t in range(max(1, s - WINDOW + 1), s + 1)])

    return ({s: at(costs, s) for s in samples}, {s: at(arrivals, s) for s in samples}, {s: sizes[s] for s in samples})


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    samples = [1, 10, 30, 60] if args.quick else [1, 10, 200, 1000]
    turns = samples[-1]
    results: dict[str, Any] = {}
    rows = []
    wire_rows = []
    for api in APIS:
        figures, arrivals, sizes = asyncio.run(session(api, turns, samples))
        t1, t10, tmid, tlast = (figures[s] for s in samples)
        verdict = tmid <= 3.0 and tmid <= 1.5 * t1 and tlast <= 1.5 * t10
        results[api] = {
            "handoff_ms": {str(s): round(v, 3) for s, v in figures.items()},
            "arrival_ms": {str(s): round(v, 3) for s, v in arrivals.items()},
            "request_bytes": {str(s): v for s, v in sizes.items()},
            "met": verdict,
        }
        rows.append([api, *(f"{figures[s]:.2f}" for s in samples), "met" if verdict else "missed"])
        wire_rows.append([api, *(f"{arrivals[s]:.2f} ({sizes[s] / 1000:,.0f} KB)" for s in samples)])
    print("prompt -> request handed to the network layer (heron's own work), median ms")
    print(table(["api", *(f"turn {s}" for s in samples), "target"], rows))
    print("\nprompt -> whole request received by the local server (includes moving the bytes), median ms")
    print(table(["api", *(f"turn {s}" for s in samples)], wire_rows))
    write_json("ai_request", {"samples": samples, "results": results}, args.json, args.quick)


if __name__ == "__main__":
    main()
