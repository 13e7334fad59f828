"""A bash command that asks to run outside the sandbox (``outside_sandbox: true``).

The sandbox is the boundary; a command the model knows will meet it (it needs the
network, it writes to a cache outside the project) may ask, with a justification, to run
without it. That is a permission like any other, so it is decided here as a
:class:`~heron.coding.permissions.Decision` and goes through the same asking as every
other one (interactive prompt, rpc ``permission_request``, ACP ``session/request_permission``;
denied with a way to allow it where nobody can answer). The rules that settle it name the
commands, with their own tool name so that allowing a command in the sandbox never
allows it outside: ``Unsandboxed(npm install:*)`` in ``permissions.allow`` (or ``--allow``)
pre-approves it, in ``permissions.deny`` refuses it (``Unsandboxed`` alone: every command).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from heron.coding.permissions import Decision, Mode, PermissionEngine
from heron.coding.permissions.rules import Rule, command_matches

if TYPE_CHECKING:
    from heron.coding.permissions.shell import SimpleCommand

RULE_TOOL = "Unsandboxed"
PARAMETER = "outside_sandbox"


def _denies(rule: Rule, command: str, parts: list[SimpleCommand] | None) -> bool:
    """A deny rule refuses the command when it names the line or any command in it."""
    if rule.specifier is None or rule.specifier.strip() == command.strip():
        return True
    specifier = rule.specifier
    return parts is not None and any(command_matches(specifier, [w.text for w in p.words]) for p in parts)


def _allows(rule: Rule, command: str, parts: list[SimpleCommand] | None, engine: PermissionEngine) -> bool:
    """An allow rule lets the command out when it names the exact line, or covers every
    command in it as :mod:`heron.coding.permissions.coverage` says: a command rule never
    covers a write beyond the project, the network or a path computed at run time that it
    does not name (``Unsandboxed(echo:*)`` does not let ``echo x > /dev/tcp/h/p`` out)."""
    if rule.specifier is None or rule.specifier.strip() == command.strip():
        return True
    runs = [p for p in parts or [] if not p.implied]
    return bool(runs) and all(engine.covers(rule.specifier, part, command) for part in runs)


def _suggestion(command: str, parts: list[SimpleCommand] | None, engine: PermissionEngine) -> str:
    runs = [p for p in parts or [] if not p.implied]
    if len(runs) == 1:
        return engine.suggest(RULE_TOOL, runs[0], command)
    return f"{RULE_TOOL}({command.strip()})"  # a compound or unreadable line: that very line


def escalation_decision(
    rules: Iterable[Rule],
    mode: Mode,
    command: str,
    justification: str | None,
    *,
    engine: PermissionEngine | None = None,
) -> Decision:
    """Whether ``command`` may run outside the sandbox: a deny rule refuses, bypass mode or
    an allow rule lets it, anything else asks the user. ``engine``: the session's (its project
    and protected places decide what a rule covers); without one, the current directory."""
    from heron.coding.permissions.shell import ShellParseError, split_commands  # with the first such command

    if engine is None:
        engine = PermissionEngine(cwd=Path(os.path.realpath(os.getcwd())), home=Path.home() / ".heron")
    try:
        parts: list[SimpleCommand] | None = split_commands(command)
    except ShellParseError:
        parts = None
    own = [r for r in rules if r.tool.lower() == RULE_TOOL.lower()]
    what = f'the command "{command.strip()[:200]}" asks to run outside the sandbox'
    for rule in own:
        if rule.behavior == "deny" and _denies(rule, command, parts):
            return Decision("deny", f'{what}, and the deny rule "{rule.text}" ({rule.source}) refuses it', rule=rule)
    if mode == "bypass":
        return Decision("allow", "", reason="mode")
    for rule in own:
        if rule.behavior == "allow" and _allows(rule, command, parts, engine):
            return Decision("allow", "", rule=rule, reason="rule")
    why = (justification or "").strip()
    message = (
        f"{what} ({'reason given: ' + why[:500] if why else 'no reason given'}): it would run with the user's rights"
    )
    return Decision("ask", message, suggestion=_suggestion(command, parts, engine), reason="escalation")
