"""The permission decision for one tool call: allow, ask or deny, and why.

Order: a deny rule wins, then an ask rule, then (in bypass mode) anything goes, then an
allow rule, then what the mode does by default (:mod:`.modes`). One exception: plan mode
denies edits and writes even where an allow rule (``Edit(src/**)``) would let them through
(a bash allow rule does extend plan's read-only command list). Paths are checked on
what the call would really touch: the path as written and, after following symlinks
(even a dangling one), the file it lands on, and the other names of a file that has
several (hard links, :mod:`.links`); a deny or ask rule matching any counts, an allow rule
must match the real target and cannot vouch for names it does not see. A bash command is
allowed only if every command it runs is (:mod:`.commands`).

Rules from the project's own files (``.heron/settings.json`` and ``settings.local.json``,
which a repository can ship) may only restrict - their ``allow`` rules and
``defaultMode`` count once the project is trusted (``--trust``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from heron.agent.tool_meta import PathUse, ToolCatalog, ToolKind, ToolMeta
from heron.coding.permissions.base import FLAG_SOURCE, READING, WRITING, Decision
from heron.coding.permissions.commands import CommandRules
from heron.coding.permissions.links import Names, other_names
from heron.coding.permissions.modes import Mode, parse_mode
from heron.coding.permissions.rules import Rule, RuleError, parse_rule, path_pattern, pattern_base, suggest_path_rule
from heron.coding.permissions.scopes import Scope
from heron.coding.tools import builtin_meta
from heron.coding.tools.env import resolve_path

__all__ = ["FLAG_SOURCE", "READING", "WRITING", "Decision", "PermissionEngine"]

# Kinds of tools that touch no files and change nothing plan mode protects: searches (of the
# history, of a tool catalogue), reads of something other than files, the session's own task
# list and goal, and sub-agents, whose every call goes through this same engine (the child shares it).
PLAN_SAFE_KINDS: frozenset[ToolKind] = frozenset({"read", "search", "todo", "delegate", "goal", "compact"})
# Claude Code tools heron does not have: a rule naming one is read, warned about, and never matches.
CLAUDE_ONLY_TOOLS = frozenset(
    {
        "webfetch",
        "websearch",
        "notebookedit",
        "notebookread",
        "todowrite",
        "todoread",
        "exitplanmode",
        "bashoutput",
        "killshell",
        "killbash",
        "slashcommand",
        "skill",
    }
)


@dataclass(eq=False, repr=False)
class PermissionEngine(CommandRules):
    """Judges tool calls against the session's mode and rules. Mutable because ``/permissions``
    and an "always" answer change the rules and mode of the running session; one per session,
    compared by identity and never printed, so no generated ``__eq__`` or ``__repr__`` (two
    functions fewer compiled at import)."""

    cwd: Path
    home: Path  # heron's home ($HERON_HOME): its configuration is protected like a project's .heron
    mode: Mode = "default"
    rules: list[Rule] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # What each tool is (kind, files, command): the session's tools; built-in names by default.
    tools: ToolCatalog = field(default_factory=lambda: ToolCatalog(fallback=builtin_meta))

    @classmethod
    def from_scopes(cls, cwd: Path, home: Path, scopes: Iterable[Scope], *, trusted: bool) -> PermissionEngine:
        engine = cls(cwd=Path(os.path.realpath(cwd)), home=Path(os.path.realpath(home)))
        for scope in scopes:
            section = scope.data.get("permissions")
            if not isinstance(section, Mapping):
                continue
            engine._load_section(section, scope, trusted)
        return engine

    def _load_section(self, section: Mapping[str, Any], scope: Scope, trusted: bool) -> None:
        restricted = scope.name != "user" and not trusted
        for behavior in ("deny", "ask", "allow"):
            texts = section.get(behavior, [])
            if not isinstance(texts, list):
                self.warnings.append(f"{scope.path}: permissions.{behavior} must be an array of rules (ignored)")
                continue
            if behavior == "allow" and restricted and texts:
                self.warnings.append(
                    f"{scope.path}: permissions.allow is used only in a trusted project (run with --trust); ignored"
                )
                continue
            self.add_rules(behavior, texts, str(scope.path))
        mode = section.get("defaultMode")
        if mode is None:
            return
        try:
            parsed = parse_mode(str(mode))
        except ValueError as exc:
            self.warnings.append(f"{scope.path}: permissions.defaultMode: {exc} (ignored)")
            return
        if restricted and parsed in ("bypass", "accept-edits"):
            self.warnings.append(
                f"{scope.path}: permissions.defaultMode {parsed!r} is used only in a trusted "
                "project (run with --trust); ignored"
            )
            return
        self.mode = parsed

    def add_rules(self, behavior: str, texts: Iterable[Any], source: str) -> list[str]:
        """Add rules; returns a problem per rule that could not be read (also kept in warnings)."""
        problems: list[str] = []
        for text in texts:
            try:
                rule = parse_rule(text, behavior, source)  # type: ignore[arg-type]
            except RuleError as exc:
                problems.append(f"{source}: permissions.{behavior}: {exc}")
                continue
            self.rules.append(rule)
            if rule.tool.lower() in CLAUDE_ONLY_TOOLS:  # kept (harmless), but the user should know
                self.warnings.append(
                    f'{source}: permissions.{behavior}: heron has no {rule.tool} tool, so "{rule.text}" never matches'
                )
        self.warnings.extend(problems)
        return problems

    # --- deciding ---------------------------------------------------------------------

    def decide(self, tool: str, args: Mapping[str, Any]) -> Decision:
        """By what the tool declares (:attr:`tools`): a shell command is checked command by
        command, each file a call touches against the path rules, anything else as a whole."""
        meta = self.tools.meta(tool)
        if meta.kind == "execute" and meta.command is not None:
            return self._bash(tool, meta, meta.command_of(args) or "")
        if meta.paths is not None:
            uses = meta.uses(args) or [PathUse(".", "write" if meta.changes_files else "read")]
            decisions = [self._file(tool, meta, use, resolve_path(use.path, self.cwd)) for use in uses]
            return next((d for b in ("deny", "ask") for d in decisions if d.behavior == b), decisions[0])
        return self._other(tool, meta)

    def _other(self, tool: str, meta: ToolMeta) -> Decision:
        what = f"the {tool} tool"
        for behavior in ("deny", "ask"):
            for rule in self._rules(behavior, tool, meta):
                if rule.specifier is None and not (behavior == "ask" and self._flag_allows(tool, meta, None)):
                    return self._by_rule(behavior, rule, what, tool)
        if self.mode == "bypass":
            return Decision("allow", "")
        if any(r.specifier is None for r in self._rules("allow", tool, meta)):
            return Decision("allow", "", rule=self._rules("allow", tool, meta)[0], reason="rule")
        if self.mode == "plan" and meta.kind not in PLAN_SAFE_KINDS:
            return Decision("ask", f"{what} may change things, and plan mode is read-only", suggestion=tool)
        return Decision("allow", "")

    # --- files ---

    def _file(self, tool: str, meta: ToolMeta, use: PathUse, path: Path) -> Decision:
        real = Path(os.path.realpath(path))
        reads = use.access == "read"
        names = self._names(tool, meta, real, reads)
        candidates = {str(path), str(real), *map(str, names.found)}
        if use.walks:  # `grep secrets/` reads what `Read(./secrets/**)` is about
            candidates |= {c.rstrip("/") + "/-" for c in list(candidates)}
        verb = "reading" if reads else "writing"
        what = f"{verb} {path}" + (f" (which leads to {real})" if real != path else "")
        suggestion = suggest_path_rule(tool, meta, real)
        for behavior in ("deny", "ask"):
            for rule in self._rules(behavior, tool, meta):
                if rule.specifier is None or any(path_pattern(rule.specifier, self.cwd).match(c) for c in candidates):
                    if behavior == "ask" and self._flag_allows(
                        tool, meta, lambda spec: path_pattern(spec, self.cwd).match(str(real)) is not None
                    ):
                        break
                    return self._by_rule(behavior, rule, what + _linked(names, rule, self.cwd), suggestion)
        if self.mode == "bypass":
            return self._unseen_names(what, names, deny_only=True) or Decision("allow", "")
        if self.mode == "plan" and not reads:  # read-only whatever allow rules say
            return Decision(
                "deny",
                f"plan mode is read-only, so {what} is not allowed; leave plan mode "
                "(--permission-mode default, or /mode default) to make changes",
            )
        if (doubt := self._link_doubt(what, names, reads)) is not None and not self._names_file(tool, meta, real):
            return replace(doubt, suggestion=suggestion)
        for rule in self._rules("allow", tool, meta):
            if rule.specifier is None or path_pattern(rule.specifier, self.cwd).match(str(real)):
                return Decision("allow", "", rule=rule, reason="rule")
        if reads:
            return self._mode_read(what, path, real, use, suggestion)
        if self.protected(path) or self.protected(real):
            return Decision(
                "ask",
                f"{what}: it is heron's or git's configuration, a shell startup file, or holds credentials",
                suggestion=suggestion,
            )
        if self.mode == "accept-edits" or self._inside(real, self.cwd):
            return Decision("allow", "")
        return Decision("ask", f"{what}: it is outside the project ({self.cwd})", suggestion=suggestion)

    def _mode_read(self, what: str, path: Path, real: Path, use: PathUse, suggestion: str) -> Decision:
        """What the mode says about a read no rule decided: sensitive places ask."""
        if self._sensitive(path) or self._sensitive(real):
            return Decision("ask", f"{what}: the place holds credentials", suggestion=suggestion)
        if use.walks and not use.listing and (held := self._holds_sensitive(real)) is not None:  # reads contents
            return Decision(
                "ask",
                f"{what}: it would search {held}, which holds credentials; search a directory that does not contain it",
                suggestion=suggestion,
            )
        return Decision("allow", "")

    # --- hard links ---

    def _names(self, tool: str, meta: ToolMeta, real: Path, reads: bool) -> Names:
        """The other names of a hard-linked file, looked for where a rule or the mode could
        care: under the places the path rules name, the credentials' places, and for a write
        the project and the places the mode protects (:mod:`.links`)."""
        rules = [r for b in ("deny", "ask") for r in self._rules(b, tool, meta) if r.specifier is not None]
        places = [pattern_base(r.specifier or "", self.cwd) for r in rules] + self._sensitive_places()
        if not reads:
            places += [self.cwd, *self._protected_places()]
        return other_names(real, places)

    def _names_file(self, tool: str, meta: ToolMeta, real: Path) -> bool:
        """Whether an allow rule names this very file (no wildcard): the user's word for it,
        whatever its other names - a pattern (``Edit(src/**)``) is not."""
        return any(
            r.specifier
            and not any(c in r.specifier for c in "*?")
            and Path(
                os.path.realpath(
                    resolve_path(
                        r.specifier.removeprefix("/") if r.specifier.startswith("//") else r.specifier, self.cwd
                    )
                )
            )
            == real
            for r in self._rules("allow", tool, meta)
        )

    def _link_doubt(self, what: str, names: Names, reads: bool) -> Decision | None:
        """A file whose other names the mode would ask about, or that has names heron did not find."""
        for name in names.found:
            if reads and self._sensitive(name):
                return Decision("ask", f"{what}: it is another name (a hard link) of {name}, which holds credentials")
            if not reads and (self.protected(name) or (self.mode == "default" and not self._inside(name, self.cwd))):
                return Decision(
                    "ask",
                    f"{what}: it is another name (a hard link) of {name}, which this mode asks about writing",
                    reason="links",
                )
        return None if reads else self._unseen_names(what, names, deny_only=False)

    def _unseen_names(self, what: str, names: Names, *, deny_only: bool) -> Decision | None:
        """A write to a file with names heron did not find: it changes them too, so no rule
        can vouch for it (in bypass mode only when a deny rule could be behind one)."""
        if deny_only and (names.searched or not any(r.behavior == "deny" and r.specifier for r in self.rules)):
            return None
        if names.all_found and names.searched:
            return None
        return Decision(
            "ask",
            f"{what}: the file has {names.count} names (hard links) and heron found "
            f"{len(names.found)} of the others; writing it changes every one of them, so the rules "
            "cannot vouch for it",
            reason="links",
        )


def _linked(names: Names, rule: Rule, root: Path) -> str:
    """`` (another name of locked/f)`` when the rule matched a hard link's other name."""
    matched = [n for n in names.found if rule.specifier and path_pattern(rule.specifier, root).match(str(n))]
    return f" (it is another name, a hard link, of {matched[0]})" if matched else ""
