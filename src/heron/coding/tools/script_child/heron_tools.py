"""heron's tools as Python functions, for a script the ``script`` tool runs.

Every function sends one request to heron over a pipe and waits for the answer: the call
takes the path a model's tool call takes in heron (permission rules and modes, hooks,
secrets redaction, checkpoints, the ledger), so a script can do no more than the model
could with plain calls. A refused or failed call raises :class:`ToolError` with heron's
message; a successful one returns the tool's text as a :class:`ToolOutput` (a ``str``
whose ``details`` attribute holds the tool's structured details, when it has them).

The functions are made from the tools the session has: ``read(path, offset=None,
limit=None)``, ``bash(command)``, ... with the tool's parameters, positionally in the
order of its schema or by name; ``call(name, **arguments)`` reaches any of them by name
and ``mcp(server, tool, **arguments)`` an MCP server's tool. Only the standard library is
used: this module runs in the script's process, not in heron's.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import IO, Any

__all__ = ["ToolError", "ToolOutput", "call", "mcp", "tools"]

_FDS_VARIABLE = "HERON_TOOLS_FDS"


class ToolError(Exception):
    """A tool call heron refused (a permission rule, a hook, plan mode) or that failed; the
    message is heron's, ``details`` the tool's structured details if it gave any."""

    def __init__(self, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.details = details


class ToolOutput(str):
    """A tool's text; ``details``: the tool's structured details (a dict), or None."""

    details: Any = None


class _Channel:
    """The two pipes to heron: requests out, answers in, one call at a time (a lock, so
    threads of a script may call tools too)."""

    def __init__(self, out: IO[str], answers: IO[str]) -> None:
        self._out = out
        self._in = answers
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        self._out.write(json.dumps(message, ensure_ascii=False) + "\n")
        self._out.flush()

    def receive(self) -> dict[str, Any]:
        line = self._in.readline()
        if not line:
            raise SystemExit("heron closed the tool channel")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.send(message)
            return self.receive()


_channel: _Channel | None = None
_tools: dict[str, list[str]] = {}


def connect() -> dict[str, Any]:
    """Open the pipes named in the environment and read heron's first message (the code to
    run and the tools it may call). Called once, by the runner."""
    global _channel
    out_fd, in_fd = (int(part) for part in os.environ.pop(_FDS_VARIABLE).split(","))
    _channel = _Channel(
        os.fdopen(out_fd, "w", encoding="utf-8", errors="surrogatepass"),
        os.fdopen(in_fd, "r", encoding="utf-8"),
    )
    start = _channel.receive()
    _tools.clear()
    _tools.update({name: list(params) for name, params in start.get("tools", {}).items()})
    return start


def finish(message: dict[str, Any]) -> None:
    """The script's outcome (its return value, or its error) to heron."""
    if _channel is not None:
        _channel.send(message)


def tools() -> list[str]:
    """The names of the tools this script may call."""
    return sorted(_tools)


def _request(message: dict[str, Any]) -> ToolOutput:
    if _channel is None:
        raise RuntimeError("heron_tools works only inside a script heron runs (the script tool)")
    try:
        json.dumps(message["arguments"])
    except (TypeError, ValueError) as exc:
        raise ToolError(f"the arguments of this call cannot be sent as JSON: {exc}") from None
    answer = _channel.ask(message)
    if "error" in answer:
        raise ToolError(str(answer["error"]), answer.get("details"))
    output = ToolOutput(answer.get("text", ""))
    output.details = answer.get("details")
    return output


def call(tool: str, /, **arguments: Any) -> ToolOutput:
    """Call the session's tool ``tool`` with these arguments (its parameters by name)."""
    return _request({"type": "call", "tool": tool, "arguments": arguments})


def mcp(server: str, tool: str, /, **arguments: Any) -> ToolOutput:
    """Call the tool ``tool`` of the MCP server ``server`` (as configured in heron)."""
    return _request({"type": "call", "mcp": [server, tool], "arguments": arguments})


def _function(name: str, params: list[str]) -> Callable[..., ToolOutput]:
    def tool_function(*args: Any, **arguments: Any) -> ToolOutput:
        if len(args) > len(params):
            raise TypeError(f"{name}() takes at most {len(params)} positional arguments ({', '.join(params)})")
        for param, value in zip(params, args, strict=False):
            if param in arguments:
                raise TypeError(f"{name}() got two values for {param!r}")
            arguments[param] = value
        return call(name, **{k: v for k, v in arguments.items() if v is not None})

    tool_function.__name__ = name
    tool_function.__doc__ = f"heron's {name} tool: {name}({', '.join(params)})"
    return tool_function


def functions() -> dict[str, Callable[..., Any]]:
    """What a script finds defined without importing anything: a function per tool, and
    ``call``, ``mcp``, ``tools``, ``ToolError``."""
    made: dict[str, Callable[..., Any]] = {
        name: _function(name, params) for name, params in _tools.items() if name.isidentifier()
    }
    made.update({"call": call, "mcp": mcp, "tools": tools, "ToolError": ToolError})
    globals().update(made)
    return made
