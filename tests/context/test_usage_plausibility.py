"""A usage report more than ten times below heron's own estimate anchors nothing
(docs/context.md, "Counting tokens"): heron's count decides compaction then."""

from __future__ import annotations

from heron.ai.types import AssistantMessage, StopReason, TextContent, Usage, UserMessage
from heron.context.window.budget import (
    IMPLAUSIBLE_RATIO,
    estimate_context_tokens,
    implausible,
    last_usage_index,
    request_tokens,
    tail_pressure,
)


def reply(reported: int, ts: int = 2_000) -> AssistantMessage:
    return AssistantMessage(
        api="x",
        provider="p",
        model="m",
        content=[TextContent(text="abcd")],
        usage=Usage(input=reported),
        stop_reason=StopReason.STOP,
        timestamp=ts,
    )


def user(chars: int, ts: int = 1_000) -> UserMessage:
    return UserMessage(content=[TextContent(text="q" * chars)], timestamp=ts)


def test_a_report_far_below_the_estimate_is_not_an_anchor() -> None:
    # 417k tokens of history, a server that says 100
    messages = [user(4 * 417_000), reply(100), user(400, ts=3_000)]
    assert last_usage_index(messages) is None
    own = 417_000 + 1 + 100
    assert estimate_context_tokens(messages) == own
    assert request_tokens(messages, 2_000) == own + 2_000
    assert tail_pressure(messages, 2_000) == 0


def test_a_plausible_report_still_anchors() -> None:
    # a provider that counts 3x fewer tokens than chars/4 (a dense tokenizer) is believed
    messages = [user(4 * 30_000), reply(10_000), user(400, ts=3_000)]
    assert last_usage_index(messages) == 1
    assert request_tokens(messages, 2_000) == 10_000 + 100
    # a report above the estimate (images, framing) is believed too: it is the safe side
    assert request_tokens([user(400), reply(50_000), user(400, ts=3_000)], 2_000) == 50_100


def test_the_fixed_part_counts_in_the_comparison() -> None:
    """The system prompt and tools are part of what the anchored request carried."""
    messages = [user(400), reply(100), user(40, ts=3_000)]
    assert last_usage_index(messages) == 1  # 101 estimated in messages: plausible
    assert last_usage_index(messages, fixed_tokens=5_000) is None
    assert request_tokens(messages, 5_000) == 5_000 + 100 + 1 + 10


def test_the_ratio() -> None:
    assert IMPLAUSIBLE_RATIO == 10
    assert not implausible(100, 1_000)
    assert implausible(100, 1_001)
    assert implausible(2_101, 210)
    assert not implausible(2_100, 210)
    assert implausible(0, 11)
    assert not implausible(0, 10)
