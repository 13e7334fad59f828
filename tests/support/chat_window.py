"""A scripted OpenAI chat-completions server with a hard context window, and its traffic.

It counts every request the way a server's tokenizer would - the text of each message,
tool calls and tool definitions at about four characters a token, plus a few tokens of
framing per message - and rejects one over its window with the 400 ``context_length_exceeded``
error OpenAI sends. Otherwise it plays a coding agent's turns: a new prompt gets one
``bash`` call, a tool result gets a long answer (or one sentence, ``terse``), a compaction's summary request (either
kind, tests/support/summaries.py) gets a summary. Every answer is a pure function of the
request, so two agents sending the same request get the same answer.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.summaries import is_summary_body

FRAMING_TOKENS = 4  # per message, as chat templates add
SUMMARY = (
    "## Goal\nKeep the service's build green while the scripted steps run.\n\n"
    "## Progress\n- Ran the listed steps with bash; each printed its log.\n\n"
    "## Key facts\n- Logs are long; the whole text of each is in the spill files.\n\n"
    "## Next steps\n- Continue with the next step the user asks for."
)


def request_tokens(body: dict[str, Any]) -> int:
    """The size of a chat-completions request, as this server counts it."""
    chars = 0
    for message in body.get("messages", []):
        content = message.get("content") or ""
        chars += len(content if isinstance(content, str) else json.dumps(content))
        for call in message.get("tool_calls") or []:
            chars += len(call["function"]["name"]) + len(call["function"]["arguments"])
    chars += len(json.dumps(body.get("tools", [])))
    return chars // 4 + FRAMING_TOKENS * len(body.get("messages", []))


def prompt(turn: int, terse: bool = False) -> str:
    """The user's prompt of ``turn``: a request with enough detail to weigh something
    (``terse``: one short sentence, as a user in a hurry types it)."""
    if terse:
        return f"Step {turn}: run the step-{turn} build."
    detail = " ".join(f"requirement {turn}.{i}: keep module {i} of step {turn} unchanged." for i in range(20))
    return f"Step {turn}: run the step-{turn} build and tell me what failed. {detail}"


def tool_output(command: str, chars: int) -> str:
    """What the bash tool prints for ``command``: a long log of ``chars`` characters."""
    seed = hashlib.sha1(command.encode()).hexdigest()[:8]
    lines = []
    size = 0
    i = 0
    while size < chars:
        line = f"[{seed}] line {i}: compiling unit {i % 97} ... ok ({(i * 37) % 1000} ms)"
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines)


def _answer_text(last_user: str, terse: bool) -> str:
    digest = hashlib.sha1(last_user.encode()).hexdigest()[:10]
    if terse:
        return f"The build step finished. Nothing failed ({digest})."
    body = " ".join(f"Finding {i} ({digest}): unit {i} compiled; nothing to change there." for i in range(40))
    return f"The build step finished. {body}"


def _completion(message: dict[str, Any], tokens: int, finish: str) -> Reply:
    return json_reply(
        200,
        {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 50, "total_tokens": tokens + 50},
        },
    )


@dataclass
class ChatWindowServer:
    """The server, what it was sent, and what it rejected."""

    window: int
    terse: bool = False  # one-sentence answers (the prompts are the caller's: prompt(turn, terse))
    bodies: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[int] = field(default_factory=list)  # the sizes it refused
    server: LocalServer = field(init=False)

    def __post_init__(self) -> None:
        self.server = LocalServer(self._respond)

    @property
    def base_url(self) -> str:
        return f"{self.server.url}/v1"

    def close(self) -> None:
        self.server.close()

    def _respond(self, recorded: Recorded) -> Reply:
        body = recorded.json()
        tokens = request_tokens(body)
        if tokens > self.window:
            self.rejected.append(tokens)
            error = {
                "message": f"This model's maximum context length is {self.window} tokens. "
                f"However, your messages resulted in {tokens} tokens.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
            return json_reply(400, {"error": error})
        self.bodies.append(body)
        if is_summary_body(body):
            return _completion({"role": "assistant", "content": SUMMARY}, tokens, "stop")
        messages = body["messages"]
        last = messages[-1]
        if last["role"] == "user":
            call_id = "call_" + hashlib.sha1(str(last["content"]).encode()).hexdigest()[:12]
            command = f"make step-{len(messages)}-{call_id[-4:]}"
            call = {
                "id": call_id,
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": command})},
            }
            return _completion({"role": "assistant", "content": None, "tool_calls": [call]}, tokens, "tool_calls")
        users = [m for m in messages if m["role"] == "user"]
        text = _answer_text(str(users[-1]["content"]) if users else "", self.terse)
        return _completion({"role": "assistant", "content": text}, tokens, "stop")


def unanswered_calls(body: dict[str, Any]) -> list[str]:
    """The tool calls of a request with no tool result after them."""
    answered = {m.get("tool_call_id") for m in body["messages"] if m["role"] == "tool"}
    calls = [c["id"] for m in body["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    return [c for c in calls if c not in answered]
