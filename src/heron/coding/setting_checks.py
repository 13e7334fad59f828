"""The checks of settings.json's values: each returns the clean value or raises
:class:`BadSettingValue` with what was expected, for the schema in
:mod:`heron.coding.settings` (which reports the message as a warning and keeps the default)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

from heron.ai.types import THINKING_LEVELS
from heron.context.compaction.idle import parse_policy
from heron.context.window.working_budget import WorkingBudgetSetting, parse_setting


class BadSettingValue(ValueError):
    """A value of the wrong shape; the message says what was expected."""


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


def check_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise BadSettingValue(f"must be true or false, not {type_name(value)} {json.dumps(value)}")
    return value


def check_int(minimum: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise BadSettingValue(f"must be an integer >= {minimum}, not {type_name(value)} {json.dumps(value)}")
        return value

    return check


def check_string(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadSettingValue(f"must be a string, not {type_name(value)}")
    return value.strip() or None


def check_thinking(value: Any) -> str:
    if value not in THINKING_LEVELS:
        raise BadSettingValue(f"must be one of {', '.join(THINKING_LEVELS)}, not {json.dumps(value)}")
    return cast(str, value)


def check_tools(value: Any) -> list[str]:
    if isinstance(value, str):
        value = value.split(",")  # the --tools form: "read,grep"
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadSettingValue('must be an array of tool names, like ["read", "bash"]')
    return [item.strip() for item in value if item.strip()]


def check_patterns(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadSettingValue('must be an array of gitignore patterns, like ["*.log", "!build/"]')
    return [item.strip() for item in value if item.strip()]


def check_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadSettingValue(f"must be an object, not {type_name(value)}")
    return value


def check_startup(value: Any) -> str:
    if value not in ("eager", "lazy"):
        raise BadSettingValue(f'must be "eager" or "lazy", not {value!r}')
    return str(value)


def check_reflect(value: Any) -> str:
    if value not in ("off", "end", "compaction"):
        raise BadSettingValue(f'must be "off", "end" or "compaction", not {json.dumps(value)}')
    return str(value)


def check_summary_request(value: Any) -> str:
    if value not in ("shared", "separate"):
        raise BadSettingValue(f'must be "shared" or "separate", not {json.dumps(value)}')
    return str(value)


def check_working_budget(value: Any) -> WorkingBudgetSetting:
    try:
        return parse_setting(value)
    except ValueError as exc:
        raise BadSettingValue(f"{exc}, not {type_name(value)} {json.dumps(value)}") from None


def check_share(value: Any) -> float:
    """A share: a number greater than 0 and at most 1."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise BadSettingValue(
            f"must be a number greater than 0 and at most 1, not {type_name(value)} {json.dumps(value)}"
        )
    return float(value)


POSITIVE = check_int(1)
NON_NEGATIVE = check_int(0)


def check_idle_policy(value: Any) -> str:
    try:
        return parse_policy(value)
    except ValueError:
        raise BadSettingValue(f'must be "auto", "warm", "compact" or "off", not {json.dumps(value)}') from None
