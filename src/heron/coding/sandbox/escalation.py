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

from collections.abc import Iterable

from heron.coding.permissions import Decision, Mode
from heron.coding.permissions.rules import Rule, command_matches, suggest_bash_rule

RULE_TOOL = "Unsandboxed"
PARAMETER = "outside_sandbox"


def _matches(rule: Rule, command: str, parts: list[list[str]] | None) -> bool:
    """A rule covers the command when it has no specifier, names the exact line, or matches
    every simple command in it (``npm ci && npm test`` needs both allowed)."""
    if rule.specifier is None or rule.specifier.strip() == command.strip():
        return True
    return parts is not None and bool(parts) and all(command_matches(rule.specifier, words) for words in parts)


def _suggestion(command: str, parts: list[list[str]] | None) -> str:
    if parts is not None and len(parts) == 1:
        return RULE_TOOL + suggest_bash_rule(parts[0]).removeprefix("Bash")
    return f"{RULE_TOOL}({command.strip()})"  # a compound or unreadable line: that very line


def escalation_decision(rules: Iterable[Rule], mode: Mode, command: str, justification: str | None) -> Decision:
    """Whether ``command`` may run outside the sandbox: a deny rule refuses, bypass mode or
    an allow rule lets it, anything else asks the user."""
    from heron.coding.permissions.shell import ShellParseError, split_commands  # with the first such command

    try:
        parts: list[list[str]] | None = [[w.text for w in p.words] for p in split_commands(command)]
    except ShellParseError:
        parts = None
    own = [r for r in rules if r.tool.lower() == RULE_TOOL.lower()]
    what = f'the command "{command.strip()[:200]}" asks to run outside the sandbox'
    for rule in own:
        if rule.behavior == "deny" and _matches(rule, command, parts):
            return Decision("deny", f'{what}, and the deny rule "{rule.text}" ({rule.source}) refuses it', rule=rule)
    if mode == "bypass":
        return Decision("allow", "", reason="mode")
    for rule in own:
        if rule.behavior == "allow" and _matches(rule, command, parts):
            return Decision("allow", "", rule=rule, reason="rule")
    why = (justification or "").strip()
    message = (
        f"{what} ({'reason given: ' + why[:500] if why else 'no reason given'}): it would run with the user's rights"
    )
    return Decision("ask", message, suggestion=_suggestion(command, parts), reason="escalation")
