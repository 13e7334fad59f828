"""Parameter models: the pydantic side of the tools (:mod:`heron.agent.tools`).

Everything here needs pydantic, whose import and model building cost more than a one-shot
``heron -p`` run spends before its first request, so nothing on that path imports this
module: the built-in tools name their models (:class:`heron.agent.tools.ParamsRef`) and
carry their schemas precomputed; the model, and pydantic with it, is loaded when a call's
arguments are first validated (docs/architecture.md, "The path to the first request").
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from heron.ai.types import ToolCall


class ToolParams(BaseModel):
    """Base for parameter models: unknown arguments are an error the model is told about,
    not silently dropped (a misspelt ``offest`` should not read the whole file)."""

    model_config = ConfigDict(extra="forbid")


_SCHEMAS: dict[type[BaseModel], dict[str, Any]] = {}


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The parameter model's JSON schema in the compact form the model is shown.

    Two things pydantic adds are dropped, since they cost characters on every request and
    tell the model nothing: the ``title`` of every field, and, for an optional field
    (``x: int | None = None``), the ``anyOf [..., null]`` wrapper with its ``default: null``
    -- a field that is not ``required`` already says it may be left out (an explicit
    ``null`` is still accepted when the arguments are validated).

    Cached per model: generating it costs about a millisecond and it is needed before
    every request. Treat the returned dict as read-only.
    """
    schema = _SCHEMAS.get(model)
    if schema is None:
        schema = _compact(model.model_json_schema())
        _SCHEMAS[model] = schema
    return schema


def _compact(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: _compact(_unwrap_optional(sub)) for name, sub in value.items()}
            else:
                out[key] = _compact(value)
        return out
    if isinstance(node, list):
        return [_compact(item) for item in node]
    return node


def _unwrap_optional(prop: Any) -> Any:
    """``{"anyOf": [S, {"type": "null"}], "default": null, ...}`` -> ``S`` plus the rest."""
    if not isinstance(prop, dict) or "default" not in prop or prop["default"] is not None:
        return prop
    variants = prop.get("anyOf")
    if not isinstance(variants, list) or len(variants) != 2 or {"type": "null"} not in variants:
        return prop
    (kept,) = [v for v in variants if v != {"type": "null"}]
    if not isinstance(kept, dict):
        return prop
    rest = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
    return {**kept, **rest}


def parse_arguments(model: type[BaseModel], call: ToolCall) -> BaseModel | str:
    """The call's arguments as ``model``, or the error text the model will see."""
    try:
        return model.model_validate(call.arguments)
    except ValidationError as exc:
        return format_validation_error(call, exc)


def format_validation_error(call: ToolCall, exc: ValidationError) -> str:
    lines = [f'Validation failed for tool "{call.name}":']
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unexpected argument"
        lines.append(f"  - {location}: {message}")
    lines.append("")
    lines.append("Received arguments:")
    lines.append(json.dumps(call.arguments, indent=2, ensure_ascii=False, default=str))
    return "\n".join(lines)
