"""When a learned window stops being true.

A window learnt from a rejection (:meth:`ContextPolicy.learn_from_overflow`) is a guess
about what the server enforces. Two things prove it wrong, and either drops it (a
``window_reset`` decision in the session, so a resumed process plans the same way):

* the server answered a request larger than it: by its own count (the reply's usage),
  the request carried more than the learned window - the rejection that taught it was a
  proxy's hiccup, a slot that was full, an attachment it could not take;
* the user says so (``/context reset-window``, rpc ``reset_window``).
"""

from __future__ import annotations

from collections.abc import Sequence

from heron.agent.messages import AgentMessage
from heron.ai.types import AssistantMessage, StopReason
from heron.context.policy import ContextPolicy

_FAILED = (StopReason.ERROR, StopReason.ABORTED)


def expire_learned_window(policy: ContextPolicy, messages: Sequence[AgentMessage]) -> int | None:
    """Drop the learned window when the last answered request of this model was larger
    than it (the server's usage says so); returns the dropped window."""
    learned = policy.decisions.learned_window(policy.model_key)
    if learned is None:
        return None
    for message in reversed(messages):
        if not isinstance(message, AssistantMessage) or message.stop_reason in _FAILED:
            continue
        if f"{message.provider}/{message.model}" != policy.model_key:
            return None
        usage = message.usage
        served = usage.input + usage.cache_read + usage.cache_write
        return policy.forget_window("a larger request was served") if served > learned else None
    return None
