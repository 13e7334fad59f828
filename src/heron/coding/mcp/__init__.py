"""The MCP client: servers from ``.mcp.json`` / ``mcp.json`` as heron tools (docs/mcp.md)."""

from __future__ import annotations

from pathlib import Path

PROJECT_FILE = ".mcp.json"
USER_FILE = "mcp.json"


def any_config(cwd: Path, home: Path) -> bool:
    """Whether either config file exists: without one, a session starts no MCP code at all."""
    return (home / USER_FILE).exists() or (cwd / PROJECT_FILE).exists()
