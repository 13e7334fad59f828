"""``/settings`` without a terminal: values typed as a user types them, validation by the
settings schema, and a file that is kept (other keys) or refused (not JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heron.ai.models import ModelRegistry
from heron.cli.tui.settings_view import change_setting, parse_value, settings_lines
from heron.coding.settings import load_settings
from heron.coding.settings_change import SettingChangeError, write_setting


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    home, cwd = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    cwd.mkdir()
    return home, cwd


def test_values_are_read_as_the_setting_takes_them() -> None:
    assert parse_value("compaction.enabled", "off") is False
    assert parse_value("compaction.enabled", "Yes") is True
    assert parse_value("retry.maxRetries", "0") == 0  # a number, not "off"
    assert parse_value("defaultThinkingLevel", "off") == "off"  # a level, not a switch
    assert parse_value("retry.maxRetries", "default") is None


def test_a_change_keeps_the_rest_of_the_file_and_default_removes_it(places: tuple[Path, Path]) -> None:
    home, cwd = places
    path = home / "settings.json"
    path.write_text(json.dumps({"shellPath": "/bin/sh", "retry": {"baseDelayMs": 100}}))
    change = change_setting(["retries", "5"], cwd, home, ModelRegistry.load())
    assert change.path == path and "retries = 5" in change.text
    assert json.loads(path.read_text()) == {"shellPath": "/bin/sh", "retry": {"baseDelayMs": 100, "maxRetries": 5}}
    assert load_settings(cwd, home).retry.max_retries == 5
    change_setting(["retries", "default"], cwd, home, ModelRegistry.load())
    assert json.loads(path.read_text()) == {"shellPath": "/bin/sh", "retry": {"baseDelayMs": 100}}


def test_bad_values_unknown_keys_and_broken_files_change_nothing(places: tuple[Path, Path]) -> None:
    home, cwd = places
    path = home / "settings.json"
    with pytest.raises(SettingChangeError, match="must be an integer >= 0"):
        change_setting(["retries", "-1"], cwd, home, ModelRegistry.load())
    with pytest.raises(SettingChangeError, match=r"unknown setting 'compaction\.enable'"):
        write_setting(path, "compaction.enable", True)
    with pytest.raises(SettingChangeError, match="is a group of settings"):
        write_setting(path, "compaction", True)
    assert not path.exists()
    path.write_text('{"retry": {')
    with pytest.raises(SettingChangeError, match=r"not valid JSON .*nothing was changed"):
        change_setting(["compaction", "off"], cwd, home, ModelRegistry.load())
    assert path.read_text() == '{"retry": {'


def test_the_project_file_and_the_listing(places: tuple[Path, Path]) -> None:
    home, cwd = places
    change_setting(["compaction", "off", "--project"], cwd, home, ModelRegistry.load())
    assert json.loads((cwd / ".heron" / "settings.json").read_text()) == {"compaction": {"enabled": False}}
    change = change_setting(["compaction", "on"], cwd, home, ModelRegistry.load())
    assert "sets it too, and wins" in change.text
    lines = settings_lines(load_settings(cwd, home), cwd, home)
    assert any(line.split()[:2] == ["compaction", "off"] and "project]" in line for line in lines)
