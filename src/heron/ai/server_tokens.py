"""A local server's own count of some text: its tokenizer, asked through ``/tokenize``.

heron counts four characters a token until a server's reports calibrate it
(:mod:`heron.context.calibration`); in a small window the first request is planned on
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
``{"prompt": ...}``); :func:`rendered_prompt` asks for that. This module only asks; what
the count calibrates and what the rendering shows is the caller's
(``heron.coding.first_count``).
"""

from __future__ import annotations

from typing import Any

from heron.ai.server_window import server_root

TOKENIZE_TIMEOUT_S = 5.0  # a tokenizer answers a request's worth of text in milliseconds


def count_from(answer: Any) -> int | None:
    """The token count in a ``/tokenize`` answer (vLLM's ``count``, else the tokens listed)."""
    if not isinstance(answer, dict):
        return None
    count = answer.get("count")
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        return count
    tokens = answer.get("tokens")
    return len(tokens) if isinstance(tokens, list) else None


def _post(base_url: str, path: str, body: dict[str, Any], api_key: str | None) -> Any:
    """The JSON answer of ``POST <root><path>``, or None (no such endpoint, no answer in time)."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=TOKENIZE_TIMEOUT_S, headers=headers, follow_redirects=False, verify=False) as client:
            response = client.post(server_root(base_url) + path, json=body)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def server_count(base_url: str, model_id: str, text: str, api_key: str | None = None) -> int | None:
    """How many tokens the server at ``base_url`` counts in ``text``; None when it has no
    ``/tokenize`` (or does not answer in time)."""
    body = {"content": text, "model": model_id, "prompt": text, "add_special": False}
    return count_from(_post(base_url, "/tokenize", body, api_key))


def rendered_prompt(
    base_url: str,
    model_id: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    api_key: str | None = None,
) -> str | None:
    """The prompt the server's chat template makes of a Chat Completions body with these
    ``messages`` and ``tools`` (llama.cpp's ``/apply-template``); None when the server
    does not render on request."""
    body: dict[str, Any] = {"model": model_id, "messages": messages}
    if tools:
        body["tools"] = tools
    answer = _post(base_url, "/apply-template", body, api_key)
    prompt = answer.get("prompt") if isinstance(answer, dict) else None
    return prompt if isinstance(prompt, str) else None
