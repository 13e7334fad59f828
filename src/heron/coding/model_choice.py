"""The choice of model and API key for a session, and what to tell the user when none
can be made: :func:`resolve_model` picks them or raises :class:`SetupError`, whose message
says exactly how to configure one. (Re-exported by :mod:`heron.coding.settings`, where
callers have always found these names.)"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from heron.ai.models import ENV_API_KEYS, ConfigValueError, ModelNotFoundError, ModelRegistry, env_api_key, heron_home
from heron.ai.types import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS, WINDOW_ASSUMED, Model

if TYPE_CHECKING:  # settings.py imports this module at its end: no import cycle at run time
    from heron.coding.settings import Settings

# --- choosing the model ---------------------------------------------------------------

# The model used when only a provider is known (its key is set, or defaultProvider
# names it), in the order providers are tried when nothing is configured.
DEFAULT_MODELS: dict[str, str] = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-5.1-codex",
    "google": "gemini-2.5-pro",
    "openrouter": "anthropic/claude-sonnet-4.5",
    "groq": "openai/gpt-oss-120b",
    "xai": "grok-code-fast-1",
    "deepseek": "deepseek-chat",
    "cerebras": "qwen-3-coder-480b",
    "mistral": "devstral-medium-latest",
}

# The provider name of a model made on the fly from --base-url and an unknown --model.
CUSTOM_PROVIDER = "custom"

_LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "0.0.0.0")


# The exit status of every "heron is not configured" failure (no model, unknown model,
# missing key, broken models.json), distinct from 2 (bad command-line arguments) so a
# script can tell "fix the set-up" from "fix the command" (docs/configuration.md).
NOT_CONFIGURED_EXIT = 3

# The environment variable heron reads the key of a ``--base-url`` server from. The
# providers' own variables (OPENAI_API_KEY...) are never sent to such a server: it is
# not that provider, and the key must not leak to it.
BASE_URL_KEY_ENV = "HERON_API_KEY"


class SetupError(RuntimeError):
    """No usable model or key; the message gives the cause first, then how to set one up."""

    exit_code = NOT_CONFIGURED_EXIT


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """The model a session uses and how it was chosen; the key's source is kept by name only,
    so the startup line can say where the key came from without showing it."""

    model: Model
    api_key: str | None
    reason: str  # how it was chosen, for the startup line: "--model", "settings", "ANTHROPIC_API_KEY"...
    # Where the key came from, by name, never the value ("--api-key", "HERON_API_KEY",
    # "apiKey of provider 'x' in models.json", ...); "" when no key is used.
    key_source: str = ""


def _is_local(url: str | None) -> bool:
    if not url:
        return False
    host = url.split("://", 1)[-1].split("/", 1)[0].lower()
    return any(host == h or host.startswith(h + ":") for h in _LOCAL_HOSTS)


def _needs_key(model: Model) -> bool:
    """Hosted providers refuse requests without a key; local and custom servers often need none."""
    return model.provider in ENV_API_KEYS and model.api != "faux" and not _is_local(model.base_url)


def _provider_default(registry: ModelRegistry, provider: str) -> Model | None:
    preferred = DEFAULT_MODELS.get(provider)
    model = registry.get(provider, preferred) if preferred else None
    if model is not None:
        return model
    return next((m for m in registry.all() if m.provider == provider), None)


def _custom_model(model_id: str, base_url: str) -> Model:
    """An OpenAI-compatible model for ``--base-url`` + an id the catalogue does not know."""
    return Model(
        id=model_id,
        api="openai-chat",
        provider=CUSTOM_PROVIDER,
        name=model_id,
        base_url=base_url,
        context_window=DEFAULT_CONTEXT_WINDOW,
        max_tokens=DEFAULT_MAX_TOKENS,
        window_source=WINDOW_ASSUMED,
        max_tokens_configured=False,
    )


def _key_for(model: Model, registry: ModelRegistry, cli_api_key: str | None) -> str | None:
    return key_and_source(model, registry, cli_api_key)[0]


def key_and_source(model: Model, registry: ModelRegistry, cli_api_key: str | None) -> tuple[str | None, str]:
    """The key for ``model`` and where it came from (a name, never the value)."""
    if cli_api_key:
        return cli_api_key, "--api-key"
    if model.provider == CUSTOM_PROVIDER and registry.get(model.provider, model.id) is None:
        return _base_url_key()
    try:
        key = registry.api_key(model)
    except ConfigValueError as exc:
        raise SetupError(f"cannot get the API key for {model.ref}: {exc}") from exc
    if key is None and _needs_key(model):
        raise SetupError(missing_key_message(model))
    return key, _registry_key_source(model, key) if key else ""


def _base_url_key() -> tuple[str | None, str]:
    value = os.environ.get(BASE_URL_KEY_ENV, "").strip()
    return (value, BASE_URL_KEY_ENV) if value else (None, "")


def _registry_key_source(model: Model, key: str) -> str:
    """The registry takes models.json's ``apiKey`` first, then the environment: a key
    equal to the provider's variable came from there (or names it, which is the same)."""
    for name in ENV_API_KEYS.get(model.provider, ()):
        if os.environ.get(name):
            return name if os.environ[name] == key else f"apiKey of provider {model.provider!r} in models.json"
    return f"apiKey of provider {model.provider!r} in models.json"


def describe_key(resolved: ResolvedModel) -> str:
    """Which key a request carried, for an error message: its source, never its value."""
    if resolved.key_source:
        return f"the key from {resolved.key_source}"
    if resolved.model.api == "openai-chat":
        return "no key (heron sends the placeholder 'heron-no-key' when none is given)"
    return "no key"


def auth_hint(resolved: ResolvedModel) -> str:
    """What to tell the user when the server answered 401/403: the key that was sent and
    the ways to give one."""
    sent = describe_key(resolved)
    model = resolved.model
    if model.provider == CUSTOM_PROVIDER or resolved.reason == "--base-url" or resolved.key_source == BASE_URL_KEY_ENV:
        ways = (
            f"--api-key KEY, or export {BASE_URL_KEY_ENV}=... (used for --base-url servers), or describe "
            f'the server in {heron_home() / "models.json"} with "apiKey": "NAME_OF_A_VARIABLE"'
        )
    else:
        names = ENV_API_KEYS.get(model.provider, ())
        env = f"export {names[0]}=..., or " if names else ""
        ways = f'{env}--api-key KEY, or "apiKey" for provider {model.provider!r} in {heron_home() / "models.json"}'
    return f"heron sent {sent}. To give a key: {ways}."


def _from_settings(settings: Settings, registry: ModelRegistry) -> Model | None:
    provider, model_id = settings.default_provider, settings.default_model
    where = "defaultProvider/defaultModel in settings.json"
    if model_id:
        if provider:
            model = registry.get(provider, model_id)
            if model is not None:
                return model
        try:
            return registry.find(model_id if not provider or "/" in model_id else f"{provider}/{model_id}")
        except ModelNotFoundError as exc:
            raise SetupError(f"{where}: {exc}") from exc
    if provider:
        model = _provider_default(registry, provider)
        if model is None:
            known = ", ".join(registry.providers())
            raise SetupError(f"{where}: unknown provider {provider!r} (known: {known})")
        return model
    return None


API_CHOICES = ("openai-chat", "openai-responses", "anthropic-messages", "google-gemini")


def _for_base_url(model: Model, base_url: str, cli_api: str | None) -> Model:
    """A catalogue model pointed at another server. Most compatible servers speak Chat
    Completions only, so an OpenAI model (whose catalogue API is the Responses API) is
    switched to it unless ``--api`` says otherwise."""
    api = cli_api or ("openai-chat" if model.api == "openai-responses" else model.api)
    return dataclasses.replace(model, base_url=base_url, api=api)


def resolve_model(
    settings: Settings,
    registry: ModelRegistry,
    cli_model: str | None,
    cli_base_url: str | None,
    cli_api_key: str | None,
    cli_api: str | None = None,
) -> ResolvedModel:
    """The model and API key for a session.

    Order: ``--model`` (with ``--base-url``, an id the catalogue lacks becomes an
    OpenAI-compatible model on the fly), else the settings default, else the first
    provider of :data:`DEFAULT_MODELS` whose key is set in the environment (with its
    default model), else the first model of a provider defined in ``models.json``.
    ``--base-url`` overrides the chosen model's URL; its key comes from ``--api-key``
    or ``HERON_API_KEY`` only. ``--api`` overrides the wire API. Raises :class:`SetupError`.
    """
    base_url = cli_base_url.strip() if cli_base_url and cli_base_url.strip() else None
    model: Model | None = None
    reason = ""
    if cli_model and cli_model.strip():
        reason = "--model"
        try:
            # with --base-url an id the catalogue lacks is the server's: no suggestions to work out
            model = registry.find(cli_model) if base_url is None else registry.lookup(cli_model)
        except ModelNotFoundError as exc:
            if base_url is None:
                local = (
                    f"A model of a local server? heron --base-url http://localhost:11434/v1 --model {cli_model.strip()}"
                )
                raise SetupError(f"{exc}\n{local}\n{SETUP_POINTER}") from exc
        if model is None and base_url is not None:
            custom = _custom_model(cli_model.strip(), base_url)
            if cli_api:
                custom = dataclasses.replace(custom, api=cli_api)
            key, source = (cli_api_key, "--api-key") if cli_api_key else _base_url_key()
            return ResolvedModel(custom, key, "--base-url", source)
    else:
        model = _from_settings(settings, registry)
        reason = "settings"
    if model is None and base_url is not None:
        raise SetupError(
            "--base-url needs --model with the name the server serves, for example:\n"
            f"  heron --base-url {base_url} --model qwen2.5-coder:7b"
        )
    if model is None and cli_api_key:
        raise SetupError("--api-key needs --model provider/id: a key does not say which provider it is for.")
    if model is None:
        for provider in DEFAULT_MODELS:
            if env_api_key(provider):
                model = _provider_default(registry, provider)
                if model is not None:
                    reason = ENV_API_KEYS[provider][0]
                    break
    if model is None:
        model = next((m for m in registry.all() if m.provider not in ENV_API_KEYS), None)
        reason = "models.json"
    if model is None:
        raise SetupError(setup_help(registry))
    if base_url is not None:
        model = _for_base_url(model, base_url, cli_api)
        key, source = (cli_api_key, "--api-key") if cli_api_key else _base_url_key()
        return ResolvedModel(model, key, reason, source)
    if cli_api:
        model = dataclasses.replace(model, api=cli_api)
    key, source = key_and_source(model, registry, cli_api_key)
    return ResolvedModel(model, key, reason, source)


# --- what to tell the user --------------------------------------------------------------

# The short pointer after a specific cause (unknown model, missing key...): the full
# set-up text would bury the cause.
SETUP_POINTER = "How to set up a model: heron --setup-help (or docs/configuration.md)."

MODELS_JSON_EXAMPLE = """{
  "providers": {
    "ollama": {
      "baseUrl": "http://localhost:11434/v1",
      "api": "openai-chat",
      "models": [
        {"id": "qwen2.5-coder:7b", "contextWindow": 32768, "maxTokens": 8192}
      ]
    }
  }
}"""


def missing_key_message(model: Model) -> str:
    names = ENV_API_KEYS.get(model.provider, ())
    env = " or ".join(names) if names else "the provider's key"
    first = names[0] if names else "API_KEY"
    return (
        f"{model.ref} needs an API key and none is set. Either:\n"
        f"  export {first}=...        # then run heron again\n"
        f"  heron --model {model.ref} --api-key <key>\n"
        f"(looked for: {env}, and an apiKey for provider {model.provider!r} in "
        f"{heron_home() / 'models.json'})"
    )


def setup_help(registry: ModelRegistry | None = None) -> str:
    """The full 'how to set up a model' text shown when nothing usable is configured."""
    home = heron_home()
    rows = []
    for provider, model_id in DEFAULT_MODELS.items():
        env = ENV_API_KEYS.get(provider, (f"{provider.upper()}_API_KEY",))[0]
        rows.append(f"  export {env + '=...':<24} # {provider} (default model {model_id})")
    lines = [
        "heron needs a model, and none is configured.",
        "",
        "Use a hosted provider: set its API key, then run heron again.",
        *rows,
        "Or name the model and key directly:",
        f"  heron --model anthropic/{DEFAULT_MODELS['anthropic']} --api-key <key>",
        "",
        "Use a local OpenAI-compatible server (Ollama, vLLM, llama.cpp):",
        "  heron --base-url http://localhost:11434/v1 --model qwen2.5-coder:7b   # Ollama",
        "  heron --base-url http://localhost:8000/v1 --model <served model name>  # vLLM",
        "  heron --base-url http://localhost:8080/v1 --model <model name>         # llama.cpp server",
        f"or describe it once in {home / 'models.json'}:",
        *("  " + line for line in MODELS_JSON_EXAMPLE.splitlines()),
        "and run: heron --model ollama/qwen2.5-coder:7b",
        "",
        f"To make a choice the default, put it in {home / 'settings.json'}:",
        f'  {{"defaultProvider": "anthropic", "defaultModel": "{DEFAULT_MODELS["anthropic"]}"}}',
    ]
    return "\n".join(lines)
