"""The view the last main request carried, for a request that repeats its prefix.

A shared summary request (:mod:`heron.context.compaction.summary.shared_summary`) is served
by the provider's cache only if its messages are byte for byte what the last main request
sent. By the time a compaction runs, a pruning step may already have stubbed results to make
room for the next request; those stubs were never sent. This view leaves them out: the
pruning recorded before the latest answer applies, any recorded after it does not. A
background summary instead follows the request whose preparation started it, stubs of that
preparation included (:func:`view_as_sent`). Like every view, it is derived from the session
file (each stub's decision carries the time it was recorded), so a resumed process builds
the same one."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from heron.agent.messages import AgentMessage
from heron.ai.types import AssistantMessage
from heron.context.view.build import View, ViewBuilder

if TYPE_CHECKING:
    from heron.context.policy import ContextPolicy


def view_as_sent(
    policy: ContextPolicy, messages: Sequence[AgentMessage], before_ms: int | None = None
) -> tuple[View, dict[str, str]]:
    """The view of ``messages`` with only the pruning the last main request carried, and
    the stubs it applies: that request's view, extended by what came after it.

    ``before_ms`` None (a summary asked for now, before the next request): the pruning
    recorded before the latest answer - a step recorded since then was taken for a request
    not sent yet. ``before_ms`` given (a background summary's start, also when a new
    process asks for it again): the pruning recorded before that moment. A background
    summary starts once the view of the request about to be sent is settled, so that
    request - the one the summary request follows - carries every step recorded before
    the start, the step taken for it included (a cold-cache step at a turn's start, the
    step a boundary took); leaving those out made the summary request miss the cache
    from the first stub on."""
    decisions = policy.decisions
    if before_ms is None:
        answers = (m.timestamp for m in reversed(messages) if isinstance(m, AssistantMessage))
        limit = next(answers, None)
    else:
        limit = before_ms
    if limit is None or not any(ms >= limit for ms in decisions.stub_ms.values()):
        return policy.view(messages), decisions.stubs
    stubs = {k: v for k, v in decisions.stubs.items() if decisions.stub_ms.get(k, 0) < limit}
    earlier = dataclasses.replace(decisions, stubs=stubs)
    return ViewBuilder(policy.cwd, policy.tools).apply(messages, earlier), stubs
