"""The context rules checked on an extension's ``transform_context`` result before it is used.

heron's own view is built to keep the rules of ``heron.context.rules.invariants`` (tool calls
paired with results, the turn's prompt present, injected blocks first, within the window
...). An extension's transform gets that view and may return anything, so its result is
checked the same way a request is, whatever ``HERON_CHECK_CONTEXT`` says; one that
breaks a rule is not used for that request (docs/extensions.md). The request that is
finally sent is checked again by the runtime, as every request is.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from heron.agent.messages import AgentMessage
from heron.ai.types import Context
from heron.context.engine import RequestPlan
from heron.context.rules.invariants import RequestSnapshot, Violation, check_request

if TYPE_CHECKING:
    from heron.agent.agent import Agent
    from heron.context.policy import ContextPolicy


class VerifiedSession(Protocol):
    """What the check uses of a session: the agent that would send the view, the policy
    whose numbers the request would carry, and where the session runs."""

    @property
    def agent(self) -> Agent: ...

    @property
    def policy(self) -> ContextPolicy: ...

    @property
    def cwd(self) -> Path: ...


def is_message_list(value: Any) -> bool:
    return isinstance(value, list) and all(hasattr(m, "role") for m in value)


def view_problems(session: VerifiedSession, view: Sequence[AgentMessage], plan: RequestPlan) -> list[Violation]:
    """What is wrong with sending ``view`` as the next request of ``session``, in place of
    the view of ``plan`` (its window, reserve, output cap and turn prompt are the request's)."""
    agent, policy = session.agent, session.policy
    converted = agent.convert_to_llm(list(view))
    if not isinstance(converted, list):  # an async converter: the runtime's final check still runs
        return []
    context = Context(
        system_prompt=agent.state.system_prompt,
        messages=converted,
        tools=[t.definition() for t in agent.state.tools] or None,
    )
    model = agent.state.model
    snapshot = RequestSnapshot(
        view=view,
        context=context,
        max_tokens=plan.max_tokens,
        window=plan.window,
        reserve=plan.reserve,
        stubs=policy.decisions.stubs,
        cwd=session.cwd,
        turn_prompt=plan.turn_prompt,
        floor_ms=policy.decisions.last_view_change_ms,
        model=(model.provider, model.id),
        over_threshold_reason=plan.over_threshold,
        tools=policy.tools,
    )
    return check_request(snapshot)
