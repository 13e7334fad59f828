"""Any session event as one JSON object (json mode, rpc mode)."""

from __future__ import annotations

import json
from typing import Any

from heron.agent.events import agent_event_to_json
from heron.cli.terminal_text import json_visible
from heron.session.jsonl import clean_text


def event_json(event: Any) -> dict[str, Any]:
    """Agent events with their messages in the on-disk camelCase form; the runtime's own
    events (compaction, retry, ledger) field by field.

    A ``message_update`` carries only its stream event (the delta, the content index, a
    finished block or tool call), not the message so far: that message grows with every
    delta, and writing it each time made the output grow with the square of the answer
    (a 30,000-character answer: over 100 MB). The whole message comes with
    ``message_end``; rpc's ``get_partial_message`` returns it on request (docs/rpc.md).
    """
    kind = getattr(event, "type", "")
    if kind == "message_update":
        return {"type": "message_update", "event": stream_event_json(event.event)}
    if kind == "turn_end":
        return {
            "type": kind,
            "message": message_stub(event.message),
            "tool_results": [message_stub(m) for m in event.tool_results],
        }
    if kind == "agent_end":
        return {"type": kind, "messages": [message_stub(m) for m in event.messages]}
    return agent_event_to_json(event)


def message_stub(message: Any) -> dict[str, Any]:
    """A message that already went out whole in its ``message_end``, named again by
    ``turn_end`` and ``agent_end``: its fields without ``content``, ``details`` and
    ``usage`` (role, ids, stop reason, timestamp), so naming it again costs a line, not
    the answer again (docs/rpc.md, "Deltas, not the whole message")."""
    data = message.to_json_dict() if hasattr(message, "to_json_dict") else agent_event_to_json(message)
    return {key: value for key, value in data.items() if key not in _REPEATED}


# what a message's message_end already carried in full
_REPEATED = frozenset({"content", "details", "usage"})
_BLOCK_ENDS = frozenset({"text_end", "thinking_end"})


def drops_field(inner: Any, name: str) -> bool:
    """A stream event's field left out of json and rpc: the message so far (``partial``,
    a ``done`` event's ``message``) and a finished text or thinking block's ``content``,
    which is the concatenation of the deltas just written."""
    return name in ("partial", "message") or (name == "content" and getattr(inner, "type", "") in _BLOCK_ENDS)


def stream_event_json(inner: Any) -> dict[str, Any]:
    """A stream event without the fields :func:`drops_field` names."""
    out: dict[str, Any] = {}
    for name in inner.__dataclass_fields__:
        if drops_field(inner, name):
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


# Characters some line readers treat as line ends although they may sit inside a JSON
# string unescaped (the control characters below U+0020 are always escaped by json).
_SEPARATORS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def dumps(data: dict[str, Any]) -> str:
    """Compact JSON, non-ASCII as is, always encodable as UTF-8: a lone surrogate - a file
    name or a directory with a byte that is not UTF-8 (``os.fsdecode``), an rpc client's
    ``"\\ud800"`` - becomes U+FFFD, as it does in the session file (heron.session.jsonl).
    The C1 controls and bidirectional overrides the encoder leaves raw are written as
    ``\\u`` escapes (the same value), so a line shown on a terminal cannot drive it
    (:func:`heron.cli.terminal_text.json_visible`)."""
    return json_visible(clean_text(json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)))


def output_line(data: dict[str, Any]) -> str:
    """One line of heron's JSON output - json mode, rpc, and ACP's protocol messages: the
    one encoder for all three (docs/rpc.md, "Framing"). :func:`dumps`, with U+2028, U+2029
    and U+0085 as ``\\u`` escapes so a reader that splits on them still gets whole lines."""
    return dumps(data).translate(_SEPARATORS) + "\n"


def encode_line(data: dict[str, Any]) -> bytes:
    """:func:`output_line` as the UTF-8 bytes written (it cannot fail: nothing unencodable is left)."""
    return output_line(data).encode("utf-8")
