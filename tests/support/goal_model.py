"""A scripted model for the goal loop, on the OpenAI or the Anthropic wire.

Its answers are a function of the request alone (how many continuations it carries, what
its last message is), so a process per turn, a resumed process and one process that never
stopped get the same ones:

- each step (the prompt, then each continuation heron sends) runs one ``bash`` call and
  answers ``Step N done.``;
- after ``steps`` steps it calls the ``goal`` tool with ``complete``, and answers
  :data:`FINAL` once the result is in - or, with ``complete=False``, it never does;
- ``blocked_at``: that step calls ``goal`` with ``blocked`` instead (a later prompt of the
  user's then lets it complete);
- ``hang_at``: the first request of that step is held (never answered) the first time
  it arrives, so a test can kill heron in the middle of the loop; ``slow_at``: that
  step's command creates the file ``started`` and then sleeps (kill it mid-tool);
- a prompt in a request that offers no ``goal`` tool after the goal was met (a call of
  it in the conversation) is answered ``Noted.``;
- a prompt ``go on`` (a user driving the steps by hand) counts as a step, as a
  continuation does.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from heron.context.continuity.goal_loop import CONTINUATION_TEXT
from tests.support.http_server import Recorded, Reply
from tests.support.sse import anthropic_reply, openai_reply

FINAL = "All done: the three steps ran and the goal is met."
EVIDENCE = "steps 1 to 3 ran; their output is in the session"
BLOCKER = "the deploy key is missing; put it in .env"
HOLD_S = 120.0


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


class GoalModel:
    """The responder of a :class:`~tests.support.http_server.LocalServer`; ``bodies`` keeps
    every request body it was sent, in order."""

    def __init__(
        self,
        steps: int = 3,
        *,
        complete: bool = True,
        blocked_at: int | None = None,
        hang_at: int | None = None,
        slow_at: int | None = None,
        wire: str = "openai",
    ) -> None:
        self.steps = steps
        self.complete = complete
        self.blocked_at = blocked_at
        self.hang_at = hang_at
        self.slow_at = slow_at
        self.wire = wire
        self.bodies: list[dict[str, Any]] = []
        self.held: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, request: Recorded) -> Reply:
        body = request.json()
        messages = body["messages"]
        step = 1 + sum(1 for m in messages if m["role"] == "user" and _is_step(_texts(m)))
        last = messages[-1]
        result = self._result_of(last, messages)
        with self._lock:
            if result is None and step == self.hang_at and not self.held:
                self.held.append(body)
                return Reply(body=b"", delay=HOLD_S)
            self.bodies.append(body)
        if result == "goal":
            return self._reply(FINAL if self._goal_status(messages) == "complete" else "I need the deploy key.")
        if result is not None:
            return self._reply(f"Step {step} done.")
        offered = any(_tool_name(t) == "goal" for t in body.get("tools") or [])
        if not offered and any(c[1] == "goal" for m in messages for c in _calls(m)):
            return self._reply("Noted.")
        unblocked = any(m["role"] == "user" and "key is in .env" in _texts(m) for m in messages)
        if step == self.blocked_at and not unblocked:
            return self._reply("", [(f"goal_{step}", "goal", {"status": "blocked", "evidence": BLOCKER})])
        if step <= self.steps or not self.complete:
            command = "touch started && sleep 60" if step == self.slow_at else f"echo step {step}"
            return self._reply("", [(f"call_{step}", "bash", {"command": command})])
        return self._reply("", [(f"goal_{step}", "goal", {"status": "complete", "evidence": EVIDENCE})])

    def _result_of(self, last: dict[str, Any], messages: list[dict[str, Any]]) -> str | None:
        """The tool name whose result the request ends with (None: it ends with a prompt)."""
        call_id = _result_id(last)
        if call_id is None:
            return None
        for message in messages:
            for call in _calls(message):
                if call[0] == call_id:
                    return call[1]
        return "?"

    def _goal_status(self, messages: list[dict[str, Any]]) -> str:
        statuses = [json.loads(c[2]).get("status") for m in messages for c in _calls(m) if c[1] == "goal"]
        return statuses[-1] if statuses else ""

    def _reply(self, text: str, calls: list[tuple[str, str, dict[str, Any]]] | None = None) -> Reply:
        if self.wire == "anthropic":
            return anthropic_reply(text, calls or [])
        return openai_reply(text, calls or [])

    def requests_with_goal_tool(self) -> list[bool]:
        return [any(_tool_name(t) == "goal" for t in body.get("tools") or []) for body in self.bodies]


def _is_step(text: str) -> bool:
    return CONTINUATION_TEXT in text or text == "go on"


def _texts(message: dict[str, Any]) -> str:
    return text_of(message.get("content"))


def _tool_name(tool: dict[str, Any]) -> str:
    return str(tool.get("function", {}).get("name") or tool.get("name") or "")


def _result_id(message: dict[str, Any]) -> str | None:
    if message["role"] == "tool":
        return str(message["tool_call_id"])
    content = message.get("content")
    if message["role"] == "user" and isinstance(content, list):  # Anthropic: results in a user message
        ids = [part["tool_use_id"] for part in content if isinstance(part, dict) and part.get("type") == "tool_result"]
        return str(ids[-1]) if ids else None
    return None


def _calls(message: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(id, name, arguments as JSON) of an assistant message's calls, on either wire."""
    if message["role"] != "assistant":
        return []
    out = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    content = message.get("content")
    if isinstance(content, list):
        out += [
            (p["id"], p["name"], json.dumps(p.get("input") or {}))
            for p in content
            if isinstance(p, dict) and p.get("type") == "tool_use"
        ]
    return out
