"""Settings from ``settings.json`` files, and the choice of model and API key.

Two files, both optional, in pi's camelCase form (``docs/configuration.md`` lists every
key): ``$HERON_HOME/settings.json`` (the user's) and ``<cwd>/.heron/settings.json`` (the
project's). The project wins; nested objects are merged key by key, so a project can
change ``compaction.reserveTokens`` without restating the rest of ``compaction``.

A settings file must never stop heron from starting: a file that is not JSON is ignored
as a whole, a key with a value of the wrong type is ignored alone, an unknown key (a
typo, usually) is ignored, and each case becomes a warning that names the file and the
key, so the user can fix it. Each file is checked on its own before merging, so a
warning always points at the file that holds the bad value.

:func:`resolve_model` picks the model and key for a session, or raises
:class:`SetupError` whose message tells the user exactly how to configure one.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from heron.ai.models import ENV_API_KEYS, ConfigValueError, ModelNotFoundError, ModelRegistry, env_api_key, heron_home
from heron.ai.types import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS, THINKING_LEVELS, Model, ThinkingLevel
from heron.context.limits import DEFAULT_LIMITS, ToolLimits

SETTINGS_FILE = "settings.json"
LOCAL_SETTINGS_FILE = "settings.local.json"


# --- the settings -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """When to compact and what to keep (DESIGN §5; both also capped at 25% of the window)."""

    enabled: bool = True
    reserve_tokens: int = 16_384
    keep_recent_tokens: int = 20_000


@dataclass(frozen=True, slots=True)
class RetrySettings:
    """Backoff for transient provider errors (DESIGN §3)."""

    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2_000
    max_delay_ms: int = 60_000


@dataclass(frozen=True, slots=True)
class PruningSettings:
    """Stubbing of old tool results before compaction (DESIGN §5)."""

    enabled: bool = True


@dataclass(frozen=True, slots=True)
class ContextFileSettings:
    """Budgets for AGENTS.md / CLAUDE.md in the system prompt (DESIGN §5)."""

    per_file_chars: int = 12_000
    total_chars: int = 60_000


@dataclass(frozen=True, slots=True)
class ToolRunSettings:
    """``tools``: how many tool calls of one answer run at once."""

    max_parallel: int = 8


@dataclass(frozen=True, slots=True)
class SpillSettings:
    """``spill``: the cap of one full-output file and how long such files are kept."""

    max_bytes: int = 100 * 1024 * 1024
    retention_days: int = 14


@dataclass(frozen=True, slots=True)
class BashSettings:
    """``bash``: the timeout of a command given none, and the longest one the model may ask for."""

    default_timeout_ms: int = 600_000
    max_timeout_ms: int = 3_600_000


@dataclass(frozen=True, slots=True)
class Settings:
    default_provider: str | None = None
    default_model: str | None = None
    default_thinking_level: ThinkingLevel | None = None
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    retry: RetrySettings = field(default_factory=RetrySettings)
    pruning: PruningSettings = field(default_factory=PruningSettings)
    tool_limits: ToolLimits = DEFAULT_LIMITS
    context_files: ContextFileSettings = field(default_factory=ContextFileSettings)
    shell_path: str | None = None
    default_tools: tuple[str, ...] | None = None  # None: heron's default tool set
    tools: ToolRunSettings = field(default_factory=ToolRunSettings)
    spill: SpillSettings = field(default_factory=SpillSettings)
    # context.checkInvariants: run the context rules on every request (warnings + ledger)
    check_invariants: bool = False
    bash: BashSettings = field(default_factory=BashSettings)
    # What loading found: problems to show the user, and the files that were read.
    warnings: tuple[str, ...] = ()
    sources: tuple[Path, ...] = ()


# --- the schema ---------------------------------------------------------------------


class _Bad(ValueError):
    """A value of the wrong shape; the message says what was expected."""


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"must be true or false, not {_type_name(value)} {json.dumps(value)}")
    return value


def _int(minimum: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise _Bad(f"must be an integer >= {minimum}, not {_type_name(value)} {json.dumps(value)}")
        return value

    return check


def _string(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Bad(f"must be a string, not {_type_name(value)}")
    return value.strip() or None


def _thinking(value: Any) -> str:
    if value not in THINKING_LEVELS:
        raise _Bad(f"must be one of {', '.join(THINKING_LEVELS)}, not {json.dumps(value)}")
    return cast(str, value)


def _tools(value: Any) -> list[str]:
    if isinstance(value, str):
        value = value.split(",")  # the --tools form: "read,grep"
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Bad('must be an array of tool names, like ["read", "bash"]')
    return [item.strip() for item in value if item.strip()]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(f"must be an object, not {_type_name(value)}")
    return value


_POSITIVE = _int(1)
_NON_NEGATIVE = _int(0)

# Key on disk -> its check (returns the clean value or raises _Bad), or the schema of a nested object.
SCHEMA: dict[str, Any] = {
    "defaultProvider": _string,
    "defaultModel": _string,
    "defaultThinkingLevel": _thinking,
    "shellPath": _string,
    "defaultTools": _tools,
    "compaction": {"enabled": _bool, "reserveTokens": _POSITIVE, "keepRecentTokens": _POSITIVE},
    "retry": {"enabled": _bool, "maxRetries": _NON_NEGATIVE, "baseDelayMs": _NON_NEGATIVE, "maxDelayMs": _NON_NEGATIVE},
    "pruning": {"enabled": _bool},
    "toolLimits": {_camel(f.name): _POSITIVE for f in dataclasses.fields(ToolLimits)},
    "contextFiles": {"perFileChars": _POSITIVE, "totalChars": _NON_NEGATIVE},
    "tools": {"maxParallel": _POSITIVE},
    "spill": {"maxBytes": _POSITIVE, "retentionDays": _POSITIVE},
    "context": {"checkInvariants": _bool},
    "bash": {"defaultTimeoutMs": _POSITIVE, "maxTimeoutMs": _POSITIVE},
    # Read per file by heron.coding.permissions / hooks / secrets (a project file may not do what a user's may).
    "permissions": _object,
    "hooks": _object,
    "env": {"passThrough": _tools},
}



def _clean(data: Mapping[str, Any], schema: Mapping[str, Any], where: str, warnings: list[str]) -> dict[str, Any]:
    """The keys of ``data`` that fit ``schema``; one warning per key that does not."""
    clean: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{where}{key}"
        check = schema.get(key)
        if check is None:
            warnings.append(f"unknown setting {path!r} (ignored)")
        elif isinstance(check, Mapping):
            if not isinstance(value, dict):
                warnings.append(f"setting {path!r} must be an object, not {_type_name(value)} (defaults used)")
                continue
            clean[key] = _clean(value, check, f"{path}.", warnings)
        else:
            try:
                clean[key] = check(value)
            except _Bad as exc:
                warnings.append(f"setting {path!r} {exc} (default used)")
    return clean


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` on top of ``base``; objects present in both are merged recursively."""
    merged = dict(base)
    for key, value in override.items():
        previous = merged.get(key)
        if isinstance(previous, Mapping) and isinstance(value, Mapping):
            merged[key] = deep_merge(previous, value)
        else:
            merged[key] = value
    return merged


def read_settings_file(path: Path, warnings: list[str]) -> dict[str, Any] | None:
    """The checked contents of one file; None when it is missing or unusable as a whole."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        warnings.append(f"{path}: cannot read: {exc} (file ignored)")
        return None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        warnings.append(f"{path}: invalid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno} (file ignored)")
        return None
    if not isinstance(data, dict):
        warnings.append(f"{path}: the top level must be an object, not {_type_name(data)} (file ignored)")
        return None
    problems: list[str] = []
    clean = _clean(data, SCHEMA, "", problems)
    warnings.extend(f"{path}: {problem}" for problem in problems)
    return clean


def settings_paths(cwd: Path, home: Path | None = None) -> list[Path]:
    """The user's, the project's, then the project's local (untracked) file; the later wins."""
    home = home if home is not None else heron_home()
    return [home / SETTINGS_FILE, Path(cwd) / ".heron" / SETTINGS_FILE, Path(cwd) / ".heron" / LOCAL_SETTINGS_FILE]


def _sub(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def settings_from_dict(
    data: Mapping[str, Any], warnings: tuple[str, ...] = (), sources: tuple[Path, ...] = ()
) -> Settings:
    """:class:`Settings` from already-checked camelCase data; missing keys take defaults."""
    compaction, retry = _sub(data, "compaction"), _sub(data, "retry")
    limits, files = _sub(data, "toolLimits"), _sub(data, "contextFiles")
    defaults_c, defaults_r, defaults_f = CompactionSettings(), RetrySettings(), ContextFileSettings()
    tools = data.get("defaultTools")
    return Settings(
        default_provider=data.get("defaultProvider"),
        default_model=data.get("defaultModel"),
        default_thinking_level=cast("ThinkingLevel | None", data.get("defaultThinkingLevel")),
        compaction=CompactionSettings(
            enabled=compaction.get("enabled", defaults_c.enabled),
            reserve_tokens=compaction.get("reserveTokens", defaults_c.reserve_tokens),
            keep_recent_tokens=compaction.get("keepRecentTokens", defaults_c.keep_recent_tokens),
        ),
        retry=RetrySettings(
            enabled=retry.get("enabled", defaults_r.enabled),
            max_retries=retry.get("maxRetries", defaults_r.max_retries),
            base_delay_ms=retry.get("baseDelayMs", defaults_r.base_delay_ms),
            max_delay_ms=retry.get("maxDelayMs", defaults_r.max_delay_ms),
        ),
        pruning=PruningSettings(enabled=_sub(data, "pruning").get("enabled", True)),
        tool_limits=dataclasses.replace(
            DEFAULT_LIMITS,
            **{f.name: limits[_camel(f.name)] for f in dataclasses.fields(ToolLimits) if _camel(f.name) in limits},
        ),
        context_files=ContextFileSettings(
            per_file_chars=files.get("perFileChars", defaults_f.per_file_chars),
            total_chars=files.get("totalChars", defaults_f.total_chars),
        ),
        shell_path=data.get("shellPath"),
        default_tools=tuple(tools) if tools is not None else None,
        tools=ToolRunSettings(max_parallel=_sub(data, "tools").get("maxParallel", ToolRunSettings().max_parallel)),
        spill=SpillSettings(
            max_bytes=_sub(data, "spill").get("maxBytes", SpillSettings().max_bytes),
            retention_days=_sub(data, "spill").get("retentionDays", SpillSettings().retention_days),
        ),
        check_invariants=bool(_sub(data, "context").get("checkInvariants", False)),
        bash=BashSettings(
            default_timeout_ms=_sub(data, "bash").get("defaultTimeoutMs", BashSettings().default_timeout_ms),
            max_timeout_ms=_sub(data, "bash").get("maxTimeoutMs", BashSettings().max_timeout_ms),
        ),
        warnings=warnings,
        sources=sources,
    )


def load_settings(cwd: Path, home: Path | None = None) -> Settings:
    """The merged settings for a session in ``cwd``; never raises for a bad file."""
    warnings: list[str] = []
    merged: dict[str, Any] = {}
    sources: list[Path] = []
    seen: set[str] = set()
    for path in settings_paths(cwd, home):
        real = os.path.realpath(path)
        if real in seen:  # running in the directory that holds $HERON_HOME: one file, read once
            continue
        seen.add(real)
        data = read_settings_file(path, warnings)
        if data is not None:
            sources.append(path)
            merged = deep_merge(merged, data)
    return settings_from_dict(merged, tuple(warnings), tuple(sources))


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
        ways = (f"--api-key KEY, or export {BASE_URL_KEY_ENV}=... (used for --base-url servers), or describe "
                f"the server in {heron_home() / 'models.json'} with \"apiKey\": \"NAME_OF_A_VARIABLE\"")
    else:
        names = ENV_API_KEYS.get(model.provider, ())
        env = f"export {names[0]}=..., or " if names else ""
        ways = f"{env}--api-key KEY, or \"apiKey\" for provider {model.provider!r} in {heron_home() / 'models.json'}"
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
            model = registry.find(cli_model)
        except ModelNotFoundError as exc:
            if base_url is None:
                local = (f"A model of a local server? heron --base-url http://localhost:11434/v1 "
                         f"--model {cli_model.strip()}")
                raise SetupError(f"{exc}\n{local}\n{SETUP_POINTER}") from exc
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
        f"To make a choice the default, put it in {home / SETTINGS_FILE}:",
        f'  {{"defaultProvider": "anthropic", "defaultModel": "{DEFAULT_MODELS["anthropic"]}"}}',
    ]
    return "\n".join(lines)
