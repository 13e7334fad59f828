"""Tools: typed parameters, validation the model can learn from, results.

A tool's parameters are a pydantic model: its JSON schema is what the model is shown,
and validating the model's arguments against it gives field-level errors that go back
to the model verbatim (with the arguments it sent) so it can correct itself.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from heron.agent.tool_meta import OTHER, ToolMeta
from heron.ai.abort import AbortSignal
from heron.ai.types import ImageContent, TextContent, Tool, ToolCall


class ToolParams(BaseModel):
    """Base for parameter models: unknown arguments are an error the model is told about,
    not silently dropped (a misspelt ``offest`` should not read the whole file)."""

    model_config = ConfigDict(extra="forbid")


P = TypeVar("P", bound=BaseModel)


@dataclass(slots=True)
class ToolResult:
    content: list[TextContent | ImageContent]
    details: Any = None
    is_error: bool = False

    @classmethod
    def text(cls, text: str, details: Any = None, is_error: bool = False) -> ToolResult:
        return cls(content=[TextContent(text=text)], details=details, is_error=is_error)

    @classmethod
    def error(cls, text: str, details: Any = None) -> ToolResult:
        return cls(content=[TextContent(text=text)], details=details, is_error=True)


UpdateCallback = Callable[[ToolResult], None]

# A result's details may record the tool calls the tool made itself (a ``script``'s calls of
# the other tools), under this key: a list of ``{"id", "tool", "arguments", "is_error", "text"}``.
# They were never messages; the tree, the export and the recall index show them from here.
INNER_CALLS = "inner_calls"


def inner_calls(details: Any) -> list[dict[str, Any]]:
    """The inner calls a result's details record (none for most tools)."""
    calls = details.get(INNER_CALLS) if isinstance(details, dict) else None
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def inner_calls_summary(details: Any) -> str:
    """`` [3 inner calls: read, bash]``, or "" when there are none (one line of a tree)."""
    calls = inner_calls(details)
    if not calls:
        return ""
    names = ", ".join(dict.fromkeys(str(c.get("tool")) for c in calls))
    return f" [{len(calls)} inner call{'s' if len(calls) != 1 else ''}: {names}]"


def inner_calls_text(details: Any) -> str:
    """The inner calls as text (each call, its arguments and what it returned)."""
    parts = []
    for call in inner_calls(details):
        arguments = json.dumps(call.get("arguments"), ensure_ascii=False, default=str)
        error = " (error)" if call.get("is_error") else ""
        parts.append(f"{call.get('tool')} {arguments}{error}\n{call.get('text', '')}")
    return "\n\n".join(parts)


class ToolError(Exception):
    """Raised by a tool for an expected failure: the message goes to the model as is."""


class AgentTool(Generic[P]):
    """Subclass with ``name``, ``description``, ``parameters`` and ``execute``.

    ``concurrency_key`` lets calls that touch the same resource run one after the other
    (two edits of one file), while everything else runs in parallel. ``meta`` says what
    the tool is - its kind and the files a call touches (:mod:`heron.agent.tool_meta`) -
    for every layer that treats tools differently; the default is ``other``, no files.
    """

    name: str
    label: str = ""
    description: str
    parameters: type[P]
    meta: ToolMeta = OTHER

    async def execute(self, call_id: str, params: P, signal: AbortSignal, on_update: UpdateCallback) -> ToolResult:
        raise NotImplementedError

    def concurrency_key(self, params: P) -> str | None:
        """Calls with equal keys never overlap; ``None`` means no constraint."""
        return None

    def definition(self) -> Tool:
        """What the model is told; byte-stable across requests (prompt caching)."""
        return Tool(name=self.name, description=self.description, parameters=schema_of(self.parameters))


class FunctionTool(AgentTool[P]):
    """A tool from a plain async function, for tests, examples and quick extensions."""

    def __init__(
        self,
        name: str,
        description: str,
        parameters: type[P],
        fn: Callable[[str, P, AbortSignal, UpdateCallback], Awaitable[ToolResult]],
        concurrency_key: Callable[[P], str | None] | None = None,
        meta: ToolMeta = OTHER,
    ) -> None:
        self.name = name
        self.description = description
        self.parameters = parameters
        self.meta = meta
        self._fn = fn
        self._key = concurrency_key

    async def execute(self, call_id: str, params: P, signal: AbortSignal, on_update: UpdateCallback) -> ToolResult:
        return await self._fn(call_id, params, signal, on_update)

    def concurrency_key(self, params: P) -> str | None:
        return self._key(params) if self._key is not None else None


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


@dataclass(slots=True)
class ValidationFailure:
    message: str


def validate_arguments(tool: AgentTool[Any], call: ToolCall) -> BaseModel | ValidationFailure:
    """Parsed parameters, or the error text the model will see."""
    if call.raw_arguments is not None:
        return ValidationFailure(
            f'The arguments for tool "{call.name}" {_why_not_an_object(call.raw_arguments)}, so the tool was not '
            f"run. Send one JSON object with the parameters as its keys.\n\nReceived arguments:\n{call.raw_arguments}"
        )
    try:
        params: BaseModel = tool.parameters.model_validate(call.arguments)
        return params
    except ValidationError as exc:
        return ValidationFailure(format_validation_error(call, exc))


_JSON_KINDS = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}


def _why_not_an_object(raw: str) -> str:
    """``["echo","hi"]`` is valid JSON; saying it is not would send the model looking for
    a syntax error that is not there."""
    try:
        value = json.loads(raw)
    except ValueError:
        return "were not valid JSON"
    if value is None:
        return "were JSON null, not an object"
    kind = _JSON_KINDS.get(type(value), "not an object")
    return f"were valid JSON but {kind}, not an object"


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


# --- hooks ----------------------------------------------------------------------


@dataclass(slots=True)
class ToolCallContext:
    """What a hook sees: the call, its validated parameters, and the conversation."""

    tool_call: ToolCall
    params: BaseModel
    tool: AgentTool[Any]
    messages: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class BeforeToolCallResult:
    """``block`` stops the call (the model is told ``reason``); ``arguments`` replaces the
    arguments (validated again before the tool runs)."""

    block: bool = False
    reason: str | None = None
    arguments: dict[str, Any] | None = None


@dataclass(slots=True)
class AfterToolCallResult:
    """Any field left ``None`` keeps the tool's own value."""

    content: list[TextContent | ImageContent] | None = None
    details: Any = None
    is_error: bool | None = None


BeforeToolCall = Callable[[ToolCallContext], Awaitable[BeforeToolCallResult | None]]
AfterToolCall = Callable[[ToolCallContext, ToolResult], Awaitable[AfterToolCallResult | None]]
