"""What one ``session/prompt`` needs besides the run itself: the prompt blocks as heron
text and images, the ordered sending of updates, and the run's outcome as ACP's stop
reason (or error) and usage."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import unquote, urlparse

from acp.schema import (
    Cost,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
    Usage,
    UsageUpdate,
)

from heron.agent.messages import AgentMessage
from heron.ai.overflow import ErrorKind
from heron.ai.types import AssistantMessage, ImageContent, StopReason
from heron.cli.acp.updates import Update
from heron.coding.outcome import RunFailure, RunOutcome

IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}


class PromptError(ValueError):
    """A prompt heron cannot take (the message says why): an invalid-params error."""


def _path_of(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def prompt_content(blocks: Sequence[Any]) -> tuple[str, list[ImageContent]]:
    """Text blocks joined; images kept; an embedded file as a ``<file>`` block (what
    ``@file`` gives in the other modes); a link to a file named so the model can read it."""
    parts: list[str] = []
    images: list[ImageContent] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ImageContentBlock):
            if block.mime_type not in IMAGE_TYPES:
                raise PromptError(f"image type {block.mime_type!r} is not supported (png, jpeg, gif, webp)")
            images.append(ImageContent(data=block.data, mime_type=block.mime_type))
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(f'<file path="{_path_of(resource.uri)}">\n{resource.text}\n</file>')
            else:
                parts.append(f"(attached binary resource {_path_of(resource.uri)}, not shown)")
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"@{_path_of(block.uri)}")
        else:
            raise PromptError(f"prompt content of type {getattr(block, 'type', '?')!r} is not supported")
    return "\n\n".join(p for p in parts if p), images


class Outbox:
    """Updates sent one after another by one task, so a sync event listener can queue
    them and their order on the wire is the order of the events."""

    def __init__(self, send: Callable[[Update], Awaitable[None]]) -> None:
        self._send = send
        self._queue: asyncio.Queue[Update | asyncio.Future[None]] = asyncio.Queue()
        self._task = asyncio.ensure_future(self._pump())

    def put(self, update: Update) -> None:
        self._queue.put_nowait(update)

    async def flush(self) -> None:
        """Returns once everything queued before it was sent."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(done)
        await done

    async def _pump(self) -> None:
        while True:
            item = await self._queue.get()
            if isinstance(item, asyncio.Future):
                if not item.done():
                    item.set_result(None)
                continue
            with contextlib.suppress(Exception):  # a closed connection: the server is ending anyway
                await self._send(item)

    def close(self) -> None:
        self._task.cancel()


def stop_reason(outcome: RunOutcome, cancelled: bool) -> tuple[str, dict[str, Any] | None]:
    """ACP's stop reason for a run's outcome, or the data of the JSON-RPC error that
    ends the prompt instead (``message``: the explanation every mode shows, ``errorKind``).
    A cancelled prompt returns ``cancelled``, as ACP requires, whatever came first; a run
    with nothing to answer (an extension's command, a blocking hook) is an ordinary end."""
    if cancelled or outcome.aborted:
        return "cancelled", None
    if outcome.stop_reason == StopReason.ERROR and outcome.error_kind in (ErrorKind.TURN_LIMIT, ErrorKind.GOAL_TURNS):
        return "max_turn_requests", None  # --max-turns / limits.maxTurns, goal.maxTurns: ACP's own stop reason
    if outcome.stop_reason == StopReason.ERROR and outcome.error_kind == ErrorKind.GOAL_BLOCKED:
        return "end_turn", None  # the model says why in its answer; the goal loop's line names the stop
    if outcome.stop_reason == StopReason.ERROR and outcome.error_kind == ErrorKind.GOAL_BUDGET:
        return "max_tokens", None  # the goal's token budget is spent (heron.coding.goal)
    if outcome.stop_reason == StopReason.ERROR and outcome.error_kind != RunFailure.NO_ANSWER:
        return "end_turn", {"message": outcome.explanation, "errorKind": str(outcome.error_kind)}
    if outcome.stop_reason == StopReason.LENGTH:
        return "max_tokens", None
    return "end_turn", None


def goal_meta(outcome: RunOutcome) -> dict[str, Any] | None:
    """The prompt response's ``_meta`` when a goal loop ran: how it ended (heron's own key)."""
    return {"heron": {"goal": outcome.goal}} if outcome.goal is not None else None


def turn_usage(outcome: RunOutcome) -> Usage | None:
    """The turn's tokens (None when no answer came)."""
    if not outcome.answers:
        return None
    used = outcome.usage
    return Usage(
        total_tokens=used.input + used.output + used.cache_read + used.cache_write,
        input_tokens=used.input,
        output_tokens=used.output,
        cached_read_tokens=used.cache_read,
        cached_write_tokens=used.cache_write,
    )


def usage_update(messages: Sequence[AgentMessage], used: int, window: int) -> UsageUpdate:
    """How full the context is, and what the session has cost so far (dollars)."""
    cost = sum(m.usage.cost.total for m in messages if isinstance(m, AssistantMessage))
    return UsageUpdate(
        session_update="usage_update",
        used=max(0, used),
        size=max(0, window),
        cost=Cost(amount=round(cost, 6), currency="USD"),
    )
