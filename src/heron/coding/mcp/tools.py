"""MCP tools as heron tools: ``mcp__<server>__<tool>``, with the server's input schema.

The model is shown the schema the server published (not a pydantic model of it), and the
arguments are checked against it before the call, so a wrong argument comes back as a
validation message the model can act on without a round trip to the server. Results
become ordinary tool results (text and images); the runtime then applies the same
per-result and per-turn budgets and spill files as for built-in tools.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import re
from typing import Any

import mcp.types as types
from pydantic import ConfigDict

from heron.agent.tool_meta import Access, ToolMeta, path_argument
from heron.agent.tools import AgentTool, ToolError, ToolParams, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.ai.types import ImageContent, TextContent, Tool
from heron.coding.mcp.config import ToolDeclaration
from heron.coding.mcp.connection import McpCallError
from heron.coding.mcp.manager import McpManager
from heron.coding.tools.images import IMAGE_MAX_BASE64_BYTES, IMAGE_MAX_DIMENSION, prepare_image

PREFIX = "mcp__"
MAX_NAME = 64  # the tightest provider limit on tool names
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class McpArguments(ToolParams):
    """Any JSON object: the server's schema, not pydantic, decides what is valid."""

    model_config = ConfigDict(extra="allow")


def tool_name(server: str, tool: str) -> str:
    """``mcp__server__tool``, made of the characters every provider accepts, at most 64."""
    name = f"{PREFIX}{server}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def distinct_name(server: str, tool: str) -> str:
    """The name of a tool whose :func:`tool_name` another tool of the server already has:
    the same, cut to leave room for a hash of the remote name, which differs."""
    base = f"{PREFIX}{server}__{_UNSAFE.sub('_', tool)}"
    return f"{base[: MAX_NAME - 9]}_{hashlib.sha256(tool.encode()).hexdigest()[:8]}"


def declared_meta(tool: types.Tool, declared: ToolDeclaration | None) -> ToolMeta:
    """What an MCP tool is: what the user declared for it in the server's entry (kind, the
    argument naming the file it touches), else ``read`` for a tool the server marks
    ``readOnlyHint`` (it touches no files heron knows of), else ``other``."""
    if declared is not None:
        access: Access = "write" if declared.kind in ("edit", "write") else "read"
        paths = path_argument(declared.path, access) if declared.path else None
        return ToolMeta(kind=declared.kind, paths=paths)
    hints = tool.annotations
    if hints is not None and hints.read_only_hint:
        return ToolMeta(kind="read")
    return ToolMeta()


class McpTool(AgentTool[McpArguments]):
    parameters = McpArguments

    def __init__(
        self, manager: McpManager, server: str, tool: types.Tool, declared: ToolDeclaration | None = None
    ) -> None:
        self.manager = manager
        self.server = server
        self.remote_name = tool.name
        self.name = tool_name(server, tool.name)
        self.label = f"{server}: {tool.title or tool.name}"
        self.description = (tool.description or tool.title or tool.name).strip()
        self.schema: dict[str, Any] = dict(tool.input_schema) if tool.input_schema else {"type": "object"}
        self.meta = declared_meta(tool, declared)
        self._definition = Tool(name=self.name, description=self.description, parameters=self.schema)

    def definition(self) -> Tool:
        return self._definition

    def rename(self, name: str) -> None:
        self.name = name
        self._definition = Tool(name=name, description=self.description, parameters=self.schema)

    async def execute(
        self, call_id: str, params: McpArguments, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        arguments = params.model_dump()
        problems = schema_problems(self.schema, arguments)
        if problems:
            raise ToolError(
                f'Arguments for "{self.name}" do not match its schema:\n'
                + "\n".join(f"  - {p}" for p in problems)
                + f"\n\nReceived arguments:\n{json.dumps(arguments, indent=2, default=str)}"
            )
        task = asyncio.ensure_future(self.manager.call(self.server, self.remote_name, arguments))
        loop = asyncio.get_running_loop()

        def cancel() -> None:
            loop.call_soon_threadsafe(task.cancel)

        remove = signal.add_listener(cancel)
        try:
            result = await task
        except asyncio.CancelledError:
            if signal.aborted:
                return ToolResult.error(f"{self.name}: aborted")
            raise
        except McpCallError as exc:
            return ToolResult.error(str(exc), details={"mcp_server": self.server, "mcp_tool": self.remote_name})
        finally:
            remove()
        return convert_result(result, self.server, self.remote_name)


def schema_problems(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """What is wrong with ``arguments`` by the tool's JSON schema (empty: nothing); an
    invalid schema is the server's problem, so the server gets to judge the call."""
    import jsonschema

    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        validator = validator_cls(schema)
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
    except (jsonschema.SchemaError, TypeError, ValueError):
        return []
    return [f"{'.'.join(str(p) for p in e.path) or '(arguments)'}: {e.message}" for e in errors[:10]]


def convert_result(result: types.CallToolResult, server: str, tool: str) -> ToolResult:
    """Text and images kept; audio, links and binary resources described in a line, since
    no provider takes them in a tool result; structured content as JSON when the server
    sent no text for it."""
    content: list[TextContent | ImageContent] = []
    for block in result.content:
        content.extend(_convert_block(block))
    has_text = any(isinstance(b, TextContent) for b in content)
    if result.structured_content is not None and not has_text:
        content.append(TextContent(text=json.dumps(result.structured_content, indent=2, ensure_ascii=False)))
    if not content:
        content.append(TextContent(text="(the tool failed without a message)" if result.is_error else "(no output)"))
    return ToolResult(content=content, details={"mcp_server": server, "mcp_tool": tool}, is_error=bool(result.is_error))


def _convert_block(block: Any) -> list[TextContent | ImageContent]:
    if isinstance(block, types.TextContent):
        return [TextContent(text=block.text)]
    if isinstance(block, types.ImageContent):
        return [_image(block.data, block.mime_type)]
    if isinstance(block, types.AudioContent):
        return [TextContent(text=f"[audio ({block.mime_type}, {len(block.data):,} base64 bytes): not shown]")]
    if isinstance(block, types.ResourceLink):
        kind = f", {block.mime_type}" if block.mime_type else ""
        return [TextContent(text=f"[resource link: {block.name} <{block.uri}>{kind}]")]
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            return [TextContent(text=f"[resource {res.uri}]\n{res.text}")]
        mime = res.mime_type or "application/octet-stream"
        if mime.startswith("image/"):
            return [_image(res.blob, mime)]
        return [TextContent(text=f"[binary resource {res.uri} ({mime}, {len(res.blob):,} base64 bytes): not shown]")]
    return [TextContent(text=f"[unsupported content of type {getattr(block, 'type', '?')!r}]")]


def _image(data: str, mime: str) -> TextContent | ImageContent:
    """The image made small enough for the providers, or a line saying why it is not shown."""
    try:
        raw = base64.b64decode(data, validate=True)
        prepared = prepare_image(raw, mime, IMAGE_MAX_DIMENSION, IMAGE_MAX_BASE64_BYTES)
    except (binascii.Error, ValueError, ToolError) as exc:
        return TextContent(text=f"[image ({mime}) that could not be used: {exc}]")
    return ImageContent(data=prepared.data, mime_type=prepared.mime_type)
