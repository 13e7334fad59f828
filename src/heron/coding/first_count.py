"""The server's count before the first request, where a wrong estimate costs most.

A session's counts are calibrated by the server's reports (:mod:`heron.context.calibration`),
but the first request of a model has no report to go on: it is planned on chars/4. In a
large window that is harmless; in a small one (a llama.cpp server started with ``-c 4096``)
the system prompt and tool schemas alone are most of the window, and a tokenizer that
counts them 1.5x heron's estimate turns the first plan into a rejected request or a
needless compaction (and one that counts a prompt of plain words at half of chars/4 into
a request heron wrongly refuses). So before the first request to a local server whose
window is at most :data:`SMALL_WINDOW`, while the model is uncalibrated, heron asks the
server to count what the request carries - the system prompt and the tool definitions
(the text :func:`heron.context.budget.fixed_tokens` estimates) and the user prompts - through ``/tokenize``
(:mod:`heron.ai.server_tokens`), and folds the ratio into the model's calibration like an
answer's usage (recorded in the session: a resumed process counts the same). A server
without ``/tokenize`` costs one request, once per process and model.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence

from heron.agent.messages import AgentMessage
from heron.ai.providers.http import is_local_url
from heron.ai.server_tokens import server_count
from heron.ai.types import Model, TextContent, Tool, UserMessage
from heron.context import calibration
from heron.context.budget import CHARS_PER_TOKEN, fixed_tokens
from heron.context.policy import ContextPolicy

SMALL_WINDOW = 32_768


def fixed_text(system_prompt: str, tools: Sequence[Tool]) -> str:
    """What :func:`fixed_tokens` estimates, as the text a tokenizer counts."""
    return "\n".join([system_prompt, *(json.dumps(t.to_json_dict(), ensure_ascii=False) for t in tools)])


def wants_first_count(model: Model, policy: ContextPolicy) -> bool:
    return (
        not policy.calibrated
        and policy.window <= SMALL_WINDOW
        and model.api == "openai-chat"
        and bool(model.base_url)
        and is_local_url(model.base_url or "")
    )


class FirstCount:
    """Asks once per process and model (a server without ``/tokenize`` is not asked again)."""

    def __init__(self) -> None:
        self._asked: set[str] = set()

    async def before_request(
        self,
        model: Model,
        policy: ContextPolicy,
        system_prompt: str,
        tools: Sequence[Tool],
        messages: Sequence[AgentMessage],
        api_key: str | None,
    ) -> None:
        if policy.model_key in self._asked or not wants_first_count(model, policy):
            return
        self._asked.add(policy.model_key)
        prompts = user_texts(messages)
        text = "\n".join([fixed_text(system_prompt, tools), *prompts])
        count = await asyncio.to_thread(server_count, model.base_url or "", model.id, text, api_key)
        if count is not None:
            estimated = fixed_tokens(system_prompt, tools) + sum(math.ceil(len(t) / CHARS_PER_TOKEN) for t in prompts)
            policy.fold_sample(calibration.sample(count, estimated))


def user_texts(messages: Sequence[AgentMessage]) -> list[str]:
    """The user prompts' text (what a first request carries besides the fixed part): a
    prompt of plain words counts far fewer tokens than chars/4, code more."""
    texts: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            content = message.content
            texts.append(
                content if isinstance(content, str) else "".join(b.text for b in content if isinstance(b, TextContent))
            )
    return texts
