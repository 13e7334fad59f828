"""Bytes on stdout of ``heron --mode json`` for one long streamed answer.

A local OpenAI-compatible server streams an answer of N characters in 10-character
deltas; the real ``heron --mode json -p`` prints the events. ``after`` is the stdout
measured. ``before`` is what the earlier format would have printed for the same events:
each ``message_update`` also carried the whole message so far (rebuilt here from the
final message, cut to each update's length), which grows with the square of N.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.http_server import LocalServer, Reply
from tests.support.sse import openai_chunk, openai_sse

from _common import parser, table, write_json

PIECE = 10


def answer(size: int) -> Reply:
    text = ("word " * (size // 5 + 1))[:size]
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": text[i : i + PIECE]}) for i in range(0, size, PIECE)]
    chunks += [
        openai_chunk({}, finish="stop"),
        openai_chunk(usage={"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}),
    ]
    return Reply(body=openai_sse(chunks))


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def measure(size: int) -> dict[str, Any]:
    server = LocalServer()
    try:
        server.queue(answer(size))
        with tempfile.TemporaryDirectory() as tmp:
            env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
            env["HERON_HOME"] = tmp
            heron = Path(sys.executable).with_name("heron")
            command = [str(heron)] if heron.exists() else [sys.executable, "-m", "heron.cli.main"]
            done = subprocess.run(
                [
                    *command,
                    "--base-url",
                    server.url + "/v1",
                    "--model",
                    "m",
                    "--mode",
                    "json",
                    "--no-session",
                    "-p",
                    "hi",
                ],
                cwd=tmp,
                env=env,
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=600,
            )
    finally:
        server.close()
    assert done.returncode == 0, done.stderr.decode()
    after = len(done.stdout)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    final = next(e["message"] for e in lines if e["type"] == "message_end" and e["message"]["role"] == "assistant")
    before, sofar = after, 0
    for event in lines:
        if event["type"] != "message_update":
            continue
        inner = event["event"]
        if inner["type"] == "text_delta":
            sofar += len(inner["delta"])
        partial = {
            **final,
            "content": [{"type": "text", "text": final["content"][0]["text"][:sofar]}],
            "stopReason": "stop",
        }
        before += len(dumps({**event, "message": partial})) - len(dumps(event))
    updates = sum(1 for e in lines if e["type"] == "message_update")
    return {"chars": size, "updates": updates, "before_bytes": before, "after_bytes": after}


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    sizes = [3_000] if args.quick else [3_000, 30_000, 100_000]
    rows = [measure(size) for size in sizes]
    print(
        table(
            ["answer chars", "updates", "stdout before", "stdout after"],
            [[f"{r['chars']:,}", r["updates"], f"{r['before_bytes']:,}", f"{r['after_bytes']:,}"] for r in rows],
        )
    )
    path = write_json("json_stream_size", {"rows": rows}, args.json, args.quick)
    print(f"results: {path}")


if __name__ == "__main__":
    main()
