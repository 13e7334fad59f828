"""Permission rules and modes: whether a tool call may run (see docs/permissions.md).

The shell parser is re-exported lazily: it is needed by the first bash command a rule has
to judge, not by a session that starts (the one-shot path never loads it without one)."""

from typing import TYPE_CHECKING, Any

from heron.coding.permissions.engine import Decision, PermissionEngine
from heron.coding.permissions.modes import MODES, Mode, next_mode, parse_mode
from heron.coding.permissions.rules import Rule, RuleError, parse_rule
from heron.coding.permissions.scopes import Scope, add_local_rule, load_scopes

if TYPE_CHECKING:
    from heron.coding.permissions.shell import ShellParseError, split_commands

__all__ = [
    "MODES",
    "Decision",
    "Mode",
    "PermissionEngine",
    "Rule",
    "RuleError",
    "Scope",
    "ShellParseError",
    "add_local_rule",
    "load_scopes",
    "next_mode",
    "parse_mode",
    "parse_rule",
    "split_commands",
]


def __getattr__(name: str) -> Any:
    if name in ("ShellParseError", "split_commands"):
        from heron.coding.permissions.shell import ShellParseError, split_commands

        return {"ShellParseError": ShellParseError, "split_commands": split_commands}[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
