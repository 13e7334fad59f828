"""Streaming overhead of heron.ai.

1. Text deltas per second through ``heron.ai.stream`` with the faux provider at zero
   latency (the whole path: provider -> builder -> contract wrapper -> consumer).
2. A ~1 MB OpenAI Chat SSE body served from 127.0.0.1, consumed (a) by heron's
   openai-chat adapter and (b) by the bare OpenAI SDK iterating the same body: the ratio
   is heron's overhead over the SDK's own parsing.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import median, parser, table, write_json
from heron.ai import Context, Model, UserMessage, stream
from heron.ai.options import NO_RETRY
from heron.ai.providers.faux import FauxProvider, text


async def faux_deltas_per_second(messages: int, deltas_per_message: int) -> tuple[float, int]:
    faux = FauxProvider.install("faux-bench", chunk_size=4)
    model = faux.model()
    body = "abcd" * deltas_per_message
    for _ in range(messages):
        faux.queue(text(body))
    context = Context(messages=[UserMessage(content="go")])
    count = 0
    start = time.perf_counter()
    for _ in range(messages):
        async for event in stream(model, context):
            if event.type == "text_delta":
                count += 1
    elapsed = time.perf_counter() - start
    return count / elapsed, count


def chat_sse_body(target_bytes: int) -> bytes:
    pieces = []
    n = 0
    size = 0
    while size < target_bytes:
        chunk = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "bench",
            "choices": [{"index": 0, "delta": {"content": f"token{n} "}, "finish_reason": None}],
        }
        line = f"data: {json.dumps(chunk)}\n\n"
        pieces.append(line)
        size += len(line)
        n += 1
    final = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "bench",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": 10 + n},
    }
    pieces.append(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n")
    return "".join(pieces).encode()


async def heron_chat(model: Model) -> float:
    context = Context(messages=[UserMessage(content="go")])
    start = time.perf_counter()
    message = await stream(model, context, api_key="bench", retry=NO_RETRY).result()
    elapsed = time.perf_counter() - start
    assert message.stop_reason == "stop", message.error_message
    return elapsed


async def bare_sdk_chat(client: Any) -> float:
    """The SDK alone, with one long-lived client (as heron's adapter keeps one)."""
    start = time.perf_counter()
    parts = []
    response = await client.chat.completions.create(
        model="bench", messages=[{"role": "user", "content": "go"}], stream=True
    )
    async for chunk in response:
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    elapsed = time.perf_counter() - start
    assert parts
    return elapsed


async def sdk_comparison(body: bytes, runs: int) -> dict[str, float]:
    from tests.support.http_server import LocalServer, Reply

    server = LocalServer()
    server.fallback = Reply(body=body, chunk_size=16_384)
    base_url = f"{server.url}/v1"
    model = Model(id="bench", api="openai-chat", provider="bench", base_url=base_url)
    import openai

    client = openai.AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0)
    try:
        await heron_chat(model)  # warm: imports, connection pool
        await bare_sdk_chat(client)
        heron_times = []
        sdk_times = []
        for _ in range(runs):
            sdk_times.append(await bare_sdk_chat(client))
            heron_times.append(await heron_chat(model))
    finally:
        await client.close()
        server.close()
    h, s = median(heron_times), median(sdk_times)
    return {"heron_s": h, "sdk_s": s, "ratio": h / s}


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    messages, per_message = (20, 500) if args.quick else (400, 1000)
    rates = [asyncio.run(faux_deltas_per_second(messages, per_message))[0] for _ in range(1 if args.quick else 5)]
    rate = median(rates)
    body = chat_sse_body(50_000 if args.quick else 1_000_000)
    comparison = asyncio.run(sdk_comparison(body, 2 if args.quick else 9))
    print(
        table(
            ["measure", "value", "target"],
            [
                ["faux: text deltas / s (median)", f"{rate:,.0f}", "> 200,000"],
                [f"openai-chat SSE ({len(body) / 1e6:.2f} MB): heron adapter s", f"{comparison['heron_s']:.3f}", ""],
                ["same body: bare OpenAI SDK s", f"{comparison['sdk_s']:.3f}", ""],
                ["ratio heron / SDK", f"{comparison['ratio']:.2f}", "<= 1.3"],
            ],
        )
    )
    write_json(
        "ai_stream",
        {
            "faux_text_deltas_per_s": round(rate),
            "faux_messages": messages,
            "faux_deltas_per_message": per_message,
            "sse_body_bytes": len(body),
            **{k: round(v, 4) for k, v in comparison.items()},
        },
        args.json,
        args.quick,
    )


if __name__ == "__main__":
    main()
