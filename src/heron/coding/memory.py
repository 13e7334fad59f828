"""Project memory: notes the model keeps across sessions, and the flush before compaction.

The memory directory lives outside the repository by default
(``$HERON_HOME/projects/<cwd encoded as for session folders>/memory/``; the
``memory.directory`` setting puts it elsewhere). ``MEMORY.md`` there is the index: its
first 200 lines or 25 KB go into the system prompt when a session is created. That text
is recorded in the session (a ``heron.memory`` custom entry), so a resumed session sends
the same system prompt byte for byte, while a new session picks up what changed. The
model writes notes with the ordinary write and edit tools.

Before an automatic compaction heron gives the model one silent turn (OpenClaw's
pre-compaction flush) to save there what must survive: only write and edit inside the
memory directory are allowed, its messages never enter the session's context, and it
runs exactly once for each automatic compaction that is written - after the summary,
just before the entry - and never when no compaction follows.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from heron.agent.agent import Agent
from heron.agent.loop import StreamFn
from heron.agent.messages import AgentMessage, BranchSummaryMessage, CompactionSummaryMessage, ExtensionMessage
from heron.agent.tools import AgentTool, BeforeToolCallResult, ToolCallContext
from heron.ai.options import StreamOptions
from heron.ai.types import (
    AssistantMessage,
    Context,
    Model,
    StopReason,
    TextContent,
    ThinkingLevel,
    Usage,
    UserMessage,
)
from heron.coding.memory_history import MemoryChange, MemoryHistory, MemoryHistoryError
from heron.coding.memory_notes import note_ages, render_ages, session_starts, set_marks
from heron.coding.settings import MemorySettings
from heron.context.policy import ContextPolicy
from heron.context.records.ledger import Ledger, LedgerRecord
from heron.context.window.output_room import OUTPUT_MARGIN_SHARE
from heron.session.entries import CustomEntry
from heron.session.naming import encode_cwd, session_dir
from heron.session.private_files import private_dir
from heron.session.store import SessionStore

MEMORY_CUSTOM_TYPE = "heron.memory"
INDEX_FILE = "MEMORY.md"
MAX_LINES = 200
MAX_BYTES = 25 * 1024
FLUSH_MAX_TURNS = 4
FLUSH_MIN_OUTPUT_TOKENS = 1_024  # the room a flush needs for its answer and a short note
FLUSH_ENV = "HERON_MEMORY_FLUSH"  # "0" turns the flush off whatever the settings say (the test suite)

FLUSH_PROMPT = (
    "[heron: the conversation is about to be compacted; older messages will be replaced by a summary.]\n"
    "Before that happens, save anything that must survive - decisions, facts you found, the state of the "
    "task, what to do next - as notes in the project memory directory {directory} (keep {index} there as a "
    "short index pointing to the notes). Use only the write and edit tools, only inside that directory. "
    "If there is nothing worth saving, answer with one short sentence and do nothing else."
)


def memory_dir(home: Path, cwd: Path, directory: str | None = None) -> Path:
    if directory:
        return Path(os.path.expanduser(directory)).resolve()
    return home / "projects" / encode_cwd(str(cwd)) / "memory"


def read_index(directory: Path) -> str:
    """The first 200 lines or 25 KB of MEMORY.md (whichever is less); "" if there is none."""
    try:
        with open(directory / INDEX_FILE, "rb") as f:
            raw = f.read(MAX_BYTES)
    except OSError:
        return ""
    text = raw.decode("utf-8", errors="replace")
    if len(raw) == MAX_BYTES:
        text = text[: text.rfind("\n") + 1] if "\n" in text else text  # no cut line
    lines = text.splitlines(keepends=True)
    return "".join(lines[:MAX_LINES]).rstrip("\n")


def recorded_memory(store: SessionStore) -> dict[str, Any] | None:
    """What this session's system prompt was built with (``text``: the index; ``notes``: the
    notes with their age, as of ``today``), if it was recorded."""
    leaf = store.leaf_id
    if leaf is None:
        return None
    ids, types = store.lineage(leaf)
    for entry_id, kind in zip(ids, types, strict=True):
        if kind != "custom":
            continue
        entry = store.get(entry_id)
        if isinstance(entry, CustomEntry) and entry.custom_type == MEMORY_CUSTOM_TYPE:
            data: Any = entry.data
            data = data if isinstance(data, dict) else {}
            text, notes = data.get("text"), data.get("notes")
            return {"text": text if isinstance(text, str) else "", "notes": notes if isinstance(notes, str) else ""}
    return None


def memory_section(text: str, directory: Path, notes: str = "") -> str:
    """What the system prompt says about memory (only when there is something to say)."""
    where = f"Project memory directory: {directory} (notes kept across sessions; {INDEX_FILE} is the index)."
    tail = f"\n\n{notes}" if notes else ""
    if not text:
        return where + tail
    return f"{where}\n\n<memory>\n{text}\n</memory>{tail}"


@dataclass
class FlushGuard:
    """``before_tool_call`` for the flush turn: only tools that change files (``edit`` and
    ``write`` kinds, by what they declare), only inside the memory directory."""

    directory: Path
    touched: list[str]

    async def __call__(self, ctx: ToolCallContext) -> BeforeToolCallResult | None:
        meta = ctx.tool.meta
        if not meta.changes_files:
            return BeforeToolCallResult(
                block=True, reason=(f"During the memory flush only write and edit inside {self.directory} are allowed.")
            )
        uses = meta.uses(ctx.tool_call.arguments)
        if not uses:
            return BeforeToolCallResult(block=True, reason="A path inside the memory directory is needed.")
        targets = []
        for use in uses:
            target = Path(use.resolved(self.directory)).resolve()
            if not target.is_relative_to(self.directory.resolve()):
                return BeforeToolCallResult(
                    block=True,
                    reason=(
                        f"{use.path} is outside the memory directory {self.directory}; during the flush only files "
                        "there may be written."
                    ),
                )
            targets.append(str(target))
        try:
            private_dir(self.directory, narrow=True)
        except OSError as exc:  # immutable, read-only, a file in the way: said, the notes untouched
            why = exc.strerror or str(exc)
            return BeforeToolCallResult(
                block=True, reason=f"The memory directory {self.directory} cannot be written ({why})."
            )
        self.touched.extend(targets)
        return None


async def run_flush(
    *,
    model: Model,
    system_prompt: str,
    tools: list[AgentTool[Any]],
    view: list[AgentMessage],
    send: StreamFn,
    options: Callable[[Context], StreamOptions],
    directory: Path,
    thinking: ThinkingLevel = "off",
    max_turns: int = FLUSH_MAX_TURNS,
    prompt: str | None = None,
) -> tuple[list[str], AssistantMessage | None]:
    """One silent agentic turn on a copy of the view, its requests sent by ``send`` (the
    session's request path); returns the memory files it wrote and, if it ended in an
    error, the failed answer. Nothing it says is recorded in the session or kept in the
    context. ``prompt``: another task with the flush's limits (the reflection pass)."""
    files, last = await run_restricted(
        model=model,
        system_prompt=system_prompt,
        tools=tools,
        view=view,
        send=send,
        options=options,
        directory=directory,
        thinking=thinking,
        max_turns=max_turns,
        prompt=prompt or FLUSH_PROMPT.format(directory=directory, index=INDEX_FILE),
    )
    failed = last if isinstance(last, AssistantMessage) and last.stop_reason == StopReason.ERROR else None
    return files, failed


async def run_restricted(
    *,
    model: Model,
    system_prompt: str,
    tools: list[AgentTool[Any]],
    view: list[AgentMessage],
    send: StreamFn,
    options: Callable[[Context], StreamOptions],
    directory: Path,
    prompt: str,
    thinking: ThinkingLevel = "off",
    max_turns: int = FLUSH_MAX_TURNS,
) -> tuple[list[str], AssistantMessage | None]:
    """``prompt`` as a silent turn allowed only write and edit inside ``directory``: the files
    it wrote and its last answer."""
    guard = FlushGuard(directory, [])
    agent = Agent(
        model=model,
        system_prompt=system_prompt,
        tools=tools,
        messages=list(view),
        thinking_level=thinking,
        before_tool_call=guard,
        stream_options=options,
        stream_fn=send,
    )
    turns = 0

    def count(event: Any) -> None:
        nonlocal turns
        if getattr(event, "type", None) == "turn_end":
            turns += 1
            if turns >= max_turns:
                agent.abort()

    agent.subscribe(count)
    added = await agent.prompt(UserMessage(content=[TextContent(text=prompt)]))
    last = added[-1] if added else None
    answer = last if isinstance(last, AssistantMessage) else None
    return sorted({p for p in guard.touched if Path(p).is_file()}), answer


def flush_prompt_tokens(directory: Path) -> int:
    return len(FLUSH_PROMPT.format(directory=directory, index=INDEX_FILE)) // 4 + 1


def fitting_view(
    policy: ContextPolicy, view: Sequence[AgentMessage], extra: int
) -> tuple[list[AgentMessage], int, int]:
    """The view a side turn (the flush, a reflection) can send with room for its answer:
    the whole view when it fits, else the view's head - the goal, the summary and the
    frontier that lead every request - and its newest whole turns (from a user prompt on)
    that do. A compaction that runs at the window's edge (a background summary taken late)
    would otherwise leave no room and the flush would be skipped at every compaction; the
    oldest turns are the ones the summary keeps. Returns (messages, tokens, dropped)."""
    tokens = policy.sizes.count(view) + extra  # the view itself: its tally makes the count exact
    head_size = next((i for i, m in enumerate(view) if not isinstance(m, _HEAD_TYPES)), len(view))
    head, messages = list(view[:head_size]), list(view[head_size:])
    dropped = 0
    while side_room(policy, tokens) < FLUSH_MIN_OUTPUT_TOKENS:
        cut = next((i for i, m in enumerate(messages) if i > 0 and isinstance(m, UserMessage)), None)
        if cut is None:
            break
        messages, dropped = messages[cut:], dropped + cut
        tokens = policy.sizes.estimate([*head, *messages]) + extra
    messages = [*head, *messages]
    if dropped:
        # the replies' usage measured requests this shorter one is no prefix of: counted as
        # an anchor it would make the request look as large as the whole view
        messages = [replace(m, usage=Usage()) if isinstance(m, AssistantMessage) else m for m in messages]
    return messages, tokens, dropped


# What leads a view and is never cut from a side turn's: the goal's block, a compaction's or
# a branch's summary and the frontier after it (extension messages).
_HEAD_TYPES = (ExtensionMessage, CompactionSummaryMessage, BranchSummaryMessage)


def side_room(policy: ContextPolicy, tokens: int) -> int:
    """The room for a side turn's answer in the window (the window, not the threshold: it
    runs when a compaction is certain, like the summary requests)."""
    return policy.sizes.window - tokens - int(policy.sizes.window * OUTPUT_MARGIN_SHARE)


class MemoryKeeper:
    """The memory of one session: the text its system prompt was built with (recorded at
    its first prompt), and the flush before automatic compactions."""

    def __init__(self, settings: MemorySettings, *, home: Path, cwd: Path, store: SessionStore) -> None:
        self.settings = settings
        self.directory = memory_dir(home, cwd, settings.directory)
        self.history = MemoryHistory(self.directory, home)
        self.written: list[str] = []  # files committed during the current prompt's run
        self.changed_here = False  # heron's model changed memory in this process (memory.reflect: end)
        recorded = recorded_memory(store) if settings.enabled else None
        self._recorded = recorded is not None or not settings.enabled
        self.today = time.strftime("%Y-%m-%d")
        if recorded is not None:
            self.text, self.notes = recorded["text"], recorded["notes"]
        elif settings.enabled:
            self.text = read_index(self.directory)
            self.notes = self._notes(home, cwd, store.session_id)
        else:
            self.text = self.notes = ""

    def _notes(self, home: Path, cwd: Path, session: str | None) -> str:
        """The notes with their age, as of now (a new session: what it records)."""
        if not self.directory.is_dir():
            return ""
        starts = session_starts(session_dir(cwd, home), session)
        stale = self.settings.stale_after_days
        ages = note_ages(self.directory, self.history.git_dir, starts, now=time.time(), stale_days=stale)
        return render_ages(ages, today=self.today, stale_days=stale)

    def prompt_section(self) -> str:
        return f"\n\n{memory_section(self.text, self.directory, self.notes)}" if self.settings.enabled else ""

    def record(self, store: SessionStore) -> None:
        if not self._recorded:
            data = {"text": self.text, "notes": self.notes, "today": self.today, "directory": str(self.directory)}
            store.append_custom(MEMORY_CUSTOM_TYPE, data)
            self._recorded = True

    @staticmethod
    def on_loop(ledger: Ledger, job: Callable[[list[LedgerRecord]], object]) -> None:
        """``job`` here (on the loop), its records added to the ledger."""
        records: list[LedgerRecord] = []
        job(records)
        for record in records:
            ledger.add(record)

    @staticmethod
    async def off_loop(ledger: Ledger, job: Callable[[list[LedgerRecord]], object]) -> None:
        """``job`` (git work) on a worker thread; its records added to the ledger here, on the loop."""
        records: list[LedgerRecord] = []
        await asyncio.to_thread(job, records)
        for record in records:
            ledger.add(record)

    def _guarded(
        self, reason: str, records: list[LedgerRecord], action: Callable[[], MemoryChange | None]
    ) -> MemoryChange | None:
        """``action`` on the history; a failure is a ledger record, never the session's problem.
        The records go to ``records``, for the caller to add to the ledger on the event loop:
        the git work may run on a worker thread, and the session file is written from the loop."""
        try:
            change = action()
        except (MemoryHistoryError, OSError) as exc:
            why = str(exc) if isinstance(exc, MemoryHistoryError) else f"{self.history.git_dir}: {exc}"
            why = f"this change ({reason}) was not recorded in the memory history ({why}); the notes are as written"
            records.append(LedgerRecord(kind="memory", recover=why, detail={"reason": reason, "failed": True}))
            change = None
        for notice in self.history.take_notices():
            records.append(LedgerRecord(kind="memory", recover=notice, detail={"notice": True}))
        if change is not None:
            detail = {"reason": reason, "commit": change.commit, "files": list(change.files)}
            records.append(
                LedgerRecord(kind="memory", recover=f"heron memory show {change.commit[:12]}", detail=detail)
            )
        return change

    def sync_outside(self, store: SessionStore, records: list[LedgerRecord]) -> None:
        """Changes made outside heron since the last commit, committed as such (once a process)."""
        if not self.directory.is_dir():
            self.history.outside_synced = True  # nothing there yet: what appears later is this process's
        elif self.settings.enabled and not self.history.outside_synced:
            self._guarded("outside heron", records, lambda: self.history.sync_outside(store.session_id or ""))

    def commit_outside(self, store: SessionStore, records: list[LedgerRecord]) -> None:
        """Whatever changed since the last commit, committed as made outside heron (before a
        reflection pass, so dropping the pass puts back only what it wrote)."""
        if self.settings.enabled and self.directory.is_dir():
            self.history.outside_synced = True
            self._guarded(
                "outside heron", records, lambda: self.history.commit("outside heron", session=store.session_id or "")
            )

    def commit(self, reason: str, store: SessionStore, records: list[LedgerRecord], *, tentative: bool = False) -> None:
        """Commit what heron's model changed in the memory directory (outside changes first)."""
        if not self.settings.enabled or not self.directory.is_dir():
            return
        session = store.session_id or ""
        self.sync_outside(store, records)
        change = self._guarded(
            reason, records, lambda: self.history.commit(reason, session=session, entry=store.leaf_id or "")
        )
        if change is not None:
            self.written.extend(change.files)
            self.changed_here = self.changed_here or reason != "reflection"
            self._mark(list(change.files), tentative=tentative, session=session)

    def end_run(self, store: SessionStore, *, failed: bool) -> None:
        """A prompt's run ended: what it wrote stays tentative if it ended in an error or an abort."""
        if failed and self.written:
            self._mark(self.written, tentative=True, session=store.session_id or "")
        self.written = []

    def _mark(self, files: list[str], *, tentative: bool, session: str) -> None:
        with contextlib.suppress(OSError):  # only the age a later prompt shows is affected
            set_marks(self.history.git_dir, files, tentative=tentative, session=session)

    def flush_wanted(self, flushed: bool) -> bool:
        if not (self.settings.enabled and self.settings.flush) or os.environ.get(FLUSH_ENV, "") == "0":
            return False
        return not flushed

    async def flush(
        self,
        policy: ContextPolicy,
        ledger: Ledger,
        *,
        model: Model,
        tools: list[AgentTool[Any]],
        system_prompt: str,
        messages: list[AgentMessage],
        send: StreamFn,
        options: Callable[[int], StreamOptions],
        thinking: ThinkingLevel = "off",
    ) -> None:
        """The silent turn, recorded (files touched, or why it was skipped) in the session.
        ``send`` and ``options`` are the session's request path: each request of the turn
        gets the typed options (key, timeouts, retries) with an output cap for its own size."""
        # It runs when the compaction is certain, so past the threshold: like the summary
        # requests, it needs the window (and room for a short answer), not the threshold.
        view, tokens, _ = fitting_view(policy, policy.view(messages), flush_prompt_tokens(self.directory))
        if side_room(policy, tokens) < FLUSH_MIN_OUTPUT_TOKENS:
            why = f"the flush request ({tokens:,} tokens) would not fit in the {policy.sizes.window:,}-token window"
            policy.recorder.record_flush([], skipped=why)
            ledger.add(LedgerRecord(kind="flush", recover=why, detail={"skipped": True}))
            return
        cap = policy.sizes.output_cap(tokens)

        def sized(context: Context) -> StreamOptions:
            return options(policy.sizes.output_cap(max(tokens, policy.sizes.count(list(context.messages)))))

        # changes made outside heron, committed as such before the flush writes
        await self.off_loop(ledger, functools.partial(self.sync_outside, policy.store))
        files, failed = await run_flush(
            model=model,
            system_prompt=system_prompt,
            tools=tools,
            view=view,
            send=send,
            options=sized,
            directory=self.directory,
            thinking=thinking,
        )
        if failed is not None and failed.error_kind == "overflow":
            # the server enforces less than planned: learn it from this request, so the
            # session's own next request is sized right (one rejection, not two)
            policy.windows.learn_from_overflow(failed, tokens=tokens, max_tokens=cap)
        policy.recorder.record_flush(files)
        ledger.add(
            LedgerRecord(
                kind="flush",
                recover=f"notes in {self.directory}",
                detail={"files": files, "directory": str(self.directory)},
            )
        )
        if files:
            flushed = functools.partial(self.commit, "flush", policy.store, tentative=failed is not None)
            await self.off_loop(ledger, lambda records: flushed(records))
