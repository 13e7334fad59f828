"""The decision for a shell command: every command it runs, every file it names.

A command line is allowed only if every command in it is (:mod:`.shell` splits it). Each
command is checked, in order, against the Bash deny and ask rules (also as the program it
finally runs: ``sudo rm`` is ``rm``); the path rules for the files it writes by redirection,
names as arguments, or may write beneath a directory (:mod:`.trees`), and for the other
names of a hard-linked file it touches (:mod:`.links`); then whether its effect can be
bounded at all - a command that cannot (an interpreter reading its program from standard
input, ``make -f -``, ``bash <(…)``) is asked about wherever a rule could be got around, and
no allow rule but its exact line, nor the sandbox, lets it through; then the allow rules,
which cover a command only as far as :mod:`.coverage` says; then the mode.
"""

from __future__ import annotations

import glob as globlib
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from heron.agent.tool_meta import ToolMeta
from heron.coding.permissions.base import (
    FLAG_SOURCE,
    READING,
    WRITING,
    Decision,
    RuleBook,
    exact_rule,
    same_command,
    short,
)
from heron.coding.permissions.links import other_names
from heron.coding.permissions.modes import is_read_only
from heron.coding.permissions.rules import (
    Behavior,
    Rule,
    command_matches,
    path_pattern,
    pattern_base,
    suggest_path_rule,
)
from heron.coding.tools.env import resolve_path

if TYPE_CHECKING:  # the shell parser loads with the first bash command judged, not at start
    from heron.coding.permissions.shell import SimpleCommand, Word

MAX_GLOB_MATCHES = 1000
_NO_FILES = frozenset(
    {"echo", "printf", "true", "false", "test", "["}
)  # programs that open no file they are given  # files of one glob argument checked against the path rules


class CommandRules(RuleBook):
    """The shell-command half of the engine (module docstring)."""

    def _bash(self, tool: str, meta: ToolMeta, command: str) -> Decision:
        from heron.coding.permissions.scripts import script_parts, written_then_run
        from heron.coding.permissions.shell import ShellParseError, split_commands

        try:
            parts = split_commands(command)
        except ShellParseError as exc:
            return self.cannot_vouch(tool, meta, command, str(exc))
        parts += script_parts(parts, self._runs_in)
        written_then_run(parts, self._runs_in)
        decisions = [self._bash_part(tool, meta, part, command) for part in parts]
        for behavior in ("deny", "ask"):
            for decision in decisions:
                if decision.behavior == behavior:
                    return decision
        rules = [d.rule for d in decisions if d.rule is not None]
        return Decision("allow", "", rule=rules[0] if rules else None, reason="rule" if rules else "mode")

    def covers(self, specifier: str | None, part: SimpleCommand, command: str) -> bool:
        """Whether an allow rule with ``specifier`` covers ``part`` of ``command`` (:mod:`.coverage`)."""
        from heron.coding.permissions.coverage import covers

        return covers(specifier, part, command, self.beyond(part))

    def suggest(self, tool: str, part: SimpleCommand, command: str) -> str:
        from heron.coding.permissions.coverage import suggest

        return suggest(tool, part, command, self.beyond(part))

    def beyond(self, part: SimpleCommand) -> list[str]:
        """What ``part`` writes beyond the project and the places it may write unasked."""
        from heron.coding.permissions.coverage import Reach

        return Reach(self.cwd, self.protected).beyond(part, self._runs_in(part))

    def _bash_part(self, tool: str, meta: ToolMeta, part: SimpleCommand, command: str) -> Decision:
        words = [w.text for w in part.words]
        what = f'the command "{short(part.text)}"' if words else "an output redirection"
        flagged = self._flag_allows(tool, meta, lambda spec: self.covers(spec, part, command))
        if (ruled := self._command_rules(tool, meta, part, command, flagged)) is not None:
            return ruled
        if (touched := self._path_checks(tool, meta, part, command)) is not None:
            return touched
        if part.opaque and (doubt := self.cannot_vouch(tool, meta, command, part.opaque)).behavior != "allow":
            return doubt
        if part.implied or self.mode == "bypass":
            return Decision("allow", "")
        for rule in self._rules("allow", tool, meta):
            if self.covers(rule.specifier, part, command):
                return Decision("allow", "", rule=rule, reason="rule")
        if self.mode == "plan" and (part.writes_files or part.dynamic_name or not is_read_only(words)):
            return Decision(
                "deny",
                f"plan mode is read-only and {what} is not a read-only command; leave plan "
                "mode (--permission-mode default, or /mode default) to make changes",
            )
        return Decision("allow", "")

    def _command_rules(
        self, tool: str, meta: ToolMeta, part: SimpleCommand, command: str, flagged: bool
    ) -> Decision | None:
        """The Bash deny and ask rules, on the command as written and as the program it runs."""
        what = f'the command "{short(part.text)}"' if part.words else "an output redirection"
        variants = _variants(part)
        for behavior in ("deny", "ask"):
            rules = self._rules(behavior, tool, meta)
            for rule in rules:
                if rule.specifier is None or any(command_matches(rule.specifier, w, wild) for w, wild in variants):
                    if behavior == "ask" and flagged:
                        break
                    return self._by_rule(behavior, rule, what, self.suggest("Bash", part, command))
            if rules and part.dynamic_name and self.mode != "bypass" and not flagged:
                return Decision(
                    "ask",
                    f"{what} runs a program whose name is computed when it runs, so the "
                    f'{behavior} rule "{rules[0].text}" cannot be checked',
                    reason="dynamic",
                    suggestion=self.suggest("Bash", part, command),
                )
        return None

    def _path_checks(self, tool: str, meta: ToolMeta, part: SimpleCommand, command: str) -> Decision | None:
        """The path rules on the files the command touches. What they ask about can be allowed
        by a rule naming the exact command line (an ask *rule*'s question only by ``--allow``),
        and that line is the suggestion, so following the hint lets the command run."""
        exact = [r for r in self._rules("allow", tool, meta) if r.specifier and same_command(r.specifier, command)]
        for check in (self._redirect_rules, self._argument_rules, self._tree_rules):
            decision = check(part)
            if decision is None or decision.behavior == "deny":
                if decision is not None:
                    return decision
                continue
            if exact and (decision.reason != "rule" or any(r.source == FLAG_SOURCE for r in exact)):
                continue
            return replace(decision, suggestion=exact_rule(command))
        return None

    def _redirect_rules(self, part: SimpleCommand) -> Decision | None:
        """``echo x > /etc/hosts`` writes /etc/hosts, ``cat < secrets/key`` reads a file: the
        path deny and ask rules apply to the files of a command's redirections (the mode's own
        asks do not: bash may write where it likes in default mode)."""
        for operator, target in part.redirects:
            meta = WRITING if ">" in operator else READING
            if target.dynamic:
                rules = self._path_rules(("deny", "ask"), meta)
                if rules and self.mode != "bypass":
                    return self._computed(part, target.text, rules[0], "writes to" if meta is WRITING else "reads")
                continue
            decision = self._file_rules(meta, meta.kind, resolve_path(target.text, self._runs_in(part)))
            if decision is not None:
                return decision
        for target in part.targets:  # files hidden in its arguments (`sort -o f`)
            if not any(target is word for _, word in part.redirects):
                decision = self._file_rules(WRITING, "write", resolve_path(target.text, self._runs_in(part)), True)
                if decision is not None:
                    return decision
        return None

    def _computed(self, part: SimpleCommand, target: str, rule: Rule, verb: str) -> Decision:
        return Decision(
            "ask",
            f'the command "{short(part.text)}" {verb} {target}, a path computed when it runs, '
            f'so the rule "{rule.text}" cannot be checked',
            reason="dynamic",
            suggestion=self.suggest("Bash", part, part.text),
        )

    def _argument_rules(self, part: SimpleCommand) -> Decision | None:
        """``cat secrets/key``, ``cp x /etc/hosts``: a Read or Edit/Write deny or ask rule with a
        path also covers a bash command naming a file it matches among its arguments (also after
        ``=``, as in ``dd if=…``). Only rules with a path count (a bare ``Read`` is about the
        tools), and the mode's own asks (sensitive places, outside the project) do not apply.
        A changing program's argument computed when it runs (``cp x $D``), or given by ``xargs``,
        is asked about when an Edit/Write rule with a path exists."""
        from heron.coding.permissions.coverage import changes_operands
        from heron.coding.permissions.wrappers import unwrap

        texts = [w.text for w in part.words]
        start = unwrap(texts)[-1] if texts else 0
        program = texts[start].rsplit("/", 1)[-1] if start < len(texts) else ""
        writes = changes_operands(texts[start:])
        accesses = [m for m in ((READING, WRITING) if writes else (READING,)) if self._path_rules(("deny", "ask"), m)]
        if not accesses:
            return None
        for word in part.words[start + 1 :]:
            if word.text == "{}" and part.fed:
                continue  # what find gives it: its roots are checked as trees
            paths = self._argument_paths(word)
            computed = word.dynamic and any(mark in word.text for mark in ("$", "`", "{}"))
            if writes and WRITING in accesses and not paths and computed and not word.text.startswith("-"):
                return self._computed(part, word.text, self._path_rules(("deny", "ask"), WRITING)[0], "writes to")
            for text in paths:
                for meta in accesses:
                    decision = self._file_rules(meta, meta.kind, resolve_path(text, self._runs_in(part)), specific=True)
                    if decision is not None:
                        return decision
        if part.fed is not None and not part.fed and (writes or program not in _NO_FILES | {"xargs", "parallel"}):
            meta = WRITING if writes and WRITING in accesses else READING
            verb = "writes to" if meta is WRITING else "reads"
            return self._computed(
                part, "the files xargs (or parallel) gives it", self._path_rules(("deny", "ask"), meta)[0], verb
            )
        return None

    def _tree_rules(self, part: SimpleCommand) -> Decision | None:
        """A command that may write anything beneath a directory (``tar -x -C d``, ``cp -r a d``,
        ``rm -r d``, ``find d -exec cp x {} ;``) or reads everything beneath one (``grep -r x d``,
        ``tar -c d``, ``find d -exec cat {} +``): a path rule whose place lies in that directory
        (or that matches it) cannot be checked file by file, so it asks (or the rule decides)."""
        from heron.coding.permissions.coverage import changes_operands

        writes, reads = list(part.trees), list(part.read_trees)
        if part.fed:  # `find d -exec CMD {} ;` runs CMD on what it finds under d
            reads += part.fed
            if changes_operands([w.text for w in part.words]):
                writes += part.fed
        for meta, trees in ((WRITING, writes), (READING, reads)):
            rules = self._path_rules(("deny", "ask"), meta)
            for tree in trees if rules else []:
                if (decision := self._tree(part, meta, tree, rules)) is not None:
                    return decision
        return None

    def _tree(self, part: SimpleCommand, meta: ToolMeta, tree: Word, rules: list[Rule]) -> Decision | None:
        verb = "reads everything" if meta is READING else "may write anything"
        if tree.dynamic:
            where = "reads beneath" if meta is READING else "writes beneath"
            return self._computed(part, tree.text, rules[0], where) if self.mode != "bypass" else None
        path = resolve_path(tree.text, self._runs_in(part))
        if (decision := self._file_rules(meta, meta.kind, path, specific=True)) is not None:
            return decision
        real = Path(os.path.realpath(path))
        for rule in rules:
            base = pattern_base(rule.specifier or "", self.cwd)
            if not (self._inside(base, real) or self._inside(real, base)):
                continue
            if meta is READING and not _holds_match(max(base, real, key=lambda p: len(p.parts)), rule, self.cwd):
                continue  # nothing there the rule protects: nothing to read
            return Decision(
                "ask",
                f'the command "{short(part.text)}" {verb} beneath {real}, where the {rule.behavior} rule '
                f'"{rule.text}" ({rule.source}) protects {base}: which files it touches there is known '
                "only when it runs",
                rule=rule,
                reason="tree",
            )
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
            if "$" in text or "`" in text or "{}" in text:
                return []  # computed when it runs
            at = min((text.index(c) for c in "*?[{" if c in text), default=-1)
            if at >= 0:
                head = text[: text.rfind("/", 0, at) + 1].rstrip("/")
                found = globlib.glob(os.path.expanduser(text), root_dir=self.cwd)[:MAX_GLOB_MATCHES]
                return [p for p in [head, *found] if p and not p.startswith("-")]
        return [] if not text or text.startswith("-") else [text]

    def _file_rules(self, meta: ToolMeta, tool: str, path: Path, specific: bool = False) -> Decision | None:
        """The deny or ask rule (only a rule) that a read (``meta`` :data:`READING`) or a
        change (:data:`WRITING`) of ``path`` by a shell command matches - by its name, the
        file it leads to, or another name of that file (a hard link)."""
        real = Path(os.path.realpath(path))
        verb = "reading" if meta.reads_files else "writing"
        what = f"{verb} {path}" + (f" (which leads to {real})" if real != path else "")
        candidates = [str(path), str(real)]
        if specific:  # a command's argument may be a directory it reads or writes all of (`tar c secrets`)
            candidates += [c.rstrip("/") + "/-" for c in candidates]
        rules: list[tuple[Behavior, Rule]] = [(b, r) for b in ("deny", "ask") for r in self._rules(b, tool, meta)]
        rules = [(b, r) for b, r in rules if r.specifier is not None or not specific]
        names = other_names(real, [pattern_base(r.specifier, self.cwd) for _, r in rules if r.specifier])
        candidates += [str(name) for name in names.found]
        for behavior, rule in rules:
            if rule.specifier is None or any(path_pattern(rule.specifier, self.cwd).match(c) for c in candidates):
                linked = f" (a hard link of {', '.join(map(str, names.found))})" if names.found else ""
                return self._by_rule(behavior, rule, what + linked, suggest_path_rule(tool, meta, real))
        if not names.searched and rules and self.mode != "bypass":
            return Decision(
                "ask",
                f"{what}: the file has {names.count} names (hard links), and heron could not look "
                f'everywhere the rule "{rules[0][1].text}" protects for the others',
                reason="links",
            )
        return None


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


def _holds_match(root: Path, rule: Rule, project: Path, budget: int = 20_000) -> bool:
    """Whether a file under ``root`` matches the path rule (or the search ran out of budget)."""
    pattern = path_pattern(rule.specifier or "", project)
    if pattern.match(str(root)):
        return True
    for directory, dirs, files in os.walk(root):
        budget -= len(dirs) + len(files)
        if budget <= 0 or any(pattern.match(os.path.join(directory, name)) for name in files + dirs):
            return True
    return False
