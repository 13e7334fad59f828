"""The MCP server the MCP tests talk to: the SDK's own server (MCPServer, FastMCP's new
name in mcp 2), run as a real process.

    python mcp_double.py stdio            a normal server on stdin/stdout
    python mcp_double.py http PORT        the same over streamable HTTP on 127.0.0.1:PORT
    python mcp_double.py hang             never answers (not even initialize)
    python mcp_double.py many N           N tools with long descriptions (for tool_search)

The ``crash`` tool exits the process in the middle of its call; ``sleep`` never returns
in time for a short call timeout.
"""

from __future__ import annotations

import base64
import io
import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image
from pydantic import BaseModel


class Weather(BaseModel):
    city: str
    celsius: float


def build(many: int = 0) -> MCPServer:
    server = MCPServer("double")

    @server.tool(description="Echo the text back, with its length")
    def echo(text: str, times: int = 1) -> str:
        return " ".join([text] * times)

    @server.tool(description="Return a big text of N lines")
    def big(lines: int) -> str:
        return "\n".join(f"line {n:06d} of the big output" for n in range(lines))

    @server.tool(description="A small PNG image")
    def picture() -> Image:
        from PIL import Image as PILImage

        out = io.BytesIO()
        PILImage.new("RGB", (4, 3), (200, 10, 10)).save(out, format="PNG")
        return Image(data=out.getvalue(), format="png")

    @server.tool(description="Structured weather data")
    def weather(city: str) -> Weather:
        return Weather(city=city, celsius=21.5)

    @server.tool(description="Fail with a message")
    def fail(reason: str) -> str:
        raise ValueError(f"it failed: {reason}")

    @server.tool(description="Exit the server process in the middle of the call")
    def crash() -> str:
        os._exit(3)

    @server.tool(description="Sleep for a long time")
    def sleep(seconds: float) -> str:
        time.sleep(seconds)
        return "woke up"

    @server.tool(description="The server's environment variable NAME")
    def getenv(name: str) -> str:
        return os.environ.get(name, "(unset)")

    for n in range(many):

        def make(n: int = n) -> None:
            def tool(query: str) -> str:
                return f"tool {n}: {query}"

            server.tool(name=f"widget_{n}", description=f"Widget number {n}. " + "Describes widgets at length. " * 20)(
                tool
            )

        make()
    _ = base64  # images are encoded by the SDK
    return server


def main() -> None:
    mode = sys.argv[1]
    if mode == "hang":
        while sys.stdin.readline():
            pass
        time.sleep(3600)
    elif mode == "http":
        build().run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif mode == "many":
        build(int(sys.argv[2])).run()
    else:
        build().run()


if __name__ == "__main__":
    main()
