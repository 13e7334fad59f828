"""The view the last main request carried, for a request that repeats its prefix.

A shared summary request (:mod:`heron.context.shared_summary`) is served by the provider's
cache only if its messages are byte for byte what the last main request sent. By the time
a compaction runs, a pruning step may already have stubbed results to make room for the
next request; those stubs were never sent. This view leaves them out: the pruning recorded
before the latest answer applies, any recorded after it does not. Like every view, it is
derived from the session file (each stub's decision carries the time it was recorded), so
a resumed process builds the same one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from heron.agent.messages import AgentMessage
from heron.ai.types import AssistantMessage
from heron.context.view import View, ViewBuilder

if TYPE_CHECKING:
    from heron.context.policy import ContextPolicy


def view_as_sent(
    policy: ContextPolicy, messages: Sequence[AgentMessage], before_ms: int | None = None
) -> tuple[View, dict[str, str]]:
    """The view of ``messages`` with only the pruning recorded before the latest answer,
    and the stubs it applies: the last main request's view, extended by what came after it.
    ``before_ms``: the latest answer at that moment instead (a background summary asked
    for again by a new process repeats the prefix its first request repeated)."""
    decisions = policy.decisions
    answers = (m.timestamp for m in reversed(messages) if isinstance(m, AssistantMessage))
    answered = next((ms for ms in answers if before_ms is None or ms <= before_ms), None)
    if answered is None or not any(ms > answered for ms in decisions.stub_ms.values()):
        return policy.view(messages), decisions.stubs
    stubs = {k: v for k, v in decisions.stubs.items() if decisions.stub_ms.get(k, 0) < answered}
    earlier = dataclasses.replace(decisions, stubs=stubs)
    return ViewBuilder(policy.cwd, policy.tools).apply(messages, earlier), stubs
