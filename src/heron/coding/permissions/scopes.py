"""The settings files one at a time, each with its scope.

Most settings are merged (the project wins), but permission rules, hooks and secret
pass-through depend on *which* file says so: rule lists from every file add up, a
project's own file (it comes with the repository) may not weaken what the user's says,
and project hooks run only in a trusted project. So these are read per file here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from heron.coding.settings import LOCAL_SETTINGS_FILE, SETTINGS_FILE, read_settings_file

ScopeName = Literal["user", "project", "local"]


@dataclass(frozen=True, slots=True)
class Scope:
    """The raw data of one settings file with its scope (user, project, local), kept apart
    because rules, hooks and pass-through depend on which file says so (module docstring)."""

    name: ScopeName
    path: Path
    data: dict[str, Any]


def load_scopes(cwd: Path, home: Path) -> list[Scope]:
    """The user's, the project's and the local settings, in that order (missing ones
    left out; their problems were already reported by ``load_settings``)."""
    files: list[tuple[ScopeName, Path]] = [
        ("user", home / SETTINGS_FILE),
        ("project", cwd / ".heron" / SETTINGS_FILE),
        ("local", cwd / ".heron" / LOCAL_SETTINGS_FILE),
    ]
    scopes: list[Scope] = []
    seen: set[str] = set()
    for name, path in files:
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        data = read_settings_file(path, [])
        if data:
            scopes.append(Scope(name, path, data))
    return scopes


def add_local_rule(cwd: Path, behavior: str, rule: str) -> Path:
    """Append ``rule`` to ``permissions.<behavior>`` of the local settings file ("allow
    always"), keeping everything else in the file. Raises ``OSError``/``ValueError``
    when the file cannot be read as JSON (it is then left as it was)."""
    path = cwd / ".heron" / LOCAL_SETTINGS_FILE
    data: dict[str, Any] = {}
    if path.exists():
        loaded = json.loads(path.read_text(encoding="utf-8") or "{}")
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: the top level is not an object")
        data = loaded
    permissions = data.setdefault("permissions", {})
    if not isinstance(permissions, dict):
        raise ValueError(f"{path}: 'permissions' is not an object")
    rules = permissions.setdefault(behavior, [])
    if not isinstance(rules, list):
        raise ValueError(f"{path}: 'permissions.{behavior}' is not an array")
    if rule not in rules:
        rules.append(rule)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
