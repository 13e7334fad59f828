"""A real pydantic-ai agent for the scripted chat server (tests/support/chat_window.py).

pydantic-ai's own ``Agent`` and ``OpenAIChatModel``, pointed at the local server, with a
``bash`` tool that prints a long log: the traffic the adapter's test and
bench/pydantic_ai_context.py run, so both measure the same thing.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from tests.support.chat_window import prompt, tool_output

INSTRUCTIONS = "You are a build assistant."
LOG_CHARS = 40_000  # one bash result: about 10,000 tokens, so two do not fit a 16k window


def make_agent(base_url: str, capabilities: list[Any], log_chars: int = LOG_CHARS) -> Agent[None, str]:
    """The agent, with ``capabilities``, talking to the server at ``base_url`` (its ``/v1``)."""
    model = OpenAIChatModel("scripted", provider=OpenAIProvider(base_url=base_url, api_key="test-key"))
    agent: Agent[None, str] = Agent(model, capabilities=capabilities, instructions=INSTRUCTIONS)

    @agent.tool_plain
    def bash(command: str) -> str:
        """Run a shell command and return its output."""
        return tool_output(command, log_chars)

    return agent


def run_turns(
    agent: Agent[None, str], turns: range, history: list[ModelMessage] | None = None, terse: bool = False
) -> list[ModelMessage]:
    """One run per turn, each given the history so far (as a pydantic-ai user does);
    ``terse``: one-sentence prompts (the server's ``terse`` answers in kind)."""
    messages = history or []
    for turn in turns:
        result = agent.run_sync(prompt(turn, terse), message_history=messages)
        if not result.output.startswith("The build step finished."):
            raise AssertionError(f"turn {turn} ended with {result.output[:80]!r}")
        messages = result.all_messages()
    return messages
