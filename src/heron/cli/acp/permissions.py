"""Heron's permission "ask" as ACP's ``session/request_permission``.

:class:`heron.coding.control.Control` calls its ``asker`` when a rule or the permission
mode says "ask" (docs/permissions.md). Here that becomes a request to the editor with
three options; the editor's choice comes back as heron's answer, so "allow always"
writes the same local rule the terminal UI writes. A cancelled prompt (the client
answers ``cancelled``, or the run is cancelled while the question is open) is a denial.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

from heron.cli.acp import toolcalls
from heron.cli.acp.subagent_asks import SubagentCalls
from heron.coding.control import AskReply, PermissionPrompt

ALLOW_ONCE, ALLOW_ALWAYS, REJECT = "allow_once", "allow_always", "reject"

RequestPermission = Callable[[str, ToolCallUpdate, list[PermissionOption]], Awaitable[RequestPermissionResponse]]


def options(prompt: PermissionPrompt) -> list[PermissionOption]:
    rule = prompt.decision.suggestion
    always = f"Always allow {rule}" if rule else "Always allow"
    return [
        PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once"),
        PermissionOption(option_id=ALLOW_ALWAYS, name=always, kind="allow_always"),
        PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
    ]


def answer(response: RequestPermissionResponse) -> AskReply:
    outcome: Any = response.outcome
    chosen = getattr(outcome, "option_id", None) if getattr(outcome, "outcome", None) == "selected" else None
    if chosen == ALLOW_ONCE:
        return AskReply("allow_once")
    if chosen == ALLOW_ALWAYS:
        return AskReply("allow_always")
    if chosen == REJECT:
        return AskReply("deny", "rejected in the editor")
    return AskReply("deny", "the permission request was cancelled")


class PermissionBridge:
    """The ``asker`` of one session: one open request at a time per call, all of them
    answered "deny" by :meth:`cancel_all` when the prompt is cancelled."""

    def __init__(self, session_id: str, cwd: Path, request: RequestPermission) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self._request = request
        self._open: set[asyncio.Task[RequestPermissionResponse]] = set()
        # A sub-agent's question is about a call the editor has not seen: it is announced
        # (sent in order with the session's updates) before it is asked (subagent_asks).
        self.subagents: SubagentCalls | None = None
        self.announce: Callable[[Any], Awaitable[None]] | None = None

    async def __call__(self, prompt: PermissionPrompt) -> AskReply:
        sub = self.subagents.claim(prompt) if self.subagents is not None and self.announce is not None else None
        if sub is not None and self.subagents is not None and self.announce is not None:
            await self.announce(self.subagents.announce(sub))
            call = ToolCallUpdate(**self.subagents.question(sub))
        else:
            call = ToolCallUpdate(
                tool_call_id=prompt.call_id,
                title=toolcalls.title(prompt.tool, prompt.meta, prompt.args, self.cwd),
                kind=toolcalls.tool_kind(prompt.meta),
                status="pending",
                locations=toolcalls.locations(prompt.meta, prompt.args, self.cwd) or None,
                content=list(toolcalls.diffs(prompt.meta, prompt.args, self.cwd)) or None,
                raw_input=prompt.args,
            )
        task = asyncio.ensure_future(self._request(self.session_id, call, options(prompt)))
        self._open.add(task)
        try:
            reply = answer(await task)
            if sub is not None and self.announce is not None and reply.answer != "deny":
                await self.announce(toolcalls.running(sub.acp_id))
            return reply
        except asyncio.CancelledError:
            if asyncio.current_task() is not None and asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise
            return AskReply("deny", "the prompt was cancelled")
        except Exception as exc:  # noqa: BLE001 - the client failed to answer: never run the call unasked
            return AskReply("deny", f"the editor could not be asked ({exc})")
        finally:
            self._open.discard(task)

    def cancel_all(self) -> None:
        for task in list(self._open):
            task.cancel()
