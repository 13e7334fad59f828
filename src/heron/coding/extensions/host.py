"""The extensions of one session: loading them, and running their handlers safely.

:class:`ExtensionHost` is ``session.extensions``. ``load()`` imports every extension
(:mod:`heron.coding.extensions.loader`) and calls its ``register(api)``; what it
registered takes effect only if that returns. Then the host wraps the agent's
``before_tool_call`` / ``after_tool_call`` (heron's permissions and hooks stay first
before a call, and last after it, so key redaction sees the extension's result), listens
to the session's events, and gives the runtime :meth:`transform` and :meth:`run_command`.

An extension whose ``register`` or any handler raises (or returns something that is not
what the handler may return) is disabled: its handlers stop running, its tools answer
that it is disabled (their definitions stay, so the request prefix does not change),
and a ``context_warning`` event of kind ``extension`` says so. The others carry on.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from heron.agent.tools import AfterToolCallResult, AgentTool, BeforeToolCallResult, ToolCallContext, ToolResult
from heron.ai.abort import AbortSignal
from heron.coding.events import ContextWarningEvent
from heron.coding.extensions import guard
from heron.coding.extensions.commands import CommandRegistry, add_templates
from heron.coding.extensions.loader import Candidate, find_extensions
from heron.coding.tools import ALL_TOOLS, GOAL_TOOL

if TYPE_CHECKING:
    # The extension API, and the host's code for what extensions register, load with the
    # first extension that needs them: a session without any does not import them.
    from heron.agent.agent import Agent
    from heron.agent.tool_meta import ToolCatalog
    from heron.coding.control import Control
    from heron.coding.events import SessionEvent
    from heron.coding.extensions.api import ExtensionCommand, Registration
    from heron.coding.settings import Settings
    from heron.coding.templates import TemplateSet
    from heron.context.compaction.plan import CompactionChoice, CompactionPlan
    from heron.context.engine import RequestPlan
    from heron.context.policy import ContextPolicy

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Extension:
    """One loaded (or failed) extension: where it came from and what it registered; a failed one
    is kept with its error so ``/extensions`` can show why it is missing."""

    name: str
    source: str
    path: str
    registration: Registration
    enabled: bool = True
    error: str | None = None
    # its plain handlers run one at a time, each in a thread of its own (extensions.guard)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


def _arguments(ctx: ToolCallContext) -> dict[str, Any]:
    params = ctx.params
    return params.model_dump() if hasattr(params, "model_dump") else dict(ctx.tool_call.arguments)


class HostedSession(Protocol):
    """What the host uses of its session: where extensions are found (cwd, home), the tools,
    system prompt and templates a registration adds to, the agent whose tool calls it wraps
    and control that re-checks changed arguments, the events handlers see and warnings go
    to, the settings (a handler's time), and what checking a transformed view uses
    (:class:`heron.coding.extensions.verify.VerifiedSession`, restated: that module loads
    with the first transform)."""

    system_prompt: str

    @property
    def cwd(self) -> Path: ...

    @property
    def home(self) -> Path: ...

    @property
    def tools(self) -> list[AgentTool[Any]]: ...

    @property
    def templates(self) -> TemplateSet: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def control(self) -> Control: ...

    @property
    def policy(self) -> ContextPolicy: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def tool_catalog(self) -> ToolCatalog: ...

    def render_system_prompt(self) -> str: ...

    def subscribe(self, listener: Callable[[SessionEvent], None]) -> Callable[[], None]: ...

    def emit(self, event: SessionEvent) -> None: ...


class ExtensionHost:
    def __init__(self, session: HostedSession) -> None:
        self.session = session
        self.extensions: list[Extension] = []
        self.commands = CommandRegistry()
        self.warnings: list[str] = []  # every message about an extension, in order
        self._installed = False
        self._parent: ExtensionHost | None = None
        self._pending: set[asyncio.Task[None]] = set()  # async event handlers still running

    # --- loading ---------------------------------------------------------------------------

    def load(self, *, trusted: bool) -> list[str]:
        """Find, import and register every extension; returns the load-time messages."""
        messages: list[str] = []
        for candidate in find_extensions(self.session.cwd, self.session.home, trusted=trusted, warnings=messages):
            problem = self._load_one(candidate)
            if problem is not None:
                messages.append(problem)
        self.warnings.extend(messages)
        self._install()
        return messages

    def _taken_tools(self) -> set[str]:
        return set(ALL_TOOLS) | {GOAL_TOOL} | {t.name for t in self.session.tools}

    def _load_one(self, candidate: Candidate) -> str | None:
        from heron.coding.extensions.api import ExtensionAPI

        label = f"extension {candidate.name} ({candidate.path})"
        api = ExtensionAPI(
            candidate.name,
            candidate.source,
            candidate.path,
            cwd=self.session.cwd,
            home=self.session.home,
            taken_tools=self._taken_tools,
        )
        try:
            register = candidate.load()
            result = register(api)
            if inspect.isawaitable(result):
                close = getattr(result, "close", None)
                if callable(close):
                    close()
                raise TypeError("register(api) must be a plain function, not async")
        except Exception as exc:
            log.debug("%s failed to load", label, exc_info=True)  # the user is told by the caller
            return f"{label} disabled: {type(exc).__name__}: {exc}"
        extension = Extension(candidate.name, candidate.source, candidate.path, api.registration)
        self.extensions.append(extension)
        problems = self._commit(extension)
        return "; ".join(problems) if problems else None

    def _commit(self, extension: Extension) -> list[str]:
        reg, session = extension.registration, self.session
        if reg.tools:
            from heron.coding.extensions.tools import GuardedTool

            session.tools.extend(GuardedTool(t, extension) for t in reg.tools)
            session.agent.set_tools(session.tools)
            session.system_prompt = session.render_system_prompt()  # the tool list is in it
            session.agent.set_system_prompt(session.system_prompt)
        problems = [f"extension {extension.name}: {p}" for p in self.commands.add(reg.commands)]
        problems += [
            f"extension {extension.name}: {p}"
            for p in add_templates(session.templates, reg.templates, extension.path, extension.source)
        ]
        return problems

    def share(self, parent: ExtensionHost) -> None:
        """A sub-agent's host: the parent's extensions (one enabled flag each) around the
        child's tool calls and requests; events reach them through the parent."""
        if not parent.extensions:
            return
        self.extensions, self._parent = parent.extensions, parent
        self._installed = True
        self._wrap_tool_calls()

    def _install(self) -> None:
        if self._installed or not self.extensions:
            return
        self._installed = True
        self._wrap_tool_calls()
        self.session.subscribe(self._on_event)

    # --- disabling -------------------------------------------------------------------------

    def disable(self, extension: Extension, where: str, exc: BaseException | str) -> None:
        if not extension.enabled:
            return
        extension.enabled = False
        why = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        message = f"extension {extension.name} ({extension.path}) disabled: {where}: {why}"
        extension.error = message
        log.debug("%s", message, exc_info=isinstance(exc, BaseException))  # the user is told by the warning
        self.warn(message)

    def warn(self, message: str) -> None:
        if self._parent is not None:  # said where the user looks: the parent's events
            self._parent.warn(message)
            return
        self.warnings.append(message)
        self.session.emit(ContextWarningEvent(kind="extension", message=message))

    def _active(self) -> list[Extension]:
        return [e for e in self.extensions if e.enabled]

    # --- events ----------------------------------------------------------------------------

    @property
    def timeout(self) -> float:
        """How long one handler may run (``extensions.handlerTimeoutMs``), in seconds."""
        return self.session.settings.extension_timeout_ms / 1000

    def _failed(self, extension: Extension, where: str, out: guard.Outcome) -> bool:
        """Whether the handler failed (it raised, or overran: the extension is disabled)."""
        if out.failure is None:
            return False
        raised = isinstance(out.failure, BaseException)
        self.disable(extension, f"its {where} handler {'raised' if raised else 'failed'}", out.failure)
        return True

    async def _call(
        self, extension: Extension, handler: Callable[..., Any], args: Sequence[Any], signal: AbortSignal | None = None
    ) -> guard.Outcome:
        return await guard.call(handler, args, timeout=self.timeout, lock=extension.lock, signal=signal)

    def _on_event(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        for extension in self._active():
            for wanted, handler in extension.registration.events:
                if wanted not in ("*", kind) or not extension.enabled:
                    continue
                where = f"{wanted!r} event"
                if guard.is_async(handler):
                    try:
                        result = handler(event)
                    except BaseException as exc:  # noqa: BLE001 - an extension's fault disables it
                        self._failed(extension, where, guard.Outcome(failure=exc))
                        continue
                else:
                    out = guard.call_now(handler, (event,), timeout=self.timeout, lock=extension.lock)
                    if self._failed(extension, where, out):
                        continue
                    result = out.value
                if inspect.isawaitable(result):
                    self._schedule(extension, wanted, result)

    def _schedule(self, extension: Extension, wanted: str, pending: Any) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # an event sent from a worker thread: nowhere to await it
            close = getattr(pending, "close", None)
            if callable(close):
                close()
            log.debug("extension %s: async %r handler skipped (no event loop)", extension.name, wanted)
            return
        task = loop.create_task(self._finish(extension, wanted, pending))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _finish(self, extension: Extension, wanted: str, pending: Any) -> None:
        self._failed(extension, f"{wanted!r} event", await guard.settle(pending, timeout=self.timeout))

    # --- tool calls ------------------------------------------------------------------------

    def _wrap_tool_calls(self) -> None:
        agent = self.session.agent
        inner_before, inner_after = agent.before_tool_call, agent.after_tool_call

        async def before(ctx: ToolCallContext) -> BeforeToolCallResult | None:
            verdict: BeforeToolCallResult | None = await inner_before(ctx) if inner_before is not None else None
            if verdict is not None and verdict.block:
                return verdict
            mine = await self._before(ctx, verdict)
            if mine is not None and mine.arguments is not None and not mine.block:
                again = await self.session.control.recheck(ctx.tool_call.id, ctx.tool_call.name, dict(mine.arguments))
                if again is not None:
                    return again
            return mine

        async def after(ctx: ToolCallContext, result: ToolResult) -> AfterToolCallResult | None:
            current = await self._after(ctx, result)
            change = await inner_after(ctx, current) if inner_after is not None else None
            if current is result:
                return change
            if change is None:
                return AfterToolCallResult(content=current.content, details=current.details, is_error=current.is_error)
            return AfterToolCallResult(
                content=change.content if change.content is not None else current.content,
                details=change.details if change.details is not None else current.details,
                is_error=change.is_error if change.is_error is not None else current.is_error,
            )

        agent.before_tool_call, agent.after_tool_call = before, after

    async def _before(self, ctx: ToolCallContext, verdict: BeforeToolCallResult | None) -> BeforeToolCallResult | None:
        from heron.coding.extensions.api import ToolCallInfo

        arguments = verdict.arguments if verdict is not None and verdict.arguments is not None else _arguments(ctx)
        info = ToolCallInfo(ctx.tool_call.id, ctx.tool_call.name, dict(arguments))
        changed = verdict is not None and verdict.arguments is not None
        for extension in self._active():
            for handler in extension.registration.before:
                out = await self._call(extension, handler, (info,))
                if self._failed(extension, "before_tool_call", out):
                    break
                answer = out.value
                if answer is None:
                    continue
                if not isinstance(answer, BeforeToolCallResult):
                    self.disable(
                        extension,
                        f"its before_tool_call handler returned {type(answer).__name__}, not None or api.block(...)",
                        "bad value",
                    )
                    break
                if answer.block:
                    reason = answer.reason or "no reason given"
                    return BeforeToolCallResult(block=True, reason=f"Blocked by extension {extension.name}: {reason}")
                if answer.arguments is not None:
                    info, changed = replace(info, arguments=dict(answer.arguments)), True
        return BeforeToolCallResult(arguments=info.arguments) if changed else None

    async def _after(self, ctx: ToolCallContext, result: ToolResult) -> ToolResult:
        from heron.coding.extensions.api import ToolCallInfo

        info = ToolCallInfo(ctx.tool_call.id, ctx.tool_call.name, _arguments(ctx))
        current = result
        for extension in self._active():
            for handler in extension.registration.after:
                out = await self._call(extension, handler, (info, current))
                if self._failed(extension, "after_tool_call", out):
                    break
                answer = out.value
                if isinstance(answer, ToolResult):
                    current = answer
                elif isinstance(answer, AfterToolCallResult):
                    current = ToolResult(
                        content=answer.content if answer.content is not None else current.content,
                        details=answer.details if answer.details is not None else current.details,
                        is_error=answer.is_error if answer.is_error is not None else current.is_error,
                    )
                elif answer is not None:
                    self.disable(
                        extension,
                        f"its after_tool_call handler returned {type(answer).__name__}, not None or a ToolResult",
                        "bad value",
                    )
                    break
        return current

    # --- requests and commands -----------------------------------------------------------

    async def transform(self, view: list[Any], plan: RequestPlan) -> list[Any]:
        """Each extension's ``transform_context`` on the view heron built (``plan``: the
        request's plan, what a result is checked against), in load order; a result that
        breaks a context rule is not used for this request (warned)."""
        for extension in self._active():
            for handler in extension.registration.transforms:
                called = await self._call(extension, handler, (list(view),))
                if self._failed(extension, "transform_context", called):
                    break
                out = called.value
                if out is None:
                    continue
                from heron.coding.extensions.verify import is_message_list, view_problems

                if not is_message_list(out):
                    self.disable(
                        extension,
                        f"its transform_context handler returned {type(out).__name__}, not a list of messages",
                        "bad value",
                    )
                    break
                problems = view_problems(self.session, out, plan)
                if problems:
                    rules = "; ".join(str(p) for p in problems)
                    self.warn(
                        f"extension {extension.name}: its transform_context result was not used for this "
                        f"request, because it breaks the context rules ({rules})"
                    )
                    continue
                view = out
        return view

    @property
    def shapes_compaction(self) -> bool:
        """Whether an enabled extension has a ``before_compact`` handler (background
        compaction then stays off: the handler decides on the plan of the moment)."""
        return any(e.registration.compaction for e in self._active())

    async def before_compact(
        self, plan: CompactionPlan, reason: str, focus: str | None, signal: AbortSignal | None = None
    ) -> CompactionChoice | None:
        """The first ``before_compact`` answer of the enabled extensions, as the compactor's
        choice; an extension whose handler raises, overruns its deadline or answers
        nonsense is disabled and the next one (in the end, heron's own compaction) decides.
        An abort (``signal``) while a handler runs cancels the compaction."""
        if not any(e.registration.compaction for e in self._active()):
            return None
        from heron.coding.extensions.compaction import choice_from, compaction_input
        from heron.context.compaction.plan import CompactionChoice

        seen = compaction_input(plan, reason, focus)
        for extension in self._active():
            for handler in extension.registration.compaction:
                out = await self._call(extension, handler, (seen,), signal)
                if out.aborted:
                    return CompactionChoice(source="an abort", cancel=True)
                if self._failed(extension, "before_compact", out):
                    break
                try:
                    choice = choice_from(out.value, plan, f"extension {extension.name}", self.session.tool_catalog)
                except ValueError as exc:
                    self.disable(extension, "its before_compact handler failed", exc)
                    break
                if choice is not None:
                    return choice
        return None

    async def run_command(self, text: str) -> str | None:
        """``/name args`` of an extension command: its handler's prompt (None: nothing to
        send). Any other text comes back unchanged."""
        found = self.commands.match(text)
        if found is None:
            return text
        command, args = found
        extension = next((e for e in self.extensions if e.name == command.extension), None)
        if extension is not None and not extension.enabled:
            self.warn(f"/{command.name} is not available: {extension.error}")
            return None
        lock = extension.lock if extension is not None else threading.Lock()
        called = await guard.call(command.handler, (args,), timeout=self.timeout, lock=lock)
        if called.failure is not None:
            raised = isinstance(called.failure, BaseException)
            if extension is not None:
                how = "raised" if raised else "failed"
                self.disable(extension, f"its /{command.name} command {how}", called.failure)
            return None
        out = called.value
        return out if isinstance(out, str) and out.strip() else None

    def tools_of(self, extension: Extension) -> list[AgentTool[Any]]:
        return list(extension.registration.tools)

    def command_list(self) -> list[ExtensionCommand]:
        return self.commands.sorted()
