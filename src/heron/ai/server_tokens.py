"""A local server's own count of some text: its tokenizer, asked through ``/tokenize``.

heron counts four characters a token until a server's reports calibrate it
(:mod:`heron.context.window.calibration`); in a small window the first request is planned on
that estimate alone, and a real tokenizer can be far from it (Gemma counts heron's tool
schemas at about half of chars/4, digits one token each). llama.cpp and vLLM both
tokenise on request at the server's root:

- llama.cpp: ``POST /tokenize`` ``{"content": text}`` -> ``{"tokens": [...]}``;
- vLLM: ``POST /tokenize`` ``{"model": id, "prompt": text}`` -> ``{"count": n, "tokens": [...]}``.

One request carries both forms (each server ignores the other's field). Ollama and LM
Studio have no such endpoint; their counts come with the answers.

What a request costs is the prompt the server's chat template renders, not the texts
heron sends: a template may drop the tool schemas (Gemma 3's does). llama.cpp renders a
request without running it (``POST /apply-template`` with the chat body ->
``{"prompt": ...}``); :func:`rendered_prompt` asks for that.

Both are asked through a :class:`~heron.ai.server_probe.Prober`, so the caller bounds all
of them by one deadline, and each answer says whether the server lacks the endpoint
(``missing``: worth remembering) or did not answer in time (``unknown``). This module only
asks; what the count calibrates, what the rendering shows and what is remembered is the
caller's (``heron.coding.first_count``).
"""

from __future__ import annotations

from typing import Any

from heron.ai.server_probe import Answer, Prober
from heron.ai.server_window import server_root

TOKENIZE_TIMEOUT_S = 4.0  # one request: a tokenizer answers a request's worth of text in milliseconds
COUNT_DEADLINE_S = 6.0  # the renders and the count before one first request, together


def count_from(answer: Any) -> int | None:
    """The token count in a ``/tokenize`` answer (vLLM's ``count``, else the tokens listed)."""
    if not isinstance(answer, dict):
        return None
    count = answer.get("count")
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        return count
    tokens = answer.get("tokens")
    return len(tokens) if isinstance(tokens, list) else None


def prompt_from(answer: Any) -> str | None:
    """The prompt in an ``/apply-template`` answer."""
    prompt = answer.get("prompt") if isinstance(answer, dict) else None
    return prompt if isinstance(prompt, str) else None


async def server_count(prober: Prober, base_url: str, model_id: str, text: str) -> Answer:
    """How many tokens the server at ``base_url`` counts in ``text`` (the answer's value,
    when ``ok``)."""
    body = {"content": text, "model": model_id, "prompt": text, "add_special": False}
    return (await prober.ask("POST", server_root(base_url) + "/tokenize", body)).then(count_from)


async def rendered_prompt(
    prober: Prober, base_url: str, model_id: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> Answer:
    """The prompt the server's chat template makes of a Chat Completions body with these
    ``messages`` and ``tools`` (llama.cpp's ``/apply-template``; the answer's value, when
    ``ok``)."""
    body: dict[str, Any] = {"model": model_id, "messages": messages}
    if tools:
        body["tools"] = tools
    return (await prober.ask("POST", server_root(base_url) + "/apply-template", body)).then(prompt_from)
