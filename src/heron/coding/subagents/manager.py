"""One session's sub-agents: starting them, running them, and keeping track of them.

Each :class:`CodingSession` that may delegate has a manager (``session.subagents``). A
``task`` call gets a slot (at most ``subagents.maxParallel`` children run at once; the
agent already runs the calls of one answer concurrently), builds the child, links it
from the parent's session (``heron.subagent`` entries: the registry), forwards the
child's events to the parent's listeners tagged with the child's session id, aborts the
child when the parent is aborted, adds the child's usage to the parent's, and turns the
child's last answer into a bounded result (docs/subagents.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from heron.agent.events import MessageEndEvent, MessageUpdateEvent, ToolExecutionStartEvent
from heron.agent.tools import AgentTool, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.ai.types import AssistantMessage, Usage
from heron.coding.events import SubagentEvent
from heron.coding.outcome import RunOutcome, decide
from heron.coding.subagents.definitions import AgentDefinition, load_definitions
from heron.coding.subagents.tool import TaskTool
from heron.coding.tools import UnknownToolError
from heron.context.continuity.children import CHILD_CUSTOM_TYPE, ChildRecord
from heron.session.store import SessionWriteError

if TYPE_CHECKING:
    from heron.coding.session_spec import Build
    from heron.coding.subagents.parent import ChildSession, ParentSession
    from heron.coding.tools.params import TaskParams

log = logging.getLogger(__name__)


def add_usage(total: Usage, usage: Usage) -> None:
    total.input += usage.input
    total.output += usage.output
    total.cache_read += usage.cache_read
    total.cache_write += usage.cache_write
    total.total_tokens += usage.total_tokens or usage.context_tokens()
    cost, add = total.cost, usage.cost
    cost.input += add.input
    cost.output += add.output
    cost.cache_read += add.cache_read
    cost.cache_write += add.cache_write
    cost.total += add.total


class SubagentManager:
    def __init__(self, session: ParentSession, build: Build, *, depth: int = 0, allowed: bool = True) -> None:
        self.session = session
        self.build = build
        self.depth = depth
        self.allowed = allowed  # a forked child's task tool exists (cache prefix) but may be off
        self.settings = session.settings.subagents
        self.definitions = load_definitions(session.cwd, session.home)
        self.usage = Usage()  # of every child (and their children), added to the session's own
        self.children: dict[str, ChildRecord] = {}
        self.running: dict[str, ChildSession] = {}
        self._slots: asyncio.Semaphore | None = None

    def tool(self) -> TaskTool:
        return TaskTool(self)

    @property
    def can_spawn(self) -> bool:
        return self.allowed and self.depth < self.settings.max_depth

    async def run(self, call_id: str, params: TaskParams, signal: AbortSignal, on_update: UpdateCallback) -> ToolResult:
        if not self.can_spawn:
            why = (
                f"the maximum depth is reached (subagents.maxDepth = {self.settings.max_depth})"
                if self.allowed
                else "this sub-agent may not start sub-agents of its own"
            )
            return ToolResult.error(f"task is not available here: {why}. Do the work yourself.")
        definition: AgentDefinition | None = None
        if params.agent:
            if params.context == "fork":
                return ToolResult.error(
                    'agent cannot be combined with context "fork": a fork keeps this '
                    "conversation's system prompt and tools. Leave out one of them."
                )
            definition = self.definitions.get(params.agent)
            if definition is None:
                return ToolResult.error(self.definitions.why_missing(params.agent))
        if self._slots is None:
            self._slots = asyncio.Semaphore(max(1, self.settings.max_parallel))
        async with self._slots:
            if signal.aborted:
                return ToolResult.error("aborted before the sub-agent started")
            from heron.coding.subagents.spawn import SpawnError  # with the first sub-agent, not at start

            try:
                child = self._spawn(call_id, params, definition)
            except (SpawnError, UnknownToolError) as exc:
                return ToolResult.error(f"cannot start the sub-agent: {exc}")
            except Exception as exc:  # a models.json key that cannot be resolved, a session dir not writable...
                log.exception("could not start a sub-agent")
                return ToolResult.error(f"cannot start the sub-agent: {type(exc).__name__}: {exc}")
            return await self._drive(child, call_id, params, signal, on_update)

    def _spawn(self, call_id: str, params: TaskParams, definition: AgentDefinition | None) -> ChildSession:
        from heron.coding.subagents.spawn import forked_child, isolated_child

        if params.context == "fork":
            # A fork keeps task (same tools: the cached prefix); the depth check refuses it at run time.
            return forked_child(self.session, call_id, params.model_dump(exclude_none=True), self.build)
        child = isolated_child(self.session, definition, self.build)
        goal = self.session.goal.current() if params.goal else None
        if goal is not None:  # passed on request only: the text, not the budget (the parent's own)
            child.goal.set(goal.text)
        return child

    async def _drive(
        self, child: ChildSession, call_id: str, params: TaskParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        session_ref = str(child.store.path) if child.store.path is not None else "(in memory: not saved)"
        record = ChildRecord(
            id=child.store.session_id, description=params.description, status="running", session=session_ref
        )
        self._link(record, params)
        usage = Usage()
        added: list[Any] = []

        def forward(event: Any) -> None:
            if isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
                add_usage(usage, event.message.usage)
            elif isinstance(event, ToolExecutionStartEvent):
                on_update(ToolResult.text(f"[{params.description}] {event.tool_name}"))
            if not isinstance(event, MessageUpdateEvent):
                self.session.emit(SubagentEvent(session_id=record["id"], tool_call_id=call_id, event=event))

        unsubscribe = child.subscribe(forward)
        remove = signal.add_listener(child.abort)
        self.running[call_id] = child
        failure: Exception | None = None
        start = len(child.messages)  # a fork starts with the parent's history: not the child's work
        try:
            added = await child.prompt(params.prompt, commands=False)  # the model's text, never a command
        except asyncio.CancelledError:  # the parent's run was cancelled past the abort grace period
            record["status"] = "aborted"
            self._link(record, params)
            raise
        except Exception as exc:  # whatever broke the child, the parent carries on
            log.exception("sub-agent %s failed", record["id"])
            failure = exc
        finally:
            remove()
            unsubscribe()
            self.running.pop(call_id, None)
            if child.subagents is not None:
                add_usage(usage, child.subagents.usage)
            add_usage(self.usage, usage)
            child.store.close()  # its file and lock released (the store still reads from its cache)
        messages = added or child.messages[start:]
        answers = [m for m in messages if isinstance(m, AssistantMessage)]
        outcome = decide(answers, save_error=child.store.write_error, failure=failure, aborted=signal.aborted)
        result = self._result(child, messages, outcome, session_ref, usage)
        record["status"] = result.details["status"]
        self._link(record, params, usage)
        return result

    def _result(
        self, child: ChildSession, messages: Sequence[Any], outcome: RunOutcome, session_ref: str, usage: Usage
    ) -> ToolResult:
        """The ``task`` tool's result from the child run's outcome (decided as every mode's)."""
        from heron.coding.subagents.result import cap_answer, progress_report, result_cap

        cap = result_cap(self.session.window, self.session.env.limits.result_chars)
        details: dict[str, Any] = {
            "sessionId": child.store.session_id,
            "session": session_ref,
            "usage": usage.to_json_dict(),
            "status": "done",
        }
        error: str | None = None
        if outcome.aborted:
            details["status"], error = "aborted", "it was aborted (the parent run was aborted)"
        elif not outcome.ok:
            details["status"], error = "error", outcome.explanation or "it gave no answer"
        if error is not None:
            report = progress_report(messages, cap // 2)
            head = f"The sub-agent did not finish: {error}\nChild session: {session_ref}\nWhat it did so far:\n"
            return ToolResult.error((head + report)[:cap], details=details)
        answer = outcome.answer or ""
        spill = self.session.env.spill_dir() / f"task-{child.store.session_id}.md"
        text, spilled = cap_answer(answer or "(the sub-agent gave no text answer)", cap, spill, session_ref)
        details["chars"] = len(answer)
        if spilled is not None:
            details["spill"] = spilled
        return ToolResult.text(text, details=details)

    def _link(self, record: ChildRecord, params: TaskParams, usage: Usage | None = None) -> None:
        """The registry entry in the parent's session (the child's header names the parent);
        the final one carries the child's usage, so the parent's file has what it cost."""
        self.children[record["id"]] = ChildRecord(**record)
        data: dict[str, Any] = {**record, "agent": params.agent, "context": params.context}
        if usage is not None:
            data["usage"] = usage.to_json_dict()
        # A broken session file is reported by the recorder; the child still runs.
        with contextlib.suppress(SessionWriteError):
            self.session.store.append_custom(CHILD_CUSTOM_TYPE, data)


def attach_subagents(session: ParentSession, build: Build, parent: ParentSession | None) -> AgentTool[Any]:
    """The ``task`` tool of ``session``, its manager kept as ``session.subagents``; a
    sub-agent's manager is one level deeper than its parent's."""
    above = parent.subagents if parent is not None else None
    manager = SubagentManager(session, build, depth=above.depth + 1 if above is not None else 0)
    session.subagents = manager
    return manager.tool()
