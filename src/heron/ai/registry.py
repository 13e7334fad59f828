"""Providers by api name, and the two entry points ``stream`` and ``complete``.

Built-in providers are named by import path and loaded on first use, so ``import
heron.ai`` costs nothing for httpx and the adapters. Users add their own with
``register_provider``.
"""

from __future__ import annotations

import importlib
from typing import Any, cast

from heron.ai.options import StreamOptions
from heron.ai.stream import AssistantEventStream, Provider, open_stream
from heron.ai.types import AssistantMessage, Context, Model

_BUILTIN: dict[str, str] = {
    "anthropic-messages": "heron.ai.providers.anthropic:AnthropicProvider",
    "openai-chat": "heron.ai.providers.openai_chat:OpenAIChatProvider",
    "openai-responses": "heron.ai.providers.openai_responses:OpenAIResponsesProvider",
    "google-gemini": "heron.ai.providers.google:GoogleProvider",
    "faux": "heron.ai.providers.faux:FauxProvider",
}

# pi's api names, so a pi user's models.json works unchanged.
API_ALIASES: dict[str, str] = {
    "openai-completions": "openai-chat",
    "google-generative-ai": "google-gemini",
}

_providers: dict[str, Provider] = {}


def canonical_api(api: str) -> str:
    return API_ALIASES.get(api, api)


def register_provider(provider: Provider, api: str | None = None) -> None:
    """Make ``provider`` serve models whose ``api`` is ``api`` (default: ``provider.api``)."""
    _providers[canonical_api(api or provider.api)] = provider


def unregister_provider(api: str) -> None:
    _providers.pop(canonical_api(api), None)


def get_provider(api: str) -> Provider:
    name = canonical_api(api)
    provider = _providers.get(name)
    if provider is not None:
        return provider
    target = _BUILTIN.get(name)
    if target is None:
        known = ", ".join(sorted(set(_BUILTIN) | set(_providers)))
        raise KeyError(f"no provider for api {api!r} (known: {known})")
    module_name, _, class_name = target.partition(":")
    module = importlib.import_module(module_name)
    provider = cast(Provider, getattr(module, class_name)())
    _providers[name] = provider
    return provider


def known_apis() -> list[str]:
    return sorted(set(_BUILTIN) | set(_providers))


def stream(model: Model, context: Context, options: StreamOptions | None = None, **kwargs: Any) -> AssistantEventStream:
    """Stream one assistant message. Options come as a :class:`StreamOptions` or as
    keyword arguments of the same names (``api_key=...``, ``thinking="high"``...).

    Never raises once the provider is found: failures arrive as an ``error`` event.
    """
    opts = options if options is not None else StreamOptions(**kwargs)
    if options is not None and kwargs:
        for key, value in kwargs.items():
            setattr(opts, key, value)
    return open_stream(get_provider(model.api), model, context, opts)


async def complete(
    model: Model, context: Context, options: StreamOptions | None = None, **kwargs: Any
) -> AssistantMessage:
    """The final assistant message of :func:`stream` (check ``stop_reason`` for errors)."""
    return await stream(model, context, options, **kwargs).result()
