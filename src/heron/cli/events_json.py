"""Any session event as one JSON object (json mode, rpc mode)."""

from __future__ import annotations

import json
from typing import Any

from heron.agent.events import agent_event_to_json


def event_json(event: Any) -> dict[str, Any]:
    """Agent events with their messages in the on-disk camelCase form; the runtime's own
    events (compaction, retry, ledger) field by field."""
    data = agent_event_to_json(event)
    inner = data.get("event")  # message_update: the stream event carries the partial message
    if isinstance(inner, dict):  # the partial message is in "message" already
        inner.pop("partial", None)
    return data


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
