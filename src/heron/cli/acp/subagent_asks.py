"""Permission questions of sub-agents (the ``task`` tool) as tool calls the editor knows.

A sub-agent shares its parent's way of asking the user, so its "ask" arrives at the
session's permission bridge with the *child's* tool call id, which the editor never saw:
the child's calls are not streamed to the editor, only the parent's ``task`` call is, and
an editor has nothing to attach a question about an unknown call to.

What heron does (docs/editors.md): the child's call that asks is announced first as a
tool call of its own, under an id that cannot collide with the parent's calls
(``<task call id>/<child call id>``), titled with the sub-agent's task description and
the call's own title, with the call's kind, files, diff and arguments. The permission
request then names that id, and the call's end (the child's events reach the parent
session as ``SubagentEvent``) completes or fails it like any other tool call. Calls of a
sub-agent that need no permission stay inside the ``task`` call, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp.schema import ToolCallProgress, ToolCallStart

from heron.agent.events import ToolExecutionEndEvent, ToolExecutionStartEvent
from heron.agent.tool_meta import ToolCatalog
from heron.cli.acp import toolcalls
from heron.coding.control import PermissionPrompt
from heron.coding.events import SubagentEvent


@dataclass
class SubCall:
    """A running tool call of a sub-agent: the id it gets in the editor, if it is shown."""

    acp_id: str
    name: str
    args: dict[str, Any]
    label: str
    shown: bool = False


class SubagentCalls:
    """The running calls of a session's sub-agents (any depth), from the events the parent
    session forwards; the permission bridge claims the one that asks."""

    def __init__(self, cwd: Path, tools: ToolCatalog) -> None:
        self.cwd = cwd
        self.tools = tools  # the parent's; a child's tools are the parent's or built-in ones
        self._running: dict[str, list[SubCall]] = {}  # child call id -> calls (ids may repeat across children)

    def observe(self, event: SubagentEvent, task_args: dict[str, Any] | None) -> list[ToolCallProgress]:
        """Track the calls the event starts or ends; the end of a shown call is its final update."""
        path = [event.tool_call_id]
        inner: Any = event.event
        while isinstance(inner, SubagentEvent):  # a sub-agent's sub-agent: the outermost task is the editor's
            path.append(inner.tool_call_id)
            inner = inner.event
        if isinstance(inner, ToolExecutionStartEvent):
            acp_id = "/".join([*path, inner.tool_call_id])
            call = SubCall(acp_id, inner.tool_name, dict(inner.args), _label(task_args))
            self._running.setdefault(inner.tool_call_id, []).append(call)
        elif isinstance(inner, ToolExecutionEndEvent):
            acp_id = "/".join([*path, inner.tool_call_id])
            calls = self._running.get(inner.tool_call_id, [])
            ended = next((c for c in calls if c.acp_id == acp_id), None)
            if ended is None:
                return []
            calls.remove(ended)
            if not calls:
                self._running.pop(inner.tool_call_id, None)
            if ended.shown:
                return [
                    toolcalls.finished(
                        acp_id,
                        self.tools.meta(ended.name),
                        ended.args,
                        list(inner.result.content),
                        inner.is_error,
                        inner.result.details,
                        self.cwd,
                    )
                ]
        return []

    def claim(self, prompt: PermissionPrompt) -> SubCall | None:
        """The sub-agent call this question is about, marked shown; None: not a sub-agent's
        (or not one heron can tell: the question is then asked under its own id)."""
        candidates = [c for c in self._running.get(prompt.call_id, []) if c.name == prompt.tool]
        exact = [c for c in candidates if c.args == prompt.args]
        if not candidates:
            return None
        found = (exact or candidates)[-1]
        found.shown = True
        return found

    def announce(self, call: SubCall) -> ToolCallStart:
        """The ``tool_call`` that makes the asking call known to the editor."""
        start = toolcalls.start(call.acp_id, call.name, self.tools.meta(call.name), call.args, self.cwd)
        start.title = f"{call.label}: {start.title}"
        return start

    def question(self, call: SubCall) -> dict[str, Any]:
        """The fields of the permission request's tool call, under the announced id."""
        start = self.announce(call)
        return {
            "tool_call_id": call.acp_id,
            "title": start.title,
            "kind": start.kind,
            "status": "pending",
            "locations": start.locations,
            "content": start.content,
            "raw_input": call.args,
        }


def _label(task_args: dict[str, Any] | None) -> str:
    """Which sub-agent asks: the task's description (and agent definition, if named)."""
    args = task_args or {}
    description = args.get("description")
    agent = args.get("agent")
    label = f"Sub-agent {description!r}" if isinstance(description, str) and description else "Sub-agent"
    return f"{label} ({agent})" if isinstance(agent, str) and agent else label
