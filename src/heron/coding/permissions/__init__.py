"""Permission rules and modes: whether a tool call may run (see docs/permissions.md)."""

from heron.coding.permissions.engine import Decision, PermissionEngine
from heron.coding.permissions.modes import MODES, Mode, next_mode, parse_mode
from heron.coding.permissions.rules import Rule, RuleError, parse_rule
from heron.coding.permissions.scopes import Scope, add_local_rule, load_scopes
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
