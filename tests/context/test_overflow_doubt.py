"""Overflow learning that cannot brick a session (docs/context.md, "A learned window"):
a rejection whose stated count is more than ten times off heron's teaches nothing, and a
learned window never goes below the last request the server accepted."""

from __future__ import annotations

from collections.abc import Callable

from tests.context.test_policy import ANTHROPIC, OPENAI, Session, overflow, reply, session_for, user  # noqa: F401


def test_an_implausible_count_is_doubted_and_teaches_nothing(session_for: Callable[..., Session]) -> None:  # noqa: F811
    s = session_for(window=200_000, max_tokens=3_000)
    s.add([user("hi"), reply("hello")])
    sent = {"tokens": 5_000, "max_tokens": 3_000}
    failed = overflow(ANTHROPIC.format(counted=210_000))
    assert s.policy.windows.implausible_overflow(failed, **sent)
    assert s.policy.windows.learn_from_overflow(failed, **sent) is None
    assert s.policy.sizes.window == 200_000
    # within ten times: believed
    sent = {**sent, "tokens": 190_000}
    assert not s.policy.windows.implausible_overflow(failed, **sent)
    # an error without a count cannot be judged: not doubted
    assert not s.policy.windows.implausible_overflow(overflow("prompt is too long"), **sent)


def test_a_learned_window_is_never_below_the_last_accepted_request(
    session_for: Callable[..., Session],  # noqa: F811
) -> None:
    s = session_for(window=16_384, max_tokens=3_000)
    s.add([user("hi"), reply("hello")])
    sent = {"tokens": 13_000, "max_tokens": 3_000}
    learned = s.policy.windows.learn_from_overflow(
        overflow(OPENAI.format(total=16_000)), accepted_tokens=12_500, **sent
    )
    assert learned is not None and learned.window == 12_500  # the stated limit alone gives 11,760
    # an accepted request at or above the current window: nothing lower to learn
    assert (
        s.policy.windows.learn_from_overflow(overflow(OPENAI.format(total=16_000)), accepted_tokens=20_000, **sent)
        is None
    )


def test_a_learned_window_is_dropped_when_a_larger_request_is_served(
    session_for: Callable[..., Session],  # noqa: F811
) -> None:
    from heron.ai.types import Usage

    s = session_for(window=16_384, max_tokens=3_000)
    s.add([user("hi"), reply("hello")])
    sent = {"tokens": 13_000, "max_tokens": 3_000}
    learned = s.policy.windows.learn_from_overflow(overflow(OPENAI.format(total=16_000)), **sent)
    assert learned is not None and s.policy.sizes.window == learned.window
    # a reply served within the learned window proves nothing
    s.add([user("more"), reply("fine", usage=Usage(input=learned.window - 10))])
    assert s.policy.windows.expire_learned_window(s.messages()) is None and s.policy.sizes.window == learned.window
    # the server answered more than the learned window by its own count: the window was wrong
    s.add([user("again"), reply("fine", usage=Usage(input=learned.window - 100, cache_read=500))])
    assert s.policy.windows.expire_learned_window(s.messages()) == learned.window
    assert s.policy.sizes.window == 16_384
    assert any(r.detail.get("reset") for r in s.ledger.records)
    s.restart()  # recorded: a new process plans with the configured window too
    assert s.policy.sizes.window == 16_384


def test_a_learned_window_can_be_dropped_on_request(session_for: Callable[..., Session]) -> None:  # noqa: F811
    s = session_for(window=16_384, max_tokens=3_000)
    s.add([user("hi"), reply("hello")])
    assert s.policy.windows.forget_window("the user asked") is None  # nothing learned: nothing to drop
    sent = {"tokens": 13_000, "max_tokens": 3_000}
    learned = s.policy.windows.learn_from_overflow(overflow(OPENAI.format(total=16_000)), **sent)
    assert learned is not None
    assert s.policy.windows.forget_window("the user asked") == learned.window and s.policy.sizes.window == 16_384
    s.restart()
    assert s.policy.sizes.window == 16_384
