"""json and rpc output: deltas merged, finished messages not repeated (docs/rpc.md,
"Deltas, not the whole message"), through the real ``heron`` and the merger alone."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from heron.cli.delta_merge import LIMIT_CHARS, DeltaMerger
from heron.cli.modes.run_end import answer_of
from tests.support.http_server import LocalServer, Reply
from tests.support.sse import openai_chunk, openai_sse


def delta(text: str, index: int = 0, kind: str = "text_delta", key: str = "event") -> dict[str, Any]:
    return {"type": "message_update", key: {"content_index": index, "delta": text, "type": kind}}


def test_consecutive_deltas_of_one_block_become_one() -> None:
    out: list[dict[str, Any]] = []

    async def go() -> None:
        merger = DeltaMerger(out.append)
        for piece in ("ab", "cd", "ef"):
            merger.write(delta(piece))
        assert out == []  # held until something else is written or the window ends
        merger.write({"type": "turn_end"})

    asyncio.run(go())
    assert out == [delta("abcdef"), {"type": "turn_end"}]


def test_a_different_block_kind_or_shape_is_not_merged() -> None:
    out: list[dict[str, Any]] = []

    async def go() -> None:
        merger = DeltaMerger(out.append)
        merger.write(delta("a", 0))
        merger.write(delta("b", 1))  # another block
        merger.write(delta("c", 1, "thinking_delta"))  # another kind
        merger.write(delta("d", 1, "thinking_delta", "assistantMessageEvent"))  # rpc's shape
        merger.write({"type": "message_update", "event": {"type": "text_delta", "delta": 5}})  # not text: as is
        merger.write({"type": "message_update", "event": "garbage"})
        merger.flush()

    asyncio.run(go())
    assert [list(o.values())[1] for o in out[:4]] == [
        {"content_index": 0, "delta": "a", "type": "text_delta"},
        {"content_index": 1, "delta": "b", "type": "text_delta"},
        {"content_index": 1, "delta": "c", "type": "thinking_delta"},
        {"content_index": 1, "delta": "d", "type": "thinking_delta"},
    ]
    assert out[4:] == [
        {"type": "message_update", "event": {"type": "text_delta", "delta": 5}},
        {"type": "message_update", "event": "garbage"},
    ]


def test_the_window_and_the_size_limit_flush() -> None:
    out: list[dict[str, Any]] = []

    async def go() -> None:
        merger = DeltaMerger(out.append, window=0.01)
        merger.write(delta("x"))
        await asyncio.sleep(0.05)
        assert out == [delta("x")]  # written by the timer, nothing else came
        merger.write(delta("y" * LIMIT_CHARS))
        assert out[-1] == delta("y" * LIMIT_CHARS)  # at the limit: at once

    asyncio.run(go())


def test_rpc_usage_keeps_its_newest_value_when_merged() -> None:
    out: list[dict[str, Any]] = []

    async def go() -> None:
        merger = DeltaMerger(out.append)
        merger.write({**delta("a", key="assistantMessageEvent"), "usage": {"output": 1}})
        merger.write(delta("b", key="assistantMessageEvent"))
        merger.write({**delta("c", key="assistantMessageEvent"), "usage": {"output": 3}})
        merger.flush()

    asyncio.run(go())
    assert out == [{**delta("abc", key="assistantMessageEvent"), "usage": {"output": 3}}]


def test_without_a_running_loop_a_delta_is_written_at_once() -> None:
    out: list[dict[str, Any]] = []
    DeltaMerger(out.append).write(delta("a"))
    assert out == [delta("a")]


ANSWER = ("word " * 2_000)[:10_000]


def streamed() -> Reply:
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": ANSWER[i : i + 10]}) for i in range(0, len(ANSWER), 10)]
    chunks += [openai_chunk({}, finish="stop"), openai_chunk(usage={"prompt_tokens": 5, "completion_tokens": 5})]
    return Reply(body=openai_sse(chunks))


def run(mode: str, tmp: Path) -> list[dict[str, Any]]:
    server = LocalServer()
    server.queue(streamed())
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(tmp)
    command = [sys.executable, "-m", "heron.cli.main", "--base-url", server.url + "/v1", "--model", "m"]
    command += ["--no-session", "--mode", mode]
    try:
        if mode == "json":
            done = subprocess.run([*command, "-p", "hi"], cwd=tmp, env=env, capture_output=True, timeout=120)
        else:
            prompt = json.dumps({"type": "prompt", "id": "p", "message": "hi"}) + "\n"
            done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, input=prompt.encode(), timeout=120)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.splitlines()]


def check(events: list[dict[str, Any]], inner_key: str, results_key: str) -> None:
    updates = [e[inner_key] for e in events if e["type"] == "message_update"]
    assert "".join(u.get("delta", "") for u in updates) == ANSWER
    assert len(updates) < 20  # 1,000 deltas arrived
    assert all("content" not in u for u in updates if u["type"] == "text_end")
    end = next(e for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant")
    assert end["message"]["content"][0]["text"] == ANSWER  # the finished message, once, whole
    turn_end = next(e for e in events if e["type"] == "turn_end")
    agent_end = next(e for e in events if e["type"] == "agent_end")
    assert turn_end["message"]["stopReason"] == "stop" and "content" not in turn_end["message"]
    assert turn_end[results_key] == []
    assert [m["role"] for m in agent_end["messages"]] == ["user", "assistant"]
    assert all("content" not in m for m in agent_end["messages"])


def test_json_mode_prints_the_answer_streamed_once_and_whole_once(tmp_path: Path) -> None:
    events = run("json", tmp_path)
    check(events, "event", "tool_results")
    size = sum(len(json.dumps(e, ensure_ascii=False, separators=(",", ":"))) + 1 for e in events)
    # the deltas and message_end; no snapshot, no repeated message list, no third copy in run_end
    assert size < 2 * len(ANSWER) + 3_000
    assert answer_of(events) == ANSWER


def test_rpc_mode_prints_the_answer_streamed_once_and_whole_once(tmp_path: Path) -> None:
    events = run("rpc", tmp_path)
    check(events, "assistantMessageEvent", "toolResults")
    updates = [e for e in events if e["type"] == "message_update"]
    assert "usage" in updates[0]
    size = sum(len(json.dumps(e, ensure_ascii=False, separators=(",", ":"))) + 1 for e in events)
    assert size < 2 * len(ANSWER) + 3_000  # the deltas and message_end
    assert answer_of(events) == ANSWER
