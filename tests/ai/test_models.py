from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from heron.ai.models import (
    BUILTIN_MODELS_PATH,
    ENV_API_KEYS,
    ConfigValueError,
    ModelNotFoundError,
    ModelRegistry,
    env_api_key,
    heron_home,
    resolve_config_value,
)
from heron.ai.registry import known_apis
from heron.ai.types import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS

REQUIRED = {
    "anthropic": [
        "claude-opus-4-6",
        "claude-sonnet-4-6",
        "claude-opus-4-5",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
        "claude-opus-4-1",
        "claude-sonnet-4-0",
    ],
    "openai": [
        "gpt-5.5",
        "gpt-5.4",
        "gpt-5.1",
        "gpt-5.1-codex",
        "gpt-5",
        "gpt-5-mini",
        "gpt-5-nano",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4o",
        "gpt-4o-mini",
        "o3",
        "o4-mini",
        "o3-mini",
    ],
    "google": [
        "gemini-3-pro-preview",
        "gemini-3-flash-preview",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "gemini-2.5-flash-lite",
        "gemini-2.0-flash",
    ],
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERON_HOME", str(tmp_path))
    for names in ENV_API_KEYS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    return tmp_path


def write_models(home: Path, data: Any) -> Path:
    path = home / "models.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def builtin_count() -> int:
    data = json.loads(BUILTIN_MODELS_PATH.read_text(encoding="utf-8"))
    return sum(len(p["models"]) for p in data["providers"].values())


# --- built-in catalogue -------------------------------------------------------


def test_builtin_catalogue_loads_and_is_valid(home: Path) -> None:
    registry = ModelRegistry.load()
    assert registry.errors == []
    models = registry.all()
    assert len(models) == builtin_count()
    apis = set(known_apis())
    for model in models:
        assert model.api in apis, model.ref
        assert model.name, model.ref
        assert model.base_url and model.base_url.startswith("https://"), model.ref
        assert model.context_window > 0, model.ref
        assert 0 < model.max_tokens <= model.context_window, model.ref
        assert model.input and set(model.input) <= {"text", "image"}, model.ref
        cost = model.cost
        assert min(cost.input, cost.output, cost.cache_read, cost.cache_write) >= 0, model.ref
        assert cost.output >= cost.input > 0, model.ref
    refs = {m.ref for m in models}
    for provider, ids in REQUIRED.items():
        for model_id in ids:
            assert f"{provider}/{model_id}" in refs
    providers = set(registry.providers())
    assert {"openrouter", "groq", "xai", "deepseek", "cerebras", "mistral"} <= providers


def test_builtin_providers_apis_and_urls(home: Path) -> None:
    registry = ModelRegistry.load()
    expect = {
        "anthropic": ("anthropic-messages", "https://api.anthropic.com"),
        "google": ("google-gemini", "https://generativelanguage.googleapis.com"),
        "openai": ("openai-responses", "https://api.openai.com/v1"),
    }
    for model in registry.all():
        if model.provider in expect:
            assert (model.api, model.base_url) == expect[model.provider]
        else:
            assert model.api == "openai-chat"
    opus = registry.find("anthropic/claude-opus-4-6")
    assert opus.reasoning and opus.supports_images()
    assert not registry.find("o3-mini").supports_images()


def test_builtin_data_file_has_notes_and_pi_shape() -> None:
    data = json.loads(BUILTIN_MODELS_PATH.read_text(encoding="utf-8"))
    assert isinstance(data["notes"], str) and "estimate" in data["notes"].lower()
    entry = data["providers"]["anthropic"]["models"][0]
    assert set(entry) >= {"id", "name", "reasoning", "input", "cost", "contextWindow", "maxTokens"}
    assert set(entry["cost"]) == {"input", "output", "cacheRead", "cacheWrite"}


def test_import_heron_ai_does_not_load_models() -> None:
    code = "import sys, heron.ai; print('heron.ai.models' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- the user's models.json -----------------------------------------------------


def test_heron_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path))
    assert heron_home() == tmp_path
    monkeypatch.delenv("HERON_HOME")
    assert heron_home() == Path.home() / ".heron"


def test_missing_user_file_is_fine(home: Path) -> None:
    registry = ModelRegistry.load()
    assert registry.errors == []
    assert not (home / "models.json").exists()


def test_user_ollama_model_with_pi_api_name_and_defaults(home: Path) -> None:
    write_models(
        home,
        {
            "providers": {
                "ollama": {
                    "baseUrl": "http://localhost:11434/v1",
                    "api": "openai-completions",
                    "apiKey": "ollama",
                    "models": [{"id": "qwen2.5-coder:7b"}],
                }
            }
        },
    )
    registry = ModelRegistry.load()
    assert registry.errors == []
    model = registry.find("ollama/qwen2.5-coder:7b")
    assert model.api == "openai-chat"
    assert model.base_url == "http://localhost:11434/v1"
    assert model.name == "qwen2.5-coder:7b"
    assert model.context_window == DEFAULT_CONTEXT_WINDOW == 128_000
    assert model.max_tokens == DEFAULT_MAX_TOKENS == 16_384
    assert model.input == ["text"]
    assert model.reasoning is False
    assert model.cost.input == model.cost.output == 0
    assert registry.find("qwen2.5-coder:7b") is model
    assert registry.api_key(model) == "ollama"
    assert len(registry.all()) == builtin_count() + 1


def test_user_model_full_fields_and_google_alias(home: Path) -> None:
    write_models(
        home,
        {
            "providers": {
                "proxy": {
                    "baseUrl": "https://proxy.example/v1",
                    "api": "google-generative-ai",
                    "models": [
                        {
                            "id": "gem",
                            "name": "Gem",
                            "reasoning": True,
                            "input": ["text", "image"],
                            "cost": {"input": 1, "output": 2.5, "cacheRead": 0.1},
                            "contextWindow": 1000,
                            "maxTokens": 100,
                            "compat": {"max_tokens_field": "max_tokens"},
                        }
                    ],
                }
            }
        },
    )
    registry = ModelRegistry.load()
    assert registry.errors == []
    model = registry.find("proxy/gem")
    assert model.api == "google-gemini"
    assert model.name == "Gem" and model.reasoning and model.supports_images()
    assert (model.cost.input, model.cost.output, model.cost.cache_read, model.cost.cache_write) == (1, 2.5, 0.1, 0)
    assert (model.context_window, model.max_tokens) == (1000, 100)
    assert model.compat == {"max_tokens_field": "max_tokens"}


def test_override_builtin_provider_base_url_and_headers(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_ORG", "org-42")
    write_models(
        home,
        {
            "providers": {
                "anthropic": {
                    "baseUrl": "https://gateway.example/anthropic",
                    "headers": {"x-org": "MY_ORG", "x-fixed": "literal"},
                }
            }
        },
    )
    registry = ModelRegistry.load()
    assert registry.errors == []
    anthropic = [m for m in registry.all() if m.provider == "anthropic"]
    assert anthropic and all(m.base_url == "https://gateway.example/anthropic" for m in anthropic)
    assert len(registry.all()) == builtin_count()
    model = registry.find("anthropic/claude-sonnet-4-5")
    assert model.api == "anthropic-messages"
    assert registry.headers(model) == {"x-org": "org-42", "x-fixed": "literal"}
    # other providers untouched
    assert registry.find("openai/gpt-5").base_url == "https://api.openai.com/v1"
    assert registry.headers(registry.find("openai/gpt-5")) == {}


def test_user_model_replaces_builtin_and_inherits_provider(home: Path) -> None:
    write_models(
        home,
        {"providers": {"openai": {"models": [{"id": "gpt-4o", "name": "My 4o", "contextWindow": 64_000}]}}},
    )
    registry = ModelRegistry.load()
    assert registry.errors == []
    assert len(registry.all()) == builtin_count()
    model = registry.find("openai/gpt-4o")
    assert model.name == "My 4o"
    assert model.context_window == 64_000
    assert model.api == "openai-responses"
    assert model.base_url == "https://api.openai.com/v1"


def test_explicit_path(tmp_path: Path, home: Path) -> None:
    path = tmp_path / "elsewhere.json"
    path.write_text(json.dumps({"providers": {"x": {"baseUrl": "http://x", "api": "faux", "models": [{"id": "m"}]}}}))
    registry = ModelRegistry.load(path)
    assert registry.find("x/m").api == "faux"


# --- api keys and config values ------------------------------------------------------


def test_resolve_config_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERON_TEST_SECRET", "from-env")
    monkeypatch.delenv("HERON_TEST_UNSET", raising=False)
    assert resolve_config_value("sk-literal") == "sk-literal"
    assert resolve_config_value("HERON_TEST_SECRET") == "from-env"
    assert resolve_config_value("HERON_TEST_UNSET") == "HERON_TEST_UNSET"
    assert resolve_config_value("!echo secret") == "secret"
    with pytest.raises(ConfigValueError, match="exit status 1"):
        resolve_config_value("!false")
    with pytest.raises(ConfigValueError, match="empty shell command"):
        resolve_config_value("!")


def provider_with_key(home: Path, api_key: str) -> ModelRegistry:
    write_models(
        home,
        {
            "providers": {
                "local": {
                    "baseUrl": "http://localhost:1/v1",
                    "api": "openai-chat",
                    "apiKey": api_key,
                    "models": [{"id": "m1"}],
                }
            }
        },
    )
    return ModelRegistry.load()


def test_api_key_literal(home: Path) -> None:
    registry = provider_with_key(home, "sk-literal")
    assert registry.api_key(registry.find("local/m1")) == "sk-literal"


def test_api_key_env_var_name(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_KEY", "from-env")
    registry = provider_with_key(home, "LOCAL_KEY")
    assert registry.api_key(registry.find("local/m1")) == "from-env"


def test_api_key_shell_command(home: Path) -> None:
    registry = provider_with_key(home, "!echo secret")
    assert registry.api_key(registry.find("local/m1")) == "secret"


def test_api_key_failing_command_is_a_clear_error(home: Path) -> None:
    registry = provider_with_key(home, "!false")
    assert registry.errors == []  # not run at load time
    with pytest.raises(ConfigValueError) as info:
        registry.api_key(registry.find("local/m1"))
    message = str(info.value)
    assert "'local'" in message and "'false'" in message and "exit status 1" in message
    assert str(home / "models.json") in message


def test_api_key_from_environment(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = ModelRegistry.load()
    claude = registry.find("anthropic/claude-haiku-4-5")
    gemini = registry.find("google/gemini-2.5-flash")
    assert registry.api_key(claude) is None
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak")
    assert registry.api_key(claude) == "ak"
    monkeypatch.setenv("GOOGLE_API_KEY", "gk")
    assert registry.api_key(gemini) == "gk"
    monkeypatch.setenv("GEMINI_API_KEY", "gemk")
    assert registry.api_key(gemini) == "gemk"
    assert env_api_key("google") == "gemk"
    assert env_api_key("nobody") is None


def test_models_json_api_key_beats_environment(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    write_models(home, {"providers": {"openai": {"apiKey": "!echo file-key"}}})
    registry = ModelRegistry.load()
    assert registry.api_key(registry.find("openai/gpt-5")) == "file-key"


# --- malformed files --------------------------------------------------------------


def assert_builtins_intact(registry: ModelRegistry) -> None:
    assert registry.find("anthropic/claude-sonnet-4-5").base_url == "https://api.anthropic.com"
    assert len([m for m in registry.all() if m.provider in {"anthropic", "openai", "google"}]) >= 27


def test_malformed_json_is_recorded(home: Path) -> None:
    path = write_models(home, '{"providers": {')
    registry = ModelRegistry.load()
    assert len(registry.errors) == 1
    assert str(path) in registry.errors[0] and "invalid JSON" in registry.errors[0]
    assert_builtins_intact(registry)
    assert len(registry.all()) == builtin_count()


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ([1, 2], "top level must be an object"),
        ({"providers": []}, "'providers' must be an object"),
        ({"providers": {"p": "nope"}}, "providers.p must be an object"),
        ({"providers": {"p": {"baseUrl": 5, "api": "openai-chat", "models": []}}}, "providers.p.baseUrl"),
        ({"providers": {"p": {"baseUrl": "http://x", "api": "openai-chat", "models": {}}}}, "models must be an array"),
        ({"providers": {"p": {"baseUrl": "http://x", "api": "openai-chat", "headers": {"a": 1}}}}, "headers"),
        ({"providers": {"p": {"baseUrl": "http://x", "api": "smoke-signals", "models": []}}}, "unknown api"),
    ],
)
def test_wrong_types_are_recorded(home: Path, data: Any, fragment: str) -> None:
    path = write_models(home, data)
    registry = ModelRegistry.load()
    assert len(registry.errors) == 1, registry.errors
    assert str(path) in registry.errors[0]
    assert fragment in registry.errors[0]
    assert_builtins_intact(registry)


@pytest.mark.parametrize(
    ("model", "fragment"),
    [
        ({"name": "no id"}, "needs a non-empty string 'id'"),
        ({"id": ""}, "needs a non-empty string 'id'"),
        ("just-a-string", "must be an object"),
        ({"id": "m", "contextWindow": "big"}, "contextWindow"),
        ({"id": "m", "maxTokens": 0}, "maxTokens"),
        ({"id": "m", "reasoning": "yes"}, "reasoning"),
        ({"id": "m", "input": ["text", "audio"]}, "input"),
        ({"id": "m", "cost": {"input": -1}}, "cost.input"),
        ({"id": "m", "cost": [1]}, "cost must be an object"),
        ({"id": "m", "api": "nope"}, "unknown api"),
        ({"id": "m", "compat": "x"}, "compat"),
        ({"id": "m", "compaction": {"native": "yes"}}, "compaction"),
        ({"id": "m", "compaction": {"nativ": True}}, "compaction"),
        ({"id": "m", "compaction": True}, "compaction"),
    ],
)
def test_bad_model_entries_are_recorded_and_skipped(home: Path, model: Any, fragment: str) -> None:
    path = write_models(
        home,
        {"providers": {"p": {"baseUrl": "http://x/v1", "api": "openai-chat", "models": [model, {"id": "good"}]}}},
    )
    registry = ModelRegistry.load()
    assert len(registry.errors) == 1, registry.errors
    assert str(path) in registry.errors[0] and "providers.p.models[0]" in registry.errors[0]
    assert fragment in registry.errors[0]
    assert registry.find("p/good").base_url == "http://x/v1"
    assert len(registry.all()) == builtin_count() + 1


def test_model_compaction_entry(home: Path) -> None:
    """A model's ``compaction`` entry: provider-native compaction for that model alone."""
    entry = {"id": "m", "compaction": {"native": True, "serverClearing": False}}
    write_models(home, {"providers": {"p": {"baseUrl": "http://x", "api": "anthropic-messages", "models": [entry]}}})
    registry = ModelRegistry.load()
    assert registry.errors == []
    assert registry.find("p/m").compaction == {"native": True, "serverClearing": False}


def test_new_provider_needs_api_and_base_url(home: Path) -> None:
    write_models(
        home,
        {
            "providers": {
                "a": {"baseUrl": "http://x", "models": [{"id": "m"}]},
                "b": {"api": "openai-chat", "models": [{"id": "m"}]},
            }
        },
    )
    registry = ModelRegistry.load()
    assert len(registry.errors) == 2
    assert "no 'api'" in registry.errors[0]
    assert "no 'baseUrl'" in registry.errors[1]


# --- find ------------------------------------------------------------------------


def test_find_by_ref_and_bare_id(home: Path) -> None:
    registry = ModelRegistry.load()
    by_ref = registry.find("anthropic/claude-opus-4-6")
    assert by_ref.ref == "anthropic/claude-opus-4-6"
    assert registry.find("claude-opus-4-6") is by_ref
    # an id containing '/' (OpenRouter), by full ref and bare
    routed = registry.find("openrouter/anthropic/claude-sonnet-4.5")
    assert routed.provider == "openrouter" and routed.id == "anthropic/claude-sonnet-4.5"
    assert registry.find("anthropic/claude-sonnet-4.5") is routed


def test_find_ambiguous_bare_id(home: Path) -> None:
    write_models(
        home,
        {
            "providers": {
                "gateway": {
                    "baseUrl": "http://gw/v1",
                    "api": "anthropic-messages",
                    "models": [{"id": "claude-sonnet-4-5"}],
                }
            }
        },
    )
    registry = ModelRegistry.load()
    with pytest.raises(ModelNotFoundError) as info:
        registry.find("claude-sonnet-4-5")
    message = str(info.value)
    assert "ambiguous" in message
    assert "anthropic/claude-sonnet-4-5" in message and "gateway/claude-sonnet-4-5" in message
    assert registry.find("gateway/claude-sonnet-4-5").base_url == "http://gw/v1"


def test_find_unknown_suggests(home: Path) -> None:
    registry = ModelRegistry.load()
    with pytest.raises(ModelNotFoundError, match=r"unknown model 'claude-sonet-4-5'.*anthropic/claude-sonnet-4-5"):
        registry.find("claude-sonet-4-5")
    with pytest.raises(ModelNotFoundError, match="unknown model"):
        registry.find("nothing/like-this-at-all")
