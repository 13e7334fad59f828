"""The MCP client: servers from ``.mcp.json`` / ``mcp.json`` as heron tools (docs/mcp.md)."""
