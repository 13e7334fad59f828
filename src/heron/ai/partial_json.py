"""Tool-call arguments from incomplete JSON.

Providers stream arguments as text fragments; the UI wants to show ``path`` before the
``content`` of a write has finished arriving. jiter (pydantic's Rust JSON parser, a small
compiled dependency) parses a prefix in partial mode, so each
fragment costs one fast C-level parse instead of a Python scan.
"""

from __future__ import annotations

import json
from typing import Any


def parse_partial(text: str) -> dict[str, Any] | None:
    """Best-effort object from a prefix of a JSON object; ``None`` if nothing usable yet."""
    if not text.strip():
        return {}
    import jiter  # cached after the first tool call; keeps import heron.ai lean

    try:
        value = jiter.from_json(text.encode(), partial_mode="trailing-strings")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parse_final(text: str) -> tuple[dict[str, Any], bool]:
    """Arguments from complete text, and whether they were valid.

    Empty text means ``{}`` (providers send nothing for argument-less calls). Invalid JSON
    or a non-object also gives ``{}``; the caller keeps the raw text so nothing is lost.
    """
    if not text.strip():
        return {}, True
    try:
        value = json.loads(text)
    except ValueError:
        return {}, False
    if isinstance(value, dict):
        return value, True
    return {}, False
