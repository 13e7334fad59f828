"""Control over what the agent does: permissions, hooks, secrets and checkpoints, in one
place the runtime calls at a few points (before/after each tool call, before/after each
prompt, before a compaction).

The runtime builds one :class:`Control` per session, which sets itself as the agent's
``before_tool_call`` / ``after_tool_call`` and gives the tool environment the bash
timeouts and the child environment without secrets. Every decision becomes a
ledger record (so it is in the session file and the event stream); a denied call is a
tool result with ``is_error`` and the run goes on.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from heron.agent.messages import AgentMessage, ExtensionMessage
from heron.agent.tool_meta import OTHER, ToolMeta
from heron.agent.tools import AfterToolCallResult, BeforeToolCallResult, ToolCallContext, ToolResult
from heron.ai.types import AssistantMessage, StopReason, TextContent
from heron.coding.checkpoints.session import Checkpoints
from heron.coding.hooks import (
    HOOK_MESSAGE_TYPE,
    HookOutcome,
    HookRunner,
    claude_tool_input,
    continuation,
    max_continuations,
    parse_hooks,
)
from heron.coding.housekeeping import Housekeeping
from heron.coding.memory_watch import MemoryWatch, WatchedSession
from heron.coding.permissions import Decision, Mode, PermissionEngine, add_local_rule, load_scopes, parse_mode
from heron.coding.permissions.trust import is_trusted, remember_trust
from heron.coding.sandbox import SANDBOX_MODES, Confinement, Sandbox, SandboxMode, sandbox_policy
from heron.coding.sandbox.confine import note_said
from heron.coding.sandbox.escalation import PARAMETER, escalation_decision
from heron.coding.secrets import (
    REDACTOR,
    SecretPolicy,
    known_secret_values,
    redact,
    redact_message,
    url_passwords,
)
from heron.coding.settings import Settings
from heron.coding.tools.confined import NOT_APPROVED
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.lifeline import reap_leftovers
from heron.context.records.ledger import LedgerRecord
from heron.context.tool_output.spill import set_scrub

log = logging.getLogger(__name__)

Answer = Literal["allow_once", "allow_always", "deny"]


@dataclass(frozen=True, slots=True)
class PermissionPrompt:
    """An "ask": what a UI (interactive, rpc) shows the user."""

    call_id: str
    tool: str
    args: dict[str, Any]
    decision: Decision
    meta: ToolMeta = OTHER  # what the tool is: how a UI shows the call


@dataclass(frozen=True, slots=True)
class AskReply:
    """The user's answer to a permission prompt; a denial carries the reason the model is told,
    so it can change course rather than retry the same call."""

    answer: Answer
    reason: str | None = None  # deny: what the model is told


Asker = Callable[[PermissionPrompt], Awaitable[AskReply]]
# what a turn is run on: a message, several (the user's queued ones), or None (on from the messages)
StepInput = AgentMessage | list[AgentMessage] | None
RunTurn = Callable[[StepInput], Awaitable[list[AgentMessage]]]


class SessionLike(WatchedSession, Protocol):
    """What control uses of its session, besides what its memory watch does: where it runs,
    its settings and key (the secrets it redacts), and the tool environment it confines."""

    home: Path
    settings: Settings
    api_key: str | None
    env: ToolEnv


class Control:
    def __init__(self, session: SessionLike) -> None:
        self.session = session
        self.cwd = session.cwd
        self.home = session.home
        self.trusted = is_trusted(self.cwd, self.home)
        self.asker: Asker | None = None  # None: an "ask" is denied with how to allow it
        self.questions_open = 0  # permission questions waiting for the user's answer
        self.cli_rules: list[str] = []
        self._notes: dict[str, list[str]] = {}  # call id -> hook problems to show with its result
        # "allow always" given to an explicit ask rule: (rule, suggestion) pairs approved for this
        # process. A saved allow rule could not do it (an ask rule beats any allow rule), and the
        # user's ask rule is theirs to remove.
        self._session_approvals: set[tuple[str, str | None]] = set()
        self._outside_approved: set[str] = set()  # call ids approved to run outside the sandbox, once each
        self._started = False
        self._compact_asked: tuple[str | None] | None = None  # a UserPromptSubmit hook's compaction request
        self.stop_event = "Stop"  # "SubagentStop" in a sub-agent (as_subagent)
        self.subagent_fields: dict[str, Any] = {}
        self.sandbox_mode: SandboxMode | None = None  # ``--sandbox``: instead of the settings' mode
        self._parent: Control | None = None
        self._load()
        # tool children a heron that died without exiting left running (docs/permissions.md,
        # "Processes"): one directory listing when there are none
        reap_leftovers(self.home)
        self.checkpoints = Checkpoints(
            self.cwd,
            self.home,
            keep_days=session.settings.checkpoint_keep_days,
            exclude=session.settings.checkpoint_exclude,
        )
        # what waits for the first model response (docs/architecture.md, "The critical path of a turn")
        self.housekeeping = Housekeeping()
        self.housekeeping.add(self.checkpoints.housekeeping)
        self.memory_watch = MemoryWatch(session)  # project memory's history (heron.coding.memory_watch)
        self.housekeeping.add(self.memory_watch.sync_outside)
        session.env.child_env = self.child_env
        session.env.confine = self.confine
        session.env.confine_outside = self.confine_outside
        session.env.bash_default_timeout = session.settings.bash.default_timeout_ms / 1000
        session.env.bash_max_timeout = session.settings.bash.max_timeout_ms / 1000
        session.agent.before_tool_call = self.before_tool_call
        session.agent.after_tool_call = self.after_tool_call
        # secrets out of everything written (docs/permissions.md, "Secrets"): messages as the agent
        # adds them (subscribed before the session recorder, so the file gets the redacted ones),
        # the session file's lines, spill files
        session.agent.subscribe(self._redact_event)
        session.agent.subscribe(self._on_response)
        session.store.scrub = redact
        set_scrub(REDACTOR)

    def _load(self, mode: Mode | None = None) -> None:
        scopes = load_scopes(self.cwd, self.home)
        self.warnings: list[str] = []
        self.permissions = PermissionEngine.from_scopes(self.cwd, self.home, scopes, trusted=self.trusted)
        self.permissions.tools = self.session.tool_catalog  # what each of the session's tools is
        if mode is not None:
            self.permissions.mode = mode
        self.permissions.add_rules("allow", self.cli_rules, "--allow")
        pass_through = [
            name
            for s in scopes
            if s.name == "user" or self.trusted
            for name in (s.data.get("env", {}).get("passThrough") or [])
        ]
        self.secrets = SecretPolicy.for_heron(self.home, pass_through, [self.session.api_key])
        REDACTOR.add(known_secret_values(self.secrets, self.home))
        REDACTOR.add(url_passwords(self.session.agent.state.model.base_url))
        self.hooks = HookRunner(
            parse_hooks(scopes, trusted=self.trusted, warnings=self.warnings),
            self.cwd,
            self.child_env,
            self.session.tool_catalog,
            confine=lambda argv, cwd: self.confine_hook(argv, cwd),
            home=self.home,
        )
        self.max_continuations = max_continuations(scopes, trusted=self.trusted, warnings=self.warnings)
        self.sandbox = Sandbox(
            lambda: sandbox_policy(
                scopes,
                self.permissions.rules,
                project=self.cwd,
                home=self.home,
                trusted=self.trusted,
                override=self.sandbox_mode,
            ),
            said=lambda reason: note_said(self.session.store, reason),  # once per session, from its file
        )
        self.warnings.extend(self.sandbox.policy().warnings)
        self.warnings.extend(self.permissions.warnings)

    # --- configuration (flags, /mode) ---------------------------------------------------

    def trust(self, remember: bool = True) -> None:
        """Trust the project: its hooks and allow rules count from now on."""
        self.trusted = True
        if remember:
            remember_trust(self.cwd, self.home)
        self._load(self.permissions.mode)

    def set_mode(self, mode: str) -> Mode:
        parsed = parse_mode(mode)
        self.permissions.mode = parsed
        return parsed

    def set_sandbox(self, mode: str) -> SandboxMode:
        """``--sandbox MODE``; ValueError for a mode heron does not have."""
        if mode not in SANDBOX_MODES:
            raise ValueError(f"--sandbox {mode!r}: the modes are {', '.join(SANDBOX_MODES)} (docs/permissions.md)")
        self.sandbox_mode = mode
        return self.sandbox_mode

    def confine(self, argv: list[str], cwd: Path) -> Confinement:
        """A command's argv in the session's sandbox (docs/permissions.md, "Sandbox")."""
        return self.sandbox.confine(argv, cwd)

    def allow(self, rules: list[str]) -> list[str]:
        """``--allow`` rules; returns the problems of rules that could not be read."""
        self.cli_rules.extend(rules)
        return self.permissions.add_rules("allow", rules, "--allow")

    def _redact_event(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        message = getattr(event, "message", None)
        if kind == "message_end" or (kind == "message_start" and not isinstance(message, AssistantMessage)):
            redact_message(message)

    def _on_response(self, event: Any) -> None:
        """The first answer is arriving, so the first request is out: the turn's checkpoint
        snapshot and housekeeping may start."""
        if getattr(event, "type", "") in ("message_update", "message_end") and isinstance(
            getattr(event, "message", None), AssistantMessage
        ):
            self.checkpoints.release()
            if not self.housekeeping.started:
                self.housekeeping.start()

    def key_changed(self, api_key: str | None) -> None:
        """A new key is in use (a model switch): keep it from children and outputs too."""
        self.secrets.secret_values |= {api_key} if api_key and len(api_key) >= 8 else set()
        REDACTOR.add([api_key, *url_passwords(self.session.agent.state.model.base_url)])

    def child_env(self) -> dict[str, str]:
        return self.secrets.child_environment()

    def _record(
        self,
        kind: Literal["permission", "hook"],
        call_id: str | None,
        tool: str | None,
        recover: str,
        detail: dict[str, Any],
    ) -> None:
        try:
            self.session.ledger.add(LedgerRecord(kind=kind, ref=call_id, tool=tool, recover=recover, detail=detail))
        except Exception:  # recording must never break a run
            log.exception("could not record a %s decision", kind)

    def as_subagent(self, parent: Control, agent_type: str) -> None:
        """This session is a sub-agent of ``parent``'s: its stop is a ``SubagentStop``
        (session and transcript are the parent's, ``agent_*`` the child's), and the
        prompt hooks (SessionStart, UserPromptSubmit) are the parent's business, not run."""
        self._parent, self._started = parent, True
        self.stop_event = "SubagentStop"
        self.max_continuations = parent.max_continuations
        store = self.session.store
        self.subagent_fields = {
            "agent_id": store.session_id,
            "agent_type": agent_type,
            "agent_transcript_path": str(store.path) if store.path else None,
        }

    def _payload(self, **extra: Any) -> dict[str, Any]:
        if self._parent is not None:
            return self._parent._payload(**extra)
        store = self.session.store
        path = getattr(store, "path", None)
        return {"session_id": store.session_id, "transcript_path": str(path) if path else None, **extra}

    def _hook_problems(self, event: str, outcome: HookOutcome, call_id: str | None = None) -> list[str]:
        problems = outcome.problems
        for problem in problems:
            log.warning("%s: %s", event, problem)
            self._record("hook", call_id, None, problem, {"event": event, "problem": problem})
        return problems

    # --- tool calls ------------------------------------------------------------------------

    async def before_tool_call(self, ctx: ToolCallContext) -> BeforeToolCallResult | None:
        call, tool = ctx.tool_call, ctx.tool_call.name
        args = ctx.params.model_dump() if hasattr(ctx.params, "model_dump") else dict(call.arguments)
        approved = False
        meta = self.permissions.tools.meta(tool)
        await self.checkpoints.before_change(tool, meta.kind)  # one that can change files waits for the snapshot
        if self.hooks.has("PreToolUse", tool):
            await self._before_hook()
            outcome = await self.hooks.run(
                "PreToolUse", self._payload(tool_name=tool, tool_input=claude_tool_input(meta, args, self.cwd)), tool
            )
            self._notes[call.id] = self._hook_problems("PreToolUse", outcome, call.id)
            if outcome.context:
                self._notes[call.id].extend(outcome.context)
            if outcome.blocked:
                reason = outcome.reason
                self._record("hook", call.id, tool, reason, {"event": "PreToolUse", "decision": "block"})
                return BeforeToolCallResult(block=True, reason=f"A PreToolUse hook blocked this call:\n{reason}")
            approved = outcome.approved
        return await self._permit(call.id, tool, args, approved=approved)

    async def recheck(self, call_id: str, tool: str, args: dict[str, Any]) -> BeforeToolCallResult | None:
        """Arguments an extension's ``before_tool_call`` rewrote are what will run, so they are
        checked again: a deny rule stays the last word whatever an extension changes."""
        return await self._permit(call_id, tool, args, approved=False, rewritten=True)

    async def _permit(
        self, call_id: str, tool: str, args: dict[str, Any], *, approved: bool, rewritten: bool = False
    ) -> BeforeToolCallResult | None:
        blocked = await self._check(call_id, tool, args, approved=approved, rewritten=rewritten)
        if blocked is None and self._asks_outside(tool, args):
            blocked = await self._escalate(call_id, tool, args)
        return blocked

    async def _check(
        self, call_id: str, tool: str, args: dict[str, Any], *, approved: bool, rewritten: bool
    ) -> BeforeToolCallResult | None:
        decision = self.permissions.decide(tool, args)
        if decision.behavior == "ask" and approved:
            decision = Decision("allow", "", reason="hook")
        elif decision.behavior == "ask" and self._approved_this_session(decision):
            decision = Decision("allow", "", rule=decision.rule, reason="session")
        detail = {**decision.to_json(), "mode": self.permissions.mode, **({"rewritten": True} if rewritten else {})}
        self._record("permission", call_id, tool, decision.message, detail)
        if decision.behavior == "allow":
            return None
        if decision.behavior == "ask":
            return await self._ask(call_id, tool, args, decision)
        return BeforeToolCallResult(
            block=True,
            reason=f"Permission denied: {decision.message}. The call was not run; do something else or ask the user.",
        )

    def _asks_outside(self, tool: str, args: dict[str, Any]) -> bool:
        """A command that asks to run outside a sandbox that is confining commands now."""
        meta = self.permissions.tools.meta(tool)
        return (
            meta.kind == "execute"
            and meta.command is not None
            and args.get(PARAMETER) is True
            and self.sandbox.active()
        )

    async def _escalate(self, call_id: str, tool: str, args: dict[str, Any]) -> BeforeToolCallResult | None:
        """Running one command outside the sandbox is a permission of its own, asked about
        through the same asker (docs/permissions.md, "Running one command outside the sandbox")."""
        command = self.permissions.tools.meta(tool).command_of(args) or ""
        justification = args.get("justification")
        decision = escalation_decision(
            self.permissions.rules,
            self.permissions.mode,
            command,
            justification if isinstance(justification, str) else None,
            engine=self.permissions,
        )
        detail = {**decision.to_json(), "mode": self.permissions.mode, "outside_sandbox": True}
        self._record("permission", call_id, tool, decision.message, detail)
        blocked: BeforeToolCallResult | None = None
        if decision.behavior == "ask":
            blocked = await self._ask(call_id, tool, args, decision)
        elif decision.behavior == "deny":
            blocked = BeforeToolCallResult(
                block=True,
                reason=f"Permission denied: {decision.message}. The command was not run; run it in the sandbox "
                "(without outside_sandbox) or ask the user.",
            )
        if blocked is None:
            self._outside_approved.add(call_id)
        return blocked

    def confine_hook(self, argv: list[str], cwd: Path) -> Confinement:
        """A hook's command: in the sandbox when ``sandbox.hooks`` asks for it and the sandbox
        runs here; otherwise as it is (the sandbox's one-time "unavailable" note is left for
        the bash tool's result, where the model and the user read it)."""
        if not self.sandbox.policy().hooks or not self.sandbox.active():
            return Confinement.none(argv)
        return self.sandbox.confine(argv, cwd)

    def confine_outside(self, argv: list[str], cwd: Path, call_id: str) -> Confinement:
        """A call that asked to run outside the sandbox: unconfined only if :meth:`_escalate`
        approved that very call (once), else in the sandbox with a note saying so."""
        if call_id in self._outside_approved:
            self._outside_approved.discard(call_id)
            return self.sandbox.confine(argv, cwd, outside=True)
        confinement = self.sandbox.confine(argv, cwd)
        return confinement.noted(NOT_APPROVED) if confinement.confined else confinement

    async def _ask(
        self, call_id: str, tool: str, args: dict[str, Any], decision: Decision
    ) -> BeforeToolCallResult | None:
        if self.asker is None:
            return BeforeToolCallResult(block=True, reason=self._ask_hint(tool, decision))
        meta = self.permissions.tools.meta(tool)
        self.questions_open += 1  # the goal loop never goes on while one is open
        try:
            reply = await self.asker(PermissionPrompt(call_id, tool, args, decision, meta))
        finally:
            self.questions_open -= 1
        self._record("permission", call_id, tool, reply.reason or "", {"decision": reply.answer, "reason": "user"})
        if reply.answer == "allow_always" and decision.reason == "rule" and decision.rule is not None:
            self._session_approvals.add((decision.rule.text, decision.suggestion))
        elif reply.answer == "allow_always" and decision.suggestion:
            try:
                await asyncio.to_thread(add_local_rule, self.cwd, "allow", decision.suggestion)
                self.permissions.add_rules("allow", [decision.suggestion], ".heron/settings.local.json")
            except (OSError, ValueError) as exc:
                log.warning("could not save the rule %s: %s", decision.suggestion, exc)
        if reply.answer == "deny":
            return BeforeToolCallResult(block=True, reason=f"The user denied this call: {reply.reason or 'no reason'}")
        return None

    def _ask_hint(self, tool: str, decision: Decision) -> str:
        """An ask where no one can answer (print/json mode): denied, with a way to allow it that
        works. ``--allow`` settles any ask for the run; a saved allow rule cannot beat an ask
        rule, and counts from a project's local file only in a trusted project."""
        hint = decision.suggestion or tool
        text = (
            f"Permission needed: {decision.message}. heron cannot ask the user in this mode, so the call was "
            f"not run. To allow it, run heron with --allow {shlex.quote(hint)}"
        )
        if decision.reason == "rule" and decision.rule is not None:
            return text + f', or change the ask rule "{decision.rule.text}" in {decision.rule.source}.'
        where = ".heron/settings.local.json" if self.trusted else str(self.home / "settings.json")
        return text + f', or add "{hint}" to permissions.allow in {where}.'

    def _approved_this_session(self, decision: Decision) -> bool:
        """An ask rule's question answered "allow always" earlier in this process, for the same
        kind of call (the same suggested rule)."""
        if decision.reason != "rule" or decision.rule is None:
            return False
        return (decision.rule.text, decision.suggestion) in self._session_approvals

    async def after_tool_call(self, ctx: ToolCallContext, result: ToolResult) -> AfterToolCallResult | None:
        call, tool = ctx.tool_call, ctx.tool_call.name
        notes = self._notes.pop(call.id, [])
        meta = self.permissions.tools.meta(tool)
        if self.hooks.has("PostToolUse", tool):
            args = ctx.params.model_dump() if hasattr(ctx.params, "model_dump") else dict(call.arguments)
            response = {
                "content": "".join(b.text for b in result.content if isinstance(b, TextContent)),
                "is_error": result.is_error,
                "details": result.details,
            }
            outcome = await self.hooks.run(
                "PostToolUse",
                self._payload(
                    tool_name=tool, tool_input=claude_tool_input(meta, args, self.cwd), tool_response=response
                ),
                tool,
            )
            notes.extend(self._hook_problems("PostToolUse", outcome, call.id))
            if outcome.blocked:
                notes.append(f"A PostToolUse hook objected: {outcome.reason}")
            notes.extend(outcome.context)
            if outcome.context or outcome.blocked:
                self._record(
                    "hook",
                    call.id,
                    tool,
                    "",
                    {
                        "event": "PostToolUse",
                        "blocked": outcome.blocked,
                        "context_chars": sum(map(len, outcome.context)),
                    },
                )
        content = [
            TextContent(text=self.secrets.redact(b.text)) if isinstance(b, TextContent) else b for b in result.content
        ]
        changed = any(
            isinstance(a, TextContent) and a.text != b.text  # type: ignore[union-attr]
            for a, b in zip(content, result.content, strict=True)
        )
        if not notes and not changed:
            return None
        content.extend(TextContent(text=f"[hook] {note}") for note in notes)
        return AfterToolCallResult(content=content)

    # --- prompts and compaction -------------------------------------------------------------

    async def before_prompt(self, text: str, fit: Callable[[str], str] = str) -> str | None:
        """Note the checkpoint of the working tree (it starts once the request is out), run
        SessionStart (once) and UserPromptSubmit hooks. Returns ``fit`` of the prompt (with any
        context hooks added), or None when a hook blocked it."""
        self.checkpoints.start_before_turn(self.session.store)
        text = redact(text)  # the model never needs heron's own keys; the file must not hold them
        extra: list[str] = []
        if not self._started:
            self._started = True
            if self.hooks.has("SessionStart"):
                await self._before_hook()
                outcome = await self.hooks.run("SessionStart", self._payload(source="startup"))
                self._hook_problems("SessionStart", outcome)
                extra.extend(outcome.context)
        if self._parent is None and self.hooks.has("UserPromptSubmit"):
            await self._before_hook()
            outcome = await self.hooks.run("UserPromptSubmit", self._payload(prompt=text))
            self._hook_problems("UserPromptSubmit", outcome)
            if outcome.blocked:
                self._record("hook", None, None, outcome.reason, {"event": "UserPromptSubmit", "decision": "block"})
                await self.checkpoints.settled()
                return None
            extra.extend(outcome.context)
            if outcome.compact:  # acted on before the turn's first request, bounded like the model's
                self._compact_asked = ("\n".join(outcome.compact_focus) or None,)
        if not extra:
            return fit(text)
        return fit(text + "\n\n" + "\n\n".join(f"<hook-context>\n{c}\n</hook-context>" for c in extra))

    def take_compact_request(self) -> tuple[str | None] | None:
        """The compaction a ``UserPromptSubmit`` hook asked for (its focus), once."""
        asked, self._compact_asked = self._compact_asked, None
        return asked

    async def run_until_stopped(self, message: StepInput, run: RunTurn) -> list[AgentMessage]:
        """``run(message)``, then the Stop (SubagentStop) hooks each time the agent stops: a
        hook that blocks makes it go on with the hook's reason as a new message, at most
        ``hooks.maxContinuations`` times per prompt (docs/hooks.md)."""
        added = await run(message)
        event, count = self.stop_event, 0
        matcher = self.subagent_fields.get("agent_type")
        while self.hooks.has(event, matcher):
            await self._before_hook()
            last = next((m for m in reversed(added) if isinstance(m, AssistantMessage)), None)
            if last is not None and last.stop_reason == StopReason.ABORTED:
                break  # the user stopped it: not a stop for the hooks to argue with
            payload = self._payload(
                **self.subagent_fields,
                stop_hook_active=count > 0,
                permission_mode=self.permissions.mode,
                last_assistant_message=last.text() if last is not None else None,
            )
            outcome = await self.hooks.run(event, payload, matcher)
            self._hook_problems(event, outcome)
            reason = continuation(outcome)
            if reason is None:
                break
            if count >= self.max_continuations or (last is not None and last.stop_reason == StopReason.ERROR):
                why = "the cap is reached" if count >= self.max_continuations else "the run ended in an error"
                self._record(
                    "hook",
                    None,
                    None,
                    f"{event} hook asked to go on; not done: {why}",
                    {"event": event, "decision": "block", "continued": False, "continuations": count},
                )
                break
            count += 1
            self._record(
                "hook",
                None,
                None,
                reason,
                {"event": event, "decision": "block", "continued": True, "continuations": count},
            )
            feedback = ExtensionMessage(
                custom_type=HOOK_MESSAGE_TYPE,
                content=f"{event} hook feedback:\n{reason}",
                details={"event": event, "continuation": count},
            )
            added += await run(feedback)
        return added

    async def after_prompt(self) -> None:
        """The end-of-turn snapshot, when a tool or hook could have changed files (the Stop hooks
        ran in :meth:`run_until_stopped`); housekeeping starts here if no answer came."""
        self.housekeeping.start()
        await self.checkpoints.after_turn(self.session.store)

    async def _before_hook(self) -> None:
        """A hook runs a command, which may change files: after the turn's snapshot, and one after the turn."""
        self.checkpoints.note_change()
        await self.checkpoints.settled()

    async def pre_compact(self, reason: str) -> None:
        if self.hooks.has("PreCompact"):
            trigger = "manual" if reason == "manual" else "auto"
            outcome = await self.hooks.run("PreCompact", self._payload(trigger=trigger, custom_instructions=None))
            self._hook_problems("PreCompact", outcome)
