"""What one ``session/prompt`` needs besides the run itself: the prompt blocks as heron
text and images, the ordered sending of updates, and the stop reason and usage of the
turn."""

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
from heron.agent.turn_limit import TURN_LIMIT_KIND
from heron.ai.types import AssistantMessage, ImageContent, StopReason
from heron.cli.acp.updates import Update

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


def stop_reason(added: Sequence[AgentMessage], cancelled: bool) -> tuple[str, str | None]:
    """ACP's stop reason for the messages a run added, and the error to report, if any."""
    last = next((m for m in reversed(added) if isinstance(m, AssistantMessage)), None)
    if cancelled or (last is not None and last.stop_reason == StopReason.ABORTED):
        return "cancelled", None
    if last is None:
        return "end_turn", None
    if last.stop_reason == StopReason.ERROR and last.error_kind == TURN_LIMIT_KIND:
        return "max_turn_requests", None  # --max-turns / limits.maxTurns: ACP's own stop reason
    if last.stop_reason == StopReason.ERROR:
        return "end_turn", last.error_message or "the model request failed"
    if last.stop_reason == StopReason.LENGTH:
        return "max_tokens", None
    return "end_turn", None


def turn_usage(added: Sequence[AgentMessage]) -> Usage | None:
    replies = [m for m in added if isinstance(m, AssistantMessage)]
    if not replies:
        return None
    inp = sum(m.usage.input for m in replies)
    out = sum(m.usage.output for m in replies)
    read = sum(m.usage.cache_read for m in replies)
    write = sum(m.usage.cache_write for m in replies)
    return Usage(
        total_tokens=inp + out + read + write,
        input_tokens=inp,
        output_tokens=out,
        cached_read_tokens=read,
        cached_write_tokens=write,
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
