"""The rpc protocol's lines: reading one command (its JSON, id, type and fields) and
writing one output object. No session state here, so every rule about what a line may
hold is in one place and tested on its own (docs/rpc.md)."""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from heron.agent.messages import AgentMessage
from heron.ai.types import ImageContent, Model, TextContent
from heron.cli.events_json import encode_line as encode_line  # the one output encoder (json mode, rpc, ACP)
from heron.cli.task_input import IMAGE_TYPES
from heron.session.jsonl import clean

Write = Callable[[dict[str, Any]], None]
CommandId = str | int | float | None


class CommandError(Exception):
    """A command that cannot be served; the message goes back in the error response."""


# --- reading the fields of a command ----------------------------------------------------------


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def string_field(fields: dict[str, Any], name: str, *, required: bool = True, empty: bool = False) -> str | None:
    value = fields.get(name)
    if value is None:
        if required:
            raise CommandError(f'missing "{name}" (a string)')
        return None
    if not isinstance(value, str):
        raise CommandError(f'"{name}" must be a string, got {type_name(value)}')
    if not empty and not value.strip():
        raise CommandError(f'"{name}" is empty')
    return value


def images_field(fields: dict[str, Any]) -> list[ImageContent]:
    raw = fields.get("images")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise CommandError(f'"images" must be an array, got {type_name(raw)}')
    images: list[ImageContent] = []
    for number, item in enumerate(raw):
        where = f"images[{number}]"
        if not isinstance(item, dict):
            raise CommandError(f"{where} must be an object, got {type_name(item)}")
        data, mime = item.get("data"), item.get("mimeType", item.get("mime_type"))
        if not isinstance(data, str) or not data:
            raise CommandError(f'{where}: "data" must be a non-empty base64 string')
        if mime not in IMAGE_TYPES:
            raise CommandError(f'{where}: "mimeType" must be one of {", ".join(sorted(IMAGE_TYPES))}, got {mime!r}')
        try:
            base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise CommandError(f'{where}: "data" is not base64 ({exc})') from exc
        images.append(ImageContent(data=data, mime_type=mime))
    return images


def model_json(model: Model) -> dict[str, Any]:
    """A model as pi's RPC protocol describes one (its ``Model`` object: camelCase fields,
    costs in dollars per million tokens), plus heron's ``ref`` (what ``--model`` takes)."""
    cost = model.cost
    return {
        "id": model.id,
        "name": model.name or model.id,
        "api": model.api,
        "provider": model.provider,
        "baseUrl": model.base_url,
        "reasoning": model.reasoning,
        "input": list(model.input),
        "contextWindow": model.context_window,
        "maxTokens": model.max_tokens,
        "cost": {
            "input": cost.input,
            "output": cost.output,
            "cacheRead": cost.cache_read,
            "cacheWrite": cost.cache_write,
        },
        "ref": model.ref,
    }


def message_text(message: AgentMessage) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    """A line that is a command object with a usable id and type (the handler is not
    checked here: the server knows its commands)."""

    id: CommandId
    type: str
    fields: dict[str, Any]


@dataclass(frozen=True, slots=True)
class LineError:
    """Why a line is not a command; ``id``/``command`` are echoed when they could be read.
    A line that is not a JSON object at all answers as pi's does, with ``"command":
    "parse"``."""

    error: str
    id: CommandId = None
    command: str | None = "parse"


def parse_command(line: bytes, known: str) -> ParsedCommand | LineError | None:
    """One input line as a command; None for a blank line. ``known`` lists the commands
    for the error of a missing type. Strings are cleaned of unpaired surrogates (a client
    may send ``"\\ud800"``), which could not be saved or sent on: they become U+FFFD."""
    if not line.strip():
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return LineError(f"the line is not UTF-8 ({exc.reason} at byte {exc.start})")
    try:
        command = json.loads(text)
    except json.JSONDecodeError as exc:
        return LineError(f"invalid JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        return LineError("invalid JSON: nested too deeply")
    if not isinstance(command, dict):
        return LineError(f"a command is a JSON object, got {type_name(command)}")
    command = clean(command)
    cmd_id = command.get("id")
    if isinstance(cmd_id, bool) or not isinstance(cmd_id, str | int | float | None):
        return LineError(f'"id" must be a string or a number, got {type_name(cmd_id)}')
    if isinstance(cmd_id, float) and not math.isfinite(cmd_id):
        # 1e999 parses as infinity, which JSON cannot write back: echoing it would
        # put "Infinity" on stdout and break every client's parser.
        return LineError('"id" must be a finite number (1e999 and the like cannot be echoed)')
    kind = command.get("type")
    if not isinstance(kind, str):
        what = "missing" if kind is None else f"must be a string, got {type_name(kind)}"
        return LineError(f'"type" {what}; commands: {known}', cmd_id, None)
    return ParsedCommand(cmd_id, kind, command)
