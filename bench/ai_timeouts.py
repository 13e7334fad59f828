"""Time to error on a server that never answers, and on one that only sends keep-alives.

Two local servers on 127.0.0.1: one accepts the request and stays silent (no status line,
no byte), one answers 200 and then sends only SSE comments (and, in Anthropic format,
``ping`` events) every 0.2 s. Each provider's adapter is run against both with
``first_byte_ms`` / ``idle_ms`` set to 1,000 ms and no retries (``--retries N`` to count
them in), and the time until the error event is measured. A wait longer than ``--cap``
seconds is stopped and reported as ``> cap`` (how heron behaved before the bounds: the
SDK's 600 s read timeout per attempt for a silent server, no end at all with
keep-alives).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.http_server import LocalServer, Reply

from _common import parser, table, write_json
from heron.ai import Context, Model, RetryPolicy, StreamOptions, UserMessage, stream

APIS = ("openai-chat", "openai-responses", "anthropic-messages", "google-gemini")
KEEP_ALIVE = {"anthropic-messages": b': keep-alive\n\nevent: ping\ndata: {"type": "ping"}\n\n'}


def options(retries: int) -> StreamOptions:
    policy = RetryPolicy(max_retries=retries, base_delay=0.5)
    try:
        return StreamOptions(api_key="sk-bench", retry=policy, first_byte_ms=1000, idle_ms=1000)  # type: ignore[call-arg]
    except TypeError:  # a heron without the bounds (for the "before" figures)
        return StreamOptions(api_key="sk-bench", retry=policy)


async def time_to_error(api: str, reply: Reply, retries: int, cap: float) -> tuple[float | None, str]:
    server = LocalServer()
    server.fallback = reply
    base = server.url + ("/v1" if api.startswith("openai") else "")
    model = Model(id="m", api=api, provider="bench", base_url=base)
    started = time.monotonic()
    try:
        message = await asyncio.wait_for(
            stream(model, Context(messages=[UserMessage(content="hi")]), options(retries)).result(), cap
        )
    except TimeoutError:
        return None, f"no error after {cap:.0f} s"
    finally:
        server.close()
    return time.monotonic() - started, (message.error_message or "")[:90]


def main() -> None:
    args_parser = parser(__doc__ or "")
    args_parser.add_argument("--retries", type=int, default=0)
    args_parser.add_argument("--cap", type=float, default=30.0)
    args = args_parser.parse_args()
    cap = 5.0 if args.quick else args.cap
    rows: list[list[Any]] = []
    results: dict[str, Any] = {}
    for api in APIS:
        silent = Reply(body=b"", delay=3600)
        pings = KEEP_ALIVE.get(api, b": keep-alive\n\n")
        alive = Reply(body=pings * 10_000, chunk_size=len(pings), chunk_delay=0.2)
        for name, reply in (("silent", silent), ("keep-alive only", alive)):
            seconds, message = asyncio.run(time_to_error(api, reply, args.retries, cap))
            shown = f"> {cap:.0f}" if seconds is None else f"{seconds:.2f}"
            rows.append([api, name, shown, message])
            results[f"{api}/{name}"] = {"seconds": None if seconds is None else round(seconds, 3), "error": message}
    print(table(["api", "server", "time to error s", "error"], rows))
    write_json("ai_timeouts", {"retries": args.retries, "cap_s": cap, "results": results}, args.json, args.quick)


if __name__ == "__main__":
    main()
