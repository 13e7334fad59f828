"""CodingSession: the coding agent as a library - the wiring of the layers.

An :class:`Agent` with the coding tools and the system prompt; a :class:`SessionStore`
that records every message; a :class:`ContextPolicy` that decides, before every request,
what the request carries (pruning, the compaction trigger, output caps, learned limits,
the read index) and records each decision in the session; the :class:`ContextOwner`
that acts on those decisions and runs every compaction (:mod:`heron.coding.context_owner`);
the :class:`RequestPath` every request takes, summaries included - typed options,
the context rules checked, tracing (:mod:`heron.coding.requests`); and recovery from
failed answers by their error kind (:mod:`heron.coding.recovery`). The context rules
live in ``heron.context``; this module only connects them and delegates.

Everything that shapes a request is derived from the session file, so a process that
resumes the session (``heron -p --continue``) sends the bytes the one that never stopped
would have sent: the system prompt's date is the session's start date, the messages come
from the path with the compaction's injected block and kept prompt, and pruning,
learned windows and de-dup answers come from recorded decisions and the view.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import functools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heron.agent.agent import Agent
from heron.agent.emitter import Emitter
from heron.agent.events import MessageEndEvent, MessageUpdateEvent, ToolExecutionEndEvent
from heron.agent.messages import AgentMessage, ExtensionMessage
from heron.agent.tool_meta import ToolCatalog
from heron.agent.tools import AgentTool
from heron.ai.abort import AbortSignal
from heron.ai.models import heron_home
from heron.ai.types import (
    AssistantMessage,
    ImageContent,
    Model,
    TextContent,
    ThinkingLevel,
    ToolResultMessage,
    UserMessage,
)
from heron.coding.breakdown import ContextBreakdown, context_breakdown
from heron.coding.context_files import ContextFile, ledger_records, load_context_files
from heron.coding.context_owner import ContextOwner
from heron.coding.control import Control, StepInput
from heron.coding.events import (
    CompactionEndEvent,
    CompactionReason,
    ContextWarningEvent,
    LedgerEvent,
    SessionEvent,
    TodosEvent,
)
from heron.coding.extensions import ExtensionHost
from heron.coding.first_count import FirstCount
from heron.coding.goal import GoalKeeper, goal_command, is_goal_command
from heron.coding.goal_loop import GoalLoop
from heron.coding.handoff_link import lineage as handoff_lineage
from heron.coding.memory import MemoryKeeper
from heron.coding.model_limits import with_limits
from heron.coding.oversized import fit_prompt
from heron.coding.prompt import PromptFiles, build_system_prompt, load_prompt_files
from heron.coding.recovery import SessionRecovery, recover
from heron.coding.requests import RequestPath
from heron.coding.run_limits import max_turns_for
from heron.coding.script_host import SessionToolHost
from heron.coding.session_server import ServerRecorder
from heron.coding.session_spec import chosen_tools
from heron.coding.settings import Settings, load_settings
from heron.coding.skill_record import record_plan, record_skill_prompt, record_skill_read
from heron.coding.skills import SkillSet, expand_skill_command, load_skills
from heron.coding.templates import TemplateSet, expand_template_command, load_templates
from heron.coding.tools import builtin_meta, create_tools, set_limits
from heron.coding.tools.env import ReadRecord, ToolEnv
from heron.coding.unanswered import note_unanswered
from heron.context.compaction.native import NativeSettings
from heron.context.compaction.plan import CompactionSettings
from heron.context.continuity.todos import TodoItem, clean_todos
from heron.context.engine import RequestPlan, budget_results
from heron.context.policy import ContextPolicy, PolicySettings
from heron.context.records.ledger import LEDGER_CUSTOM_TYPE, Ledger, LedgerRecord, tool_records
from heron.context.view.build import with_injections
from heron.context.window.budget import fixed_tokens
from heron.session.context import build_context
from heron.session.entries import iso_to_ms
from heron.session.recorder import SessionRecorder
from heron.session.store import SessionStore, SessionWriteError

if TYPE_CHECKING:  # a type only: the assembly gives a session its sub-agents (no import circle)
    from heron.coding.mcp.setup import SessionMcp
    from heron.coding.subagents import SubagentManager

log = logging.getLogger(__name__)

Listener = Callable[[SessionEvent], None]


def session_date(store: SessionStore) -> str:
    """The date the system prompt shows: the session's start, so it never changes."""
    header = store.header
    if header is not None and header.timestamp:
        ms = iso_to_ms(header.timestamp)
        if ms:
            return _dt.datetime.fromtimestamp(ms / 1000).date().isoformat()
    return _dt.date.today().isoformat()


class CodingSession:
    """One conversation of the coding agent, recorded in a session file.

    ``await session.prompt("fix the failing test")`` runs the agent until it stops; ``session.subscribe(listener)``
    sees every agent event plus compaction, retry, ledger, context-warning and sub-agent events.
    Built by :func:`heron.coding.assembly.assemble_session`, which decides what it is made of."""

    def __init__(
        self,
        *,
        cwd: str | Path,
        model: Model,
        api_key: str | None = None,
        store: SessionStore | None = None,
        settings: Settings | None = None,
        tools: Sequence[str] | None = None,
        thinking_level: ThinkingLevel | None = None,
        system_prompt: str | None = None,
        append_system_prompt: str | None = None,
        home: str | Path | None = None,
        date: str | None = None,
        extra_tools: Sequence[AgentTool[Any]] = (),
        project_prompt: bool = True,
        whole_system_prompt: str | None = None,
    ) -> None:
        self.cwd = Path(cwd).resolve()
        self.home = Path(home) if home is not None else heron_home()
        self.settings = settings if settings is not None else load_settings(self.cwd, self.home)
        self.api_key = api_key
        self.store = store if store is not None else SessionStore.in_memory(self.cwd)
        self.ledger = Ledger()
        self._events: Emitter[SessionEvent] = Emitter("session listener")
        self._recovery_abort = AbortSignal()
        self.turn_prompt: UserMessage | None = None  # the running turn's prompt (None between turns)
        self.request_plan: RequestPlan | None = None  # the plan of the request last sent (heron.context.engine)
        self._date_override = date
        self._server = ServerRecorder()
        self._fixed_count: tuple[object, int] | None = None  # (system prompt and tools, their tokens)
        self._first_count = FirstCount(self.home)  # a small local window: the server counts before the first request
        self.date = date or session_date(self.store)

        self.env = ToolEnv(
            cwd=self.cwd,
            limits=self.settings.tool_limits.for_window(model.context_window),
            home=self.home,
            shell=self.settings.shell_path,
            spill_max_bytes=self.settings.spill.max_bytes,
            script_max_timeout=self.settings.script.max_timeout_ms / 1000,
            script_max_calls=self.settings.script.max_calls,
        )
        self._env_follows(self.store)
        self.env.reads.view_lookup = self._read_in_view
        self.tools: list[AgentTool[Any]] = [*create_tools(self.env, chosen_tools(tools, self.settings)), *extra_tools]
        self.subagents: SubagentManager | None = None  # the task tool's manager, given by the assembly
        self.mcp: SessionMcp | None = None  # the MCP servers the assembly started for this session
        self.context_files: list[ContextFile] = load_context_files(
            self.cwd,
            self.home,
            per_file_chars=self.settings.context_files.per_file_chars,
            total_chars=self.settings.context_files.total_chars,
        )
        self.skills: SkillSet = load_skills(self.cwd, self.home)
        self.templates: TemplateSet = load_templates(self.cwd, self.home)
        self._system_prompt_override = system_prompt
        self._append_system_prompt = append_system_prompt
        self._project_prompt = project_prompt
        self._whole_system_prompt = whole_system_prompt
        self.memory = MemoryKeeper(self.settings.memory, home=self.home, cwd=self.cwd, store=self.store)
        self.system_prompt = self.render_system_prompt()

        self.agent = self._make_agent(model, thinking_level)
        # What each tool name in the conversation is, from the tools the agent holds now (an
        # extension's, MCP's included), built-in names kept for calls of tools no longer in the set.
        self.tool_catalog = ToolCatalog(source=lambda: self.agent.state.tools, fallback=builtin_meta)
        self.control = Control(self)  # permissions, hooks, secrets, checkpoints: hooks itself into agent and env
        self.env.tool_host = SessionToolHost(self)  # a script's calls take the path a model's call takes
        self.extensions = ExtensionHost(self)  # empty until load() (docs/extensions.md)
        self.policy = self._make_policy()
        self.context_owner = ContextOwner(self)  # when to prune or compact, and compacting
        self.goal = GoalKeeper(self)  # /goal, the head of every request, the budget (heron.coding.goal)
        self.goal_loop = GoalLoop(self)  # going on by itself while the goal is active (heron.coding.goal_loop)
        self.recovery = SessionRecovery(self)  # what a failed answer calls for (heron.coding.recovery)
        self.fit_tool_limits()  # a learnt window, the working budget too
        self._listen()

    def _listen(self) -> None:
        """The session file records the agent's messages; the session hears the agent's and
        the ledger's events (the context files' records go in first)."""
        self._recorder = SessionRecorder(self.agent, self.store)
        self.agent.subscribe(self._on_agent_event)
        self.ledger.subscribe(self._on_ledger_record)
        for record in ledger_records(self.context_files):
            self.ledger.add(record)

    def _make_agent(self, model: Model, thinking_level: ThinkingLevel | None) -> Agent:
        restored = build_context(self.store, self.store.leaf_id)
        level: ThinkingLevel = thinking_level or self.settings.default_thinking_level or "off"
        if thinking_level is None and restored.thinking_level and self.store.leaf_id is not None:
            level = restored.thinking_level  # type: ignore[assignment]
        agent = Agent(
            model=model,
            system_prompt=self.system_prompt,
            tools=self.tools,
            messages=with_injections(self.store, restored, self.store.leaf_id, self.settings.continuity),
            thinking_level=level,
            transform_context=self._transform_context,
            after_tool_batch=self._after_tool_batch,
            max_parallel=self.settings.tools.max_parallel,
            max_turns=max_turns_for(self.settings),  # unattended by default; the CLI sets interactive's
        )
        self.requests = RequestPath(self, agent.stream_fn)  # every request: options, rules, tracing
        agent.stream_options = self.requests.turn_options
        agent.stream_fn = self.requests.send_turn
        return agent

    def _make_policy(self) -> ContextPolicy:
        compaction = self.settings.compaction
        return ContextPolicy(
            self.store,
            cwd=self.cwd,
            settings=PolicySettings(
                pruning=self.settings.pruning.enabled,
                compaction=compaction.enabled,
                reserve_tokens=compaction.reserve_tokens,
                keep_recent_tokens=compaction.keep_recent_tokens,
                working_budget=compaction.working_budget,
                soft_threshold=compaction.soft_threshold,
                background=compaction.background,
                background_at=compaction.background_at,
                prune_high_water=self.settings.pruning.high_water,
                prune_low_water=self.settings.pruning.low_water,
                prune_keep_turns=self.settings.pruning.keep_turns,
                prune_cache_ttl_s=self.settings.pruning.cache_ttl_seconds,
                prune_cold_keep_turns=self.settings.pruning.cold_keep_turns,
                frontier=self.settings.continuity,
                tool_limits=self.settings.tool_limits,
                native=NativeSettings(
                    native=compaction.native,
                    server_clearing=compaction.server_clearing,
                    trigger=compaction.native_trigger,
                    instructions=compaction.native_instructions,
                ),
            ),
            ledger=self.ledger,
            model=lambda: self.agent.state.model,
            fixed_tokens=self._fixed_tokens,
            tools=self.tool_catalog,
        )

    # --- configuration ---------------------------------------------------------------

    @property
    def model(self) -> Model:
        return self.agent.state.model

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self.agent.state.thinking_level

    @property
    def messages(self) -> list[AgentMessage]:
        return self.agent.messages

    @property
    def compaction_settings(self) -> CompactionSettings:
        return self.policy.sizes.compaction_settings

    @property
    def threshold(self) -> int:
        """Above this many tokens a request is not sent until the context is compacted."""
        return self.policy.sizes.threshold

    @property
    def window(self) -> int:
        """The window heron plans for (the model's, or a smaller one the server enforced)."""
        return self.policy.sizes.window

    def render_system_prompt(self) -> str:
        if self._whole_system_prompt is not None:
            return self._whole_system_prompt
        specs = [(tool.name, tool.description) for tool in self.tools]
        project = self._project_prompt
        return build_system_prompt(
            cwd=self.cwd,
            date=self.date,
            tools=specs,
            context_files=self.context_files,
            skills=self.skills.skills if project else (),
            prompt_files=load_prompt_files(self.cwd, self.home) if project else PromptFiles(),
            system_prompt=self._system_prompt_override,
            append_system_prompt=self._append_system_prompt,
        ) + (self.memory.prompt_section() if project else "")

    def use_tools(self, tools: Sequence[AgentTool[Any]]) -> None:
        """Tools set before the first run (the assembly adds ``task``; a fork takes its parent's
        order): the agent's tools, their limits and the system prompt listing them follow."""
        self.tools[:] = tools
        self.agent.set_tools(self.tools)
        self.fit_tool_limits()
        self.system_prompt = self.render_system_prompt()
        self.agent.set_system_prompt(self.system_prompt)

    def fit_tool_limits(self) -> None:
        """Size the tools' output limits to the window the context is planned in (a learnt
        window or the working budget included: heron.context.window.working_budget)."""
        set_limits(self.env, self.tools, self.settings.tool_limits.for_window(self.policy.sizes.working_window))

    def set_model(self, model: Model, api_key: str | None = None) -> None:
        """Switch model; recorded as a ``model_change`` entry with the next message. A
        model whose window nobody configured gets its server's, as at the start
        (:func:`~heron.coding.model_limits.with_limits`: cached, or a few seconds of probes at
        most; a server that does not answer in time is said in a ``window_unknown`` warning)."""
        model = with_limits(
            model,
            self.home,
            api_key if api_key is not None else self.api_key,
            notice=lambda text: self.emit(ContextWarningEvent(kind="window_unknown", message=text)),
        )
        self.agent.set_model(model)
        if api_key is not None:
            self.api_key = api_key
            self.control.key_changed(api_key)
        self.fit_tool_limits()
        self.store.append_model_change(model.provider, model.id)

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        self.agent.set_thinking_level(level)
        self.store.append_thinking_level_change(level)

    # --- events ------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self._events.subscribe(listener)

    def emit(self, event: SessionEvent) -> None:
        """Tell the session's listeners (the presenters, extensions): the one way its helpers publish an event."""
        self._events.emit(event)

    def note_retry(self, attempt: int) -> None:
        """A retry of the running request began (heron.ai's): recovery tells how it ended."""
        self.recovery.note_retry(attempt)

    def _on_agent_event(self, event: Any) -> None:
        if isinstance(event, MessageUpdateEvent | MessageEndEvent) and isinstance(event.message, AssistantMessage):
            self.context_owner.background.answer_begun()  # the answer streams (or ended): a summary may go
        if isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            plan = self.request_plan
            view, tokens = (plan.view, plan.tokens) if plan is not None else ([], 0)
            self.policy.calibration.calibrate(event.message, view)  # count like the server
            self.policy.observe(event.message, tokens)  # what the provider compacted or cleared itself
            self.recovery.answer_ended(event.message)  # after a retry: its retry_end
        if isinstance(event, ToolExecutionEndEvent):
            self._ledger_from_tool(event)
            if self.tool_catalog.kind(event.tool_name) == "todo" and not event.is_error:
                self._todos_changed(event.result.details)
            record_skill_read(self, event)
        self.emit(event)

    @property
    def todos(self) -> list[TodoItem]:
        """The current task list (the latest the todo tool wrote on this path)."""
        return list(self.policy.decisions.todos or [])

    def _todos_changed(self, details: Any) -> None:
        todos = clean_todos(details)
        if todos is None:
            return
        self.policy.recorder.record_todos(todos)
        self.emit(TodosEvent(todos=[{"content": t["content"], "status": t["status"]} for t in todos]))

    def _on_ledger_record(self, record: LedgerRecord) -> None:
        try:
            self.store.append_custom(LEDGER_CUSTOM_TYPE, record.to_json_dict())
        except SessionWriteError:  # the recorder stops the run and the mode reports it, once
            pass
        except Exception:  # the ledger must never break a run
            log.exception("could not store a ledger record")
        self.emit(LedgerEvent(record=record))

    def _ledger_from_tool(self, event: ToolExecutionEndEvent) -> None:
        chars = sum(len(b.text) for b in event.result.content if isinstance(b, TextContent))
        for record in tool_records(event.tool_call_id, event.tool_name, event.result.details, chars):
            self.ledger.add(record)

    # --- before every request ------------------------------------------------------------

    def estimate_request_tokens(self, messages: Sequence[AgentMessage]) -> int:
        """Tokens of the request these messages would make, counted on the view that
        would be sent (recorded pruning applied, system prompt and tools included)."""
        return self.policy.sizes.count(self.policy.view(messages))

    def _fixed_tokens(self) -> int:
        """Tokens of the system prompt and tool definitions - without the tools when the
        server's chat template drops them (:meth:`FirstCount.counts_tools`); counted again
        only when one of them changed (asked several times per request, and counting
        serialises every schema)."""
        state = self.agent.state
        model = state.model
        tools = state.tools if self._first_count.counts_tools(f"{model.provider}/{model.id}") else []
        key = (state.system_prompt, tuple((t.name, t.description, t.parameters_schema()) for t in tools))
        if self._fixed_count is None or self._fixed_count[0] != key:
            self._fixed_count = (key, fixed_tokens(state.system_prompt, [t.definition() for t in tools]))
        return self._fixed_count[1]

    async def _transform_context(self, messages: list[AgentMessage], signal: AbortSignal) -> list[AgentMessage]:
        self.goal_loop.sync_tools()  # the goal tool, offered as the session says (before anything counts tools)
        state = self.agent.state
        await self._first_count.before_request(
            self.model, self.policy, state.system_prompt, [t.definition() for t in state.tools], messages, self.api_key
        )
        plan = await self.context_owner.prepare(messages, signal, self.turn_prompt)
        settled = plan.view if isinstance(plan.view, list) else list(plan.view)  # the policy's View, a list
        view = await self.extensions.transform(settled, plan)  # a result that breaks the context rules is not used
        self.request_plan = plan if view is settled else dataclasses.replace(plan, view=view)
        return view

    async def _after_tool_batch(
        self, assistant: AssistantMessage, results: list[ToolResultMessage]
    ) -> list[ToolResultMessage]:
        new_results, records = await asyncio.to_thread(
            budget_results, results, self.env.limits, self.env.spill_dir(), self.env.spill_max_bytes
        )
        for record in records:
            self.ledger.add(record)
        return new_results

    def _read_in_view(self, path: str, offset: int | None, limit: int | None) -> ReadRecord | None:
        found = self.policy.find_read(path, offset, limit)
        if found is None:
            return None
        return ReadRecord(path, offset, limit, found.mtime_ns, found.size, found.timestamp_ms / 1000)

    # --- running ---------------------------------------------------------------------------

    def expand_input(self, text: str) -> str:
        """``/skill:name args`` and ``/template args`` expanded; anything else as is."""
        if text.startswith("/skill:"):
            expanded = expand_skill_command(text, self.skills)
            if expanded is not None:
                return expanded
        if text.startswith("/"):
            expanded = expand_template_command(text, self.templates)
            if expanded is not None:
                return expanded
        return text

    async def prompt(
        self, text: str, images: Sequence[ImageContent] = (), *, commands: bool = True
    ) -> list[AgentMessage]:
        """Run the agent on ``text`` until it stops; returns the messages added.

        ``commands``: ``text`` was typed by the user, so ``/goal``, an extension's
        ``/command``, ``/skill:name`` and ``/template`` are run or expanded. False for text
        a model wrote (a sub-agent's task prompt): it is sent as it is, since a model must
        not set a goal or run a command as if it were the user (docs/subagents.md)."""
        if commands and is_goal_command(text):
            return goal_command(self, text)  # answered here, in every mode: no model call
        typed = await self.extensions.run_command(text) if commands else text
        if typed is None:
            return []  # an extension's /command did what there was to do
        expanded = self.expand_input(typed) if commands else typed
        if (body := await self.control.before_prompt(expanded, fit=self.fit_prompt)) is None:
            return []  # a UserPromptSubmit hook blocked it (recorded in the ledger)
        record_skill_prompt(self, typed, expanded)  # its instructions survive compactions
        self.goal.before_prompt()  # a budgeted goal: the budget left, as of this prompt
        message = UserMessage(content=[TextContent(text=body), *images])
        self.turn_prompt = message
        self.begin_run()
        note_unanswered(self)  # the previous prompt was never answered: say so first (docs/sessions.md)
        try:
            added = await self.control.run_until_stopped(message, self._run_turn)  # Stop hooks may continue it
            added += await self.goal_loop.run(added)  # with an active goal: on by itself until it stops
            record_plan(self, added)  # plan mode's answer: kept through compactions
            return added
        finally:
            self.turn_prompt = None
            await self.control.after_prompt()

    def begin_run(self) -> None:
        """What every run records first (a prompt's, a goal loop picked up)."""
        self._recovery_abort = AbortSignal()
        self.memory.record(self.store)  # the system prompt of this session, for every resume
        self._server.record(self.store, self.model)  # the server, for a resume without flags

    async def _run_turn(self, message: StepInput, *, keep_count: bool = False) -> list[AgentMessage]:
        """The agent on ``message`` (None: on from the messages as they are), then recovery."""
        agent = self.agent
        added = await (agent.continue_() if message is None else agent.prompt(message, keep_count=keep_count))
        policy = self.requests.retry_policy()
        return await recover(self.recovery, added, policy=policy, signal=self._recovery_abort, emit=self.emit)

    async def run_step(self, message: StepInput) -> list[AgentMessage]:
        """One step of the goal loop, as a prompt's turn runs (Stop hooks, recovery), its
        model calls counted against the run's allowance; no prompt of the user's runs it."""
        self.turn_prompt = None
        return await self.control.run_until_stopped(message, functools.partial(self._run_turn, keep_count=True))

    def fit_prompt(self, text: str) -> str:
        """A prompt's text as it can be sent: whole when the window leaves it room, else its
        head and the file holding it (recorded in the ledger)."""
        sizes = self.policy.sizes
        room = int(max(0, sizes.threshold - sizes.scaled(sizes.fixed_tokens())) * 4 / sizes.ratio)
        fitted, record = fit_prompt(text, room, self.env.spill_dir())  # heron.coding.oversized's
        if record is not None:
            self.ledger.add(record)
        return fitted

    def steer(self, text: str) -> None:
        self.agent.steer(text)

    def follow_up(self, text: str) -> None:
        self.agent.follow_up(text)

    def abort(self) -> None:
        self.agent.abort()
        self._recovery_abort.abort()
        self.context_owner.cancel_background()
        self.control.memory_watch.cancel()

    # --- compaction (decided and run by the context owner) --------------------------------

    async def compact(self, focus: str | None = None, reason: CompactionReason = "manual") -> CompactionEndEvent | None:
        """Summarise old history into a compaction entry and rebuild the context from the
        session (the running turn's prompt kept). Returns the end event, or ``None`` when
        nothing was compacted."""
        end = await self.context_owner.compact(focus, reason, turn_prompt=self.turn_prompt)
        return end if end.entry_id is not None else None

    # --- tree navigation, forks --------------------------------------------------------------

    async def navigate(self, entry_id: str | None, *, summarize: bool = False) -> str | None:
        """Move the session's leaf to ``entry_id`` (None: before the first entry); the next
        message continues from there. With ``summarize``, the branch being left (from the
        old leaf back to the common ancestor) is summarised into a ``branch_summary``
        entry at the new position. Returns the summary, if one was made."""
        if self.agent.is_running:
            raise RuntimeError("the agent is running; abort it before moving in the tree")
        summary = await self.context_owner.branch_summary(entry_id) if summarize else None
        if summary:
            self.store.branch_with_summary(entry_id, summary)
        elif entry_id is None:
            self.store.reset_leaf()
        else:
            self.store.branch(entry_id)
        self._reload()
        return summary

    def _reload(self) -> None:
        restored = build_context(self.store, self.store.leaf_id)
        self.agent.replace_messages(with_injections(self.store, restored, self.store.leaf_id, self.settings.continuity))
        self.policy.reload(self.store)
        self.fit_tool_limits()  # its learnt window

    def _env_follows(self, store: SessionStore) -> None:
        """The tools' session: its id (spill files, search_history) and the sessions it was
        handed off from (search_history reaches them: heron.coding.handoff)."""
        self.env.session_id = store.session_id
        self.env.lineage = handoff_lineage(store)

    def switch_store(self, store: SessionStore) -> None:
        """Continue in another session file (``/new``, ``/resume``, fork)."""
        self._recorder.close()
        store.scrub = store.scrub or self.store.scrub  # the secret redactor Control installed
        self.store = store
        self._env_follows(store)
        self._recorder = SessionRecorder(self.agent, store)
        # The system prompt is the one a new process opening this session builds: its start
        # date and the memory text it recorded, not the previous session's.
        self.date = self._date_override or session_date(store)
        self.memory = MemoryKeeper(self.settings.memory, home=self.home, cwd=self.cwd, store=store)
        self._reload()
        self.system_prompt = self.render_system_prompt()
        self.agent.set_system_prompt(self.system_prompt)

    def context_breakdown(self) -> ContextBreakdown:
        return context_breakdown(self)


__all__ = ["CodingSession", "ContextBreakdown", "ExtensionMessage", "session_date"]
