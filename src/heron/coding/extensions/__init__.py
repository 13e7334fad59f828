"""Python extensions: ``register(api)`` modules that observe and steer a session.

See docs/extensions.md. ``api`` is the small module an extension imports from
(``from heron.coding.extensions import api`` gives ``block``, ``ToolResult`` ...).
"""

from __future__ import annotations

from heron.coding.extensions.api import (
    AfterToolCallResult,
    BeforeToolCallResult,
    CompactionAnswer,
    CompactionInput,
    ExtensionAPI,
    ExtensionCommand,
    ExtensionError,
    ToolCallInfo,
    ToolResult,
    block,
)
from heron.coding.extensions.host import Extension, ExtensionHost
from heron.coding.extensions.loader import ENTRY_POINT_GROUP

__all__ = [
    "ENTRY_POINT_GROUP",
    "AfterToolCallResult",
    "BeforeToolCallResult",
    "CompactionAnswer",
    "CompactionInput",
    "Extension",
    "ExtensionAPI",
    "ExtensionCommand",
    "ExtensionError",
    "ExtensionHost",
    "ToolCallInfo",
    "ToolResult",
    "block",
]
