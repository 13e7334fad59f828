"""Whether a model's server keeps a prompt cache: what decides the kind of summary request.

A summary request that repeats the conversation's own prefix (docs/context.md, "The
summary request") costs little only where the server serves that prefix from a cache;
elsewhere a short request of its own is cheaper. heron knows it from the model's
configuration, in this order:

1. ``compat.promptCache`` (true / false) in ``models.json``: the user's word wins;
2. a price for cached input (``cost.cacheRead`` above zero): the provider bills cache
   reads, so it keeps a cache (Anthropic, OpenAI, Gemini, OpenRouter... in the catalogue);
3. a local or private address: llama.cpp, vLLM, Ollama and LM Studio keep the computed
   prefix of a slot and reuse it for the next request that starts the same way;
4. anything else - a hosted server with no cache price - is taken to keep none.
"""

from __future__ import annotations

from heron.ai.providers.http import is_local_url
from heron.ai.types import Model


def caches_prompts(model: Model) -> bool:
    """Whether requests to ``model`` that repeat an earlier prefix are served from a cache."""
    compat = model.compat if isinstance(model.compat, dict) else {}
    stated = compat.get("promptCache")
    if isinstance(stated, bool):
        return stated
    if model.cost.cache_read > 0:
        return True
    if model.base_url:
        return is_local_url(model.base_url)
    return False
