"""Where the conversation stands: step boundaries, and compactions the model asked for.

Both are read from the messages alone (the conversation rebuilt from the session file),
through the tool catalog - never by a tool's name - so a process that resumes the
session finds the same boundaries and the same requests, and sends the same requests.

A **step boundary** is a point where a compaction loses the least of where the agent is:

- ``turn``: the previous turn ended and the user's next prompt is the last message;
- ``todo``: the results just added include a ``todo``-kind call that marked an item
  completed, from an assistant message that changed no file (a call that edits a file
  alongside the list is the middle of an edit sequence, not its end).

A **compaction request** is a ``compact``-kind call answered (without error) after the
latest assistant message: its ``focus`` argument is what the summary must keep.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from heron.agent.messages import AgentMessage
from heron.agent.tool_meta import ToolCatalog
from heron.ai.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from heron.context.window.budget import context_message_tokens

BoundaryKind = Literal["turn", "todo"]
SOFT_THRESHOLD = 0.8  # share of the hard threshold past which a step boundary may compact
BACKGROUND_AT = 0.7  # share of the hard threshold past which the summary starts beside the turn
STEPS_SEEN = 4  # the latest steps whose size predicts the next one


@dataclass(frozen=True, slots=True)
class CompactionRequest:
    """A ``compact`` call the model made: its id (each is acted on once) and focus."""

    call_id: str
    focus: str | None


def _tail(messages: Sequence[AgentMessage]) -> tuple[AssistantMessage | None, list[ToolResultMessage]]:
    """The latest assistant message and the results that follow it (none: not at a result)."""
    results: list[ToolResultMessage] = []
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):
            results.append(message)
        elif isinstance(message, AssistantMessage):
            return message, results[::-1]
        else:
            break
    return None, []


def _completed(call: ToolCall) -> set[str] | None:
    """The items a todo call's list has completed (None: not a list)."""
    todos = call.arguments.get("todos") if isinstance(call.arguments, dict) else None
    if not isinstance(todos, list):
        return None
    return {str(t.get("content")) for t in todos if isinstance(t, dict) and t.get("status") == "completed"}


def _previous_completed(messages: Sequence[AgentMessage], before: int, tools: ToolCatalog) -> set[str]:
    """The items completed in the todo list written before position ``before``."""
    for message in reversed(messages[:before]):
        if isinstance(message, AssistantMessage):
            for call in reversed(message.tool_calls()):
                if tools.kind(call.name) == "todo":
                    done = _completed(call)
                    if done is not None:
                        return done
    return set()


def _todo_done_at(messages: Sequence[AgentMessage], index: int, tools: ToolCatalog) -> bool:
    """Whether the assistant message at ``index`` marked a todo item completed, changing no file."""
    message = messages[index]
    if not isinstance(message, AssistantMessage):
        return False
    calls = message.tool_calls()
    if any(tools.meta(c.name).changes_files for c in calls):
        return False
    for call in calls:
        if tools.kind(call.name) == "todo":
            done = _completed(call)
            if done and done - _previous_completed(messages, index, tools):
                return True  # an item not completed before is now
    return False


def step_boundary(messages: Sequence[AgentMessage], tools: ToolCatalog) -> BoundaryKind | None:
    """The step boundary the conversation is at, if it is at one (see the module docstring)."""
    if messages and isinstance(messages[-1], UserMessage):
        return "turn"
    assistant, results = _tail(messages)
    if assistant is None or not results or any(r.is_error for r in results):
        return None
    index = len(messages) - len(results) - 1
    return "todo" if _todo_done_at(messages, index, tools) else None


def _boundary_after(messages: Sequence[AgentMessage], index: int, tools: ToolCatalog) -> bool:
    """Whether a boundary falls right after position ``index`` (before ``index + 1``)."""
    following = messages[index + 1] if index + 1 < len(messages) else None
    if isinstance(following, UserMessage):
        return True
    if not isinstance(messages[index], ToolResultMessage) or isinstance(following, ToolResultMessage):
        return False
    start = index
    while start > 0 and isinstance(messages[start], ToolResultMessage):
        start -= 1
    return _todo_done_at(messages, start, tools)


def next_step_tokens(view: Sequence[AgentMessage], tools: ToolCatalog) -> int:
    """How much the context is likely to grow before the next boundary: the largest of
    the latest :data:`STEPS_SEEN` complete steps of ``view`` (the stretches between its
    boundaries; a turn's work and its answer are separate steps, so one alone says little)."""
    ends = [0, *(i + 1 for i in range(len(view) - 1) if _boundary_after(view, i, tools)), len(view)]
    spans = list(itertools.pairwise(ends))[-STEPS_SEEN - 1 : -1] or [(0, len(view))]
    return max(sum(context_message_tokens(m) for m in view[a:b]) for a, b in spans)


def compaction_request(messages: Sequence[AgentMessage], tools: ToolCatalog) -> CompactionRequest | None:
    """The ``compact`` call answered after the latest assistant message, if there is one."""
    assistant, results = _tail(messages)
    if assistant is None:
        return None
    answered = {r.tool_call_id for r in results if not r.is_error}
    for call in assistant.tool_calls():
        if call.id in answered and tools.kind(call.name) == "compact":
            return CompactionRequest(call_id=call.id, focus=_focus(call.arguments))
    return None


def _focus(arguments: Any) -> str | None:
    focus = arguments.get("focus") if isinstance(arguments, dict) else None
    return focus.strip() or None if isinstance(focus, str) else None


__all__ = [
    "BACKGROUND_AT",
    "SOFT_THRESHOLD",
    "BoundaryKind",
    "CompactionRequest",
    "compaction_request",
    "next_step_tokens",
    "step_boundary",
]
