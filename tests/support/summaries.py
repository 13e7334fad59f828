"""Recognising a compaction's summary request on the wire, of either kind.

The separate summariser's request starts with its own system prompt; a shared one
(``compaction.request: "shared"``, the default where the server caches prompts) repeats
the conversation's prefix and ends with an instruction that starts with a fixed mark.
Scripted servers answer both with a summary.
"""

from __future__ import annotations

import json
from typing import Any

from heron.context.compaction.summary.summary_text import SHARED_SUMMARY_MARK, SUMMARISER_SYSTEM_PROMPT

SEPARATE_MARK = SUMMARISER_SYSTEM_PROMPT[:60]


def is_summary_text(text: str) -> bool:
    """Whether a serialised request body is a summary request."""
    return SEPARATE_MARK in text or SHARED_SUMMARY_MARK in text


def is_summary_body(body: dict[str, Any]) -> bool:
    """Whether a request body (any provider's wire format) is a summary request."""
    return is_summary_text(json.dumps(body, ensure_ascii=False))
