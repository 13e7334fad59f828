"""Hostile answers from the model, through the agent loop and the real coding tools:
hundreds of tool calls in one answer, repeated tool-call ids, arguments that are JSON but
not an object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from heron.agent import Agent
from heron.agent.call_ids import REWRITES_KEY, make_call_ids_unique
from heron.ai.providers.faux import FauxProvider, FauxReply, text
from heron.ai.types import AssistantMessage, ToolCall, ToolResultMessage
from heron.coding.tools.bash import BashTool
from heron.coding.tools.env import ToolEnv
from tests.agent.support import assert_tool_results_paired

# Each command registers itself in a folder while it runs and logs how many were
# registered at that moment: the largest logged number is the peak of concurrent commands.
COUNTING = 'touch "$D/$$"; ls "$D" | wc -l >> "$D.log"; sleep 0.05; rm "$D/$$"'


def bash_agent(faux: FauxProvider, tmp_path: Path, **kwargs: Any) -> Agent:
    env = ToolEnv(cwd=tmp_path, home=tmp_path / "home", session_id="s")
    return Agent(model=faux.model(), system_prompt="test", tools=[BashTool(env)], **kwargs)


async def peak_of(faux: FauxProvider, tmp_path: Path, calls: int, **kwargs: Any) -> tuple[int, Agent]:
    running = tmp_path / "running"
    running.mkdir()
    command = COUNTING.replace("$D", str(running))
    reply = FauxReply(content=[ToolCall(id=f"c{i}", name="bash", arguments={"command": command}) for i in range(calls)])
    faux.queue(reply, text("done"))
    agent = bash_agent(faux, tmp_path, **kwargs)
    await agent.prompt("go")
    counts = [int(line) for line in Path(f"{running}.log").read_text().split()]
    assert len(counts) == calls
    return max(counts), agent


async def test_200_bash_calls_in_one_answer_run_at_most_8_at_a_time(faux: FauxProvider, tmp_path: Path) -> None:
    peak, agent = await peak_of(faux, tmp_path, 200)
    assert 2 <= peak <= 8
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == [f"c{i}" for i in range(200)]  # call order kept
    assert not any(r.is_error for r in results)
    assert_tool_results_paired(agent.messages)


async def test_max_parallel_is_an_agent_option(faux: FauxProvider, tmp_path: Path) -> None:
    peak, _ = await peak_of(faux, tmp_path, 12, max_parallel=1)
    assert peak == 1


async def test_duplicate_tool_call_ids_are_made_unique_and_results_pair(faux: FauxProvider, tmp_path: Path) -> None:
    def call(call_id: str, word: str) -> ToolCall:
        return ToolCall(id=call_id, name="bash", arguments={"command": f"echo {word}"})

    faux.queue(
        FauxReply(content=[call("dup", "one"), call("dup", "two")]),  # two calls, one id
        FauxReply(content=[call("dup", "three"), call("dup_2", "four")]),  # reused from the turn before
        text("done"),
    )
    agent = bash_agent(faux, tmp_path)
    await agent.prompt("go")
    assistants = [m for m in agent.messages if isinstance(m, AssistantMessage) and m.tool_calls()]
    ids = [c.id for m in assistants for c in m.tool_calls()]
    assert ids == ["dup", "dup_2", "dup_3", "dup_2_2"]
    assert assistants[0].extra[REWRITES_KEY] == {"dup_2": "dup"}
    assert assistants[1].extra[REWRITES_KEY] == {"dup_3": "dup", "dup_2_2": "dup_2"}
    results = {m.tool_call_id: m.text() for m in agent.messages if isinstance(m, ToolResultMessage)}
    assert results == {"dup": "one", "dup_2": "two", "dup_3": "three", "dup_2_2": "four"}
    assert_tool_results_paired(agent.messages)
    # what the provider was sent last: every tool-call id once, every result paired
    sent = faux.requests[-1].messages
    sent_ids = [c.id for m in sent if isinstance(m, AssistantMessage) for c in m.tool_calls()]
    assert len(sent_ids) == len(set(sent_ids)) == 4
    # the mapping is stored with the message
    assert assistants[1].to_json_dict()[REWRITES_KEY] == {"dup_3": "dup", "dup_2_2": "dup_2"}


def test_rewriting_skips_ids_that_are_taken_later_in_the_message() -> None:
    message = AssistantMessage(
        api="x",
        provider="x",
        model="x",
        content=[ToolCall(id="a", name="t"), ToolCall(id="a", name="t"), ToolCall(id="a_2", name="t")],
    )
    assert make_call_ids_unique(message, set()) == {"a_3": "a"}
    assert [c.id for c in message.tool_calls()] == ["a", "a_3", "a_2"]
    untouched = AssistantMessage(api="x", provider="x", model="x", content=[ToolCall(id="b", name="t")])
    assert make_call_ids_unique(untouched, {"a"}) == {} and REWRITES_KEY not in untouched.extra


async def test_arguments_that_are_a_json_array_are_reported_as_such(faux: FauxProvider, tmp_path: Path) -> None:
    raw = json.dumps(["echo", "hi"])
    faux.queue(FauxReply(content=[ToolCall(id="c1", name="bash", raw_arguments=raw)]), text("ok"))
    agent = bash_agent(faux, tmp_path)
    await agent.prompt("go")
    [result] = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error
    assert result.text() == (
        'The arguments for tool "bash" were valid JSON but an array, not an object, so the tool was not run. '
        'Send one JSON object with the parameters as its keys.\n\nReceived arguments:\n["echo", "hi"]'
    )
