"""What every part of a permission decision shares: the verdict, the rules in force and the
places the modes protect.

:class:`RuleBook` is the base of the engine (:mod:`.engine` judges a tool call, :mod:`.commands`
a shell command): it holds the rules and the mode, finds the rules about a tool, names the
places that hold credentials or configuration, and gives the one answer for a command the
rules cannot vouch for (:meth:`RuleBook.cannot_vouch`), so that answer is the same whether the
splitter gave up on the whole line or one command of it cannot be bounded.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heron.agent.tool_meta import ToolCatalog, ToolMeta, path_argument
from heron.coding.permissions.modes import Mode
from heron.coding.permissions.rules import Behavior, Rule

# What a shell command does to the files it names, as the path rules see it.
READING = ToolMeta(kind="read", paths=path_argument())
WRITING = ToolMeta(kind="write", paths=path_argument(access="write"))
FLAG_SOURCE = "--allow"  # the source of the rules given with --allow
SENSITIVE_HOME = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".kube/config",
    ".config/gh/hosts.yml",
    ".config/gcloud",
    ".azure",
    ".pgpass",
    ".npmrc",
    ".pypirc",
)
# Files in the home directory that run code at the next login, shell or git command: a write
# there asks in every mode but bypass (accept-edits allows other writes outside the project).
STARTUP_FILES = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".config/fish",
    ".config/autostart",
    ".config/systemd",
    ".gitconfig",
    ".config/git",
)
SENSITIVE_SYSTEM = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh")


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict on one tool call: what happens, what the model is told and which rule (or
    mode) decided, so the ledger and ``--mode json`` can explain every allow and deny."""

    behavior: Behavior
    message: str  # what the model (and the user) is told
    rule: Rule | None = None
    suggestion: str | None = None  # a rule that would allow the call
    reason: str = "mode"  # rule | mode | parse | dynamic | always | links

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": self.behavior, "reason": self.reason, "message": self.message}
        if self.rule is not None:
            out["rule"] = self.rule.text
            out["source"] = self.rule.source
        if self.suggestion:
            out["suggestion"] = self.suggestion
        return out


class RuleBook:
    """The rules and mode a decision reads (the engine is a dataclass that sets them)."""

    cwd: Path
    home: Path  # heron's home ($HERON_HOME): its configuration is protected like a project's .heron
    mode: Mode
    rules: list[Rule]
    tools: ToolCatalog

    def _rules(self, behavior: Behavior, tool: str, meta: ToolMeta) -> list[Rule]:
        return [r for r in self.rules if r.behavior == behavior and r.covers_tool(tool, meta)]

    def _path_rules(self, behaviors: tuple[Behavior, ...], meta: ToolMeta) -> list[Rule]:
        """The rules with a path that restrict what a shell command reads (:data:`READING`) or writes."""
        return [r for b in behaviors for r in self._rules(b, meta.kind, meta) if r.specifier is not None]

    def _by_rule(self, behavior: Behavior, rule: Rule, what: str, suggestion: str | None) -> Decision:
        if behavior == "deny":
            return Decision(
                "deny", f'{what} matches the deny rule "{rule.text}" ({rule.source})', rule=rule, reason="rule"
            )
        return Decision(
            "ask",
            f'{what} matches the ask rule "{rule.text}" ({rule.source})',
            rule=rule,
            suggestion=suggestion,
            reason="rule",
        )

    def _flag_allows(self, tool: str, meta: ToolMeta, matches: Callable[[str], bool] | None) -> bool:
        """Whether an ``--allow`` rule covers the call. The flag is the user's answer for this
        run, so it settles an *ask* (an ask rule's too, which a settings file's allow rule
        cannot); a deny rule stays."""
        for rule in self._rules("allow", tool, meta):
            if rule.source == FLAG_SOURCE and (
                rule.specifier is None or (matches is not None and matches(rule.specifier))
            ):
                return True
        return False

    # --- commands the rules cannot vouch for ---

    def guard(self, tool: str, meta: ToolMeta) -> Rule | None:
        """The first rule a command whose effect cannot be bounded could get around: a Bash
        rule, or a path rule (which also covers what commands read and write). In bypass mode
        only deny rules hold, so only they count."""
        behaviors: tuple[Behavior, ...] = ("deny",) if self.mode == "bypass" else ("deny", "ask")
        for behavior in behaviors:
            if found := self._rules(behavior, tool, meta):
                return found[0]
        paths = self._path_rules(behaviors, WRITING) + self._path_rules(behaviors, READING)
        if paths:
            return paths[0]
        allows = self._rules("allow", tool, meta) if self.mode != "bypass" else []
        return allows[0] if allows else None

    def cannot_vouch(self, tool: str, meta: ToolMeta, command: str, why: str) -> Decision:
        """A command line (or one command of it) the checker cannot follow or bound: allowed
        only where no rule could be got around, or when an allow rule names that very line;
        asked about otherwise (denied in plan mode, and where nobody can answer)."""
        if any(
            r.specifier is not None and same_command(r.specifier, command) for r in self._rules("allow", tool, meta)
        ):
            return Decision("allow", "", reason="rule")  # that very command line was allowed
        message = f'the command "{short(command)}" cannot be checked against the permission rules ({why})'
        if self.mode == "plan":
            return Decision("deny", f"plan mode is read-only and {message}", reason="parse")
        guard = self.guard(tool, meta)
        if guard is None:
            return Decision("allow", "")
        return Decision(
            "ask",
            f'{message}, so the rule "{guard.text}" ({guard.source}) cannot vouch for it',
            suggestion=exact_rule(command),
            reason="parse",
        )

    # --- places ---

    @staticmethod
    def _inside(path: Path, root: Path) -> bool:
        return path == root or root in path.parents

    def _sensitive(self, path: Path) -> bool:
        user_home = Path(os.path.expanduser("~"))
        if any(self._inside(path, user_home / name) for name in SENSITIVE_HOME):
            return True
        if any(self._inside(path, Path(name)) for name in SENSITIVE_SYSTEM):
            return True
        if self._inside(path, self.home / "models.json") or self._inside(path, self.home / "auth.json"):
            return True
        return path.name.startswith(".env")

    def _sensitive_places(self) -> list[Path]:
        user_home = Path(os.path.expanduser("~"))
        places = [user_home / name for name in SENSITIVE_HOME] + [Path(name) for name in SENSITIVE_SYSTEM]
        return [*places, self.home / "models.json", self.home / "auth.json"]

    def _holds_sensitive(self, root: Path) -> Path | None:
        """A sensitive place a grep of ``root`` (``~`` or ``/``) would read."""
        places = self._sensitive_places()
        return next((p for p in places if p != root and self._inside(p, root) and os.path.lexists(p)), None)

    def _protected_places(self) -> list[Path]:
        user_home = Path(os.path.expanduser("~"))
        return [self.cwd / ".heron", self.cwd / ".git", self.home, *(user_home / name for name in STARTUP_FILES)]

    def protected(self, path: Path) -> bool:
        """Whether writing ``path`` asks in every mode but bypass: heron's or git's
        configuration, a shell startup file, or a place that holds credentials."""
        return self._sensitive(path) or any(self._inside(path, root) for root in self._protected_places())


def same_command(specifier: str, command: str) -> bool:
    """A rule naming this exact command line (``Bash(echo 'hi' | sh)``): how a command the
    checker cannot split, or one that computes its program's name, is allowed."""
    return "*" not in specifier and " ".join(specifier.split()) == " ".join(command.split())


def exact_rule(command: str, tool: str = "Bash") -> str:
    return f"{tool}({' '.join(command.split())})"


def short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
