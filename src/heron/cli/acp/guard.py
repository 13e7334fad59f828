"""Every line from the client checked before the SDK's connection reads it.

The SDK 0.12 connection skips a line that is not JSON without answering, and a JSON
value that is not an object (``[1]``, ``"x"``) ends its receive loop, which would leave
the editor talking to a server that no longer reads. JSON-RPC 2.0 wants an error reply
for both: here a line that does not parse gets ``-32700`` (parse error), a value that is
not a request, notification or response gets ``-32600`` (invalid request), and the
server keeps serving. Good lines pass through unchanged, in order.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def problem(line: bytes) -> dict[str, Any] | None:
    """The error reply a line deserves, or None when it is a JSON-RPC message."""
    try:
        message = json.loads(line)
    except ValueError as exc:
        return _error(None, PARSE_ERROR, "Parse error", f"not JSON: {exc}")
    if not isinstance(message, dict):
        return _error(
            None,
            INVALID_REQUEST,
            "Invalid Request",
            f"a message must be a JSON object, not {type(message).__name__} (batches are not supported)",
        )
    ident = message.get("id")
    if ident is not None and not isinstance(ident, (str, int)):
        return _error(None, INVALID_REQUEST, "Invalid Request", "id must be a string or an integer")
    if "method" in message:
        if not isinstance(message["method"], str):
            return _error(ident, INVALID_REQUEST, "Invalid Request", "method must be a string")
        if "params" in message and not isinstance(message["params"], (dict, list, type(None))):
            return _error(ident, INVALID_REQUEST, "Invalid Request", "params must be an object")
        return None
    if "id" in message and ("result" in message or "error" in message):
        return None
    return _error(ident, INVALID_REQUEST, "Invalid Request", "neither a request (method) nor a response (result/error)")


def _error(ident: Any, code: int, message: str, details: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message, "data": {"details": details}}}


def guarded(
    source: asyncio.StreamReader, reply: Callable[[dict[str, Any]], None], limit: int
) -> tuple[asyncio.StreamReader, asyncio.Task[None]]:
    """A reader holding only the good lines of ``source``; bad ones are answered by ``reply``."""
    clean = asyncio.StreamReader(limit=limit)

    async def pump() -> None:
        try:
            while True:
                try:
                    line = await source.readline()
                except ValueError:  # longer than the limit: the SDK could not take it either
                    reply(_error(None, INVALID_REQUEST, "Invalid Request", f"message longer than {limit} bytes"))
                    continue
                if not line:
                    break
                if not line.strip():
                    continue
                error = problem(line)
                if error is not None:
                    reply(error)
                    continue
                clean.feed_data(line if line.endswith(b"\n") else line + b"\n")
        finally:
            clean.feed_eof()

    return clean, asyncio.ensure_future(pump())
