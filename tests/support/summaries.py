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


def is_summary_body(body: dict[str, Any]) -> bool:
    """Whether a request body (any provider's wire format) is a summary request."""
    return is_summary_text(json.dumps(body, ensure_ascii=False))


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
