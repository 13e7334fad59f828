"""The model catalogue: built-in models plus the user's ``$HERON_HOME/models.json``.

Both files use pi's format, so a pi user's ``models.json`` works unchanged::

    {"providers": {"<name>": {"baseUrl", "api", "apiKey", "headers",
                              "models": [{"id", "name", "contextWindow", "maxTokens",
                                          "reasoning", "input", "cost", "compat"}]}}}

A provider entry naming a built-in provider may carry only ``baseUrl`` / ``headers`` /
``apiKey``: those then apply to the built-in models. A user model with the same provider
and id as a built-in one replaces it. A malformed file never raises: each problem is
recorded in :attr:`ModelRegistry.errors` (with the file's path) and the rest still loads.

``apiKey`` and header values are resolved only when asked for (:meth:`ModelRegistry.api_key`,
:meth:`ModelRegistry.headers`), so a ``!shell command`` runs only for the model in use.

Not imported by ``heron.ai``: the catalogue is read on first use, not at import.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from heron.ai.registry import canonical_api, known_apis
from heron.ai.types import (
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_MAX_TOKENS,
    JSON,
    WINDOW_ASSUMED,
    InputKind,
    Model,
    ModelCost,
)

BUILTIN_MODELS_PATH = Path(__file__).parent / "data" / "models.json"

SHELL_TIMEOUT_SECONDS = 10.0

# Provider name -> environment variables holding its API key, first set one wins.
ENV_API_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "openrouter": ("OPENROUTER_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
}

_INPUT_KINDS: frozenset[str] = frozenset({"text", "image"})


class ConfigValueError(RuntimeError):
    """A configured value (``apiKey``, a header) could not be resolved."""


class ModelNotFoundError(LookupError):
    """``find`` matched no model, or a bare id matched several."""


def heron_home() -> Path:
    """``$HERON_HOME`` if set, else ``~/.heron``."""
    home = os.environ.get("HERON_HOME")
    return Path(home).expanduser() if home else Path.home() / ".heron"


def resolve_config_value(value: str) -> str:
    """Resolve an ``apiKey`` or header value as pi does.

    ``!command`` runs ``command`` in a shell (10 s timeout) and returns its stdout,
    stripped; the name of a set environment variable returns that variable's value;
    anything else is a literal. Raises :class:`ConfigValueError` when the command fails.
    """
    if value.startswith("!"):
        return _run_shell(value[1:].strip())
    env_value = os.environ.get(value)
    if env_value is not None:
        return env_value
    return value


def _run_shell(command: str) -> str:
    if not command:
        raise ConfigValueError("empty shell command after '!'")
    try:
        done = subprocess.run(
            command,
            shell=True,
            capture_output=True,
            text=True,
            timeout=SHELL_TIMEOUT_SECONDS,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise ConfigValueError(f"command {command!r} timed out after {SHELL_TIMEOUT_SECONDS:g} s") from exc
    except OSError as exc:
        raise ConfigValueError(f"command {command!r} could not be run: {exc}") from exc
    if done.returncode != 0:
        detail = (done.stderr or "").strip()
        suffix = f": {detail}" if detail else ""
        raise ConfigValueError(f"command {command!r} failed with exit status {done.returncode}{suffix}")
    return done.stdout.strip()


def env_api_key(provider: str) -> str | None:
    """The provider's API key from its conventional environment variables, if any is set."""
    for name in ENV_API_KEYS.get(provider, ()):
        value = os.environ.get(name)
        if value:
            return value
    return None


# --- parsing ----------------------------------------------------------------


class _Invalid(Exception):
    """One problem in a models.json; the caller records it and skips the entry."""


@dataclass(slots=True)
class _ProviderConfig:
    """What a models.json says about one provider (values unresolved)."""

    name: str
    source: str
    base_url: str | None = None
    api: str | None = None
    api_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class _ParsedFile:
    """One ``models.json`` file read: its providers and model entries, with where each was found."""

    providers: dict[str, _ProviderConfig] = field(default_factory=dict)
    # (provider config, raw model entry, where) in file order
    models: list[tuple[_ProviderConfig, JSON, str]] = field(default_factory=list)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _optional_str(data: JSON, key: str, where: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Invalid(f"{where}.{key} must be a string, not {_type_name(value)}")
    return value


def _str_map(data: JSON, key: str, where: str) -> dict[str, str]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _Invalid(f"{where}.{key} must be an object of strings")
    return cast(dict[str, str], dict(value))


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _check_api(api: str, where: str) -> str:
    name = canonical_api(api)
    known = known_apis()
    if name not in known:
        raise _Invalid(f"{where}: unknown api {api!r} (known: {', '.join(known)})")
    return name


def _parse_file(data: Any, source: str, errors: list[str]) -> _ParsedFile:
    parsed = _ParsedFile()
    if not isinstance(data, dict):
        errors.append(f"{source}: the top level must be an object, not {_type_name(data)}")
        return parsed
    providers = data.get("providers")
    if providers is None:
        return parsed
    if not isinstance(providers, dict):
        errors.append(f"{source}: 'providers' must be an object, not {_type_name(providers)}")
        return parsed
    for name, entry in providers.items():
        where = f"providers.{name}"
        if not isinstance(entry, dict):
            errors.append(f"{source}: {where} must be an object, not {_type_name(entry)}")
            continue
        try:
            api = _optional_str(entry, "api", where)
            config = _ProviderConfig(
                name=name,
                source=source,
                base_url=_optional_str(entry, "baseUrl", where),
                api=_check_api(api, f"{where}.api") if api is not None else None,
                api_key=_optional_str(entry, "apiKey", where),
                headers=_str_map(entry, "headers", where),
            )
            models = entry.get("models")
            if models is not None and not isinstance(models, list):
                raise _Invalid(f"{where}.models must be an array, not {_type_name(models)}")
        except _Invalid as exc:
            errors.append(f"{source}: {exc}")
            continue
        parsed.providers[name] = config
        for index, model in enumerate(models or []):
            parsed.models.append((config, model, f"{where}.models[{index}]"))
    return parsed


def _build_model(
    config: _ProviderConfig, raw: Any, where: str, fallback: _ProviderConfig | None
) -> tuple[Model, dict[str, str]]:
    """A :class:`Model` from one models.json entry, and the entry's own raw headers.

    ``fallback`` is the built-in provider of the same name, if any: it supplies the api
    and base URL an entry leaves out."""
    if not isinstance(raw, dict):
        raise _Invalid(f"{where} must be an object, not {_type_name(raw)}")
    model_id = raw.get("id")
    if not isinstance(model_id, str) or not model_id.strip():
        raise _Invalid(f"{where}: a model needs a non-empty string 'id'")
    where = f"{where} ({model_id})"

    own_api = _optional_str(raw, "api", where)
    api_name = own_api or config.api or (fallback.api if fallback else None)
    if api_name is None:
        raise _Invalid(f"{where}: no 'api' given for the model or its provider")
    api = _check_api(api_name, where)

    base_url = _optional_str(raw, "baseUrl", where) or config.base_url or (fallback.base_url if fallback else None)
    if base_url is None and api != "faux":
        raise _Invalid(f"{where}: no 'baseUrl' given for the model or its provider")

    name = _optional_str(raw, "name", where) or model_id

    reasoning = raw.get("reasoning", False)
    if not isinstance(reasoning, bool):
        raise _Invalid(f"{where}.reasoning must be a boolean, not {_type_name(reasoning)}")

    kinds = raw.get("input", ["text"])
    if not isinstance(kinds, list) or not kinds or not all(isinstance(k, str) and k in _INPUT_KINDS for k in kinds):
        raise _Invalid(f"{where}.input must be a non-empty array of 'text' / 'image'")

    cost_raw = raw.get("cost", {})
    if not isinstance(cost_raw, dict):
        raise _Invalid(f"{where}.cost must be an object, not {_type_name(cost_raw)}")
    prices: dict[str, float] = {}
    for key in ("input", "output", "cacheRead", "cacheWrite"):
        value = cost_raw.get(key, 0)
        if not _is_number(value) or value < 0:
            raise _Invalid(f"{where}.cost.{key} must be a number >= 0")
        prices[key] = float(value)

    window = raw.get("contextWindow", DEFAULT_CONTEXT_WINDOW)
    if not _is_positive_int(window):
        raise _Invalid(f"{where}.contextWindow must be a positive integer")
    max_tokens = raw.get("maxTokens", DEFAULT_MAX_TOKENS)
    if not _is_positive_int(max_tokens):
        raise _Invalid(f"{where}.maxTokens must be a positive integer")

    compat = raw.get("compat")
    if compat is not None and not isinstance(compat, dict):
        raise _Invalid(f"{where}.compat must be an object, not {_type_name(compat)}")

    headers = _str_map(raw, "headers", where)

    model = Model(
        id=model_id,
        api=api,
        provider=config.name,
        name=name,
        base_url=base_url,
        reasoning=reasoning,
        input=cast(list[InputKind], list(dict.fromkeys(kinds))),
        cost=ModelCost(
            input=prices["input"],
            output=prices["output"],
            cache_read=prices["cacheRead"],
            cache_write=prices["cacheWrite"],
        ),
        context_window=window,
        max_tokens=max_tokens,
        compat=dict(compat) if compat is not None else None,
        compaction=_compaction(raw, where),
        window_source="" if "contextWindow" in raw else WINDOW_ASSUMED,
        max_tokens_configured="maxTokens" in raw,
    )
    return model, headers


def _compaction(raw: dict[str, Any], where: str) -> dict[str, Any] | None:
    """A model's ``compaction`` entry: provider-native compaction / server-side clearing."""
    compaction = raw.get("compaction")
    if compaction is None:
        return None
    known = ("native", "serverClearing")
    if not isinstance(compaction, dict) or any(
        key not in known or not isinstance(value, bool) for key, value in compaction.items()
    ):
        raise _Invalid(f'{where}.compaction must be an object of "native" / "serverClearing" booleans')
    return dict(compaction)


@lru_cache(maxsize=1)
def _builtin_document() -> tuple[Any, str | None]:
    """The built-in catalogue as parsed JSON (read once per process), or an error."""
    try:
        return json.loads(BUILTIN_MODELS_PATH.read_text(encoding="utf-8")), None
    except (OSError, ValueError) as exc:
        return None, f"{BUILTIN_MODELS_PATH}: cannot read the built-in catalogue: {exc}"


def _read_json(path: Path, errors: list[str]) -> Any:
    """The parsed file, or None (missing file: silently; unreadable or bad JSON: recorded)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(f"{path}: cannot read: {exc}")
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        errors.append(f"{path}: invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
        return None


# --- the registry -----------------------------------------------------------


class ModelRegistry:
    """Every known model, by ``provider/id``. Build one with :meth:`load`."""

    def __init__(self) -> None:
        self._models: dict[tuple[str, str], Model] = {}
        self._providers: dict[str, _ProviderConfig] = {}  # the user's provider entries
        self._model_headers: dict[tuple[str, str], dict[str, str]] = {}
        self.errors: list[str] = []

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> ModelRegistry:
        """The built-in catalogue plus ``path`` (default ``$HERON_HOME/models.json``).

        A missing user file is fine; a malformed one is reported in :attr:`errors`."""
        registry = cls()
        builtin_providers: dict[str, _ProviderConfig] = {}

        document, problem = _builtin_document()
        if problem is not None:
            registry.errors.append(problem)
        else:
            parsed = _parse_file(document, str(BUILTIN_MODELS_PATH), registry.errors)
            builtin_providers = parsed.providers
            registry._add_models(parsed, {})

        user_path = Path(path) if path is not None else heron_home() / "models.json"
        data = _read_json(user_path, registry.errors)
        if data is not None:
            parsed = _parse_file(data, str(user_path), registry.errors)
            registry._providers = parsed.providers
            registry._apply_overrides(parsed.providers)
            registry._add_models(parsed, builtin_providers)
        return registry

    def _add_models(self, parsed: _ParsedFile, fallbacks: Mapping[str, _ProviderConfig]) -> None:
        for config, raw, where in parsed.models:
            try:
                model, headers = _build_model(config, raw, where, fallbacks.get(config.name))
            except _Invalid as exc:
                self.errors.append(f"{config.source}: {exc}")
                continue
            key = (model.provider, model.id)
            self._models[key] = model  # same provider+id: the later file wins, in place
            if headers:
                self._model_headers[key] = headers
            else:
                self._model_headers.pop(key, None)

    def _apply_overrides(self, providers: Mapping[str, _ProviderConfig]) -> None:
        """A user entry's ``baseUrl`` applies to the models already known for its provider
        (the built-ins); its ``headers`` and ``apiKey`` are looked up at request time."""
        for model in self._models.values():
            config = providers.get(model.provider)
            if config is not None and config.base_url:
                model.base_url = config.base_url

    # --- queries ---

    def all(self) -> list[Model]:
        return list(self._models.values())

    def get(self, provider: str, model_id: str) -> Model | None:
        return self._models.get((provider, model_id))

    def providers(self) -> list[str]:
        return list(dict.fromkeys(model.provider for model in self._models.values()))

    def find(self, ref: str) -> Model:
        """``provider/id``, or a bare ``id`` that only one provider has.

        Ids may contain ``/`` (``openrouter/anthropic/claude-sonnet-4.5``), so a ref that
        is not a known ``provider/id`` is also tried as a bare id. Raises
        :class:`ModelNotFoundError` naming the candidates."""
        model = self.lookup(ref)
        if model is None:
            raise ModelNotFoundError(self._not_found_message(ref.strip()))
        return model

    def lookup(self, ref: str) -> Model | None:
        """:meth:`find` without the suggestions: ``None`` for a ref nobody has (a caller with a
        use for an unknown id, as ``--base-url`` has, is spared the fuzzy search over the
        catalogue). An ambiguous id still raises :class:`ModelNotFoundError`."""
        ref = ref.strip()
        provider, sep, model_id = ref.partition("/")
        if sep:
            model = self._models.get((provider, model_id))
            if model is not None:
                return model
        matches = [m for m in self._models.values() if m.id == ref]
        if len(matches) == 1:
            return matches[0]
        if matches:
            refs = ", ".join(m.ref for m in matches)
            raise ModelNotFoundError(f"model id {ref!r} is ambiguous; use one of: {refs}")
        return None

    def _not_found_message(self, ref: str) -> str:
        import difflib

        refs = [m.ref for m in self._models.values()]
        ids = [m.id for m in self._models.values()]
        close = difflib.get_close_matches(ref, refs, n=5, cutoff=0.6)
        close += [
            m.ref
            for m in self._models.values()
            if m.id in difflib.get_close_matches(ref, ids, n=5, cutoff=0.6) and m.ref not in close
        ]
        message = f"unknown model {ref!r}"
        if close:
            message += f"; did you mean: {', '.join(close[:5])}?"
        return message

    # --- credentials ---

    def api_key(self, model: Model) -> str | None:
        """The provider's ``apiKey`` from models.json (resolved), else its environment
        variable, else None. Raises :class:`ConfigValueError` if resolution fails."""
        config = self._providers.get(model.provider)
        if config is not None and config.api_key:
            try:
                value = resolve_config_value(config.api_key)
            except ConfigValueError as exc:
                raise ConfigValueError(f"apiKey of provider {model.provider!r} ({config.source}): {exc}") from exc
            if value:
                return value
        return env_api_key(model.provider)

    def headers(self, model: Model) -> dict[str, str]:
        """Extra request headers: the provider's, then the model's own (and any set on the
        :class:`Model` itself), each value resolved like ``apiKey``."""
        raw: dict[str, str] = {}
        config = self._providers.get(model.provider)
        if config is not None:
            raw.update(config.headers)
        raw.update(self._model_headers.get((model.provider, model.id), {}))
        if model.headers:
            raw.update(model.headers)
        resolved: dict[str, str] = {}
        for name, value in raw.items():
            try:
                resolved[name] = resolve_config_value(value)
            except ConfigValueError as exc:
                source = config.source if config is not None else "models.json"
                raise ConfigValueError(f"header {name!r} of model {model.ref!r} ({source}): {exc}") from exc
        return resolved
