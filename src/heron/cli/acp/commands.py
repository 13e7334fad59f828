"""The slash commands an editor can offer for a session (``available_commands_update``).

Only commands that work when typed as an ACP prompt are listed: ``/compact`` (handled by
the ACP agent), and ``/goal``, extension commands, prompt templates and ``/skill:name``
(all four handled by the session's own prompt path, as in the other modes). The terminal UI's
commands (``/model``, ``/tree``, ...) are not: an editor has its own controls for what
they do, or they have no meaning without the terminal.

The list is sent right after the session/new or session/load response: an update sent
from inside the handler could reach the client before the response that tells it the
session id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from acp.schema import AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, UnstructuredCommandInput

COMPACT = (
    "compact",
    "Compact the context: summarise the conversation so far to free room",
    "what the summary should keep (optional)",
)


GOAL = (
    "goal",
    "Show, set or clear the session's goal (kept at the head of every request)",
    "TEXT, --budget 200k TEXT, or clear (empty: show it)",
)


def _command(name: str, description: str, hint: str | None) -> AvailableCommand:
    given = AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)) if hint else None
    return AvailableCommand(name=name, description=description, input=given)


def available(session: Any) -> AvailableCommandsUpdate:
    """The commands of ``session``; a name taken earlier in the list is not repeated (the
    order is the order the prompt path tries them: extension commands before templates)."""
    found = [_command(*COMPACT), _command(*GOAL)]
    extensions = getattr(session, "extensions", None)
    for command in extensions.command_list() if extensions is not None else []:
        found.append(_command(command.name, command.description or f"extension {command.extension}", "arguments"))
    templates = getattr(session, "templates", None)
    for template in templates.sorted() if templates is not None else []:
        found.append(_command(template.name, template.description or "prompt template", "arguments"))
    skills = getattr(session, "skills", None)
    for skill in skills.skills if skills is not None else []:
        found.append(_command(f"skill:{skill.name}", skill.description or "skill", "what to do (optional)"))
    unique: dict[str, AvailableCommand] = {}
    for command in found:
        unique.setdefault(command.name, command)
    return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=list(unique.values()))


def advertise_later(put: Callable[[Any], None], session: Any, keep: set[asyncio.Future[None]]) -> None:
    """Queue the list once the running handler has returned: the SDK queues the response
    for sending without yielding to other tasks, so this task's first turn comes after it
    (the second yield is slack)."""

    async def later() -> None:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        put(available(session))

    task = asyncio.ensure_future(later())
    keep.add(task)
    task.add_done_callback(keep.discard)
