"""Audit findings on learnt windows (issue 10), pinned at the unit level; the black-box
scenario is tests/cli/test_context_audit.py::test_a_server_stating_its_full_window_but_enforcing_less."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.context import test_policy
from tests.context.test_policy import Session, overflow, reply, user

session_for = test_policy.session_for  # the fixture


@pytest.mark.parametrize(
    "text",
    [
        # the configured window stated, the server's own count (14,237) below it: not what it enforces
        "This model's maximum context length is 16384 tokens. However, you requested 14237 tokens.",
        "prompt is too long: 10141 tokens > 16384 maximum",
        # a stated limit above the window, and a count below it
        "This model's maximum context length is 32768 tokens. However, you requested 14237 tokens.",
    ],
)
def test_a_limit_the_server_did_not_reach_by_its_own_count_is_not_learnt(
    session_for: Callable[..., Session], text: str
) -> None:
    s = session_for(window=16_384)
    s.add([user("hi"), reply("hello")])
    sent = {"tokens": 10_142, "max_tokens": 4_096}  # heron counts one token more than the server
    learned = s.policy.windows.learn_from_overflow(overflow(text), **sent)
    assert learned is not None
    assert learned.window < 14_237 * 0.95  # below what was refused, not one token under the stated window
    assert learned.window == int(10_142 * 0.9)  # the rejected-size rule, as for an error with no limit
    s.restart()
    assert s.policy.sizes.window == learned.window


def test_a_limit_the_server_reached_by_its_own_count_is_still_learnt_from_the_text(
    session_for: Callable[..., Session],
) -> None:
    s = session_for(window=16_384)
    s.add([user("hi"), reply("hello")])
    sent = {"tokens": 10_141, "max_tokens": 4_096}
    learned = s.policy.windows.learn_from_overflow(
        overflow("This model's maximum context length is 12000 tokens. However, you requested 14237 tokens."), **sent
    )
    assert learned is not None and learned.window == int(12_000 * 0.98)
