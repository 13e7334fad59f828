"""A 16,384-token window behind a local server that rejects any larger request.

docs/context.md, "Limits that scale with the window": with pi's absolute defaults a 16k local model
compacts after every turn and, behind a server that enforces its limit, most turns fail.
Here an OpenAI-compatible server (chat completions, SSE) counts every request the way a
strict local server would - ceil(characters of the system prompt, every message's content
and tool calls, and the tool schemas / 4) plus the requested ``max_completion_tokens`` -
and answers 400 with OpenAI's ``context_length_exceeded`` wording when the sum is over
16,384. heron runs in-process (a :class:`CodingSession` with the default settings) for 16
turns, each reading a 120 KB file or printing 100 KB from bash. Every turn must complete,
no request may be rejected, and every request must fit.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.ai.types import AssistantMessage, Model, StopReason, ToolResultMessage
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.records.decisions import DECISION_CUSTOM_TYPE
from heron.context.records.ledger import LEDGER_CUSTOM_TYPE
from heron.session.entries import CompactionEntry, CustomEntry, MessageEntry
from heron.session.store import SessionStore
from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.summaries import is_summary_body

WINDOW = 16_384
TURNS = 16
FILE_BYTES = 120 * 1024
BASH_BYTES = 100 * 1024

OVERFLOW_MESSAGE = (
    "This model's maximum context length is {window} tokens. However, you requested {total} tokens "
    "({prompt} in the messages, {completion} in the completion). Please reduce the length of the "
    "messages or completion."
)


def count_tokens(body: dict[str, Any]) -> tuple[int, int]:
    """(prompt tokens, requested completion tokens) as the server counts them."""
    chars = 0
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(part.get("text", "")) for part in content if isinstance(part, dict))
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            chars += len(function.get("name", "")) + len(function.get("arguments", ""))
    if body.get("tools"):
        chars += len(json.dumps(body["tools"]))
    completion = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
    return math.ceil(chars / 4), completion


def sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "local",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "local",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def text_reply(text: str, prompt: int) -> Reply:
    body = sse(
        chunk({"role": "assistant", "content": text}), chunk({}, "stop"), usage(prompt, math.ceil(len(text) / 4))
    )
    return Reply(body=body, chunk_size=512)


def call_reply(call_id: str, name: str, arguments: dict[str, Any], prompt: int) -> Reply:
    raw = json.dumps(arguments)
    delta = {
        "role": "assistant",
        "tool_calls": [{"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}],
    }
    body = sse(chunk(delta), chunk({}, "tool_calls"), usage(prompt, math.ceil((len(name) + len(raw)) / 4)))
    return Reply(body=body, chunk_size=512)


REINJECTED = "Files you were working on before the history was compacted"


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


class StrictServer:
    """Counts each request; over the window: 400 context_length_exceeded. Otherwise the
    conversation's next scripted step: a summary for summary requests (recognised by their
    system prompt), a tool call for a new prompt, a short answer after a tool result."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: list[tuple[str, int, int]] = []  # (kind, prompt, completion)
        self.rejected: list[int] = []
        self.calls = 0

    def __call__(self, request: Recorded) -> Reply:
        body = request.json()
        prompt, completion = count_tokens(body)
        messages = body["messages"]
        summary = is_summary_body(body)
        kind = "summary" if summary else "turn"
        with self.lock:
            self.counts.append((kind, prompt, completion))
            if prompt + completion > WINDOW:
                self.rejected.append(len(self.counts) - 1)
                error = OVERFLOW_MESSAGE.format(
                    window=WINDOW, total=prompt + completion, prompt=prompt, completion=completion
                )
                return json_reply(
                    400,
                    {
                        "error": {
                            "message": error,
                            "type": "invalid_request_error",
                            "param": "messages",
                            "code": "context_length_exceeded",
                        }
                    },
                )
        if summary:
            return text_reply("## Goal\nWork through the turns.\n\n## Progress\n### Done\n- earlier turns", prompt)
        # the files heron re-injects after a compaction come as a user message at the end
        conversation = [m for m in messages if not _text(m).startswith(REINJECTED)]
        last = conversation[-1]
        if last["role"] == "tool":
            return text_reply("Noted; that output is what I needed.", prompt)
        # a new prompt: "turn N: ..." decides the tool
        number = int(_text(last).split(":")[0].split()[-1])
        with self.lock:
            self.calls += 1
            call_id = f"call_{self.calls}"
        if number % 2 == 0:
            return call_reply(call_id, "read", {"path": f"data/file{number}.txt"}, prompt)
        line = f"output line %05d of turn {number:02d} {'.' * 20}\\n"  # 50 bytes a line
        command = f"for i in $(seq 1 {BASH_BYTES // 50}); do printf '{line}' $i; done"
        return call_reply(call_id, "bash", {"command": command}, prompt)


@pytest.fixture
def strict() -> Iterator[tuple[LocalServer, StrictServer]]:
    handler = StrictServer()
    server = LocalServer(responder=handler)
    try:
        yield server, handler
    finally:
        server.close()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HERON_HOME", str(home))
    proj = tmp_path / "proj"
    (proj / "data").mkdir(parents=True)
    for n in range(0, TURNS, 2):
        line = f"file {n}: a line of ordinary source text, long enough to look real ...\n"
        lines = "".join(f"{i:06d} {line}" for i in range(FILE_BYTES // (len(line) + 7) + 1))
        (proj / "data" / f"file{n}.txt").write_text(lines[:FILE_BYTES])
    return proj


async def test_sixteen_k_window_twelve_heavy_turns(project: Path, strict: tuple[LocalServer, StrictServer]) -> None:
    server, handler = strict
    model = Model(
        id="local",
        api="openai-chat",
        provider="local",
        base_url=server.url + "/v1",
        context_window=WINDOW,
        max_tokens=4_096,
    )
    store = SessionStore.create(project)
    session = CodingSession(cwd=project, model=model, api_key="sk-local", store=store, settings=settings_from_dict({}))
    events: list[str] = []
    session.subscribe(lambda e: events.append(e.type))
    for n in range(TURNS):
        what = f"read data/file{n}.txt" if n % 2 == 0 else "print 100 KB of output with bash"
        await asyncio.wait_for(session.prompt(f"turn {n}: {what}"), timeout=60)
        last = session.messages[-1]
        assert isinstance(last, AssistantMessage), f"turn {n} ended without an answer"
        assert last.stop_reason == StopReason.STOP, f"turn {n}: {last.stop_reason} {last.error_message}"
        assert last.text() == "Noted; that output is what I needed."

    assert handler.rejected == [], [handler.counts[i] for i in handler.rejected]
    for kind, prompt, completion in handler.counts:
        assert prompt + completion <= WINDOW, (kind, prompt, completion)
    turns = [c for c in handler.counts if c[0] == "turn"]
    assert len(turns) == 2 * TURNS  # one call and one answer per turn: nothing retried
    # read and bash cut their output to the per-result budget (15% of the window) with their
    # own notices; it is not spilled again to a 2,000-character preview
    results = [
        e.message for e in store.entries() if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
    ]
    assert len(results) == TURNS
    budget = session.env.limits.result_chars
    for result in results:
        assert budget * 0.9 <= len(result.text()) <= budget + 500, len(result.text())
        assert "Showing lines" in result.text()
    ledger = [e.data for e in store.entries() if isinstance(e, CustomEntry) and e.custom_type == LEDGER_CUSTOM_TYPE]
    cuts = [r for r in ledger if r["kind"] == "truncate"]
    assert len(cuts) == TURNS
    assert all(r["charsBefore"] >= (FILE_BYTES if r["tool"] == "read" else BASH_BYTES) for r in cuts)
    assert not [r for r in ledger if r["kind"] == "spill"]
    # the window was actually under pressure: heron pruned (in a few deep steps) or
    # compacted, and neither after every turn
    compactions = [e for e in store.entries() if isinstance(e, CompactionEntry)]
    steps = [
        e
        for e in store.entries()
        if isinstance(e, CustomEntry)
        and e.custom_type == DECISION_CUSTOM_TYPE
        and isinstance(e.data, dict)
        and e.data.get("op") == "prune"
    ]
    assert len(compactions) + len(steps) >= 1 and len(compactions) < TURNS and len(steps) < TURNS
