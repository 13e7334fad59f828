"""The server's count before the first request, where a wrong estimate costs most.

A session's counts are calibrated by the server's reports (:mod:`heron.context.window.calibration`),
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
without ``/apply-template`` (vLLM) keeps the tools counted.

What the server answered is remembered across processes with its window
(:func:`heron.coding.model_limits.remember`, :data:`~heron.coding.model_limits.CACHE_SECONDS`):
whether its template drops the tools, and that it has no ``/apply-template`` or no
``/tokenize``. A ``heron -p --continue`` after another asks neither again; a server
without both endpoints (Ollama, LM Studio) costs its two "not found" once, not every
process. All of it is asked within :data:`~heron.ai.server_tokens.COUNT_DEADLINE_S`: a
server that does not answer in time is planned for as one without the endpoint, and
asked again after :data:`~heron.coding.model_limits.RETRY_SECONDS`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from heron.agent.messages import AgentMessage
from heron.ai.providers.http import is_local_url
from heron.ai.server_probe import Answer, NothingListening, Prober, probing
from heron.ai.server_tokens import COUNT_DEADLINE_S, TOKENIZE_TIMEOUT_S, rendered_prompt, server_count
from heron.ai.types import Model, TextContent, Tool, UserMessage
from heron.coding.model_limits import RETRY_SECONDS, remember, remembered
from heron.context.policy import ContextPolicy
from heron.context.window import calibration
from heron.context.window.budget import CHARS_PER_TOKEN, fixed_tokens

SMALL_WINDOW = 32_768
TEMPLATE = "/apply-template"  # remembered: "drops-tools", "keeps-tools", "missing" or "unknown"
TOKENIZE = "/tokenize"  # remembered: "missing" or "unknown" (a count is a request's own)


def fixed_text(system_prompt: str, tools: Sequence[Tool]) -> str:
    """What :func:`fixed_tokens` estimates, as the text a tokenizer counts."""
    return "\n".join([system_prompt, *(json.dumps(t.to_json_dict(), ensure_ascii=False) for t in tools)])


def asks_server_counts(model: Model, policy: ContextPolicy) -> bool:
    """A local Chat Completions server with a small window: where its own count matters."""
    return (
        policy.sizes.window <= SMALL_WINDOW
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
    """Asks once per process and model, and remembers across processes what the server
    lacks (module docstring)."""

    def __init__(self, home: Path) -> None:
        self.home = home
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
        key = policy.sizes.model_key
        if key in self._asked or not asks_server_counts(model, policy):
            return
        self._asked.add(key)
        prompts = user_texts(messages)
        chat, functions = chat_body(system_prompt, tools, prompts)
        template = remembered(self.home, model, TEMPLATE)
        if template in ("drops-tools", "keeps-tools"):
            self._tools_rendered[key] = template == "keeps-tools"
        render = template is None
        count = not policy.calibration.calibrated and remembered(self.home, model, TOKENIZE) is None
        if not (render or count):
            return
        try:
            async with probing(model.base_url or "", api_key, COUNT_DEADLINE_S, TOKENIZE_TIMEOUT_S) as prober:
                if render:
                    self._render(key, model, await self._renders(prober, model, chat, functions))
                if count:
                    await self._count(prober, model, policy, system_prompt, tools, prompts, key)
        except NothingListening:
            return  # the request that follows says nothing is listening

    async def _renders(
        self, prober: Prober, model: Model, chat: list[Any], functions: list[Any]
    ) -> tuple[Answer, Answer | None]:
        """The first request rendered with its tools, and without them when it has some."""
        base = model.base_url or ""
        full = await rendered_prompt(prober, base, model.id, chat, functions)
        bare = await rendered_prompt(prober, base, model.id, chat, []) if full.kind == "ok" and functions else None
        return full, bare

    def _render(self, key: str, model: Model, renders: tuple[Answer, Answer | None]) -> None:
        """What the renders show (the tools kept or dropped), remembered with what failed."""
        full, bare = renders
        if full.kind == "unknown":
            remember(self.home, model, TEMPLATE, "unknown", RETRY_SECONDS)
        elif full.kind == "missing":
            remember(self.home, model, TEMPLATE, "missing")
        elif bare is not None and bare.kind == "ok":
            self._tools_rendered[key] = bare.value != full.value
            remember(self.home, model, TEMPLATE, "keeps-tools" if self._tools_rendered[key] else "drops-tools")

    async def _count(
        self,
        prober: Prober,
        model: Model,
        policy: ContextPolicy,
        system_prompt: str,
        tools: Sequence[Tool],
        prompts: list[str],
        key: str,
    ) -> None:
        """The server's count of what the request carries, folded into the calibration."""
        counted_tools = tools if self.counts_tools(key) else []
        text = "\n".join([fixed_text(system_prompt, counted_tools), *prompts])
        answer = await server_count(prober, model.base_url or "", model.id, text)
        if answer.kind == "missing":
            remember(self.home, model, TOKENIZE, "missing")
        elif answer.kind == "unknown":
            remember(self.home, model, TOKENIZE, "unknown", RETRY_SECONDS)
        else:
            estimated = fixed_tokens(system_prompt, counted_tools) + sum(
                math.ceil(len(t) / CHARS_PER_TOKEN) for t in prompts
            )
            policy.calibration.fold_sample(calibration.sample(answer.value, estimated))


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
