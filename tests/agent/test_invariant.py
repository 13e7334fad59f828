"""The tool-pairing invariant helper rejects what it should (so the tests using it mean something)."""

from __future__ import annotations

import pytest

from heron.agent import AgentMessage
from heron.ai.types import AssistantMessage, StopReason, TextContent, ToolCall, ToolResultMessage, UserMessage
from tests.agent.support import assert_tool_results_paired


def assistant(*call_ids: str, stop: StopReason = StopReason.TOOL_USE) -> AssistantMessage:
    return AssistantMessage(
        api="faux",
        provider="faux",
        model="m",
        content=[ToolCall(id=c, name="t", arguments={}) for c in call_ids],
        stop_reason=stop,
    )


def result(call_id: str, name: str = "t") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name=name, content=[TextContent(text="r")])


def test_valid_histories_pass() -> None:
    assert_tool_results_paired([])
    assert_tool_results_paired(
        [UserMessage(content="q"), assistant("a", "b"), result("a"), result("b"), UserMessage(content="steer")]
    )
    # an errored answer's calls were never run
    assert_tool_results_paired([UserMessage(content="q"), assistant("a", stop=StopReason.ERROR)])


@pytest.mark.parametrize(
    "history",
    [
        [assistant("a")],  # missing result at the end
        [assistant("a"), assistant()],  # missing result before the next answer
        [assistant("a"), result("a"), result("a")],  # duplicate
        [assistant("a", "b"), result("b"), result("a")],  # out of order
        [result("x")],  # no call
        [assistant("a"), result("a", name="other")],  # wrong tool name
        [assistant("a", stop=StopReason.ABORTED), result("a")],  # result of a call that never ran
        [assistant("a"), result("a"), assistant(), result("a")],  # result of an older call
    ],
)
def test_broken_histories_fail(history: list[AgentMessage]) -> None:
    with pytest.raises(AssertionError):
        assert_tool_results_paired(history)
