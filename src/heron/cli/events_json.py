"""Any session event as one JSON object (json mode, rpc mode)."""

from __future__ import annotations

import json
from typing import Any

from heron.agent.events import agent_event_to_json


def event_json(event: Any) -> dict[str, Any]:
    """Agent events with their messages in the on-disk camelCase form; the runtime's own
    events (compaction, retry, ledger) field by field.

    A ``message_update`` carries only its stream event (the delta, the content index, a
    finished block or tool call), not the message so far: that message grows with every
    delta, and writing it each time made the output grow with the square of the answer
    (a 30,000-character answer: over 100 MB). The whole message comes with
    ``message_end``; rpc's ``get_partial_message`` returns it on request (docs/rpc.md).
    """
    if getattr(event, "type", "") == "message_update":
        return {"type": "message_update", "event": stream_event_json(event.event)}
    return agent_event_to_json(event)


def stream_event_json(inner: Any) -> dict[str, Any]:
    """A stream event without its ``partial`` message (nor a ``done`` event's message)."""
    out: dict[str, Any] = {}
    for name in inner.__dataclass_fields__:
        if name in ("partial", "message"):
            continue
        value = getattr(inner, name)
        out[name] = value.to_json_dict() if hasattr(value, "to_json_dict") else _plain(value)
    return out


def _plain(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
