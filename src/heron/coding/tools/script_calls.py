"""The parent's end of a script's tool channel: each request of the script's process run
through the session's tools (:class:`heron.coding.tools.env.ToolHost`), answered, and
recorded for the script's result details.

One request per line, one answer per line, in order (the child waits for each answer).
A call over the cap stops the script: its process group is killed and the result says
why, so a runaway loop of calls cannot run on by catching the error.
"""

from __future__ import annotations

import asyncio
import json
import signal as signals
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from heron.agent.tools import AgentTool, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.types import TextContent, ToolCall
from heron.coding.tools.env import IN_SCRIPT, FileReadTracker, ToolHost
from heron.coding.tools.process import signal_group

# What the session file keeps of one inner call's text (the call's details are kept whole):
# the script's record says what each call was and how it went, not a copy of every file read.
RECORDED_TEXT_CHARS = 2000
LINE_LIMIT = 64 * 1024 * 1024  # one request line (a write's content travels in it)


def parameter_names(tool: AgentTool[Any]) -> list[str]:
    """A tool's parameters in its schema's order (what positional arguments map to)."""
    properties = tool.definition().parameters.get("properties")
    return list(properties) if isinstance(properties, dict) else []


def result_text(result: ToolResult) -> str:
    parts = [b.text if isinstance(b, TextContent) else f"[{b.mime_type} image]" for b in result.content]
    return "\n".join(parts)


def json_safe(value: Any) -> Any:
    """Details as plain JSON (a tool may hold a dataclass or a path in them)."""
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return None


def _recorded(arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments as the record keeps them: a long string (a write's content) cut to its
    head, with its length; what the tool did with it is on disk and in the checkpoints."""
    return {
        key: f"{value[:RECORDED_TEXT_CHARS]}... [{len(value):,} chars]"
        if isinstance(value, str) and len(value) > RECORDED_TEXT_CHARS
        else value
        for key, value in arguments.items()
    }


@dataclass
class CallChannel:
    """Serves one script's requests; ``calls`` is what its result details record."""

    host: ToolHost
    script_call_id: str
    max_calls: int
    signal: AbortSignal
    pgid: int
    reads: FileReadTracker | None = None  # the session's: its reads for this script are not the model's
    calls: list[dict[str, Any]] = field(default_factory=list)
    outcome: dict[str, Any] | None = None  # the runner's last message: result or error
    limit_reached: bool = False
    protocol_error: str | None = None
    _tools: dict[str, AgentTool[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._tools = {tool.name: tool for tool in self.host.callable_tools()}

    def start_message(self, code: str) -> dict[str, Any]:
        return {"code": code, "tools": {name: parameter_names(tool) for name, tool in self._tools.items()}}

    async def serve(self, reader: asyncio.StreamReader, write: Callable[[dict[str, Any]], None]) -> None:
        """Answer requests until the script's end (its outcome, or the pipe closing)."""
        while True:
            try:
                line = await reader.readline()
            except (ValueError, asyncio.LimitOverrunError):
                self.protocol_error = f"a request line over {LINE_LIMIT} bytes"
                return
            if not line:
                return
            try:
                message = json.loads(line)
            except ValueError:
                self.protocol_error = "a request that is not JSON (the tool channel's pipe was written to)"
                return
            if not isinstance(message, dict):
                continue
            if message.get("type") in ("result", "error"):
                self.outcome = message
                continue
            if len(self.calls) >= self.max_calls:
                self.limit_reached = True
                signal_group(self.pgid, signals.SIGKILL)
                return
            write(await self._answer(message))

    async def _answer(self, message: dict[str, Any]) -> dict[str, Any]:
        arguments = message.get("arguments")
        if not isinstance(arguments, dict):
            arguments = {}
        name = self._name(message)
        call_id = f"{self.script_call_id}.{len(self.calls) + 1}"
        record: dict[str, Any] = {"id": call_id, "tool": name, "arguments": _recorded(arguments)}
        self.calls.append(record)
        if name is None:
            record.update(is_error=True, text=f"no tool {self._asked(message)} in this session")
            return {"error": f"{record['text']}; available: {', '.join(sorted(self._tools)) or 'none'}"}
        token = IN_SCRIPT.set(self.reads)
        try:
            result = await self.host.call(ToolCall(id=call_id, name=name, arguments=arguments), self.signal)
        finally:
            IN_SCRIPT.reset(token)
        text, details = result_text(result), json_safe(result.details)
        record.update(is_error=result.is_error, chars=len(text), text=text[:RECORDED_TEXT_CHARS])
        if details is not None:
            record["details"] = details
        if result.is_error:
            return {"error": text, "details": details}
        return {"text": text, "details": details}

    def _name(self, message: dict[str, Any]) -> str | None:
        server_tool = message.get("mcp")
        if isinstance(server_tool, list) and len(server_tool) == 2:
            server, remote = server_tool
            for tool in self._tools.values():
                if getattr(tool, "server", None) == server and getattr(tool, "remote_name", None) == remote:
                    return tool.name
            return None
        name = message.get("tool")
        return name if isinstance(name, str) and name in self._tools else None

    @staticmethod
    def _asked(message: dict[str, Any]) -> str:
        server_tool = message.get("mcp")
        if isinstance(server_tool, list):
            return "/".join(map(str, server_tool)) + " (MCP)"
        return repr(message.get("tool"))
