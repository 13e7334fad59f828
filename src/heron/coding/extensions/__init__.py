"""Python extensions: ``register(api)`` modules that observe and steer a session.

See docs/extensions.md. ``api`` is the small module an extension imports from
(``from heron.coding.extensions import api`` gives ``block``, ``ToolResult`` ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from heron.coding.extensions.host import Extension, ExtensionHost
from heron.coding.extensions.loader import ENTRY_POINT_GROUP

if TYPE_CHECKING:
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

# The extension API's names load with the first extension (or the first import of one of
# them): a session without extensions never imports heron.coding.extensions.api.
_API_NAMES = frozenset(
    {
        "AfterToolCallResult",
        "BeforeToolCallResult",
        "CompactionAnswer",
        "CompactionInput",
        "ExtensionAPI",
        "ExtensionCommand",
        "ExtensionError",
        "ToolCallInfo",
        "ToolResult",
        "block",
    }
)

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


def __getattr__(name: str) -> Any:
    if name in _API_NAMES:
        from heron.coding.extensions import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
