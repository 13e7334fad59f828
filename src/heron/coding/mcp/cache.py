"""The tool lists of MCP servers, kept from their last successful start.

A lazy server (docs/mcp.md, ``mcp.startup: "lazy"`` or ``"lazy": true`` in its entry) is
not started with the session, yet the model must see its tools from the first request:
they come from here. Each file is keyed by a hash of the server's entry (its command,
arguments, environment or URL and headers - not the ``lazy`` flag), so an edited entry
never reuses another configuration's list; such a server starts with the session once
and its list is saved again. Only tool definitions are stored (no secrets), under
``$HERON_HOME/mcp-cache/``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

import mcp.types as types
from pydantic import ValidationError

from heron.coding.mcp.config import ServerConfig
from heron.session.private_files import write_private_text

log = logging.getLogger(__name__)
CACHE_DIR = "mcp-cache"


def config_hash(config: ServerConfig) -> str:
    entry = config.to_json()
    entry.pop("lazy", None)
    raw = json.dumps({"name": config.name, "scope": config.scope, "entry": entry}, sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()


def cache_path(cache_dir: Path, config: ServerConfig) -> Path:
    return cache_dir / f"{config.name}-{config_hash(config)[:16]}.json"


def save_tools(cache_dir: Path, config: ServerConfig, tools: list[types.Tool]) -> None:
    """Write the list (atomically); a failure only costs the next lazy start its cache."""
    path = cache_path(cache_dir, config)
    data: dict[str, Any] = {
        "server": config.name,
        "configHash": config_hash(config),
        "savedAt": int(time.time()),
        "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
    }
    try:
        write_private_text(path, json.dumps(data, ensure_ascii=False))
    except OSError as exc:
        log.warning("could not save the tool list of MCP server %r: %s", config.name, exc)


def load_tools(cache_dir: Path, config: ServerConfig) -> list[types.Tool] | None:
    """The saved list for exactly this configuration; None when there is none or it is unreadable."""
    try:
        data = json.loads(cache_path(cache_dir, config).read_text(encoding="utf-8"))
        if data.get("configHash") != config_hash(config):
            return None
        return [types.Tool.model_validate(t) for t in data["tools"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ValidationError):
        return None
