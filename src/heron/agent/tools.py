"""Tools: typed parameters, validation the model can learn from, results.

A tool's parameters are a pydantic model: its JSON schema is what the model is shown,
and validating the model's arguments against it gives field-level errors that go back
to the model verbatim (with the arguments it sent) so it can correct itself. What needs
pydantic is in :mod:`heron.agent.params`, imported when arguments are first validated (or a
schema generated): a tool may name its model (:class:`ParamsRef`) with the schema computed
ahead of time, so a run that calls no tool never loads pydantic.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from heron.agent.tool_meta import OTHER, ToolMeta
from heron.ai.abort import AbortSignal
from heron.ai.types import ImageContent, TextContent, Tool, ToolCall

if TYPE_CHECKING:  # pydantic is loaded when arguments are first validated, not by this module
    from pydantic import BaseModel

    from heron.agent.params import ToolParams as ToolParams
    from heron.agent.params import schema_of as schema_of

P = TypeVar("P", bound="BaseModel")


def __getattr__(name: str) -> Any:
    """``ToolParams`` and ``schema_of`` stay importable from here, loading pydantic only then."""
    if name in ("ToolParams", "schema_of"):
        return getattr(importlib.import_module("heron.agent.params"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(slots=True)
class ToolResult:
    """What a tool returns: content for the model, ``details`` for the rest of heron."""

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


@dataclass(frozen=True, slots=True)
class ParamsRef:
    """A parameter model named instead of imported, with its schema computed ahead of time.

    Defining a pydantic model imports pydantic and builds the model, which together cost
    more than the rest of a one-shot run before its first request; the request needs only
    the schema. A tool with a ``ParamsRef`` sends ``schema`` (what :func:`schema_of` gives
    for the model: a test of the tool's layer checks that they are equal) and imports
    ``module`` for the model when arguments are first validated. Without a ``schema`` it is
    generated from the model, as for a tool with a ``parameters`` model.
    """

    module: str
    name: str
    schema: dict[str, Any] | None = None

    def load(self) -> type[BaseModel]:
        model: type[BaseModel] = getattr(importlib.import_module(self.module), self.name)
        return model


class AgentTool(Generic[P]):
    """Subclass with ``name``, ``description``, ``parameters`` (or ``parameters_ref``) and
    ``execute``.

    ``concurrency_key`` lets calls that touch the same resource run one after the other
    (two edits of one file), while everything else runs in parallel. ``meta`` says what
    the tool is - its kind and the files a call touches (:mod:`heron.agent.tool_meta`) -
    for every layer that treats tools differently; the default is ``other``, no files.
    """

    name: str
    label: str = ""
    description: str
    meta: ToolMeta = OTHER
    parameters_ref: ClassVar[ParamsRef | None] = None
    _parameters: type[P] | None = None

    @property
    def parameters(self) -> type[P]:
        """The parameter model: the one set (a class attribute or an assignment), else the
        one ``parameters_ref`` names (imported on first use)."""
        if self._parameters is not None:
            return self._parameters
        if self.parameters_ref is None:
            raise AttributeError(f"tool {self.name!r} has no parameters model")
        return cast("type[P]", self.parameters_ref.load())

    @parameters.setter
    def parameters(self, model: type[P]) -> None:
        self._parameters = model

    async def execute(self, call_id: str, params: P, signal: AbortSignal, on_update: UpdateCallback) -> ToolResult:
        raise NotImplementedError

    def concurrency_key(self, params: P) -> str | None:
        """Calls with equal keys never overlap; ``None`` means no constraint."""
        return None

    def definition(self) -> Tool:
        """What the model is told; byte-stable across requests (prompt caching)."""
        return Tool(name=self.name, description=self.description, parameters=self.parameters_schema())

    def parameters_schema(self) -> dict[str, Any]:
        """The schema the model is shown: the precomputed one of ``parameters_ref`` unless a
        model was set, without importing pydantic then."""
        ref = self.parameters_ref
        if ref is not None and ref.schema is not None and self._parameters is None:
            return ref.schema
        from heron.agent.params import schema_of

        return schema_of(self.parameters)


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


@dataclass(slots=True)
class ValidationFailure:
    """Arguments that did not validate: the message the model is sent instead of a result."""

    message: str


def validate_arguments(tool: AgentTool[Any], call: ToolCall) -> BaseModel | ValidationFailure:
    """Parsed parameters, or the error text the model will see. The first call loads
    pydantic and the tool's model (:mod:`heron.agent.params`)."""
    if call.raw_arguments is not None:
        return ValidationFailure(
            f'The arguments for tool "{call.name}" {_why_not_an_object(call.raw_arguments)}, so the tool was not '
            f"run. Send one JSON object with the parameters as its keys.\n\nReceived arguments:\n{call.raw_arguments}"
        )
    from heron.agent.params import parse_arguments

    parsed = parse_arguments(tool.parameters, call)
    return ValidationFailure(parsed) if isinstance(parsed, str) else parsed


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
