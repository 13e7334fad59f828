"""The pure parts of provider-native compaction (``heron.context.compaction.native``): which model
asks for what, the view from a native block on for its own provider, the span heron must
summarise for another, and the ledger records of what the provider did."""

from __future__ import annotations

from heron.agent.messages import AgentMessage, CompactionSummaryMessage
from heron.ai.types import (
    AssistantMessage,
    Model,
    NativeCompaction,
    StopReason,
    TextContent,
    Usage,
    UserMessage,
)
from heron.context.compaction.native import (
    NativeSettings,
    NativeTracker,
    answer_records,
    entry_of,
    kept_from,
    native_index,
    native_view,
    request_fields,
    uncovered,
)
from heron.context.window.budget import request_tokens
from heron.session.store import SessionStore

ANTHROPIC = Model(id="c", api="anthropic-messages", provider="anth")
RESPONSES = Model(id="g", api="openai-responses", provider="resp")
CHAT = Model(id="x", api="openai-completions", provider="chat")


def reply(native: Model | None = None, stop: StopReason = StopReason.STOP) -> AssistantMessage:
    model = native or ANTHROPIC
    block = NativeCompaction(api=model.api, provider=model.provider, content="S") if native else None
    return AssistantMessage(
        api=model.api, provider=model.provider, model=model.id, content=[TextContent(text="t")],
        native_compaction=block, stop_reason=stop,
    )  # fmt: skip


def test_settings_per_model() -> None:
    base = NativeSettings(native=True, server_clearing=True)
    assert base.for_model(ANTHROPIC).native and base.for_model(ANTHROPIC).server_clearing
    assert base.for_model(RESPONSES).native and not base.for_model(RESPONSES).server_clearing
    assert not base.for_model(CHAT).native  # no native compaction on the chat wire
    own = Model(id="c", api="anthropic-messages", provider="anth", compaction={"native": False})
    assert not base.for_model(own).native and base.for_model(own).server_clearing
    assert (
        NativeSettings()
        .for_model(Model(id="c", api="anthropic-messages", provider="anth", compaction={"native": True}))
        .native
    )


def test_request_fields() -> None:
    on = NativeSettings(native=True, trigger=0.5, instructions="keep paths")
    fields = request_fields(on, threshold=10_000, window=16_000, keep_tool_uses=3, exclude_tools=["todo"], off=False)
    assert fields is not None and fields.compact_trigger == 5_000 and fields.instructions == "keep paths"
    assert fields.clear_trigger is None and fields.exclude_tools == ()
    assert request_fields(on, threshold=10_000, window=16_000, keep_tool_uses=3, exclude_tools=[], off=True) is None
    assert (
        request_fields(NativeSettings(), threshold=1, window=1, keep_tool_uses=3, exclude_tools=[], off=False) is None
    )
    clearing = NativeSettings(server_clearing=True)
    fields = request_fields(
        clearing, threshold=10_000, window=16_000, keep_tool_uses=2, exclude_tools=["todo"], off=False
    )
    assert fields is not None and fields.compact_trigger is None
    assert (fields.clear_trigger, fields.clear_keep, fields.clear_at_least, fields.exclude_tools) == (
        6_000,
        2,
        1_600,
        ("todo",),
    )


def test_view_starts_at_the_latest_block_for_its_provider() -> None:
    older, newer = reply(ANTHROPIC), reply(ANTHROPIC)
    messages: list[AgentMessage] = [
        UserMessage(content="a"),
        older,
        UserMessage(content="b"),
        newer,
        UserMessage(content="c"),
    ]
    assert list(native_view(messages, ANTHROPIC)) == messages[3:]
    assert native_view(messages, CHAT) is messages
    # a failed reply's block covers nothing
    failed = [*messages, reply(ANTHROPIC, StopReason.ERROR)]
    assert list(native_view(failed, ANTHROPIC)) == failed[3:]
    # the latest block is another provider's: nothing is dropped
    mixed: list[AgentMessage] = [*messages, reply(RESPONSES)]
    assert native_view(mixed, ANTHROPIC) is mixed


def test_uncovered_until_heron_summarised_the_span() -> None:
    block = reply(RESPONSES)
    messages: list[AgentMessage] = [UserMessage(content="a"), block, UserMessage(content="b")]
    assert uncovered(messages, CHAT) is block
    assert uncovered(messages, RESPONSES) is None  # its own provider reads it
    summarised: list[AgentMessage] = [CompactionSummaryMessage(summary="s", tokens_before=1), block]
    assert uncovered(summarised, CHAT) is None
    assert uncovered([UserMessage(content="a")], CHAT) is None


def test_ledger_records() -> None:
    answer = reply(ANTHROPIC)
    answer.usage = Usage(input=900, cache_read=100)
    answer.context_edits = [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 4, "cleared_input_tokens": 2_000}]
    answer.context_management_error = "400 invalid_request_error: no such beta"
    native, cleared, rejected = answer_records(answer, 7_000)
    assert (native.kind, native.tokens_before, native.tokens_after, native.detail["reason"]) == (
        "compaction",
        7_000,
        1_000,
        "native",
    )
    assert cleared.kind == "prune" and cleared.tokens_before == 2_000 and cleared.detail["cleared_tool_uses"] == 4
    assert rejected.kind == "compaction" and rejected.detail["reason"] == "native_rejected"
    assert answer_records(reply(), 10) == []


def test_tracker_looks_only_at_what_was_added() -> None:
    """The tracker's answer is the full scan's, for a list that grows, one that is
    replaced and one that lost its last message."""
    tracker = NativeTracker()
    messages: list[AgentMessage] = [UserMessage(content="a"), reply()]
    assert tracker.index(messages) is None
    messages.append(reply(ANTHROPIC))
    assert tracker.index(messages) == 2
    messages += [UserMessage(content="b"), reply()]
    assert tracker.index(messages) == 2 == native_index(messages)
    messages.pop()
    messages.pop()
    messages.pop()
    assert tracker.index(messages) is None == native_index(messages)
    rebuilt: list[AgentMessage] = [CompactionSummaryMessage(summary="s", tokens_before=1), reply(RESPONSES)]
    assert tracker.index(rebuilt) == 1


def test_a_native_reply_counting_the_history_before_anchors_nothing() -> None:
    """A reply that carries a native block and reports the request as it was before the
    provider compacted it (far above the compacted view) does not anchor the count."""
    block = reply(RESPONSES)
    view: list[AgentMessage] = [block, UserMessage(content="x" * 400)]
    block.usage = Usage(input=1_200)  # the compacted context: believed
    assert request_tokens(view, 1_000, model=("resp", "g")) == 1_200 + 100
    block.usage = Usage(input=50_000)  # the history before the compaction: heron counts
    assert request_tokens(view, 1_000, model=("resp", "g")) == 1_000 + 1 + 100


def test_entry_of_and_kept_from() -> None:
    """The entry that holds a native reply, and whether heron's latest compaction already
    keeps from it (then what is left before it is that compaction's own, never re-summarised)."""
    store = SessionStore.in_memory()
    store.append_message(UserMessage(content="a"))
    block = reply(RESPONSES)
    entry = store.append_message(block)
    store.append_message(UserMessage(content="b"))
    assert entry_of(store, store.leaf_id, block) == entry.id
    assert not kept_from(store, store.leaf_id, entry.id)
    store.append_compaction(summary="s", first_kept_entry_id=entry.id, tokens_before=10, details={})
    assert kept_from(store, store.leaf_id, entry.id)
