"""``/settings``: the settings a user changes most, shown and changed from the input line.

Each common setting has a short name (``compaction``, ``thinking``...) standing for its
key in ``settings.json``; any other key can be named in its dotted on-disk form
(``retry.baseDelayMs``). A change is checked by the same rules a settings file is read
with (:func:`heron.coding.settings_change.check_setting`), then written to the user's file (or
the project's with ``--project``). The running session keeps the settings it started
with - ``/model`` and ``/thinking`` change this session - so the note says when a change
applies (docs/interactive.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heron.ai.models import ModelNotFoundError, ModelRegistry
from heron.coding.settings import Settings, read_settings_file, settings_paths
from heron.coding.settings_change import SettingChangeError, check_setting, write_setting


@dataclass(frozen=True, slots=True)
class Common:
    name: str
    key: str  # dotted, as in settings.json
    help: str


COMMON: tuple[Common, ...] = (
    Common("model", "defaultModel", "the model new sessions start with (provider/id)"),
    Common("thinking", "defaultThinkingLevel", "the thinking level new sessions start with"),
    Common("compaction", "compaction.enabled", "summarise old history when the context is near the limit"),
    Common("pruning", "pruning.enabled", "stub old tool results before compacting"),
    Common("retry", "retry.enabled", "retry transient provider errors (429, 5xx, dropped connections)"),
    Common("retries", "retry.maxRetries", "how many times a failed request is retried"),
    Common("resume-turns", "resume.turns", "earlier turns shown when a session is resumed"),
)
BY_NAME = {c.name: c for c in COMMON}
UNSET_WORDS = ("default", "unset", "reset")
_TRUE = ("on", "true", "yes", "1")
_FALSE = ("off", "false", "no", "0")


def current_value(settings: Settings, key: str) -> Any:
    """The value in effect for a dotted key (what the session would start with now)."""
    values: dict[str, Any] = {
        "defaultModel": f"{settings.default_provider}/{settings.default_model}"
        if settings.default_provider and settings.default_model and "/" not in settings.default_model
        else settings.default_model,
        "defaultProvider": settings.default_provider,
        "defaultThinkingLevel": settings.default_thinking_level,
        "compaction.enabled": settings.compaction.enabled,
        "pruning.enabled": settings.pruning.enabled,
        "retry.enabled": settings.retry.enabled,
        "retry.maxRetries": settings.retry.max_retries,
        "resume.turns": settings.resume_turns,
    }
    return values.get(key)


def _show(value: Any) -> str:
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _set_in(data: dict[str, Any], key: str) -> bool:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def where_set(cwd: Path, home: Path, key: str) -> str:
    """Which file sets ``key`` (the project's wins), or "default"."""
    found = "default"
    for label, path in zip(("user", "project"), settings_paths(cwd, home), strict=True):
        data = read_settings_file(path, [])
        if data is not None and _set_in(data, key):
            found = label
    return found


def settings_lines(settings: Settings, cwd: Path, home: Path) -> list[str]:
    user, project = settings_paths(cwd, home)
    lines = []
    width = max(len(c.name) for c in COMMON)
    for common in COMMON:
        value = _show(current_value(settings, common.key))
        source = where_set(cwd, home, common.key)
        lines.append(f"  {common.name:<{width}}  {value:<26} {common.help} [{common.key}, {source}]")
    lines += [
        "",
        f"  files: user {user}; project {project} (the project's wins)",
        "  /settings NAME VALUE changes one (on/off for switches; 'default' removes it); --project writes",
        "  the project's file. Other keys: /settings retry.baseDelayMs 4000 (docs/configuration.md).",
    ]
    return lines


def parse_value(key: str, raw: str) -> Any:
    """The typed-in text as the setting's type: on/off (true/false, yes/no) for switches,
    numbers for numbers, else the text; ``default`` removes the key (None)."""
    text = raw.strip()
    lowered = text.lower()
    if lowered in UNSET_WORDS:
        return None
    if lowered in _TRUE + _FALSE and _accepts(key, True):
        return lowered in _TRUE
    try:
        number = json.loads(text)
    except ValueError:
        return text
    if isinstance(number, int | float) and not isinstance(number, bool) and _accepts(key, number):
        return number
    return text


def _accepts(key: str, value: Any) -> bool:
    try:
        check_setting(key, value)
    except SettingChangeError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Change:
    path: Path
    text: str  # what to tell the user


def change_setting(words: list[str], cwd: Path, home: Path, registry: ModelRegistry) -> Change:
    """``/settings NAME VALUE [--project]``: write the change, or raise SettingChangeError."""
    project = "--project" in words
    words = [w for w in words if w != "--project"]
    if len(words) < 2:
        raise SettingChangeError("usage: /settings NAME VALUE [--project] (/settings lists the names)")
    name, raw = words[0], " ".join(words[1:])
    common = BY_NAME.get(name.lower())
    key = common.key if common is not None else name
    user, project_file = settings_paths(cwd, home)
    path = project_file if project else user
    value = parse_value(key, raw) if key != "defaultModel" else (None if raw.lower() in UNSET_WORDS else raw)
    if key == "defaultModel":
        _write_model(path, value, registry)
    else:
        write_setting(path, key, value)
    shown = "the default" if value is None else _show(check_setting(key, value))
    text = f"{name} = {shown} (saved to {path}); applies to sessions started from now on"
    if common is not None and common.name in ("model", "thinking"):
        text += f" - /{common.name} changes this one"
    if not project and where_set(cwd, home, key) == "project":
        text += f". Note: {project_file} sets it too, and wins"
    return Change(path, text)


def _write_model(path: Path, ref: str | None, registry: ModelRegistry) -> None:
    """``model provider/id``: both keys, and only a model heron knows (a typo here would
    make every later start fail)."""
    if ref is None:
        write_setting(path, "defaultModel", None)
        write_setting(path, "defaultProvider", None)
        return
    try:
        model = registry.find(ref)
    except ModelNotFoundError as exc:
        raise SettingChangeError(f"{exc} (a server's own model: describe it in models.json first)") from exc
    write_setting(path, "defaultProvider", model.provider)
    write_setting(path, "defaultModel", model.id)
