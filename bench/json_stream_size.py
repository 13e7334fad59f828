"""Bytes on stdout of ``heron --mode json`` and ``--mode rpc`` for one long streamed answer.

A local OpenAI-compatible server streams an answer of N characters in 10-character
deltas; the real ``heron --mode json -p`` prints the events, and the real ``heron --mode
rpc`` answers one ``prompt`` command. The table gives the stdout of each and its ratio
to the answer (the goal is 2x: the deltas once, the finished message once). The deltas
are checked to add up to the answer, and the answer read back the way a script reads it
(``run_answers``: the last assistant ``message_end``) to be the answer.
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
from heron.cli.modes.run_end import answer_of

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


def heron_command() -> list[str]:
    heron = Path(sys.executable).with_name("heron")
    return [str(heron)] if heron.exists() else [sys.executable, "-m", "heron.cli.main"]


def run_heron(mode: str, server: LocalServer, home: str) -> bytes:
    """stdout of one prompt in ``mode``: json (``-p``) or rpc (one ``prompt`` command)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = home
    command = [*heron_command(), "--base-url", server.url + "/v1", "--model", "m", "--no-session", "--mode", mode]
    if mode == "json":
        done = subprocess.run(
            [*command, "-p", "hi"], cwd=home, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=600
        )
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout
    # rpc: stdin's EOF lets the prompt finish, then heron exits
    line = json.dumps({"type": "prompt", "id": "p1", "message": "hi"}) + "\n"
    done = subprocess.run(command, cwd=home, env=env, capture_output=True, input=line.encode(), timeout=600)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def measure(size: int, mode: str) -> dict[str, Any]:
    server = LocalServer()
    try:
        server.queue(answer(size))
        with tempfile.TemporaryDirectory() as tmp:
            stdout = run_heron(mode, server, tmp)
    finally:
        server.close()
    lines = [json.loads(line) for line in stdout.splitlines()]
    text = "".join(
        e.get("event", e.get("assistantMessageEvent", {})).get("delta", "")
        for e in lines
        if e.get("type") == "message_update"
    )
    assert len(text) == size, f"the deltas hold {len(text)} characters, not {size}"
    assert answer_of(lines) == text, "the answer read back is not the streamed text"
    updates = sum(1 for e in lines if e.get("type") == "message_update")
    return {"mode": mode, "chars": size, "updates": updates, "bytes": len(stdout), "ratio": len(stdout) / size}


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    sizes = [3_000] if args.quick else [3_000, 30_000, 100_000]
    rows = [measure(size, mode) for mode in ("json", "rpc") for size in sizes]
    print(
        table(
            ["mode", "answer chars", "message_update lines", "stdout bytes", "stdout / answer"],
            [[r["mode"], f"{r['chars']:,}", r["updates"], f"{r['bytes']:,}", f"{r['ratio']:.2f}x"] for r in rows],
        )
    )
    path = write_json("json_stream_size", {"rows": rows}, args.json, args.quick)
    print(f"results: {path}")


if __name__ == "__main__":
    main()
