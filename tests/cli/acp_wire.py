"""Audit harness for ``heron --mode acp``: the real process driven by the ACP SDK's
client side (``spawn_agent_process``), with both directions of the stdio stream copied
to files so every message on the wire can be checked against the SDK's schema models.

The check is a round trip: a message is parsed with the schema model for its method
and dumped again (by alias, only the fields that were set); the dump must equal the
message. A field with a wrong name or shape would be dropped or changed by the model and
so shows up as a difference, which is what an editor parsing the stream would trip on.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process
from acp import schema as s
from acp.schema import AllowedOutcome, ClientCapabilities, DeniedOutcome, RequestPermissionResponse
from pydantic import BaseModel

from tests.cli.test_print_json_e2e import Project, heron_command, openai_args
from tests.support.http_server import LocalServer

TIMEOUT = 60.0

# The result model of each request heron answers, and the params model of each message it sends.
RESULTS: dict[str, type[BaseModel] | None] = {
    "initialize": s.InitializeResponse,
    "session/new": s.NewSessionResponse,
    "session/load": s.LoadSessionResponse,
    "session/list": s.ListSessionsResponse,
    "session/prompt": s.PromptResponse,
    "session/set_mode": s.SetSessionModeResponse,
    "session/set_config_option": s.SetSessionConfigOptionResponse,
    "session/close": s.CloseSessionResponse,
    "session/fork": s.ForkSessionResponse,
    "session/resume": s.ResumeSessionResponse,
    "session/set_model": None,
}
SENT: dict[str, type[BaseModel]] = {
    "session/update": s.SessionNotification,
    "session/request_permission": s.RequestPermissionRequest,
    "fs/read_text_file": s.ReadTextFileRequest,
    "fs/write_text_file": s.WriteTextFileRequest,
    "terminal/create": s.CreateTerminalRequest,
    "terminal/output": s.TerminalOutputRequest,
    "terminal/wait_for_exit": s.WaitForTerminalExitRequest,
    "terminal/kill": s.KillTerminalRequest,
    "terminal/release": s.ReleaseTerminalRequest,
}


def round_trip(model: type[BaseModel], data: Any) -> list[str]:
    """What the model loses or changes of ``data`` (empty when the message is valid)."""
    try:
        parsed = model.model_validate(data)
    except Exception as exc:  # noqa: BLE001 - the message is reported, the test fails on it
        return [f"{model.__name__}: {exc}"]
    dumped = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if dumped == data:
        return []
    return [f"{model.__name__}: sent {json.dumps(data)[:600]} parsed {json.dumps(dumped)[:600]}"]


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass
class Wire:
    """The two directions of one process's protocol stream."""

    incoming: Path  # what the client sent to heron
    outgoing: Path  # what heron wrote on stdout
    init: Any = None  # the initialize response

    def sent(self) -> list[dict[str, Any]]:
        """What heron wrote. ``tee`` hands a line to the client before it writes it to the
        file, so the file is read once it has stopped growing."""
        size, deadline = -1, time.monotonic() + 5
        while time.monotonic() < deadline:
            now = self.outgoing.stat().st_size if self.outgoing.exists() else 0
            if now == size:
                break
            size = now
            time.sleep(0.25)
        return lines(self.outgoing)

    def problems(self) -> list[str]:
        """Every schema violation heron's side of the stream has (empty when all is valid)."""
        asked = {m["id"]: m["method"] for m in lines(self.incoming) if "method" in m and "id" in m}
        out: list[str] = []
        for message in self.sent():
            if message.get("jsonrpc") != "2.0":
                out.append(f"not JSON-RPC 2.0: {message}")
            if "method" in message:
                model = SENT.get(message["method"])
                out += (
                    [f"unexpected method {message['method']}"]
                    if model is None
                    else round_trip(model, message.get("params"))
                )
            elif "error" in message:
                error = message["error"]
                if not isinstance(error.get("code"), int) or not isinstance(error.get("message"), str):
                    out.append(f"bad error object {message}")
            elif message.get("id") in asked:
                model = RESULTS.get(asked[message["id"]])
                if model is not None:
                    out += round_trip(model, message.get("result"))
            else:
                out.append(f"a response to no request: {message}")
        return out

    def updates(self) -> list[dict[str, Any]]:
        return [m["params"]["update"] for m in self.sent() if m.get("method") == "session/update"]


@dataclass
class Editor:
    """The client: records updates (as the SDK parsed them), answers permission requests
    with ``answer`` ("wait": never, until the prompt is cancelled)."""

    answer: str | None = "allow_once"
    updates: list[dict[str, Any]] = field(default_factory=list)
    permissions: list[dict[str, Any]] = field(default_factory=list)
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    files: dict[str, str] = field(default_factory=dict)  # the editor's buffers (fs/read_text_file)
    written: dict[str, str] = field(default_factory=dict)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def request_permission(
        self, session_id: str, tool_call: Any, options: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append(
            {
                "toolCall": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
                "options": [o.model_dump(mode="json", by_alias=True) for o in options],
            }
        )
        self.asked.set()
        if self.answer == "wait":
            await asyncio.Event().wait()
        if self.answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    async def read_text_file(
        self, path: str, session_id: str, limit: int | None = None, line: int | None = None, **kwargs: Any
    ) -> s.ReadTextFileResponse:
        return s.ReadTextFileResponse(content=self.files.get(path, Path(path).read_text()))

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> s.WriteTextFileResponse:
        self.written[path] = content
        Path(path).write_text(content)
        return s.WriteTextFileResponse()


@asynccontextmanager
async def heron_acp(
    project: Project,
    server: LocalServer,
    editor: Any,
    *flags: str,
    tag: str = "wire",
    model: list[str] | None = None,
    capabilities: ClientCapabilities | None = None,
    protocol_version: int = PROTOCOL_VERSION,
    env: dict[str, str] | None = None,
) -> AsyncIterator[tuple[Any, Any, Wire]]:
    """heron --mode acp, initialized, with its stream copied to ``<home>/<tag>.in/.out``."""
    wire = Wire(project.home / f"{tag}.in", project.home / f"{tag}.out")
    command = [*heron_command(), "--mode", "acp", *(openai_args(server) if model is None else model), *flags]
    script = 'exec "$@" < <(tee -a "$IN") > >(tee -a "$OUT")'
    log = (project.home / f"{tag}.stderr").open("ab")
    environment = {**project.env, "IN": str(wire.incoming), "OUT": str(wire.outgoing), **(env or {})}
    try:
        async with spawn_agent_process(
            editor,
            "bash",
            "-c",
            script,
            "bash",
            *command,
            env=environment,
            cwd=project.cwd,
            transport_kwargs={"stderr": log.fileno()},
        ) as (conn, proc):
            reply = await asyncio.wait_for(
                conn.initialize(
                    protocol_version=protocol_version, client_capabilities=capabilities or ClientCapabilities()
                ),
                TIMEOUT,
            )
            wire.init = reply
            yield conn, proc, wire
    finally:
        log.close()
