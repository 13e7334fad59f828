"""The model-call limit per prompt (heron.agent.turn_limit): counted before each call,
spent allowance ends the run without a request, retries keep counting, a new prompt
starts afresh; ACP reports the stop as ``max_turn_requests``."""

from __future__ import annotations

import pytest

from heron.agent.turn_limit import TURN_LIMIT_KIND, TurnLimit
from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.ai.types import AssistantMessage, StopReason
from heron.cli.acp.prompting import stop_reason
from heron.coding.outcome import decide
from tests.agent.support import assert_tool_results_paired, echo_tool, make_agent


def endless(faux: FauxProvider) -> None:
    count = iter(range(10_000))
    faux.set_fallback(lambda _context: tool_call("echo", {"text": "again"}, f"c{next(count)}"))


async def test_the_run_stops_before_the_call_over_the_limit(faux: FauxProvider) -> None:
    endless(faux)
    agent = make_agent(faux, tools=[echo_tool()], max_turns=3)
    added = await agent.prompt("loop")
    assert len(faux.requests) == 3
    last = added[-1]
    assert isinstance(last, AssistantMessage)
    assert last.stop_reason == StopReason.ERROR and last.error_kind == TURN_LIMIT_KIND
    assert last.error_message is not None and last.error_message.startswith("stopped after 3 model calls")
    assert_tool_results_paired(agent.messages)
    assert stop_reason(decide([m for m in added if isinstance(m, AssistantMessage)]), cancelled=False) == (
        "max_turn_requests",
        None,
    )  # the outcome every mode presents; ACP's stop reason for it

    # continue_() (a retry) keeps counting: no fresh allowance, no request
    agent.messages.pop()
    await agent.continue_()
    assert len(faux.requests) == 3
    # a new prompt starts again at zero (that the stop is never sent on the wire is
    # checked end to end in tests/cli/test_max_turns_e2e.py)
    faux.set_fallback(lambda _context: text("done"))
    added = await agent.prompt("answer now")
    assert len(faux.requests) == 4
    assert isinstance(added[-1], AssistantMessage) and added[-1].text() == "done"


async def test_no_limit_by_default(faux: FauxProvider) -> None:
    faux.queue(*(tool_call("echo", {"text": "x"}, f"c{i}") for i in range(5)), text("done"))
    agent = make_agent(faux, tools=[echo_tool()])
    await agent.prompt("go")
    assert len(faux.requests) == 6


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        TurnLimit(0)
