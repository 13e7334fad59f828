"""The server's count before the first request, where a wrong estimate costs most.

A session's counts are calibrated by the server's reports (:mod:`heron.context.calibration`),
but the first request of a model has no report to go on: it is planned on chars/4. In a
large window that is harmless; in a small one (a llama.cpp server started with ``-c 4096``)
the system prompt and tool schemas alone are most of the window, and a tokenizer that
counts them 1.5x heron's estimate turns the first plan into a rejected request or a
needless compaction (and one that counts a prompt of plain words at half of chars/4 into
a request heron wrongly refuses). So before the first request to a local server whose
window is at most :data:`SMALL_WINDOW`, while the model is uncalibrated, heron asks the
server to count what the request carries (:mod:`heron.ai.server_tokens`), and folds the
ratio into the model's calibration like an answer's usage (recorded in the session: a
resumed process counts the same).

What a request costs is what the server's chat template makes of it, and a template can
drop the tool schemas altogether (Gemma 3's, and any template without a tools section).
Then heron's own estimate must not count them either, or every plan is too high by the
tools' share - which no single ratio can correct, since compaction changes that share
(measured against a real llama-server: 2,350 tokens planned for a one-word prompt the
server counted as 467). Where the server renders its template on request (llama.cpp's
``/apply-template``), the first request's body is rendered with and without its tools;
the same prompt both ways means the template drops them, and heron's count leaves them
out (:meth:`FirstCount.counts_tools`). That is asked once per process and model (two
renders, milliseconds), also when the ratio is already calibrated, so a resumed process
counts the same. The ratio itself is measured on the texts the template keeps. A server
without ``/apply-template`` (vLLM) keeps the tools counted; one without either endpoint
costs a request or two, once per process and model.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from typing import Any

from heron.agent.messages import AgentMessage
from heron.ai.providers.http import is_local_url
from heron.ai.server_tokens import rendered_prompt, server_count
from heron.ai.types import Model, TextContent, Tool, UserMessage
from heron.context import calibration
from heron.context.budget import CHARS_PER_TOKEN, fixed_tokens
from heron.context.policy import ContextPolicy

SMALL_WINDOW = 32_768


def fixed_text(system_prompt: str, tools: Sequence[Tool]) -> str:
    """What :func:`fixed_tokens` estimates, as the text a tokenizer counts."""
    return "\n".join([system_prompt, *(json.dumps(t.to_json_dict(), ensure_ascii=False) for t in tools)])


def asks_server_counts(model: Model, policy: ContextPolicy) -> bool:
    """A local Chat Completions server with a small window: where its own count matters."""
    return (
        policy.window <= SMALL_WINDOW
        and model.api == "openai-chat"
        and bool(model.base_url)
        and is_local_url(model.base_url or "")
    )


def chat_body(system_prompt: str, tools: Sequence[Tool], prompts: Sequence[str]) -> tuple[list[Any], list[Any]]:
    """The messages and tools of a first request, as Chat Completions sends them (the
    provider's module loads only for a local server's count, not with every session)."""
    from heron.ai.providers.openai_chat import convert_tool

    messages: list[Any] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    messages += [{"role": "user", "content": text} for text in prompts]
    return messages, [convert_tool(t) for t in tools]


class FirstCount:
    """Asks once per process and model (a server without ``/tokenize`` is not asked again)."""

    def __init__(self) -> None:
        self._asked: set[str] = set()
        self._tools_rendered: dict[str, bool] = {}

    def counts_tools(self, model_key: str) -> bool:
        """Whether heron's estimate should count the tool schemas for this model: yes,
        unless the server's template was seen to drop them."""
        return self._tools_rendered.get(model_key, True)

    async def before_request(
        self,
        model: Model,
        policy: ContextPolicy,
        system_prompt: str,
        tools: Sequence[Tool],
        messages: Sequence[AgentMessage],
        api_key: str | None,
    ) -> None:
        key = policy.model_key
        if key in self._asked or not asks_server_counts(model, policy):
            return
        self._asked.add(key)
        base, prompts = model.base_url or "", user_texts(messages)
        chat, functions = chat_body(system_prompt, tools, prompts)
        rendered = await asyncio.to_thread(rendered_prompt, base, model.id, chat, functions, api_key)
        if rendered is not None and functions:
            bare = await asyncio.to_thread(rendered_prompt, base, model.id, chat, [], api_key)
            self._tools_rendered[key] = bare != rendered
        if policy.calibrated:
            return  # the session's ratio already counts like the server
        counted_tools = tools if self.counts_tools(key) else []
        text = "\n".join([fixed_text(system_prompt, counted_tools), *prompts])
        count = await asyncio.to_thread(server_count, base, model.id, text, api_key)
        if count is not None:
            estimated = fixed_tokens(system_prompt, counted_tools) + sum(
                math.ceil(len(t) / CHARS_PER_TOKEN) for t in prompts
            )
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
