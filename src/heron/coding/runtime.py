"""CodingSession: the coding agent as a library.

It glues the layers together: an :class:`Agent` with the coding tools and the system
prompt, a :class:`SessionStore` that records every message, and context management
before every request - pruning once the context passes half the window, compaction
before it would pass ``window - reserve`` (checked between the tool turns of one run,
not only after it), per-turn output budgets, and recovery from a provider's overflow
error (compact, then retry once). Everything it keeps from the model's view goes to
the ledger, stored in the session as ``custom`` entries.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heron.agent.agent import Agent
from heron.agent.events import MessageEndEvent, ToolExecutionEndEvent
from heron.agent.messages import AgentMessage, CompactionSummaryMessage, ExtensionMessage
from heron.agent.tools import AgentTool
from heron.ai.abort import AbortSignal, sleep_or_abort
from heron.ai.events import RetryEvent
from heron.ai.models import heron_home
from heron.ai.options import RetryPolicy, StreamOptions
from heron.ai.overflow import RETRYABLE, classify, is_context_overflow
from heron.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StopReason,
    TextContent,
    ThinkingLevel,
    ToolResultMessage,
    UserMessage,
)
from heron.coding.context_files import ContextFile, ledger_records, load_context_files
from heron.coding.events import (
    CompactionEndEvent,
    CompactionReason,
    CompactionStartEvent,
    LedgerEvent,
    RetryEndEvent,
    RetryStartEvent,
    SessionEvent,
)
from heron.coding.prompt import build_system_prompt, load_prompt_files
from heron.coding.settings import Settings, load_settings
from heron.coding.skills import SkillSet, expand_skill_command, load_skills
from heron.coding.templates import TemplateSet, expand_template_command, load_templates
from heron.coding.tools import create_tools
from heron.coding.tools.env import ToolEnv
from heron.context.budget import estimate_context_tokens, estimate_message_tokens, last_usage_index
from heron.context.compaction import (
    CompactionSettings,
    SummaryFailed,
    entry_message,
    prepare_compaction,
    summarise,
    summarise_branch,
)
from heron.context.ledger import LEDGER_CUSTOM_TYPE, Ledger, LedgerRecord
from heron.context.prune import PruneState, apply_pruning, extend_pruning
from heron.context.results import apply_turn_budget
from heron.session.context import build_context
from heron.session.entries import MessageEntry
from heron.session.recorder import SessionRecorder
from heron.session.store import SessionStore, SessionWriteError

log = logging.getLogger(__name__)

Listener = Callable[[SessionEvent], None]

PRUNE_SHARE = 0.5  # prune once the context passes this share of the window
PRUNE_MIN_STEP_SHARE = 0.10  # ...in steps that save at least this share (cache stability)
OUTPUT_MARGIN_SHARE = 0.03  # estimates are chars/4: leave room for the provider's own count
REINJECT_FILES = 5
REINJECT_TOKENS = 50_000
REINJECT_WINDOW_SHARE = 0.15
MIN_OUTPUT_TOKENS = 1_024
REINJECTED_FILES_TYPE = "heron.reinjected-files"


@dataclass
class ContextBreakdown:
    """What the window holds, by part, in estimated tokens (``/context``)."""

    window: int
    threshold: int
    system_prompt: int
    tools: int
    context_files: int
    summaries: int
    messages: dict[str, int] = field(default_factory=dict)
    total: int = 0
    ledger: list[LedgerRecord] = field(default_factory=list)
    pruned_results: int = 0


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


class CodingSession:
    """One conversation of the coding agent, recorded in a session file.

    ``await session.prompt("fix the failing test")`` runs the agent until it stops;
    ``session.subscribe(listener)`` sees every agent event plus compaction, retry and
    ledger events.
    """

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
    ) -> None:
        self.cwd = Path(cwd).resolve()
        self.home = Path(home) if home is not None else heron_home()
        self.settings = settings if settings is not None else load_settings(self.cwd, self.home)
        self.api_key = api_key
        self.store = store if store is not None else SessionStore.in_memory(self.cwd)
        self.ledger = Ledger()
        self.prune_state = PruneState()
        self._pruned_since_usage = 0
        self._listeners: list[Listener] = []
        self._retrying: int = 0
        self._failed_entry: str | None = None
        self._recovery_abort = AbortSignal()
        self.date = date or _dt.date.today().isoformat()

        self.env = ToolEnv(
            cwd=self.cwd,
            limits=self.settings.tool_limits.for_window(model.context_window),
            session_id=self.store.session_id,
            home=self.home,
            shell=self.settings.shell_path,
        )
        names = list(tools) if tools is not None else (
            list(self.settings.default_tools) if self.settings.default_tools else None
        )
        self.tools: list[AgentTool[Any]] = [*create_tools(self.env, names), *extra_tools]
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
        self.system_prompt = self._build_system_prompt()

        restored = build_context(self.store, self.store.leaf_id)
        level: ThinkingLevel = thinking_level or self.settings.default_thinking_level or "off"
        if thinking_level is None and restored.thinking_level and self.store.leaf_id is not None:
            level = restored.thinking_level  # type: ignore[assignment]
        self.agent = Agent(
            model=model,
            system_prompt=self.system_prompt,
            tools=self.tools,
            messages=restored.messages,
            thinking_level=level,
            transform_context=self._transform_context,
            stream_options=self._stream_options,
            after_tool_batch=self._after_tool_batch,
        )
        self._recorder = SessionRecorder(self.agent, self.store)
        self.agent.subscribe(self._on_agent_event)
        self.ledger.subscribe(self._on_ledger_record)
        for record in ledger_records(self.context_files):
            self.ledger.add(record)

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
        base = CompactionSettings(
            reserve_tokens=self.settings.compaction.reserve_tokens,
            keep_recent_tokens=self.settings.compaction.keep_recent_tokens,
        )
        return base.for_window(self.model.context_window)

    @property
    def threshold(self) -> int:
        """Above this many tokens a request is not sent until the context is compacted."""
        return self.model.context_window - self.compaction_settings.reserve_tokens

    def _build_system_prompt(self) -> str:
        specs = [(tool.name, tool.description) for tool in self.tools]
        return build_system_prompt(
            cwd=self.cwd,
            date=self.date,
            tools=specs,
            context_files=self.context_files,
            skills=self.skills.skills,
            prompt_files=load_prompt_files(self.cwd, self.home),
            system_prompt=self._system_prompt_override,
            append_system_prompt=self._append_system_prompt,
        )

    def set_model(self, model: Model, api_key: str | None = None) -> None:
        """Switch model; recorded as a ``model_change`` entry with the next message."""
        self.agent.set_model(model)
        if api_key is not None:
            self.api_key = api_key
        self.env.limits = self.settings.tool_limits.for_window(model.context_window)
        self.store.append_model_change(model.provider, model.id)

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        self.agent.set_thinking_level(level)
        self.store.append_thinking_level_change(level)

    # --- events ------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _emit(self, event: SessionEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken UI must not break the run
                log.exception("session listener failed on %s", event.type)

    def _on_agent_event(self, event: Any) -> None:
        if isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            if event.message.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):
                self._pruned_since_usage = 0
            if self._retrying:
                success = event.message.stop_reason != StopReason.ERROR
                self._emit(RetryEndEvent(success=success, attempt=self._retrying,
                                         final_error=None if success else event.message.error_message))
                self._retrying = 0
        elif isinstance(event, ToolExecutionEndEvent):
            self._ledger_from_tool(event)
        self._emit(event)

    def _on_ledger_record(self, record: LedgerRecord) -> None:
        try:
            self.store.append_custom(LEDGER_CUSTOM_TYPE, record.to_json_dict())
        except SessionWriteError:  # the recorder stops the run and the mode reports it, once
            pass
        except Exception:  # the ledger must never break a run
            log.exception("could not store a ledger record")
        self._emit(LedgerEvent(record=record))

    def _ledger_from_tool(self, event: ToolExecutionEndEvent) -> None:
        details = event.result.details
        if not isinstance(details, dict):
            return
        text_chars = sum(len(b.text) for b in event.result.content if isinstance(b, TextContent))
        if details.get("kind") == "unchanged":
            self.ledger.add(LedgerRecord(kind="dedupe", ref=event.tool_call_id, tool=event.tool_name,
                                         chars_before=int(details.get("size") or 0), chars_after=text_chars,
                                         recover="the earlier read of the same range is in the context"))
            return
        truncation = details.get("truncation")
        if isinstance(truncation, dict) and truncation.get("truncated", True):
            before = int(truncation.get("total_bytes") or truncation.get("totalBytes") or 0)
            path = details.get("full_output_path")
            recover = f"full output in {path}" if path else "page with offset/limit, or grep"
            self.ledger.add(LedgerRecord(kind="truncate", ref=event.tool_call_id, tool=event.tool_name,
                                         chars_before=max(before, text_chars), chars_after=text_chars,
                                         recover=recover, detail={"truncation": truncation}))

    # --- before every request ------------------------------------------------------------

    def estimate_request_tokens(self, messages: Sequence[AgentMessage]) -> int:
        """Context tokens of the request these messages would make: the last usage report
        plus estimates after it, less what pruning removed since that report; or, with no
        report, an estimate of everything including the system prompt and tools."""
        tokens = estimate_context_tokens(messages)
        if last_usage_index(messages) is None:
            # everything estimated, from the (pruned) view itself: nothing to subtract
            return tokens + self._fixed_tokens()
        return max(0, tokens - self._pruned_since_usage)

    def _fixed_tokens(self) -> int:
        tools = sum(_tokens(json.dumps(t.definition().to_json_dict(), ensure_ascii=False)) for t in self.tools)
        return _tokens(self.agent.state.system_prompt) + tools

    async def _transform_context(self, messages: list[AgentMessage], signal: AbortSignal) -> list[AgentMessage]:
        window = self.model.context_window
        pruning = self.settings.pruning.enabled
        view = apply_pruning(messages, self.prune_state) if pruning else messages
        tokens = self.estimate_request_tokens(view)
        if pruning and tokens > window * PRUNE_SHARE:
            # Small steps only when they might spare a compaction (see extend_pruning).
            min_saving = 0 if tokens > self.threshold else int(window * PRUNE_MIN_STEP_SHARE)
            records = extend_pruning(messages, self.prune_state, min_saving_tokens=min_saving)
            if records:
                saved = sum(r.saved_tokens for r in records)
                self._pruned_since_usage += saved
                for record in records:
                    self.ledger.add(record)
                view = apply_pruning(messages, self.prune_state)
                tokens = self.estimate_request_tokens(view)
        if self.settings.compaction.enabled and tokens > self.threshold and not signal.aborted:
            await self.compact(reason="threshold")
            messages = list(self.agent.state.messages)
            view = apply_pruning(messages, self.prune_state) if pruning else messages
        return view

    def _stream_options(self, context: Context) -> StreamOptions:
        retry = self.settings.retry
        policy = RetryPolicy(
            max_retries=retry.max_retries if retry.enabled else 0,
            base_delay=retry.base_delay_ms / 1000,
            max_delay=retry.max_delay_ms / 1000,
        )
        estimate = self.estimate_request_tokens(self.agent.state.messages)
        room = self.model.context_window - estimate - int(self.model.context_window * OUTPUT_MARGIN_SHARE)
        max_tokens = max(MIN_OUTPUT_TOKENS, min(self.model.max_tokens, room))
        return StreamOptions(
            api_key=self.api_key,
            max_tokens=max_tokens,
            thinking=self.agent.state.thinking_level,
            session_id=self.store.session_id,
            retry=policy,
            on_retry=self._on_ai_retry,
        )

    def _on_ai_retry(self, event: RetryEvent) -> None:
        self._retrying = event.attempt
        self._emit(RetryStartEvent(attempt=event.attempt, max_attempts=event.max_retries, delay=event.delay,
                                   error_message=event.error_message))

    async def _after_tool_batch(
        self, assistant: AssistantMessage, results: list[ToolResultMessage]
    ) -> list[ToolResultMessage]:
        new_results, outcomes = await asyncio.to_thread(
            apply_turn_budget, results, self.env.limits, self.env.spill_dir()
        )
        names = {r.tool_call_id: r.tool_name for r in results}
        for outcome in outcomes:
            if not outcome.spilled:
                continue
            self.ledger.add(
                LedgerRecord(
                    kind="spill",
                    ref=outcome.call_id,
                    tool=names.get(outcome.call_id),
                    chars_before=outcome.chars_before,
                    chars_after=outcome.chars_after,
                    recover=f"read {outcome.spill_path} with offset/limit, or grep it",
                    detail=outcome.to_json(),
                )
            )
        return new_results

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

    async def prompt(self, text: str, images: Sequence[ImageContent] = ()) -> list[AgentMessage]:
        """Run the agent on ``text`` until it stops; returns the messages added."""
        content: list[TextContent | ImageContent] = [TextContent(text=self.expand_input(text)), *images]
        self._recovery_abort = AbortSignal()
        added = await self.agent.prompt(UserMessage(content=content))
        return await self._recover(added)

    def steer(self, text: str) -> None:
        self.agent.steer(text)

    def follow_up(self, text: str) -> None:
        self.agent.follow_up(text)

    def abort(self) -> None:
        self.agent.abort()
        self._recovery_abort.abort()

    async def _recover(self, added: list[AgentMessage]) -> list[AgentMessage]:
        """After a run that ended in an error: compact and retry once on overflow; retry
        transient failures (those that broke mid-answer) with backoff."""
        attempts = 0
        overflowed = False
        retry = self.settings.retry
        while True:
            last = self.agent.messages[-1] if self.agent.messages else None
            if not isinstance(last, AssistantMessage) or last.stop_reason != StopReason.ERROR:
                return added
            if is_context_overflow(last) and not overflowed:
                overflowed = True
                self._drop_failed_answer()
                self.ledger.add(LedgerRecord(kind="overflow", chars_before=0, chars_after=0,
                                             recover="compacted and retried once",
                                             detail={"error": last.error_message}))
                outcome = await self.compact(reason="overflow")
                if outcome is None:  # nothing to compact: report the overflow as it was
                    if self._failed_entry is not None:
                        self.store.branch(self._failed_entry)
                    self.agent.state.messages.append(last)
                    return added
                added += await self.agent.continue_()
                continue
            # heron.ai already retried failures that happened before any content arrived;
            # here only a stream that broke mid-answer is retried, or retries would multiply.
            if not retry.enabled or attempts >= retry.max_retries or not last.content or not _retryable(last):
                return added
            attempts += 1
            delay = min(retry.max_delay_ms / 1000, retry.base_delay_ms / 1000 * 2 ** (attempts - 1))
            self._retrying = attempts
            self._emit(RetryStartEvent(attempt=attempts, max_attempts=retry.max_retries, delay=delay,
                                       error_message=last.error_message or ""))
            if not await sleep_or_abort(delay, self._recovery_abort):
                return added
            self._drop_failed_answer()
            added += await self.agent.continue_()

    def _drop_failed_answer(self) -> None:
        """Take a failed answer out of the live context and off the session's path: the
        leaf moves back to its parent, so the retry becomes a sibling branch and the
        failed message stays in the file."""
        failed = self.agent.state.messages.pop()
        self._failed_entry = None
        leaf = self.store.leaf_id
        if leaf is not None:
            entry = self.store.get(leaf)
            if isinstance(entry, MessageEntry) and entry.message is failed:
                self._failed_entry = leaf
                parent = self.store.parent_id_of(leaf)
                if parent is not None:
                    self.store.branch(parent)
                else:
                    self.store.reset_leaf()

    # --- compaction ----------------------------------------------------------------------

    async def compact(self, focus: str | None = None, reason: CompactionReason = "manual") -> CompactionEndEvent | None:
        """Summarise old history into a compaction entry and rebuild the context from the
        session. Returns the end event, or ``None`` when there was nothing to compact."""
        before = self.estimate_request_tokens(self.agent.state.messages)
        self._emit(CompactionStartEvent(reason=reason, tokens_before=before))
        path = self.store.path_to(self.store.leaf_id) if self.store.leaf_id is not None else []
        settings = self.compaction_settings
        plan = prepare_compaction(path, settings)
        if plan is None:
            end = CompactionEndEvent(reason=reason, tokens_before=before, skipped="nothing to compact")
            self._emit(end)
            return None
        try:
            result = await summarise(
                plan,
                self.model,
                reserve_tokens=settings.reserve_tokens,
                focus=focus,
                stream_options={"api_key": self.api_key, "session_id": None},
            )
        except SummaryFailed as exc:
            end = CompactionEndEvent(reason=reason, tokens_before=before, error=str(exc))
            self._emit(end)
            return None
        for record in result.records:
            self.ledger.add(record)
        read_paths = self.env.reads.read_paths()
        entry = self.store.append_compaction(
            summary=result.summary,
            first_kept_entry_id=plan.first_kept_entry_id,
            tokens_before=before,
            details=result.details,
        )
        summarised_chars = sum(estimate_message_tokens(m) for m in plan.messages_to_summarize) * 4
        self.ledger.add(
            LedgerRecord(
                kind="compaction",
                ref=entry.id,
                chars_before=summarised_chars,
                chars_after=len(result.summary),
                recover="every message stays in the session file; /tree shows them",
                detail={"reason": reason, "first_kept_entry_id": plan.first_kept_entry_id,
                        "split_turn": plan.split_turn},
            )
        )
        self.env.reads.reset()
        self.prune_state.reset()
        self._pruned_since_usage = 0
        reinjected = self._reinjected_files(read_paths)
        if reinjected is not None:
            self.store.append_custom_message(REINJECTED_FILES_TYPE, reinjected, display=False)
        rebuilt = build_context(self.store, self.store.leaf_id).messages
        self.agent.state.messages[:] = rebuilt
        after = self.estimate_request_tokens(rebuilt)
        if after > self.threshold:
            self.ledger.add(LedgerRecord(kind="compaction", ref=entry.id, chars_before=after * 4,
                                         chars_after=after * 4,
                                         recover="the kept recent messages alone exceed the threshold",
                                         detail={"over_threshold": True, "tokens": after,
                                                 "threshold": self.threshold}))
        end = CompactionEndEvent(reason=reason, tokens_before=before, tokens_after=after, entry_id=entry.id,
                                 summary=result.summary)
        self._emit(end)
        return end

    def _reinjected_files(self, paths: list[str]) -> str | None:
        """The most recently read files, current content, after a compaction (Claude Code
        does the same): the model keeps working on them and would read them again."""
        budget_tokens = min(REINJECT_TOKENS, int(self.model.context_window * REINJECT_WINDOW_SHARE))
        budget = budget_tokens * 4
        blocks: list[str] = []
        for raw in reversed(paths):
            if len(blocks) >= REINJECT_FILES or budget <= 0:
                break
            path = Path(raw)
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # deleted, unreadable or binary: skip
            shown = _display(path, self.cwd)
            if len(text) > budget:
                text = text[:budget] + f"\n[... cut: read {shown} with offset/limit for the rest]"
            budget -= len(text)
            blocks.append(f'<file path="{shown}">\n{text}\n</file>')
        if not blocks:
            return None
        header = "Files you were working on before the history was compacted (their current contents):"
        return header + "\n\n" + "\n\n".join(blocks)

    # --- tree navigation, forks --------------------------------------------------------------

    async def navigate(self, entry_id: str | None, *, summarize: bool = False) -> str | None:
        """Move the session's leaf to ``entry_id`` (None: before the first entry); the next
        message continues from there. With ``summarize``, the branch being left (from the
        old leaf back to the common ancestor) is summarised into a ``branch_summary``
        entry at the new position. Returns the summary, if one was made."""
        if self.agent.is_running:
            raise RuntimeError("the agent is running; abort it before moving in the tree")
        summary: str | None = None
        old_leaf = self.store.leaf_id
        if summarize and old_leaf is not None and old_leaf != entry_id:
            target_path = set(self.store.path_ids(entry_id)) if entry_id is not None else set()
            abandoned = [e for e in self.store.path_to(old_leaf) if e.id not in target_path]
            messages = [m for m in (entry_message(e) for e in abandoned) if m is not None]
            if messages:
                budget = min(20_000, self.model.context_window // 4)
                summary = await summarise_branch(messages, self.model, budget_tokens=budget,
                                                 stream_options={"api_key": self.api_key})
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
        self.agent.replace_messages(restored.messages)
        self.prune_state.reset()
        self._pruned_since_usage = 0

    def switch_store(self, store: SessionStore) -> None:
        """Continue in another session file (``/new``, ``/resume``, fork)."""
        self._recorder.close()
        self.store = store
        self.env.session_id = store.session_id
        self._recorder = SessionRecorder(self.agent, store)
        self._reload()

    # --- inspection ----------------------------------------------------------------------------

    def context_breakdown(self) -> ContextBreakdown:
        messages = apply_pruning(self.agent.messages, self.prune_state)
        by_role: dict[str, int] = {}
        summaries = 0
        for message in messages:
            tokens = estimate_message_tokens(message)
            if isinstance(message, CompactionSummaryMessage):
                summaries += tokens
                continue
            by_role[message.role] = by_role.get(message.role, 0) + tokens
        files = sum(_tokens("x" * f.kept_chars) for f in self.context_files) if self.context_files else 0
        system = _tokens(self.agent.state.system_prompt)
        tools = self._fixed_tokens() - system
        return ContextBreakdown(
            window=self.model.context_window,
            threshold=self.threshold,
            system_prompt=system,
            tools=tools,
            context_files=files,
            summaries=summaries,
            messages=by_role,
            total=self.estimate_request_tokens(messages),
            ledger=list(self.ledger.records),
            pruned_results=len(self.prune_state),
        )


_STATUS = re.compile(r"^(\d{3})\b")


def _retryable(message: AssistantMessage) -> bool:
    text = message.error_message or ""
    match = _STATUS.match(text)
    status = int(match.group(1)) if match else None
    return classify(status, text) in RETRYABLE


def _display(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def message_entry_ids(store: SessionStore) -> list[str]:
    """Ids of the message entries on the current path (for pickers)."""
    return [e.id for e in store.path_to(store.leaf_id) if isinstance(e, MessageEntry)] if store.leaf_id else []


__all__ = ["CodingSession", "ContextBreakdown", "ExtensionMessage"]
