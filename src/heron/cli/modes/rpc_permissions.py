"""Permission questions over rpc: an "ask" decision becomes a ``permission_request``
event, and the client answers with a ``permission_response`` command (docs/rpc.md).

The runtime's :class:`~heron.coding.control.Control` calls :meth:`RpcAsker.ask` and waits;
this module owns the open questions. Each one ends exactly once, with a
``permission_resolved`` event saying how: the client's answer, an abort of the run
(deny), or no answer in time (deny, with a message the model sees saying so). The
request/response pairing follows pi's own extension-UI dialogs: a request with a fresh
``id`` and an optional ``timeout`` in milliseconds, answered by a record with that ``id``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heron.cli.modes.rpc_protocol import CommandError, Write, string_field
from heron.coding.control import AskReply, PermissionPrompt
from heron.coding.permissions import load_scopes

OPTIONS = ("allow_once", "allow_always", "deny")
DEFAULT_TIMEOUT_MS = 300_000  # five minutes: a person may be away from the editor for a while
TIMEOUT_ENV = "HERON_PERMISSION_TIMEOUT_MS"


def ask_timeout_ms(cwd: Path, home: Path) -> int:
    """How long a question waits: ``$HERON_PERMISSION_TIMEOUT_MS``, else the setting
    ``permissions.askTimeoutMs`` (the local file over the project's over the user's),
    else five minutes. 0 means wait for ever. A bad value is reported on stderr and
    skipped."""
    raw = os.environ.get(TIMEOUT_ENV)
    if raw is not None:
        if raw.strip().isdigit():
            return int(raw)
        _warn(f"{TIMEOUT_ENV}={raw!r} is not a number of milliseconds >= 0 (ignored)")
    chosen = DEFAULT_TIMEOUT_MS
    for scope in load_scopes(cwd, home):
        permissions = scope.data.get("permissions")
        if not isinstance(permissions, dict) or "askTimeoutMs" not in permissions:
            continue
        setting = permissions["askTimeoutMs"]
        if isinstance(setting, int) and not isinstance(setting, bool) and setting >= 0:
            chosen = setting
        else:
            _warn(
                f"{scope.path}: permissions.askTimeoutMs must be a number of milliseconds >= 0, got "
                f"{setting!r} (ignored)"
            )
    return chosen


def _warn(message: str) -> None:
    print(f"heron: warning: {message}", file=sys.stderr)


@dataclass
class _Question:
    prompt: PermissionPrompt
    answer: asyncio.Future[AskReply]


class RpcAsker:
    """The asker rpc mode installs on the session's control."""

    def __init__(self, write: Write, timeout_ms: int) -> None:
        self._write = write
        self.timeout_ms = timeout_ms
        self._open: dict[str, _Question] = {}
        self._ids = itertools.count(1)

    @property
    def pending(self) -> list[str]:
        return list(self._open)

    async def ask(self, prompt: PermissionPrompt) -> AskReply:
        request_id = f"perm-{next(self._ids)}"
        answer: asyncio.Future[AskReply] = asyncio.get_running_loop().create_future()
        self._open[request_id] = _Question(prompt, answer)
        decision = prompt.decision
        self._write(
            {
                "type": "permission_request",
                "id": request_id,
                "toolCallId": prompt.call_id,
                "toolName": prompt.tool,
                "input": {key: value for key, value in prompt.args.items() if value is not None},
                "message": decision.message,
                "rule": decision.rule.text if decision.rule is not None else None,
                "suggestion": decision.suggestion,
                "options": list(OPTIONS),
                "timeout": self.timeout_ms or None,
            }
        )
        try:
            timeout = self.timeout_ms / 1000 if self.timeout_ms else None
            return await asyncio.wait_for(asyncio.shield(answer), timeout)
        except TimeoutError:
            seconds = self.timeout_ms / 1000
            reason = (
                f"no answer to the permission request within {seconds:g} s (the rpc client did not send "
                "permission_response), so the call was not run"
            )
            self._resolve(request_id, AskReply("deny", reason), "timeout")
            return await answer
        finally:
            self._open.pop(request_id, None)

    def answer(self, fields: dict[str, Any]) -> None:
        """The ``permission_response`` command. Raises :class:`CommandError` for an
        unknown id or decision; nothing changes then and the question stays open."""
        request_id = string_field(fields, "id") or ""
        if request_id not in self._open:
            known = ", ".join(self._open) or "none"
            raise CommandError(f"no open permission request {request_id!r} (open: {known})")
        reason = string_field(fields, "reason", required=False, empty=True)
        if fields.get("cancelled") is True:
            decision = "deny"
        else:
            decision = string_field(fields, "decision") or ""
            if decision not in OPTIONS:
                raise CommandError(f'"decision" must be one of {", ".join(OPTIONS)}, got {decision!r}')
        self._resolve(request_id, AskReply(decision, reason), "client")  # type: ignore[arg-type]

    def deny_all(self, why: str) -> int:
        """Deny every open question (the run was aborted); returns how many there were."""
        ids = list(self._open)
        for request_id in ids:
            self._resolve(request_id, AskReply("deny", why), "abort")
        return len(ids)

    def _resolve(self, request_id: str, reply: AskReply, by: str) -> None:
        question = self._open.pop(request_id, None)
        if question is None or question.answer.done():
            return
        question.answer.set_result(reply)
        self._write(
            {
                "type": "permission_resolved",
                "id": request_id,
                "toolCallId": question.prompt.call_id,
                "decision": reply.answer,
                "by": by,
                "reason": reply.reason,
            }
        )
