"""A local OpenAI-compatible server that reads each prompt at a fixed speed, as a CPU model does.

Its first answer event comes after ``prompt tokens / tokens_per_second`` seconds (the
tokens counted ``chars_per_token`` characters a token over the messages and tool
schemas). With ``progress`` it behaves like llama.cpp asked for ``"return_progress":
true``: the headers and a 0% ``prompt_progress`` chunk at once, then one chunk per
``batch`` tokens read; otherwise it is silent until the reading is done (the headers
included, as a server that answers only with its first token). The final chunk carries
llama.cpp's ``timings`` (``prompt_n``, ``prompt_ms``) when ``timings`` is on, and always
the usage. Every chat request is counted (``requests``), with its JSON body.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.sse import openai_chunk, openai_sse


def prompt_chars(body: dict[str, Any]) -> int:
    chars = 0
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(part.get("text", "")) for part in content if isinstance(part, dict))
        for call in message.get("tool_calls") or []:
            chars += len(json.dumps(call))
    return chars + len(json.dumps(body.get("tools") or []))


@dataclass
class ReadingServer:
    tokens_per_second: float
    progress: bool = False
    timings: bool = True
    batch: int = 512
    chars_per_token: float = 4.0
    answer: str = "read it all"

    def __post_init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.server = LocalServer(self._respond)

    @property
    def base_url(self) -> str:
        return self.server.url + "/v1"

    def close(self) -> None:
        self.server.close()

    def tokens(self, body: dict[str, Any]) -> int:
        return max(1, math.ceil(prompt_chars(body) / self.chars_per_token))

    def reading_seconds(self, body: dict[str, Any]) -> float:
        return self.tokens(body) / self.tokens_per_second

    def _respond(self, request: Recorded) -> Reply:
        if request.method != "POST" or not request.path.endswith("/chat/completions"):
            return json_reply(404, {"error": {"message": "Not Found"}})
        body = request.json()
        self.bodies.append(body)
        tokens, seconds = self.tokens(body), self.reading_seconds(body)
        answer = self._answer(tokens, seconds)
        if not (self.progress and body.get("return_progress") is True):
            return Reply(body=answer, delay=seconds)
        schedule: list[tuple[float, bytes]] = [(0.0, _progress(tokens, 0, 0))]
        done = 0
        while done < tokens:
            step = min(self.batch, tokens - done)
            done += step
            elapsed_ms = int(done / self.tokens_per_second * 1000)
            schedule.append((step / self.tokens_per_second, _progress(tokens, done, elapsed_ms)))
        schedule.append((0.0, answer))
        return Reply(schedule=schedule)

    def _answer(self, tokens: int, seconds: float) -> bytes:
        final = openai_chunk({}, finish="stop")
        if self.timings:
            final["timings"] = {"prompt_n": tokens, "prompt_ms": seconds * 1000, "predicted_n": 3}
        usage = {"prompt_tokens": tokens, "completion_tokens": 3, "total_tokens": tokens + 3}
        chunks = [openai_chunk({"role": "assistant", "content": self.answer}), final, openai_chunk(usage=usage)]
        return openai_sse(chunks)


def _progress(total: int, processed: int, time_ms: int) -> bytes:
    chunk = openai_chunk({"role": "assistant", "content": None})
    chunk["prompt_progress"] = {"total": total, "cache": 0, "processed": processed, "time_ms": time_ms}
    return f"data: {json.dumps(chunk)}\n\n".encode()
