"""The permission decision for one tool call: allow, ask or deny, and why.

Order: a deny rule wins, then an ask rule, then (in bypass mode) anything goes, then an
allow rule, then what the mode does by default (:mod:`.modes`). One exception: plan mode
denies edits and writes even where an allow rule (``Edit(src/**)``) would let them through
(a bash allow rule does extend plan's read-only command list). Paths are checked on
what the call would really touch: the path as written and, after following symlinks
(even a dangling one), the file it lands on; a deny or ask rule matching either counts,
an allow rule must match the real target. A bash command is allowed only if every
command it runs is (:mod:`.shell`).

Rules from the project's own files (``.heron/settings.json`` and ``settings.local.json``,
which a repository can ship) may only restrict - their ``allow`` rules and
``defaultMode`` count once the project is trusted (``--trust``).
"""

from __future__ import annotations

import glob as globlib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heron.agent.tool_meta import PathUse, ToolCatalog, ToolKind, ToolMeta, path_argument
from heron.coding.permissions.modes import Mode, is_read_only, parse_mode
from heron.coding.permissions.rules import (
    Behavior,
    Rule,
    RuleError,
    command_matches,
    parse_rule,
    path_pattern,
    suggest_bash_rule,
    suggest_path_rule,
)
from heron.coding.permissions.scopes import Scope
from heron.coding.tools import builtin_meta
from heron.coding.tools.env import resolve_path

if TYPE_CHECKING:  # the shell parser loads with the first bash command judged, not at start
    from heron.coding.permissions.shell import SimpleCommand, Word

# Kinds of tools that touch no files and change nothing plan mode protects: searches (of the
# history, of a tool catalogue), reads of something other than files, the session's own task
# list and goal, and sub-agents, whose every call goes through this same engine (the child shares it).
PLAN_SAFE_KINDS: frozenset[ToolKind] = frozenset({"read", "search", "todo", "delegate", "goal", "compact"})
# What a shell command does to the files it names, as the path rules see it.
READING = ToolMeta(kind="read", paths=path_argument())
WRITING = ToolMeta(kind="write", paths=path_argument(access="write"))
# Programs whose file arguments they change: an Edit/Write rule covers those arguments.
WRITING_PROGRAMS = frozenset(
    {
        "cp",
        "mv",
        "rm",
        "rmdir",
        "unlink",
        "shred",
        "touch",
        "truncate",
        "tee",
        "mkdir",
        "ln",
        "chmod",
        "chown",
        "chgrp",
        "install",
        "rsync",
        "dd",
        "patch",
        "sed",
        "perl",
    }
)
MAX_GLOB_MATCHES = 1000  # files of one glob argument checked against the path rules
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


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict on one tool call: what happens, what the model is told and which rule (or
    mode) decided, so the ledger and ``--mode json`` can explain every allow and deny."""

    behavior: Behavior
    message: str  # what the model (and the user) is told
    rule: Rule | None = None
    suggestion: str | None = None  # a rule that would allow the call
    reason: str = "mode"  # rule | mode | parse | dynamic | always

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": self.behavior, "reason": self.reason, "message": self.message}
        if self.rule is not None:
            out["rule"] = self.rule.text
            out["source"] = self.rule.source
        if self.suggestion:
            out["suggestion"] = self.suggestion
        return out


@dataclass(eq=False, repr=False)
class PermissionEngine:
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

    def _rules(self, behavior: Behavior, tool: str, meta: ToolMeta) -> list[Rule]:
        return [r for r in self.rules if r.behavior == behavior and r.covers_tool(tool, meta)]

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

    # --- files ---

    def _file(self, tool: str, meta: ToolMeta, use: PathUse, path: Path) -> Decision:
        real = Path(os.path.realpath(path))
        candidates = {str(path), str(real)}
        if use.walks:  # `grep secrets/` reads what `Read(./secrets/**)` is about
            candidates |= {c.rstrip("/") + "/-" for c in list(candidates)}
        reads = use.access == "read"
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
                    return self._by_rule(behavior, rule, what, suggestion)
        if self.mode == "bypass":
            return Decision("allow", "")
        if self.mode == "plan" and not reads:  # read-only whatever allow rules say
            return Decision(
                "deny",
                f"plan mode is read-only, so {what} is not allowed; leave plan mode "
                "(--permission-mode default, or /mode default) to make changes",
            )
        for rule in self._rules("allow", tool, meta):
            if rule.specifier is None or path_pattern(rule.specifier, self.cwd).match(str(real)):
                return Decision("allow", "", rule=rule, reason="rule")
        if reads:
            if self._sensitive(path) or self._sensitive(real):
                return Decision("ask", f"{what}: the place holds credentials", suggestion=suggestion)
            if use.walks and not use.listing and (held := self._holds_sensitive(real)) is not None:  # reads contents
                return Decision(
                    "ask",
                    f"{what}: it would search {held}, which holds credentials; search a "
                    "directory that does not contain it",
                    suggestion=suggestion,
                )
            return Decision("allow", "")
        if self._protected(path) or self._protected(real):
            return Decision(
                "ask",
                f"{what}: it is heron's or git's configuration, a shell startup file, or holds credentials",
                suggestion=suggestion,
            )
        if self.mode == "accept-edits" or self._inside(real, self.cwd):
            return Decision("allow", "")
        return Decision("ask", f"{what}: it is outside the project ({self.cwd})", suggestion=suggestion)

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

    def _holds_sensitive(self, root: Path) -> Path | None:
        """A sensitive place a grep of ``root`` (``~`` or ``/``) would read."""
        user_home = Path(os.path.expanduser("~"))
        places = [user_home / name for name in SENSITIVE_HOME] + [Path(name) for name in SENSITIVE_SYSTEM]
        places += [self.home / "models.json", self.home / "auth.json"]
        return next((p for p in places if p != root and self._inside(p, root) and os.path.lexists(p)), None)

    def _protected(self, path: Path) -> bool:
        user_home = Path(os.path.expanduser("~"))
        inside = [self.cwd / ".heron", self.cwd / ".git", self.home, *(user_home / name for name in STARTUP_FILES)]
        return self._sensitive(path) or any(self._inside(path, root) for root in inside)

    # --- bash ---

    def _bash(self, tool: str, meta: ToolMeta, command: str) -> Decision:
        from heron.coding.permissions.shell import ShellParseError, split_commands

        try:
            parts = split_commands(command)
        except ShellParseError as exc:
            return self._unparsed(tool, meta, command, str(exc))
        decisions = [self._bash_part(tool, meta, part) for part in parts]
        for behavior in ("deny", "ask"):
            for decision in decisions:
                if decision.behavior == behavior:
                    return decision
        rules = [d.rule for d in decisions if d.rule is not None]
        return Decision("allow", "", rule=rules[0] if rules else None, reason="rule" if rules else "mode")

    def _unparsed(self, tool: str, meta: ToolMeta, command: str, why: str) -> Decision:
        if self.mode == "bypass":
            return Decision("allow", "")
        allows = self._rules("allow", tool, meta)
        rules = self._rules("deny", tool, meta) + self._rules("ask", tool, meta) + allows
        if self.mode != "plan" and not rules:
            return Decision("allow", "")
        exact = _exact_rule(command)
        if any(r.specifier is not None and _same_command(r.specifier, command) for r in allows):
            return Decision("allow", "", reason="rule")  # that very command line was allowed
        message = f'the command "{_short(command)}" cannot be checked against the permission rules ({why})'
        if self.mode == "plan":
            return Decision("deny", f"plan mode is read-only and {message}", reason="parse")
        return Decision("ask", message, suggestion=exact, reason="parse")

    def _bash_part(self, tool: str, meta: ToolMeta, part: SimpleCommand) -> Decision:
        words = [w.text for w in part.words]
        what = f'the command "{_short(part.text)}"' if words else "an output redirection"
        suggestion = suggest_bash_rule(words)
        variants = _variants(part)
        flagged = self._flag_allows(
            tool, meta, lambda spec: command_matches(spec, words) or _same_command(spec, part.text)
        )
        for behavior in ("deny", "ask"):
            rules = self._rules(behavior, tool, meta)
            for rule in rules:
                if rule.specifier is None or any(command_matches(rule.specifier, w, wild) for w, wild in variants):
                    if behavior == "ask" and flagged:
                        break
                    return self._by_rule(behavior, rule, what, suggestion)
            if rules and part.dynamic_name and self.mode != "bypass" and not flagged:
                return Decision(
                    "ask",
                    f"{what} runs a program whose name is computed when it runs, so the "
                    f'{behavior} rule "{rules[0].text}" cannot be checked',
                    reason="dynamic",
                    suggestion=_exact_rule(part.text),
                )
        if (written := self._redirect_rules(part)) is not None:
            return written
        if (touched := self._argument_rules(part)) is not None:
            return touched
        if self.mode == "bypass":
            return Decision("allow", "")
        for rule in self._rules("allow", tool, meta):
            if (
                rule.specifier is None
                or (not part.dynamic_name and command_matches(rule.specifier, words))
                or _same_command(rule.specifier, part.text)
            ):
                return Decision("allow", "", rule=rule, reason="rule")
        if self.mode == "plan" and (part.writes_files or part.dynamic_name or not is_read_only(words)):
            return Decision(
                "deny",
                f"plan mode is read-only and {what} is not a read-only command; leave plan "
                "mode (--permission-mode default, or /mode default) to make changes",
            )
        return Decision("allow", "")

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

    def _redirect_rules(self, part: SimpleCommand) -> Decision | None:
        """``echo x > /etc/hosts`` writes /etc/hosts: the Edit/Write deny and ask rules apply to
        the files a command's output redirections write (the mode's own asks do not: bash may
        write where it likes in default mode)."""
        for target in part.targets:
            if target.dynamic:
                rules = self._rules("deny", "write", WRITING) + self._rules("ask", "write", WRITING)
                if rules and self.mode != "bypass":
                    return Decision(
                        "ask",
                        f'the command "{_short(part.text)}" writes to {target.text}, a path '
                        f'computed when it runs, so the rule "{rules[0].text}" cannot be checked',
                        reason="dynamic",
                        suggestion=suggest_bash_rule([w.text for w in part.words]),
                    )
                continue
            decision = self._file_rules(WRITING, "write", resolve_path(target.text, self._runs_in(part)))
            if decision is not None:
                return decision
        return None

    def _argument_rules(self, part: SimpleCommand) -> Decision | None:
        """``cat secrets/key``, ``cp x /etc/hosts``: a Read or Edit/Write deny or ask rule with a
        path also covers a bash command naming a file it matches among its arguments (also after
        ``=``, as in ``dd if=…``). Only rules with a path count (a bare ``Read`` is about the
        tools), and the mode's own asks (sensitive places, outside the project) do not apply."""
        from heron.coding.permissions.wrappers import unwrap

        texts = [w.text for w in part.words]
        start = unwrap(texts)[-1] if texts else 0
        program = texts[start].rsplit("/", 1)[-1] if start < len(texts) else ""
        writes = program in WRITING_PROGRAMS and not (program == "sed" and is_read_only(texts[start:]))
        accesses = [
            meta
            for meta in ((READING, WRITING) if writes else (READING,))
            if any(r.specifier is not None for b in ("deny", "ask") for r in self._rules(b, meta.kind, meta))
        ]
        if not accesses:
            return None
        for word in part.words[start + 1 :]:
            for text in self._argument_paths(word):
                for meta in accesses:
                    decision = self._file_rules(meta, meta.kind, resolve_path(text, self._runs_in(part)), specific=True)
                    if decision is not None:
                        return decision
        return None

    def _runs_in(self, part: SimpleCommand) -> Path:
        """The directory a part of the line runs in (``cd dir && …`` moves the rest)."""
        return Path(os.path.normpath(self.cwd / part.cwd)) if part.cwd else self.cwd

    def _argument_paths(self, word: Word) -> list[str]:
        """The paths an argument may name: itself; ``$HOME/…`` with the home put in; for a glob
        (``secrets/*``, ``sec*/key``), the files it matches now and the directory before it."""
        text = word.text.split("=", 1)[1] if "=" in word.text else word.text
        if word.dynamic:
            text = text.replace("${HOME}", "~").replace("$HOME", "~")
            if "$" in text or "`" in text:
                return []  # computed when it runs
            at = min((text.index(c) for c in "*?[{" if c in text), default=-1)
            if at >= 0:
                head = text[: text.rfind("/", 0, at) + 1].rstrip("/")
                found = globlib.glob(os.path.expanduser(text), root_dir=self.cwd)[:MAX_GLOB_MATCHES]
                return [p for p in [head, *found] if p and not p.startswith("-")]
        return [] if not text or text.startswith("-") else [text]

    def _file_rules(self, meta: ToolMeta, tool: str, path: Path, specific: bool = False) -> Decision | None:
        """The deny or ask rule (only a rule) that a read (``meta`` :data:`READING`) or a
        change (:data:`WRITING`) of ``path`` by a shell command matches."""
        real = Path(os.path.realpath(path))
        verb = "reading" if meta.reads_files else "writing"
        what = f"{verb} {path}" + (f" (which leads to {real})" if real != path else "")
        candidates = [str(path), str(real)]
        if specific:  # a command's argument may be a directory it reads or writes all of (`tar c secrets`)
            candidates += [c.rstrip("/") + "/-" for c in candidates]
        for behavior in ("deny", "ask"):
            for rule in self._rules(behavior, tool, meta):
                if rule.specifier is None and specific:
                    continue
                if rule.specifier is None or any(path_pattern(rule.specifier, self.cwd).match(c) for c in candidates):
                    return self._by_rule(behavior, rule, what, suggest_path_rule(tool, meta, real))
        return None


def _same_command(specifier: str, command: str) -> bool:
    """A rule naming this exact command line (``Bash(echo 'hi' | sh)``): how a command the
    checker cannot split, or one that computes its program's name, is allowed."""
    return "*" not in specifier and " ".join(specifier.split()) == " ".join(command.split())


def _exact_rule(command: str) -> str:
    return f"Bash({' '.join(command.split())})"


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _variants(part: SimpleCommand) -> list[tuple[list[str], frozenset[int]]]:
    """The command as written and as the program it finally runs (``sudo rm`` -> ``rm``,
    ``/bin/rm`` -> ``rm``, ``git -C x push`` -> ``git push``), with the positions of words
    computed at run time."""
    from heron.coding.permissions.wrappers import git_variant, unwrap

    words = [w.text for w in part.words]
    wild = frozenset(i for i, w in enumerate(part.words) if w.dynamic)
    out: list[tuple[list[str], frozenset[int]]] = []
    for start in unwrap(words):
        rest = words[start:]
        shifted = frozenset(i - start for i in wild if i >= start)
        out.append((rest, shifted))
        base = rest[0].rsplit("/", 1)[-1]
        if base != rest[0]:
            out.append(([base, *rest[1:]], shifted))
        git = git_variant([base, *rest[1:]])
        if git is not None:
            dropped = len(rest) - len(git)
            out.append((git, frozenset(i - dropped for i in shifted if i - dropped >= 1)))
    return out
