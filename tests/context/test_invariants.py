"""Invariants of context management, checked with hypothesis over random sessions.

Sessions are built with :class:`SessionStore` and its ``append_*`` methods: turns with
tool calls (some answered with images, some big), aborted replies, commands the user ran
(``!cmd`` and ``!!cmd``), extension state (``custom``) and extension messages
(``custom_message``), labels and settings changes, branches (with and without a branch
summary), and compactions made from :func:`prepare_compaction` plans with a fake summary
(repeatedly: a program may compact many times, on several branches). Then:

1. No request ever holds a tool result without its call or a call without its result:
   after every step the real pipeline runs (``build_context`` -> pruning ->
   ``convert_to_llm`` -> ``adapt_messages``) and the request is checked - strictly, before
   ``adapt_messages`` could repair anything, and after it.
2. Every message on the path is either summarised (by a compaction on the path) or kept
   in the context: none vanish, however many compactions follow each other.
3. After a compaction the estimated context is within ``window - reserve`` unless the
   kept tail alone is larger, and the kept tail is the keep-recent budget plus at most
   the one message that crossed it.
4. The session after a compaction holds every entry it held before, unchanged (and the
   file on disk is only appended to).

The profile is derandomized (the same 2,000 sessions on every run, so a failure is
reproducible) and sized to run in well under a minute and a half on two cores.
"""

from __future__ import annotations

import os
import random
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from heron.agent.messages import BashExecutionMessage, convert_to_llm
from heron.ai.adapt import NO_RESULT_TEXT, adapt_messages, openai_chat_tool_id
from heron.ai.types import (
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from heron.context.compaction.plan import CompactionPlan, CompactionSettings, message_tokens, prepare_compaction
from heron.context.pruning.prune import PruneState, apply_pruning, extend_pruning
from heron.context.window.budget import context_message_tokens, estimate_context_tokens
from heron.session.context import build_context
from heron.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    format_iso,
    iso_to_ms,
)
from heron.session.store import SessionStore
from tests.support.tools import BUILTIN

IMAGE = ImageContent(data="aGk=", mime_type="image/png")
SAME_MODEL = Model(id="faux-1", api="faux", provider="faux")
OTHER_MODEL = Model(id="gpt-x", api="openai-chat", provider="openai")
TOOLS = ("read", "edit", "write", "bash", "grep")
WINDOWS = (8_192, 16_384, 32_768, 128_000)

PROFILE = settings(
    max_examples=1_800,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FILE_PROFILE = settings(PROFILE, max_examples=200)  # 1,800 + 200 = 2,000 sessions


# --- the programs ------------------------------------------------------------------------------

# Each round of a program is one integer, decoded by a seeded generator into a turn (a
# user message, 0-4 steps of 1-3 tool calls or an aborted reply, an answer), 0-2 other
# operations and, often, a compaction. Hypothesis draws (and shrinks) the window and the
# list of rounds; drawing the nested structure itself through hypothesis cost more than
# running the checks. ``note`` prints the decoded program of a failing example.

SIZES = (0, 1, 2, 3, 5, 8, 12, 16, 24)  # a message's size, in 1/100 of the window (chars/4)
OTHERS = ("bash", "custom", "custom_message", "settings", "branch", "compact")


def decode_round(code: int) -> list[tuple[Any, ...]]:
    rng = random.Random(code)
    size = lambda: rng.choice(SIZES)  # noqa: E731
    steps: list[tuple[Any, ...]] = []
    for _ in range(rng.randint(0, 4)):
        if rng.random() < 0.1:
            steps.append(("aborted", rng.random() < 0.5))
        else:
            uses = [
                (rng.choice(TOOLS), rng.randint(0, 6), size(), rng.random() < 0.15) for _ in range(rng.randint(1, 3))
            ]
            steps.append(("tools", uses, size(), rng.random() < 0.3))
    ops: list[tuple[Any, ...]] = [("turn", size(), rng.random() < 0.15, steps, size())]
    for _ in range(rng.choice((0, 0, 1, 2))):
        kind = rng.choice(OTHERS)
        if kind == "bash":
            ops.append(("bash", size(), rng.random() < 0.3))
        elif kind == "custom":
            ops.append(("custom",))
        elif kind == "custom_message":
            ops.append(("custom_message", size(), rng.random() < 0.5))
        elif kind == "settings":
            ops.append(("settings", rng.choice(("model", "thinking", "label", "name"))))
        elif kind == "branch":
            ops.append(("branch", rng.random(), rng.random() < 0.5))
        else:
            ops.append(("compact", rng.uniform(0.02, 1.0), rng.random() < 0.5))
    if rng.random() < 0.6:
        ops.append(("compact", rng.uniform(0.02, 1.0), rng.random() < 0.5))
    return ops


program = st.tuples(
    st.sampled_from(WINDOWS),
    st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=10).map(
        lambda codes: [op for code in codes for op in decode_round(code)]
    ),
)


@dataclass
class Builder:
    """Runs a program against a store and checks the invariants as it goes."""

    store: SessionStore
    window: int
    settings: CompactionSettings
    clock: int = 1_700_000_000_000
    calls: int = 0
    # entry ids after which a new user message is valid (no call is waiting for results)
    boundaries: list[str] = field(default_factory=list)
    # compaction entry id -> ids of the entries it summarised
    summarised: dict[str, set[str]] = field(default_factory=dict)
    compactions: int = 0
    split_turns: int = 0

    def chars(self, hundredths: int) -> int:
        return self.window * 4 * hundredths // 100

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def append(self, message: Any) -> MessageEntry:
        return self.store.append_message(message)

    def boundary(self) -> None:
        if self.store.leaf_id is not None:
            self.boundaries.append(self.store.leaf_id)

    # --- operations

    def turn(self, user_size: int, image: bool, steps: list[Any], answer: int) -> None:
        content: list[TextContent | ImageContent] = [TextContent(text="please " + "u" * self.chars(user_size))]
        if image:
            content.append(IMAGE)
        self.append(UserMessage(content=content, timestamp=self.tick()))
        for kind, *spec in steps:
            if kind == "aborted":  # a reply cut off mid-call: its call is never run
                calls = [self.call("read", 0)] if spec[0] else []
                self.append(
                    AssistantMessage(
                        api="faux",
                        provider="faux",
                        model="faux-1",
                        content=[TextContent(text="partial"), *calls],
                        usage=Usage(),
                        stop_reason=StopReason.ABORTED,
                        timestamp=self.tick(),
                    )
                )
                continue
            uses, text_size, ledger_between = spec
            calls = [self.call(tool, path) for tool, path, _, _ in uses]
            self.append(
                AssistantMessage(
                    api="faux",
                    provider="faux",
                    model="faux-1",
                    content=[TextContent(text="a" * self.chars(text_size)), *calls],
                    usage=Usage(input=self.window // 3, output=50),
                    stop_reason=StopReason.TOOL_USE,
                    timestamp=self.tick(),
                )
            )
            for (tool, _, result_size, with_image), c in zip(uses, calls, strict=True):
                if ledger_between:  # the runtime stores ledger records while tools run
                    self.store.append_custom("heron.ledger", {"kind": "truncate", "ref": c.id})
                blocks: list[TextContent | ImageContent] = [TextContent(text="r" * self.chars(result_size))]
                if with_image:
                    blocks.append(IMAGE)
                self.append(ToolResultMessage(tool_call_id=c.id, tool_name=tool, content=blocks, timestamp=self.tick()))
        self.append(
            AssistantMessage(
                api="faux",
                provider="faux",
                model="faux-1",
                content=[TextContent(text="done " + "a" * self.chars(answer))],
                usage=Usage(input=self.window // 2, output=20),
                stop_reason=StopReason.STOP,
                timestamp=self.tick(),
            )
        )
        self.boundary()

    def call(self, tool: str, path: int) -> ToolCall:
        self.calls += 1
        # some ids longer than OpenAI's 40 characters: adapt_messages maps them consistently
        call_id = f"call_{self.calls}" if self.calls % 3 else f"call_{self.calls}|fc_" + "x" * 40
        arguments: dict[str, Any] = {"path": f"src/m{path}.py"}
        if tool == "bash":
            arguments = {"command": f"pytest -k m{path}"}
        elif tool == "edit":
            arguments |= {"old_text": "a", "new_text": "b"}
        elif tool == "write":
            arguments |= {"content": "x = 1\n"}
        elif tool == "grep":
            arguments = {"pattern": f"m{path}"}
        return ToolCall(id=call_id, name=tool, arguments=arguments)

    def bash(self, output: int, excluded: bool) -> None:
        self.append(
            BashExecutionMessage(
                command="make test",
                output="o" * self.chars(output),
                exit_code=0,
                exclude_from_context=excluded,
                timestamp=self.tick(),
            )
        )
        self.boundary()

    def custom(self) -> None:
        self.store.append_custom("extension.state", {"n": self.calls})
        self.boundary()

    def custom_message(self, chars: int, display: bool) -> None:
        self.store.append_custom_message("extension.note", "n" * self.chars(chars), display=display)
        self.boundary()

    def setting(self, kind: str) -> None:
        if kind == "model":
            self.store.append_model_change("faux", "faux-2")
        elif kind == "thinking":
            self.store.append_thinking_level_change("high")
        elif kind == "label" and self.store.leaf_id is not None:
            self.store.set_label(self.store.leaf_id, "here")
        else:
            self.store.set_name("a session")
        self.boundary()

    def branch(self, where: float, with_summary: bool) -> None:
        if not self.boundaries:
            return
        target = self.boundaries[min(len(self.boundaries) - 1, int(where * len(self.boundaries)))]
        if with_summary:
            self.store.branch_with_summary(target, "## Tried\nsomething else")
        else:
            self.store.branch(target)
        self.boundary()

    def compact(self, keep_share: float, reinject: bool) -> None:
        """A compaction (as ``/compact`` can ask for one at any time) keeping a share of
        what the path holds, never more than the window's keep-recent budget."""
        path = self.store.path_to(self.store.leaf_id) if self.store.leaf_id is not None else []
        held = sum(message_tokens(e.message) for e in path if isinstance(e, MessageEntry))
        keep = max(1, min(self.settings.keep_recent_tokens, int(held * keep_share)))
        settings = CompactionSettings(self.settings.reserve_tokens, keep)
        plan = prepare_compaction(path, settings, BUILTIN)
        if plan is None:
            return
        before = self.store.entries()
        shapes = [(e.id, e.parent_id, e.type) for e in before]
        summarised = summarised_ids(plan)
        details = {
            "readFiles": plan.read_files,
            "modifiedFiles": plan.modified_files,
            "userRequests": plan.user_requests,
        }
        summary = f"## Goal\nsummary {self.compactions}: {len(summarised)} entries"
        # the session's clock, not the machine's: every reply before it is older, every
        # reply after it newer (as they are in a live session)
        moment = datetime.fromtimestamp(self.tick() / 1000, UTC)
        entry = CompactionEntry(
            summary=summary,
            first_kept_entry_id=plan.first_kept_entry_id,
            tokens_before=1,
            details=details,
            timestamp=format_iso(moment),
        )
        self.store.append(entry)
        assert iso_to_ms(entry.timestamp) == self.clock
        self.compactions += 1
        self.split_turns += plan.split_turn
        self.summarised[entry.id] = summarised
        # invariant 4: nothing held before is changed or dropped (the file-backed property
        # below checks the bytes on disk)
        now = self.store.entries()
        assert len(now) == len(before) + 1
        assert all(a is b for a, b in zip(now, before, strict=False))
        assert [(e.id, e.parent_id, e.type) for e in now[: len(before)]] == shapes
        check_tokens_after_compaction(self.store, plan, settings, self.window, summary)
        if reinject:
            self.store.append_custom_message(
                "heron.reinjected-files", "<file>\n" + "f" * 400 + "\n</file>", display=False
            )
        self.boundary()

    def run(self, operations: list[Any]) -> None:
        note(f"window {self.window}: {operations}")
        for number, (name, *args) in enumerate(operations):
            if name == "turn":
                self.turn(*args)
            elif name == "bash":
                self.bash(*args)
            elif name == "custom":
                self.custom()
            elif name == "custom_message":
                self.custom_message(*args)
            elif name == "settings":
                self.setting(*args)
            elif name == "branch":
                self.branch(*args)
            elif name == "compact":
                self.compact(*args)
            check_request(self.store, (SAME_MODEL, OTHER_MODEL)[number % 2])
            if name in ("compact", "branch"):
                check_nothing_vanishes(self.store, self.summarised)
        check_nothing_vanishes(self.store, self.summarised)


# --- the invariants -----------------------------------------------------------------------------


def gives_message(entry: Entry) -> bool:
    if isinstance(entry, MessageEntry | CustomMessageEntry):
        return True
    return isinstance(entry, BranchSummaryEntry) and bool(entry.summary)


def summarised_ids(plan: CompactionPlan) -> set[str]:
    """The entries a plan hands to the summariser (history, and the turn prefix)."""
    path = plan.path
    history_end = plan.turn_start_index if plan.split_turn else plan.first_kept_index
    history = [e for e in path[plan.region_start : history_end] if gives_message(e)]
    prefix = (
        [e for e in path[plan.turn_start_index : plan.first_kept_index] if gives_message(e)] if plan.split_turn else []
    )
    # the summariser's input is exactly these entries' messages
    assert len(plan.messages_to_summarize) == len(history)
    assert len(plan.turn_prefix_messages) == len(prefix)
    for entry, message in zip(history + prefix, plan.messages_to_summarize + plan.turn_prefix_messages, strict=True):
        if isinstance(entry, MessageEntry):
            assert message is entry.message
    return {e.id for e in history + prefix}


def request_messages(store: SessionStore, model: Model) -> tuple[list[Message], list[Message]]:
    """The leaf's request through the real pipeline: (before adapt_messages, after it)."""
    messages = build_context(store, store.leaf_id).messages
    state = PruneState()
    extend_pruning(messages, state, tools=BUILTIN)
    converted = convert_to_llm(apply_pruning(messages, state))
    rule = openai_chat_tool_id if model is OTHER_MODEL else (lambda i: i)
    return converted, adapt_messages(converted, model, rule)


def check_pairs(messages: list[Message], *, failed_calls_allowed: bool) -> None:
    """Each tool result directly follows (in the run of results after) the assistant
    message holding its call, and each call of a completed reply has exactly one result."""
    waiting: dict[str, int] = {}
    for message in messages:
        if isinstance(message, ToolResultMessage):
            assert message.tool_call_id in waiting, f"a result without its call: {message.tool_call_id}"
            assert waiting.pop(message.tool_call_id) == 1
            assert message.text() != NO_RESULT_TEXT, "adapt_messages had to invent a result"
            continue
        assert not waiting, f"calls without results: {sorted(waiting)}"
        if isinstance(message, AssistantMessage):
            failed = message.stop_reason in (StopReason.ERROR, StopReason.ABORTED)
            assert failed_calls_allowed or not failed
            if not failed:
                waiting = {c.id: 1 for c in message.tool_calls()}
        elif isinstance(message, UserMessage):
            assert not message.text().startswith("[Result of an earlier"), "a result turned into text"
    assert not waiting, f"calls without results at the end: {sorted(waiting)}"


def check_request(store: SessionStore, *models: Model) -> None:
    for model in models or (SAME_MODEL, OTHER_MODEL):
        converted, adapted = request_messages(store, model)
        check_pairs(converted, failed_calls_allowed=True)  # nothing for adapt_messages to repair...
        check_pairs(adapted, failed_calls_allowed=False)  # ...and what is sent is valid
        assert len([m for m in adapted if isinstance(m, ToolResultMessage)]) == len(
            [m for m in converted if isinstance(m, ToolResultMessage)]
        )


def check_nothing_vanishes(store: SessionStore, summarised: dict[str, set[str]]) -> None:
    if store.leaf_id is None:
        return
    path = store.path_to(store.leaf_id)
    covered: set[str] = set()
    for entry in path:
        if isinstance(entry, CompactionEntry):
            covered |= summarised[entry.id]
    kept = set(build_context(store, store.leaf_id).entry_ids)
    for entry in path:
        if gives_message(entry):
            assert entry.id in kept or entry.id in covered, f"{entry.type} {entry.id} vanished"


def check_tokens_after_compaction(
    store: SessionStore, plan: CompactionPlan, settings: CompactionSettings, window: int, summary: str
) -> None:
    context = build_context(store, store.leaf_id)
    after = estimate_context_tokens(context.messages)
    kept_entries = [e for e in plan.path[plan.first_kept_index :] if gives_message(e)]
    assert context.entry_ids[1:] == [e.id for e in kept_entries]
    kept_messages = context.messages[1:]
    kept_tail = sum(context_message_tokens(m) for m in kept_messages)
    summary_tokens = context_message_tokens(context.messages[0])
    threshold = window - settings.reserve_tokens
    # no stale usage: the estimate is exactly the summary plus the kept tail
    assert after == summary_tokens + kept_tail
    if kept_tail + summary_tokens <= threshold:
        assert after <= threshold
    # the kept tail is the keep-recent budget plus at most the message that crossed it
    # (the cut only moves forward from there, or - when no cut point follows - back to the
    # nearest one before it, which keeps one whole assistant turn)
    path_messages = [e.message for e in plan.path[plan.first_kept_index :] if isinstance(e, MessageEntry)]
    budget_tail = sum(message_tokens(m) for m in path_messages)
    largest = max((message_tokens(m) for m in path_messages), default=0)
    forward_cut = any(
        isinstance(e, MessageEntry) and not isinstance(e.message, ToolResultMessage)
        for e in plan.path[plan.first_kept_index :]
    )
    if forward_cut and budget_tail > settings.keep_recent_tokens + largest:
        turn_tokens = _last_turn_tokens(path_messages)
        assert budget_tail <= settings.keep_recent_tokens + turn_tokens
    assert summary in context.messages[0].summary  # type: ignore[union-attr]


def _last_turn_tokens(messages: list[Any]) -> int:
    """Tokens from the last assistant message with calls to the end (the backward
    fallback keeps that much when only results follow the budget)."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AssistantMessage):
            return sum(message_tokens(m) for m in messages[index:])
    return sum(message_tokens(m) for m in messages)


# --- the properties ------------------------------------------------------------------------------


def run_program(store: SessionStore, window: int, operations: list[Any]) -> Builder:
    builder = Builder(store=store, window=window, settings=CompactionSettings().for_window(window))
    builder.run(operations)
    describe(builder)
    return builder


def describe(builder: Builder) -> None:
    """What the session exercised (``pytest --hypothesis-show-statistics``)."""
    store = builder.store
    on_path = [e for e in store.path_to(store.leaf_id)] if store.leaf_id is not None else []
    event(f"compactions: {min(builder.compactions, 4)}{'+' if builder.compactions >= 4 else ''}")
    event(f"compactions on the final path: {min(sum(isinstance(e, CompactionEntry) for e in on_path), 3)}")
    event(f"split turns: {min(builder.split_turns, 2)}")
    event(f"branched: {any(len(children) > 1 for children in store.children_indices())}")


@PROFILE
@given(program)
def test_random_sessions_keep_the_invariants(spec: tuple[int, list[Any]]) -> None:
    window, operations = spec
    run_program(SessionStore.in_memory("/tmp/project"), window, operations)


@FILE_PROFILE
@given(program)
def test_the_session_file_is_only_appended_to(spec: tuple[int, list[Any]]) -> None:
    window, operations = spec
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s.jsonl")
        store = SessionStore.create(tmp, path=path)
        store.materialize()
        snapshots: list[bytes] = []
        original = Builder.compact

        def compact_and_snapshot(self: Builder, keep_share: float, reinject: bool) -> None:
            snapshots.append(Path(path).read_bytes())
            original(self, keep_share, reinject)
            after = Path(path).read_bytes()
            assert after.startswith(snapshots[-1])  # appended to, never rewritten

        builder = run_program_with(store, window, operations, compact_and_snapshot)
        store.close()
        reopened = SessionStore.open(path, read_only=True)
        assert [e.to_json_dict() for e in reopened.entries()] == [e.to_json_dict() for e in store.entries()]
        assert reopened.warnings == []
        assert len([e for e in reopened.entries() if isinstance(e, CompactionEntry)]) == builder.compactions


def run_program_with(store: SessionStore, window: int, operations: list[Any], compact: Any) -> Builder:
    class Recording(Builder):
        pass

    Recording.compact = compact  # type: ignore[method-assign]
    builder = Recording(store=store, window=window, settings=CompactionSettings().for_window(window))
    builder.run(operations)
    return builder


# --- repeated compaction, explicitly ----------------------------------------------------------------


def test_repeated_compactions_lose_nothing() -> None:
    """Compact after every few turns, ten times: each compaction summarises what the one
    before kept (pi's repeated-compaction bug loses exactly those messages)."""
    store = SessionStore.in_memory("/tmp/project")
    builder = Builder(store=store, window=16_384, settings=CompactionSettings().for_window(16_384))
    previous_kept: set[str] = set()
    for round_ in range(10):
        for n in range(3):
            builder.turn(3, n == 1, [("tools", [("read", n, 6, False), ("bash", n, 4, n == 2)], 1, True)], 2)
        count = builder.compactions
        builder.compact(1.0, round_ % 2 == 0)
        assert builder.compactions == count + 1
        latest = next(e for e in reversed(store.path_to(store.leaf_id)) if isinstance(e, CompactionEntry))
        # everything the previous compaction kept (up to it) is summarised by this one
        assert previous_kept <= builder.summarised[latest.id]
        context = build_context(store, store.leaf_id)
        previous_kept = {
            i for i in context.entry_ids[1:] if store.get(i) is not None and isinstance(store.get(i), MessageEntry)
        }
        check_request(store)
        check_nothing_vanishes(store, builder.summarised)
    all_messages = {e.id for e in store.path_to(store.leaf_id) if isinstance(e, MessageEntry)}
    covered = set().union(*builder.summarised.values())
    kept = set(build_context(store, store.leaf_id).entry_ids)
    assert all_messages <= covered | kept
    assert len(builder.summarised) == 10
