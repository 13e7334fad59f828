from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from heron.ai.models import ENV_API_KEYS, ModelRegistry
from heron.ai.types import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS
from heron.coding.settings import (
    DEFAULT_MODELS,
    MODELS_JSON_EXAMPLE,
    CompactionSettings,
    RetrySettings,
    Settings,
    SetupError,
    deep_merge,
    load_settings,
    resolve_model,
)
from heron.context.tool_output.limits import DEFAULT_LIMITS


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HERON_HOME", str(path))
    for names in ENV_API_KEYS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    return path


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".heron").mkdir(parents=True)
    return path


def write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


# --- loading --------------------------------------------------------------------


def test_defaults_without_files(home: Path, cwd: Path) -> None:
    settings = load_settings(cwd)
    assert settings == Settings()
    assert settings.compaction == CompactionSettings(True, 16_384, 20_000)
    assert settings.retry == RetrySettings(True, 3, 2_000, 60_000)
    assert settings.tool_limits == DEFAULT_LIMITS
    assert settings.context_files.per_file_chars == 12_000 and settings.context_files.total_chars == 60_000
    assert settings.warnings == () and settings.sources == ()


def test_every_key(home: Path, cwd: Path) -> None:
    write(
        home / "settings.json",
        {
            "defaultProvider": "openai",
            "defaultModel": "gpt-4o",
            "defaultThinkingLevel": "high",
            "compaction": {"enabled": False, "reserveTokens": 8000, "keepRecentTokens": 9000},
            "retry": {"enabled": False, "maxRetries": 5, "baseDelayMs": 100, "maxDelayMs": 1000},
            "pruning": {"enabled": False},
            "toolLimits": {"maxLines": 10, "maxBytes": 20, "grepMatches": 5, "turnChars": 99},
            "contextFiles": {"perFileChars": 100, "totalChars": 0},
            "shellPath": "/bin/zsh",
            "defaultTools": ["read", "grep"],
        },
    )
    s = load_settings(cwd)
    assert s.warnings == ()
    assert (s.default_provider, s.default_model, s.default_thinking_level) == ("openai", "gpt-4o", "high")
    assert s.compaction == CompactionSettings(False, 8000, 9000)
    assert s.retry == RetrySettings(False, 5, 100, 1000)
    assert s.pruning.enabled is False
    assert (s.tool_limits.max_lines, s.tool_limits.max_bytes, s.tool_limits.grep_matches) == (10, 20, 5)
    assert s.tool_limits.turn_chars == 99 and s.tool_limits.ls_entries == DEFAULT_LIMITS.ls_entries
    assert (s.context_files.per_file_chars, s.context_files.total_chars) == (100, 0)
    assert s.shell_path == "/bin/zsh" and s.default_tools == ("read", "grep")
    assert s.sources == (home / "settings.json",)


def test_native_compaction_settings(home: Path, cwd: Path) -> None:
    good = {"native": True, "serverClearing": True, "nativeTrigger": 0.5, "nativeInstructions": "Keep paths."}
    write(home / "settings.json", {"compaction": good})
    s = load_settings(cwd)
    assert s.warnings == ()
    c = s.compaction
    assert (c.native, c.server_clearing, c.native_trigger, c.native_instructions) == (True, True, 0.5, "Keep paths.")
    write(home / "settings.json", {"compaction": {"native": "on", "nativeTrigger": 2}})
    s = load_settings(cwd)
    assert s.compaction == CompactionSettings()
    assert "'compaction.native' must be true or false" in "\n".join(s.warnings) and len(s.warnings) == 2


def test_project_wins_and_nested_objects_merge(home: Path, cwd: Path) -> None:
    write(
        home / "settings.json", {"defaultModel": "a", "compaction": {"reserveTokens": 1000, "keepRecentTokens": 2000}}
    )
    write(cwd / ".heron" / "settings.json", {"defaultModel": "b", "compaction": {"keepRecentTokens": 3000}})
    s = load_settings(cwd)
    assert s.default_model == "b"
    assert (s.compaction.reserve_tokens, s.compaction.keep_recent_tokens) == (1000, 3000)
    assert s.sources == (home / "settings.json", cwd / ".heron" / "settings.json")


def test_invalid_json_is_a_warning_and_the_other_file_still_counts(home: Path, cwd: Path) -> None:
    bad = write(home / "settings.json", '{"defaultModel": "a",\n  oops}')
    write(cwd / ".heron" / "settings.json", {"shellPath": "/bin/sh"})
    s = load_settings(cwd)
    assert s.shell_path == "/bin/sh" and s.default_model is None
    assert len(s.warnings) == 1
    assert s.warnings[0].startswith(f"{bad}: invalid JSON: ") and "line 2" in s.warnings[0]
    assert "file ignored" in s.warnings[0]


def test_bad_values_are_ignored_one_by_one(home: Path, cwd: Path) -> None:
    write(home / "settings.json", {"compaction": {"reserveTokens": 5000}})
    project = write(
        cwd / ".heron" / "settings.json",
        {
            "defaultModel": 42,
            "defaultThinkingLevel": "extreme",
            "compaction": {"reserveTokens": "lots", "keepRecentTokens": 7000, "enabled": "yes"},
            "retry": [],
            "toolLimits": {"maxLines": 0, "maxBytes": 1.5},
            "defaultTools": [1, 2],
            "defaultModle": "typo",
        },
    )
    s = load_settings(cwd)
    # The project's bad reserveTokens is dropped, so the user's value still applies.
    assert s.compaction == CompactionSettings(True, 5000, 7000)
    assert s.default_model is None and s.default_thinking_level is None
    assert s.retry == RetrySettings() and s.tool_limits == DEFAULT_LIMITS and s.default_tools is None
    assert all(w.startswith(f"{project}: ") for w in s.warnings)
    text = "\n".join(s.warnings)
    for fragment in (
        "'defaultModel' must be a string, not number",
        "'defaultThinkingLevel' must be one of off, minimal, low, medium, high, xhigh",
        "'compaction.reserveTokens' must be an integer >= 1, not string \"lots\"",
        "'compaction.enabled' must be true or false",
        "'retry' must be an object, not array",
        "'toolLimits.maxLines' must be an integer >= 1, not number 0",
        "'toolLimits.maxBytes' must be an integer >= 1, not number 1.5",
        "'defaultTools' must be an array of tool names",
        "unknown setting 'defaultModle' (ignored)",
    ):
        assert fragment in text, fragment
    assert len(s.warnings) == 9


def test_whole_numbers_written_as_floats_are_accepted(home: Path, cwd: Path) -> None:
    write(home / "settings.json", {"retry": {"maxRetries": 4.0}})
    assert load_settings(cwd).retry.max_retries == 4


def test_tools_as_a_comma_separated_string(home: Path, cwd: Path) -> None:
    write(home / "settings.json", {"defaultTools": "read, grep,,ls"})
    assert load_settings(cwd).default_tools == ("read", "grep", "ls")


@pytest.mark.parametrize(("text", "fragment"), [("[1, 2]", "must be an object, not array"), ("", None)])
def test_top_level_shapes(home: Path, cwd: Path, text: str, fragment: str | None) -> None:
    write(home / "settings.json", text)
    s = load_settings(cwd)
    assert s.default_model is None
    assert (fragment in s.warnings[0]) if fragment else s.warnings == ()


def test_unreadable_file(home: Path, cwd: Path) -> None:
    (home / "settings.json").mkdir()
    s = load_settings(cwd)
    assert "cannot read" in s.warnings[0]


def test_same_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = tmp_path / "here"
    (cwd / ".heron").mkdir(parents=True)
    monkeypatch.setenv("HERON_HOME", str(cwd / ".heron"))
    write(cwd / ".heron" / "settings.json", {"defaultModel": "x"})
    s = load_settings(cwd)
    assert s.default_model == "x" and len(s.sources) == 1


def test_deep_merge() -> None:
    assert deep_merge({"a": {"b": 1, "c": 2}, "d": 1}, {"a": {"c": 3}, "d": {"e": 1}}) == {
        "a": {"b": 1, "c": 3},
        "d": {"e": 1},
    }


# --- choosing the model -------------------------------------------------------------


def registry(home: Path, models: Any | None = None) -> ModelRegistry:
    if models is not None:
        write(home / "models.json", models)
    return ModelRegistry.load()


def test_default_model_table_names_real_models(home: Path) -> None:
    reg = registry(home)
    for provider, model_id in DEFAULT_MODELS.items():
        assert reg.get(provider, model_id) is not None, (provider, model_id)
    assert list(DEFAULT_MODELS)[:4] == ["anthropic", "openai", "google", "openrouter"]
    assert set(DEFAULT_MODELS) <= set(ENV_API_KEYS)


def test_nothing_configured_says_exactly_what_to_do(home: Path) -> None:
    with pytest.raises(SetupError) as info:
        resolve_model(Settings(), registry(home), None, None, None)
    message = str(info.value)
    assert info.value.exit_code == 3  # "not configured", apart from 2 for a bad command line
    for fragment in (
        "export ANTHROPIC_API_KEY=",
        "export OPENAI_API_KEY=",
        "export GEMINI_API_KEY=",
        "export OPENROUTER_API_KEY=",
        "--api-key",
        "--model anthropic/",
        "heron --base-url http://localhost:11434/v1 --model qwen2.5-coder:7b",
        "vLLM",
        "llama.cpp",
        str(home / "models.json"),
        MODELS_JSON_EXAMPLE.splitlines()[2].strip(),
        str(home / "settings.json"),
    ):
        assert fragment in message, fragment


def test_models_json_example_is_valid(home: Path) -> None:
    reg = registry(home, json.loads(MODELS_JSON_EXAMPLE))
    assert reg.errors == []
    model = reg.find("ollama/qwen2.5-coder:7b")
    resolved = resolve_model(Settings(), reg, "ollama/qwen2.5-coder:7b", None, None)
    assert resolved.model == model and resolved.api_key is None


def test_first_provider_with_a_key(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or")
    resolved = resolve_model(Settings(), registry(home), None, None, None)
    assert resolved.model.ref == f"openai/{DEFAULT_MODELS['openai']}"
    assert (resolved.api_key, resolved.reason) == ("sk-openai", "OPENAI_API_KEY")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    assert resolve_model(Settings(), registry(home), None, None, None).model.provider == "anthropic"


def test_google_key_from_gemini_env(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "g")
    resolved = resolve_model(Settings(), registry(home), None, None, None)
    assert resolved.model.ref == f"google/{DEFAULT_MODELS['google']}" and resolved.api_key == "g"


def test_settings_default_comes_before_keys(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a")
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    settings = Settings(default_provider="openai", default_model="gpt-4o")
    resolved = resolve_model(settings, registry(home), None, None, None)
    assert (resolved.model.ref, resolved.api_key, resolved.reason) == ("openai/gpt-4o", "o", "settings")
    only_provider = resolve_model(Settings(default_provider="openai"), registry(home), None, None, None)
    assert only_provider.model.ref == f"openai/{DEFAULT_MODELS['openai']}"
    full_ref = resolve_model(Settings(default_model="openai/gpt-4o"), registry(home), None, None, None)
    assert full_ref.model.ref == "openai/gpt-4o"


def test_settings_model_without_its_key(home: Path) -> None:
    settings = Settings(default_provider="anthropic", default_model=DEFAULT_MODELS["anthropic"])
    with pytest.raises(SetupError) as info:
        resolve_model(settings, registry(home), None, None, None)
    message = str(info.value)
    assert "needs an API key" in message and "export ANTHROPIC_API_KEY=" in message and "--api-key" in message


def test_unknown_settings_model_or_provider(home: Path) -> None:
    with pytest.raises(SetupError, match=r"settings\.json: unknown model"):
        resolve_model(Settings(default_model="nope-1"), registry(home), None, None, None)
    with pytest.raises(SetupError, match="unknown provider 'nope'"):
        resolve_model(Settings(default_provider="nope"), registry(home), None, None, None)


def test_cli_model_and_key(home: Path) -> None:
    resolved = resolve_model(
        Settings(default_provider="openai"), registry(home), "anthropic/claude-haiku-4-5", None, "k"
    )
    assert (resolved.model.ref, resolved.api_key, resolved.reason) == ("anthropic/claude-haiku-4-5", "k", "--model")


def test_cli_bare_model_id(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "d")
    resolved = resolve_model(Settings(), registry(home), "deepseek-chat", None, None)
    assert resolved.model.ref == "deepseek/deepseek-chat" and resolved.api_key == "d"


def test_unknown_cli_model_without_base_url(home: Path) -> None:
    with pytest.raises(SetupError) as info:
        resolve_model(Settings(), registry(home), "my-local-model", None, None)
    assert "unknown model 'my-local-model'" in str(info.value)
    assert "--base-url http://localhost:11434/v1" in str(info.value)


def test_base_url_with_an_unknown_model_makes_one(home: Path) -> None:
    reg = registry(home)
    resolved = resolve_model(Settings(), reg, "Qwen/Qwen3-8B", "http://localhost:8000/v1", None)
    model = resolved.model
    assert (model.id, model.api, model.provider, model.base_url) == (
        "Qwen/Qwen3-8B",
        "openai-chat",
        "custom",
        "http://localhost:8000/v1",
    )
    assert (model.context_window, model.max_tokens) == (DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS)
    assert resolved.api_key is None and resolved.reason == "--base-url"
    with_key = resolve_model(Settings(), reg, "m", "http://h/v1", "secret")
    assert with_key.api_key == "secret"


def test_base_url_overrides_a_known_model_without_touching_the_catalogue(home: Path) -> None:
    reg = registry(home)
    resolved = resolve_model(Settings(), reg, "openai/gpt-4o", "http://localhost:4000/v1", None)
    assert resolved.model.base_url == "http://localhost:4000/v1"
    assert resolved.api_key is None  # local: no key needed
    original = reg.get("openai", "gpt-4o")
    assert original is not None and original.base_url == "https://api.openai.com/v1"


def test_base_url_applies_to_the_settings_model(home: Path) -> None:
    resolved = resolve_model(
        Settings(default_model="openai/gpt-4o"), registry(home), None, "http://127.0.0.1:9/v1", None
    )
    assert resolved.model.base_url == "http://127.0.0.1:9/v1"


def test_base_url_or_api_key_alone(home: Path) -> None:
    with pytest.raises(SetupError, match="--base-url needs --model"):
        resolve_model(Settings(), registry(home), None, "http://localhost:11434/v1", None)
    with pytest.raises(SetupError, match="--api-key needs --model"):
        resolve_model(Settings(), registry(home), None, None, "k")


def test_custom_provider_in_models_json_is_used_when_nothing_else_is(home: Path) -> None:
    reg = registry(
        home,
        {"providers": {"lab": {"baseUrl": "https://lab.example/v1", "api": "openai-chat", "models": [{"id": "m1"}]}}},
    )
    resolved = resolve_model(Settings(), reg, None, None, None)
    assert (resolved.model.ref, resolved.api_key, resolved.reason) == ("lab/m1", None, "models.json")


def test_models_json_api_key_is_used(home: Path) -> None:
    reg = registry(home, {"providers": {"anthropic": {"apiKey": "from-file"}}})
    resolved = resolve_model(Settings(default_provider="anthropic"), reg, None, None, None)
    assert resolved.api_key == "from-file"


def test_failing_key_command_is_a_setup_error(home: Path) -> None:
    reg = registry(home, {"providers": {"anthropic": {"apiKey": "!exit 3"}}})
    with pytest.raises(SetupError, match="cannot get the API key for anthropic/"):
        resolve_model(Settings(default_provider="anthropic"), reg, None, None, None)


def test_models_json_problems_are_shown_in_the_help(home: Path) -> None:
    # The problem is the registry's (file, line, column); the CLI prints it before the
    # resolver's message (tests/cli/test_setup_errors.py), so the help does not repeat it.
    reg = registry(home, "{not json")
    assert any("models.json" in error and "line 1" in error for error in reg.errors)
    with pytest.raises(SetupError) as info:
        resolve_model(Settings(), reg, None, None, None)
    assert "Problems found" not in str(info.value)


def test_tool_run_and_spill_settings() -> None:
    from heron.coding.settings import settings_from_dict as from_dict

    defaults = from_dict({})
    assert defaults.tools.max_parallel == 8
    assert defaults.spill.max_bytes == 100 * 1024 * 1024 and defaults.spill.retention_days == 14
    custom = from_dict({"tools": {"maxParallel": 2}, "spill": {"maxBytes": 1000, "retentionDays": 3}})
    assert (custom.tools.max_parallel, custom.spill.max_bytes, custom.spill.retention_days) == (2, 1000, 3)


def test_the_local_settings_file_is_read_last(tmp_path: Path) -> None:
    from heron.coding.settings import load_settings, settings_paths

    home, cwd = tmp_path / "home", tmp_path / "proj"
    (cwd / ".heron").mkdir(parents=True)
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"bash": {"defaultTimeoutMs": 1000}}))
    project = {"bash": {"defaultTimeoutMs": 2000, "maxTimeoutMs": 9000}}
    (cwd / ".heron" / "settings.json").write_text(json.dumps(project))
    (cwd / ".heron" / "settings.local.json").write_text(
        json.dumps(
            {
                "bash": {"defaultTimeoutMs": 3000},
                "permissions": {"deny": ["Bash(rm:*)"]},
                "hooks": {},
                "env": {"passThrough": ["X"]},
            }
        )
    )
    settings = load_settings(cwd, home)
    assert settings.bash.default_timeout_ms == 3000 and settings.bash.max_timeout_ms == 9000
    assert settings.warnings == ()  # permissions, hooks and env are known keys
    assert len(settings_paths(cwd, home)) == 2  # the user's and the project's, as /settings shows them
