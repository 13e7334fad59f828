"""Command hooks in Claude Code's format: programs run at points of a session.

``"hooks"`` in a settings file maps an event (``PreToolUse``, ``PostToolUse``,
``UserPromptSubmit``, ``SessionStart``, ``Stop``, ``PreCompact``, ``SubagentStop``) to a list
of ``{"matcher": "<tool regex>", "hooks": [{"type": "command", "command": "...",
"timeout": 60}]}``. A matcher is matched against heron's tool name and Claude Code's, by
what the tool declares (``Bash`` matches every tool that runs shell commands, ``Read``
every ``read``-kind tool with files, ``Grep`` the tool whose alias it is); an empty or
missing matcher (or ``*``) matches every tool.

Each hook gets a JSON object on stdin (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, and per event ``tool_name``/``tool_input``/``tool_response``,
``prompt`` ...). Exit code 2 blocks, with stderr as the reason the model sees; JSON on
stdout may give ``decision`` (``block``/``approve``), ``reason``, ``additionalContext`` and
``compact`` (``true`` or the focus text: a ``UserPromptSubmit`` hook asks for a compaction
before the turn's first request; also inside ``hookSpecificOutput``). The hooks of one event run in parallel; a hook
that fails, prints garbage or outlives its timeout is killed and reported, and the
session goes on. Hooks run with the same environment bash gets: without heron's keys.

A ``Stop`` (or ``SubagentStop``) hook that blocks - exit 2 with stderr, or
``{"decision": "block", "reason": ...}`` - makes the agent go on, with the reason as a
new hook-originated message; ``stop_hook_active`` is true in the next one's stdin, and
``hooks.maxContinuations`` (default 5) caps how often that happens per prompt.
``{"continue": false}`` always lets it stop. See docs/hooks.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal as signals
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heron.agent.tool_meta import ToolCatalog, ToolKind, ToolMeta
from heron.coding.permissions.scopes import Scope
from heron.coding.sandbox import Confinement
from heron.coding.tools import builtin_meta
from heron.coding.tools.lifeline import die_with_heron, mark_call

EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart", "Stop", "PreCompact", "SubagentStop")
TOOL_EVENTS = ("PreToolUse", "PostToolUse")
DEFAULT_TIMEOUT = 60.0
STOP_EVENTS = ("Stop", "SubagentStop")
CONTINUATIONS_KEY = "maxContinuations"  # in "hooks", beside the events: the cap on Stop continuations
DEFAULT_MAX_CONTINUATIONS = 5
# custom_type of the message a blocking Stop/SubagentStop hook adds (in context as a user message)
HOOK_MESSAGE_TYPE = "heron.hook_feedback"
OUTPUT_LIMIT = 64 * 1024  # characters of a hook's stdout/stderr kept
# What Claude Code calls a tool of each kind (one with files, or a shell command), so a
# matcher written for Claude Code matches; other names come from a tool's aliases.
CLAUDE_KIND_NAMES: dict[ToolKind, str] = {"read": "Read", "edit": "Edit", "write": "Write", "execute": "Bash"}


def tool_names(tool: str, meta: ToolMeta) -> set[str]:
    """The names a hook matcher may use for ``tool``: its own, its aliases, Claude Code's."""
    names = {tool, *meta.aliases}
    claude = CLAUDE_KIND_NAMES.get(meta.kind)
    if claude is not None and (meta.paths is not None or meta.command is not None):
        names.add(claude)
    return names


@dataclass(frozen=True, slots=True)
class CommandHook:
    """One command a settings hook runs, with its timeout and the settings file it came from
    (reported when it fails or blocks)."""

    command: str
    timeout: float
    source: str


@dataclass(frozen=True, slots=True)
class HookGroup:
    """The hooks of one event whose matcher selects the tools (or sub-agent types) they
    run for; the matcher is compiled once, when the settings are read."""

    event: str
    matcher: re.Pattern[str] | None
    hooks: tuple[CommandHook, ...]

    def matches(self, names: set[str] | None) -> bool:
        """``names``: what the tool (or the sub-agent type) is called; None: not about one."""
        if self.matcher is None or names is None:
            return True
        return any(self.matcher.fullmatch(name) for name in names)


@dataclass(slots=True)
class HookRun:
    """What one hook did."""

    hook: CommandHook
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str | None = None
    output: dict[str, Any] | None = None  # JSON stdout

    @property
    def failed(self) -> bool:
        return self.timed_out or self.error is not None or self.exit_code not in (0, 2)

    def problem(self) -> str:
        name = _short(self.hook.command)
        if self.timed_out:
            return f"hook `{name}` timed out after {self.hook.timeout:g} s and was killed"
        if self.error is not None:
            return f"hook `{name}` could not run: {self.error}"
        detail = self.stderr.strip().splitlines()[-1] if self.stderr.strip() else "no message"
        return f"hook `{name}` failed with exit code {self.exit_code}: {detail}"


@dataclass(slots=True)
class HookOutcome:
    """All hooks of one event, combined."""

    runs: list[HookRun] = field(default_factory=list)
    blocked: bool = False
    halted: bool = False  # {"continue": false}: stop whatever else was asked
    approved: bool = False
    reasons: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    compact: bool = False  # {"compact": true | "focus"}: a compaction before the next request
    compact_focus: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return [run.problem() for run in self.runs if run.failed]

    @property
    def reason(self) -> str:
        return "\n".join(r for r in self.reasons if r)


def parse_hooks(scopes: Iterable[Scope], *, trusted: bool, warnings: list[str]) -> list[HookGroup]:
    """The hook groups of the user's file, and of the project's files when it is trusted."""
    groups: list[HookGroup] = []
    for scope in scopes:
        section = scope.data.get("hooks")
        if not isinstance(section, Mapping) or not section:
            continue
        if scope.name != "user" and not trusted:
            warnings.append(f"{scope.path}: project hooks run only in a trusted project (run with --trust); ignored")
            continue
        for event, entries in section.items():
            where = f"{scope.path}: hooks.{event}"
            if event == CONTINUATIONS_KEY:
                continue
            if event not in EVENTS:
                warnings.append(f"{where}: unknown event (one of {', '.join(EVENTS)}); ignored")
                continue
            if not isinstance(entries, list):
                warnings.append(f"{where} must be an array of {{matcher, hooks}} objects; ignored")
                continue
            groups.extend(g for g in (_group(event, e, where, str(scope.path), warnings) for e in entries) if g)
    return groups


def max_continuations(scopes: Iterable[Scope], *, trusted: bool, warnings: list[str]) -> int:
    """``hooks.maxContinuations``: the last file that sets it (and counts) wins."""
    cap = DEFAULT_MAX_CONTINUATIONS
    for scope in scopes:
        section = scope.data.get("hooks")
        if not isinstance(section, Mapping) or CONTINUATIONS_KEY not in section:
            continue
        if scope.name != "user" and not trusted:
            continue  # reported with the project's hooks
        value = section[CONTINUATIONS_KEY]
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            cap = value
        else:
            warnings.append(
                f"{scope.path}: hooks.{CONTINUATIONS_KEY} must be a whole number >= 0; {DEFAULT_MAX_CONTINUATIONS} used"
            )
    return cap


def claude_tool_input(meta: ToolMeta, args: Mapping[str, Any], cwd: Path) -> dict[str, Any]:
    """``tool_input`` for a hook: heron's arguments plus Claude Code's names for them
    (``file_path`` absolute - the first file a read, edit or write tool declares -,
    ``old_string``/``new_string``), so a hook written for Claude Code
    (``jq -r .tool_input.file_path``) works unchanged."""
    out = dict(args)
    uses = meta.uses(args) if meta.kind in ("read", "edit", "write") else []
    if uses:
        out.setdefault("file_path", uses[0].resolved(cwd))
    if meta.kind == "edit":
        for ours, theirs in (("old_text", "old_string"), ("new_text", "new_string")):
            if ours in args:
                out.setdefault(theirs, args[ours])
    return out


def continuation(outcome: HookOutcome) -> str | None:
    """What a Stop/SubagentStop outcome asks the agent to do next: the reason to go on
    with, or None to stop."""
    if not outcome.blocked or outcome.halted:
        return None
    return outcome.reason or "A stop hook asked you to keep going."


def _group(event: str, entry: Any, where: str, source: str, warnings: list[str]) -> HookGroup | None:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("hooks"), list):
        warnings.append(f'{where}: each entry needs a "hooks" array; ignored')
        return None
    matcher_text = entry.get("matcher")
    matcher: re.Pattern[str] | None = None
    if isinstance(matcher_text, str) and matcher_text.strip() not in ("", "*"):
        try:
            matcher = re.compile(matcher_text)
        except re.error as exc:
            warnings.append(f"{where}: matcher {matcher_text!r} is not a regular expression ({exc}); ignored")
            return None
    hooks: list[CommandHook] = []
    for hook in entry["hooks"]:
        if (
            not isinstance(hook, Mapping)
            or hook.get("type", "command") != "command"
            or not isinstance(hook.get("command"), str)
            or not hook["command"].strip()
        ):
            warnings.append(f'{where}: a hook must be {{"type": "command", "command": "..."}}; ignored')
            continue
        timeout = hook.get("timeout", DEFAULT_TIMEOUT)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            warnings.append(f"{where}: timeout must be a positive number of seconds; {DEFAULT_TIMEOUT:g} used")
            timeout = DEFAULT_TIMEOUT
        hooks.append(CommandHook(hook["command"], float(timeout), source))
    return HookGroup(event, matcher, tuple(hooks)) if hooks else None


class HookRunner:
    """Runs the configured hooks of an event."""

    kill_grace = 1.0

    def __init__(
        self,
        groups: list[HookGroup],
        cwd: Path,
        child_env: Callable[[], dict[str, str]],
        tools: ToolCatalog | None = None,
        confine: Callable[[list[str], Path], Confinement] | None = None,
        home: Path | None = None,
    ) -> None:
        self.groups = groups
        self.cwd = cwd
        self.child_env = child_env
        # a hook's argv in the sandbox when ``sandbox.hooks`` is on (docs/hooks.md); None: as it is
        self.confine = confine
        self.home = home  # where leftovers of a killed heron are recorded (tools/lifeline.py); None: not
        # what each tool is (the session's tools; built-in names by default): how matchers match
        self.tools = tools if tools is not None else ToolCatalog(fallback=builtin_meta)

    def _names(self, tool: str | None, is_tool: bool) -> set[str] | None:
        if tool is None:
            return None
        return tool_names(tool, self.tools.meta(tool)) if is_tool else {tool}

    def has(self, event: str, tool: str | None = None) -> bool:
        """``tool``: the tool (or, for SubagentStop, the sub-agent type) the event is about."""
        names = self._names(tool, event in TOOL_EVENTS)
        return any(g.event == event and g.matches(names) for g in self.groups)

    async def run(self, event: str, payload: dict[str, Any], tool: str | None = None) -> HookOutcome:
        names = self._names(tool, event in TOOL_EVENTS)
        hooks = [h for g in self.groups if g.event == event and g.matches(names) for h in g.hooks]
        outcome = HookOutcome()
        if not hooks:
            return outcome
        body = json.dumps({**payload, "hook_event_name": event, "cwd": str(self.cwd)}, default=str)
        outcome.runs = list(await asyncio.gather(*(self._run_one(h, body) for h in hooks)))
        for run in outcome.runs:
            _combine(outcome, run)
        return outcome

    async def _run_one(self, hook: CommandHook, body: str) -> HookRun:
        run = HookRun(hook)
        env = {**self.child_env(), "HERON_PROJECT_DIR": str(self.cwd), "CLAUDE_PROJECT_DIR": str(self.cwd)}
        argv = ["/bin/sh", "-c", hook.command]  # what create_subprocess_shell runs
        confinement = self.confine(argv, self.cwd) if self.confine is not None else Confinement.none(argv)
        mark = mark_call(env, self.home)  # released when the hook has returned (tools/lifeline.py)
        try:
            proc = await asyncio.create_subprocess_exec(
                *confinement.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=str(self.cwd),
                env=mark.env,
                start_new_session=True,
                # outside the sandbox the hook dies with heron, what it starts is reaped later
                preexec_fn=None if confinement.confined else die_with_heron,
            )
        except OSError as exc:
            mark.release()
            run.error = str(exc)
            return run
        try:
            out, err = await asyncio.wait_for(proc.communicate(body.encode()), timeout=hook.timeout)
        except TimeoutError:
            run.timed_out = True
            await _kill(proc, self.kill_grace)
            mark.release()
            return run
        except BaseException:
            await _kill(proc, self.kill_grace)
            raise
        mark.release()
        run.exit_code = confinement.exit_status(proc.returncode)
        run.stdout = out.decode("utf-8", "replace")[:OUTPUT_LIMIT]
        run.stderr = err.decode("utf-8", "replace")[:OUTPUT_LIMIT]
        text = run.stdout.strip()
        if run.exit_code == 0 and text.startswith("{"):
            with contextlib.suppress(ValueError):
                parsed = json.loads(text)
                run.output = parsed if isinstance(parsed, dict) else None
        return run


def _combine(outcome: HookOutcome, run: HookRun) -> None:
    if run.exit_code == 2:
        outcome.blocked = True
        outcome.reasons.append(run.stderr.strip() or f"blocked by hook `{_short(run.hook.command)}`")
        return
    if run.failed or run.exit_code != 0:
        return
    data = run.output
    if data is None:
        if run.stdout.strip():
            outcome.context.append(run.stdout.strip())  # plain stdout: context (prompt and session hooks)
        return
    nested = data.get("hookSpecificOutput")
    specific: dict[str, Any] = nested if isinstance(nested, dict) else {}
    decision = str(data.get("decision") or specific.get("permissionDecision") or "").lower()
    reason = data.get("reason") or specific.get("permissionDecisionReason") or data.get("stopReason")
    if data.get("continue") is False:
        outcome.halted = True
    if decision in ("block", "deny") or data.get("continue") is False:
        outcome.blocked = True
        outcome.reasons.append(str(reason or f"blocked by hook `{_short(run.hook.command)}`"))
    elif decision in ("approve", "allow"):
        outcome.approved = True
    for value in (data.get("additionalContext"), specific.get("additionalContext")):
        if isinstance(value, str) and value.strip():
            outcome.context.append(value.strip())
    for value in (data.get("compact"), specific.get("compact")):
        if value is True or (isinstance(value, str) and value.strip()):
            outcome.compact = True
            if isinstance(value, str):
                outcome.compact_focus.append(value.strip())


async def _kill(proc: asyncio.subprocess.Process, grace: float) -> None:
    for sig in (signals.SIGTERM, signals.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            await asyncio.wait_for(proc.wait(), timeout=grace)
            return
        except TimeoutError:
            continue


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
