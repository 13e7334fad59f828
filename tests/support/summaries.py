"""Recognising a compaction's summary request on the wire, of either kind (and the
memory's side turns).

The separate summariser's request starts with its own system prompt; a shared one
(``compaction.request: "shared"``, the default where the server caches prompts) repeats
the conversation's prefix and ends with an instruction that starts with a fixed mark.
Scripted servers answer both with a summary.
"""

from __future__ import annotations

import json
from typing import Any

from heron.coding.memory import FLUSH_PROMPT
from heron.coding.memory_reflect import REFLECT_PROMPT
from heron.context.compaction.summary.summary_text import SHARED_SUMMARY_MARK, SUMMARISER_SYSTEM_PROMPT

SEPARATE_MARK = SUMMARISER_SYSTEM_PROMPT[:60]


def is_summary_text(text: str) -> bool:
    """Whether a serialised request body is a summary request."""
    return SEPARATE_MARK in text or SHARED_SUMMARY_MARK in text


def _last_item(body: dict[str, Any]) -> str:
    """The request's last message, in any provider's wire format, as text."""
    for key in ("messages", "input", "contents"):
        items = body.get(key)
        if isinstance(items, list) and items:
            return json.dumps(items[-1], ensure_ascii=False)
    return ""


def _system_parts(body: dict[str, Any]) -> str:
    """The request's system prompt, in any provider's wire format, as text."""
    parts = [body.get(key) for key in ("system", "instructions", "systemInstruction", "system_instruction")]
    for key in ("messages", "input"):
        items = body.get(key)
        first = items[0] if isinstance(items, list) and items else None
        if isinstance(first, dict) and first.get("role") in ("system", "developer"):
            parts.append(first)
    return json.dumps(parts, ensure_ascii=False)


def is_summary_body(body: dict[str, Any]) -> bool:
    """Whether a request body (any provider's wire format) is a summary request: the
    summariser's system prompt, or the shared request's instruction as its last message.
    Not the mark anywhere: a small model can echo the instruction into its summary, and
    every turn request after that compaction carries the summary."""
    return SEPARATE_MARK in _system_parts(body) or SHARED_SUMMARY_MARK in _last_item(body)


# The memory's side turns (the flush before a compaction, a reflection pass) end with
# heron's own prompt; they are never part of the conversation.
FLUSH_MARK = FLUSH_PROMPT[:50]
REFLECT_MARK = REFLECT_PROMPT[:30]


def is_memory_body(body: dict[str, Any]) -> bool:
    """Whether a request body (OpenAI chat format) is the memory flush or a reflection."""
    messages = body.get("messages") or []
    last = json.dumps(messages[-1], ensure_ascii=False) if messages else ""
    return FLUSH_MARK in last or REFLECT_MARK in last


def is_side_body(body: dict[str, Any]) -> bool:
    """A request heron sends beside the conversation's turns: a summary, the flush, a reflection."""
    return is_summary_body(body) or is_memory_body(body)
