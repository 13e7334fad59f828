"""Changing one setting from inside heron (``/settings NAME VALUE``): checked by the same
schema a file's values get (:data:`heron.coding.settings.SCHEMA`), then written into the
file without disturbing the user's other keys, their order, or a file heron cannot read.

Kept apart from :mod:`heron.coding.settings`, which reads and merges the files: writing one
is a different job with its own failures (a file that is not JSON is refused, never
overwritten).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from heron.coding.setting_checks import BadSettingValue
from heron.coding.settings import SCHEMA
from heron.session.private_files import private_dir


class SettingChangeError(ValueError):
    """A change that cannot be made; the message says why, and the file is unchanged."""


def check_setting(key: str, value: Any) -> Any:
    """``value`` for the dotted on-disk ``key`` (``compaction.enabled``) as the schema
    takes it, or :class:`SettingChangeError` - the same checks a file's values get."""
    schema: Any = SCHEMA
    for part in key.split("."):
        if not isinstance(schema, Mapping) or part not in schema:
            raise SettingChangeError(f"unknown setting {key!r}")
        schema = schema[part]
    if isinstance(schema, Mapping):
        raise SettingChangeError(
            f"{key!r} is a group of settings; name one of: " + ", ".join(f"{key}.{name}" for name in schema)
        )
    try:
        return schema(value)
    except BadSettingValue as exc:
        raise SettingChangeError(f"{key} {exc}") from exc


def write_setting(path: Path, key: str, value: Any) -> None:
    """Set ``key`` (dotted) to ``value`` in the settings file at ``path``, or remove it
    when ``value`` is None (the default applies again). Other keys, and their order, are
    kept; a file that is not a JSON object is refused rather than overwritten, because
    it holds the user's text. Written to a temporary file and renamed: never half written."""
    data: dict[str, Any] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingChangeError(f"cannot read {path}: {exc}") from exc
    if text.strip():
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SettingChangeError(
                f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                "fix it first - nothing was changed"
            ) from exc
        if not isinstance(loaded, dict):
            raise SettingChangeError(f"{path}: the top level must be an object; nothing was changed")
        data = loaded
    if value is not None:
        value = check_setting(key, value)
    *groups, name = key.split(".")
    node = data
    for group in groups:
        child = node.get(group)
        if not isinstance(child, dict):
            if value is None:
                break
            child = node[group] = {}
        node = child
    else:
        if value is None:
            node.pop(name, None)
        else:
            node[name] = value
    _write_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _write_atomically(path: Path, text: str) -> None:
    private_dir(path.parent)  # a folder it creates (the home's, .heron/) is 0700
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise SettingChangeError(f"cannot write {path}: {exc}") from exc
