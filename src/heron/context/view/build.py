"""The view: the messages a request carries, derived from the session and its decisions.

Two steps, both pure functions of what the session file holds:

1. :func:`session_messages` - the conversation for a leaf (``build_context``: the latest
   compaction's summary, the entries it kept, everything after), plus what that
   compaction recorded for the view: the re-injected block (files the model was working
   on) and, when the compaction split the running turn, that turn's prompt - verbatim,
   as its own user message - both placed right after the summary, before the kept
   messages, with the frontier read from the path before the compaction (the plan, the
   invoked skills, the recent steps: :mod:`heron.context.continuity.frontier`); and the session's
   goal, when one is set, leading the whole list (:mod:`heron.context.continuity.goal`). Injected
   messages never come after the turn's latest message.
2. :func:`apply_decisions` - pruned results replaced by their recorded stubs (the same
   text on every request until a compaction summarises them), and each read de-dup stub
   whose earlier content is no longer in the view (pruned, summarised) replaced by a note
   that says so: the model is never told "already in the conversation" for something
   that is not. A call the session holds no result for, followed by a later message (the
   process running the tool was killed), gets an error result saying it did not finish,
   so every call keeps its result in every process.

:class:`ReadIndex` answers the read tool's question "is this range of this file present
whole, unchanged, earlier in the view?" from the view itself, so a resumed process gives
the same answer as the one that never stopped.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heron.agent.messages import AgentMessage, CompactionSummaryMessage, ExtensionMessage
from heron.agent.tool_meta import PathUse, ToolCatalog
from heron.ai.types import AssistantMessage, StopReason, TextContent, ToolCall, ToolResultMessage, UserMessage
from heron.context.continuity.children import CHILDREN_MESSAGE_TYPE, clean_children, render_children
from heron.context.continuity.frontier import FRONTIER_TYPES, FrontierSettings, compaction_frontier
from heron.context.continuity.goal import GOAL_MESSAGE_TYPE, goal_on_path, with_goal
from heron.context.continuity.todos import TODOS_MESSAGE_TYPE, clean_todos, injected_todos_text
from heron.context.records.decisions import ContextDecisions
from heron.context.view.call_args import shown_message
from heron.context.window.budget import RunningTally, Tally
from heron.context.window.budget_notice import with_notice
from heron.session.context import EntrySource, SessionContext, build_context
from heron.session.entries import CompactionEntry, MessageEntry, iso_to_ms

REINJECTED_FILES_TYPE = "heron.reinjected-files"
# Keys a compaction entry's details may carry for the view (heron's; pi ignores them).
DETAIL_REINJECTED = "heronReinjected"
DETAIL_KEPT_PROMPT = "heronKeptPrompt"
DETAIL_TODOS = "heronTodos"
DETAIL_CHILDREN = "heronSubagents"
# ``budget_spill`` in a result's details: the result was replaced by a preview.
SPILL_KEY = "budget_spill"
INJECTED_TYPES = frozenset(
    {REINJECTED_FILES_TYPE, TODOS_MESSAGE_TYPE, CHILDREN_MESSAGE_TYPE, GOAL_MESSAGE_TYPE, *FRONTIER_TYPES}
)
# The result a call gets in the view when the session holds none (the process running the
# tool was killed): every call keeps its result, and the model learns the call did not finish.
NO_RESULT_NOTE = "[No result: this tool call did not finish (the process running it stopped). Run it again if needed.]"
GONE_PREFIX = "[This read was answered with a reference to an earlier read"


def session_messages(
    source: EntrySource, leaf_id: str | None, frontier: FrontierSettings | None = None
) -> list[AgentMessage]:
    """The conversation for ``leaf_id`` with the goal, the latest compaction's injected
    block and kept turn prompt in place (see the module docstring)."""
    return with_injections(source, build_context(source, leaf_id), leaf_id, frontier)


def with_injections(
    source: EntrySource,
    context: SessionContext,
    leaf_id: str | None = None,
    frontier: FrontierSettings | None = None,
) -> list[AgentMessage]:
    """``context.messages`` with what its compaction recorded for the view put in place;
    with ``leaf_id`` (the leaf ``context`` was built for), led by the goal on that path
    and with the frontier (skills, recent steps) after the compaction's block."""
    ids: Sequence[str] = ()
    types: Sequence[str] = ()
    if leaf_id is not None:
        ids, types = source.lineage(leaf_id)
    goal = goal_on_path(source.get, ids, types)[0]
    return with_goal(_compaction_injections(source, context, ids, types, frontier or FrontierSettings()), goal)


def _compaction_injections(
    source: EntrySource,
    context: SessionContext,
    ids: Sequence[str],
    types: Sequence[str],
    frontier: FrontierSettings,
) -> list[AgentMessage]:
    messages = context.messages
    if context.compaction_id is None:
        return messages
    compaction = source.get(context.compaction_id)
    if not isinstance(compaction, CompactionEntry) or not isinstance(compaction.details, dict):
        return messages
    timestamp = iso_to_ms(compaction.timestamp)
    injected = injected_messages(compaction.details, timestamp)
    if ids:
        index = ids.index(compaction.id) if compaction.id in ids else len(ids)
        block = compaction_frontier(source.get, ids, types, index, messages[1:], timestamp, frontier)
        # the frontier goes before the re-injected files (the largest, least stable block)
        files = [m for m in injected if getattr(m, "custom_type", None) == REINJECTED_FILES_TYPE]
        injected = [m for m in injected if getattr(m, "custom_type", None) != REINJECTED_FILES_TYPE] + block + files
    prompt_id = compaction.details.get(DETAIL_KEPT_PROMPT)
    if isinstance(prompt_id, str) and prompt_id and prompt_id not in context.entry_ids:
        try:
            entry = source.get(prompt_id)
        except KeyError:  # a hand-edited or cut file: the prompt is gone, the session still opens
            entry = None
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
            injected.append(entry.message)
    if not injected:
        return messages
    return [messages[0], *injected, *messages[1:]]


def injected_messages(details: dict[str, Any], timestamp_ms: int) -> list[AgentMessage]:
    """The block a compaction injects after its summary (empty when it injected none):
    the task list as it stood, the sub-agents started so far, then the files the model
    was working on."""
    out: list[AgentMessage] = []
    todos = clean_todos(details.get(DETAIL_TODOS)) if DETAIL_TODOS in details else None
    if todos:
        out.append(
            ExtensionMessage(
                custom_type=TODOS_MESSAGE_TYPE,
                content=injected_todos_text(todos),
                display=False,
                timestamp=timestamp_ms,
            )
        )
    children = clean_children(details.get(DETAIL_CHILDREN)) if DETAIL_CHILDREN in details else None
    if children:
        out.append(
            ExtensionMessage(
                custom_type=CHILDREN_MESSAGE_TYPE,
                content=render_children(children),
                display=False,
                timestamp=timestamp_ms,
            )
        )
    text = details.get(DETAIL_REINJECTED)
    if isinstance(text, str) and text:
        out.append(
            ExtensionMessage(custom_type=REINJECTED_FILES_TYPE, content=text, display=False, timestamp=timestamp_ms)
        )
    return out


def is_injected(message: AgentMessage) -> bool:
    """Summaries and blocks heron injects (they belong before the kept messages)."""
    if isinstance(message, CompactionSummaryMessage):
        return True
    return isinstance(message, ExtensionMessage) and message.custom_type in INJECTED_TYPES


# --- reads ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadKey:
    """What identifies a read for deduplication: the same file with the same range."""

    path: str  # absolute, normalised
    offset: int | None
    limit: int | None


@dataclass(frozen=True, slots=True)
class ReadInView:
    """A read result still in the view, with the file's stat when it was read, so a repeated
    read of an unchanged file can point to the earlier result."""

    key: ReadKey
    tool_call_id: str
    mtime_ns: int
    size: int
    timestamp_ms: int = 0


def resolve_read_path(raw: str, cwd: Path) -> str:
    """The file a read call named, as the read tool resolves it (``~``, a leading ``@``)."""
    return PathUse(raw).resolved(cwd)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_key(call: ToolCall, cwd: Path, tools: ToolCatalog) -> ReadKey | None:
    """The file range a call of a ``read``-kind tool returns (its first file read whole or
    in part, by the tool's declared paths); None for any other call."""
    if tools.kind(call.name) != "read":
        return None
    for use in tools.uses(call):
        if use.access == "read" and not use.walks:
            return ReadKey(use.resolved(cwd), use.offset, use.limit)
    return None


def is_read(message: ToolResultMessage, tools: ToolCatalog) -> bool:
    """A result of a ``read``-kind tool (the ones de-dup, re-injection and the read index follow)."""
    return tools.kind(message.tool_name) == "read"


def is_dedup_stub(message: ToolResultMessage, tools: ToolCatalog) -> bool:
    details = message.details
    return is_read(message, tools) and isinstance(details, dict) and details.get("kind") == "unchanged"


def whole_read(message: ToolResultMessage, tools: ToolCatalog) -> tuple[int, int] | None:
    """(mtime_ns, size) when this read result holds the content of its range whole: not an
    error, not a stub of any kind, not replaced by a spill preview."""
    details = message.details
    if not is_read(message, tools) or message.is_error or not isinstance(details, dict):
        return None
    if details.get("kind") == "unchanged" or SPILL_KEY in details:
        return None
    mtime, size = _int_or_none(details.get("mtime_ns")), _int_or_none(details.get("size"))
    if mtime is None or size is None:
        return None
    return mtime, size


class ReadIndex:
    """The reads present whole in one view, latest last, by file range."""

    def __init__(self, reads: dict[ReadKey, ReadInView] | None = None) -> None:
        self._reads = reads or {}

    @classmethod
    def of_view(
        cls, view: Sequence[AgentMessage], cwd: Path, pruned: Collection[str] = (), *, tools: ToolCatalog
    ) -> ReadIndex:
        """``pruned``: tool call ids whose results the view carries as stubs (a stub keeps
        the original details, so it must not count as the content)."""
        decisions = ContextDecisions(stubs=dict.fromkeys(pruned, ""))
        return ViewBuilder(cwd, tools).apply(view, decisions).reads

    def find(self, path: str, offset: int | None, limit: int | None) -> ReadInView | None:
        return self._reads.get(ReadKey(os.path.normpath(path), offset, limit))

    def __len__(self) -> int:
        return len(self._reads)


def _open_calls(message: AgentMessage) -> dict[str, ToolCall]:
    """The calls whose results must follow ``message`` (an errored or aborted message's calls
    are never sent, so they need none)."""
    if not isinstance(message, AssistantMessage) or message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
        return {}
    return {call.id: call for call in message.tool_calls()}


def _calls(messages: Sequence[AgentMessage]) -> dict[str, ToolCall]:
    return {
        call.id: call for message in messages if isinstance(message, AssistantMessage) for call in message.tool_calls()
    }


# --- decisions applied ------------------------------------------------------------------------


def _same_version(stub: ToolResultMessage, earlier: tuple[int, int] | None) -> bool:
    """Whether the whole read before a de-dup stub is of the file version it vouched for."""
    if earlier is None:
        return False
    details: Any = stub.details
    mtime, size = details.get("mtime_ns"), details.get("size")
    if not isinstance(mtime, int):
        return True  # recorded before heron kept the version: the range is what it has
    return (mtime, size) == earlier


def with_text(result: ToolResultMessage, text: str) -> ToolResultMessage:
    """``result`` with its content replaced by ``text`` (a stub): same call, same details."""
    return ToolResultMessage(
        tool_call_id=result.tool_call_id,
        tool_name=result.tool_name,
        content=[TextContent(text=text)],
        details=result.details,
        is_error=result.is_error,
        timestamp=result.timestamp,
    )


def gone_note(result: ToolResultMessage, call: ToolCall | None, tools: ToolCatalog) -> ToolResultMessage:
    """What a de-dup stub becomes once the content it pointed at left the view."""
    uses = tools.uses(call) if call is not None else []
    shown = uses[0].path if uses else "the file"
    text = f"{GONE_PREFIX} of {shown}, which is no longer in the context. Read {shown} again if you need its content.]"
    return with_text(result, text)


class View(list[AgentMessage]):
    """The messages of one request as :meth:`ViewBuilder.apply` made them, with what was
    derived on the way: the token counts (:class:`Tally`) and the reads present whole."""

    tally: Tally
    reads: ReadIndex


@dataclass(slots=True)
class _Built:
    """What :meth:`ViewBuilder.apply` derived from one message list so far. Every field
    depends only on the messages already seen, so extending it by the new messages gives
    what a build from scratch would: the cache cannot make two processes differ."""

    stubs: dict[str, str]  # the recorded stubs it was built with (a copy)
    notices: dict[str, str] = field(default_factory=dict)  # the budget notices it was built with (a copy)
    call_args: dict[str, dict[str, Any]] = field(default_factory=dict)  # the shortened calls (a copy)
    tools: int = 0  # the tool catalog's generation it was built with (kinds decide reads)
    inputs: list[AgentMessage] = field(default_factory=list)
    out: list[AgentMessage] = field(default_factory=list)
    tally: RunningTally = field(default_factory=RunningTally)
    calls: dict[str, ToolCall] = field(default_factory=dict)  # every call seen, by id
    reads: dict[ReadKey, ReadInView] = field(default_factory=dict)  # present whole, latest last
    unanswered: dict[str, ToolCall] = field(default_factory=dict)  # the latest reply's calls without results
    asked_at: int = 0

    def emit(self, message: AgentMessage) -> None:
        self.out.append(message)
        self.tally.add(message)


class ViewBuilder:
    """Applies the decisions to a message list; reuses stub objects across requests so the
    same decision always yields the same (identical) message.

    The list a session sends only grows between requests, so the view is built
    incrementally: what was derived for the list last seen is kept and extended by the
    messages added since. The cache is used only when the list still starts with exactly
    the messages it was built from (the same objects) and the recorded stubs are the same;
    anything else (a prune step, a compaction, another branch) builds from scratch."""

    def __init__(self, cwd: Path, tools: ToolCatalog) -> None:
        self.cwd = cwd
        self.tools = tools
        self._stub_cache: dict[tuple[str, str], ToolResultMessage] = {}
        self._gone_cache: dict[str, ToolResultMessage] = {}
        self._missing_cache: dict[str, ToolResultMessage] = {}
        self._shown_cache: dict[tuple[str, ...], tuple[AssistantMessage, AssistantMessage]] = {}
        self._keys: dict[str, tuple[ToolCall, ReadKey | None]] = {}
        self._built: _Built | None = None

    def reset(self) -> None:
        self._stub_cache.clear()
        self._gone_cache.clear()
        self._missing_cache.clear()
        self._shown_cache.clear()
        self._keys.clear()
        self._built = None

    def apply(self, messages: Sequence[AgentMessage], decisions: ContextDecisions) -> View:
        built = self._built
        tools = self.tools.generation()
        if (
            built is None
            or len(built.inputs) > len(messages)
            or built.stubs != decisions.stubs
            or built.notices != decisions.notices
            or built.call_args != decisions.call_args
            or built.tools != tools
            or not all(map(operator.is_, built.inputs, messages))
        ):
            built = self._built = _Built(
                stubs=dict(decisions.stubs),
                notices=dict(decisions.notices),
                call_args=dict(decisions.call_args),
                tools=tools,
            )
        for message in messages[len(built.inputs) :]:
            self._step(built, message)
            built.inputs.append(message)
        view = View(built.out)
        view.tally = built.tally.snapshot()
        view.reads = ReadIndex(dict(built.reads))
        return view

    def _noticed(self, built: _Built, message: ToolResultMessage) -> ToolResultMessage:
        """``message`` with its recorded budget notice, if it has one (the same object each time)."""
        text = built.notices.get(message.tool_call_id)
        if text is None:
            return message
        key = (message.tool_call_id, "notice:" + text)
        cached = self._stub_cache.get(key)
        if cached is None or cached.content[:-1] != message.content:
            cached = with_notice(message, text)
            self._stub_cache[key] = cached
        return cached

    def _step(self, built: _Built, message: AgentMessage) -> None:
        """Extend ``built`` by one message of the list."""
        if not isinstance(message, ToolResultMessage):
            for open_call in built.unanswered.values():
                built.emit(self._no_result(open_call, built.asked_at))
            built.unanswered, built.asked_at = _open_calls(message), getattr(message, "timestamp", 0)
            if isinstance(message, AssistantMessage):
                built.calls.update((c.id, c) for c in message.tool_calls())
                built.emit(self._shown(built, message))
                return
            built.emit(message)
            return
        built.unanswered.pop(message.tool_call_id, None)
        stub_text = built.stubs.get(message.tool_call_id)
        if stub_text is not None:
            built.emit(self._stub(message, stub_text))
            return
        if not is_read(message, self.tools):
            built.emit(self._noticed(built, message))
            return
        call = built.calls.get(message.tool_call_id)
        key = self._read_key(call) if call is not None else None
        if is_dedup_stub(message, self.tools):
            earlier = built.reads.get(key) if key is not None else None
            kept = earlier is not None and _same_version(message, (earlier.mtime_ns, earlier.size))
            built.emit(self._noticed(built, message if kept else self._gone(message, call)))
            return
        whole = whole_read(message, self.tools)
        if key is not None and whole is not None:
            built.reads[key] = ReadInView(key, message.tool_call_id, whole[0], whole[1], message.timestamp)
        built.emit(self._noticed(built, message))

    def _shown(self, built: _Built, message: AssistantMessage) -> AssistantMessage:
        """``message`` with its oversized tool-call arguments shortened as recorded (the
        same object each time), or itself when none of its calls has such a decision."""
        if not built.call_args:
            return message
        ids = tuple(c.id for c in message.tool_calls() if c.id in built.call_args)
        if not ids:
            return message
        cached = self._shown_cache.get(ids)
        if cached is None or cached[0] is not message:
            cached = (message, shown_message(message, built.call_args))
            self._shown_cache[ids] = cached
        return cached[1]

    def _read_key(self, call: ToolCall) -> ReadKey | None:
        """The range a read call names (resolving a path costs more than the rest of a
        step: each call is resolved once)."""
        cached = self._keys.get(call.id)
        if cached is not None and cached[0] is call:
            return cached[1]
        key = read_key(call, self.cwd, self.tools)
        self._keys[call.id] = (call, key)
        return key

    def _no_result(self, call: ToolCall, timestamp: int) -> ToolResultMessage:
        cached = self._missing_cache.get(call.id)
        if cached is None:
            cached = ToolResultMessage(
                tool_call_id=call.id,
                tool_name=call.name,
                content=[TextContent(text=NO_RESULT_NOTE)],
                is_error=True,
                timestamp=timestamp,
            )
            self._missing_cache[call.id] = cached
        return cached

    def _stub(self, message: ToolResultMessage, text: str) -> ToolResultMessage:
        key = (message.tool_call_id, text)
        cached = self._stub_cache.get(key)
        if cached is None:
            cached = with_text(message, text)
            self._stub_cache[key] = cached
        return cached

    def _gone(self, message: ToolResultMessage, call: ToolCall | None) -> ToolResultMessage:
        cached = self._gone_cache.get(message.tool_call_id)
        if cached is None:
            cached = gone_note(message, call, self.tools)
            self._gone_cache[message.tool_call_id] = cached
        return cached
