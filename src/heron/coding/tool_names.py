"""The built-in tools' names: which a session gets by default and which on request.

Stated here once, with no imports, so ``heron --help`` (which loads nothing heavy) and
the tools' package (:mod:`heron.coding.tools`) say the same thing; docs/configuration.md
carries :func:`tools_help`'s text, checked by a test.
"""

from __future__ import annotations

DEFAULT_TOOLS: tuple[str, ...] = ("read", "bash", "edit", "write", "search_history", "todo", "script", "task")
ALL_TOOLS: tuple[str, ...] = (
    "read",
    "bash",
    "edit",
    "write",
    "grep",
    "find",
    "ls",
    "search_history",
    "json_query",
    "todo",
    "compact",
    "script",
    "task",
)


def tools_help() -> str:
    """``default read,bash,…; on request grep,find,ls,json_query``."""
    extra = [name for name in ALL_TOOLS if name not in DEFAULT_TOOLS]
    return f"default {','.join(DEFAULT_TOOLS)}; on request {','.join(extra)}"
