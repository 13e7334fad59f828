"""The client's ``terminal/*`` methods: when the editor offers a terminal, heron's bash
runs there - the tool call shows the terminal, the result is the bash tool's usual one
(output, exit code), and a cancel kills the command within five seconds."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from acp.schema import (
    ClientCapabilities,
    CreateTerminalResponse,
    KillTerminalResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)

from tests.cli.test_acp_e2e import Editor, fold, heron_acp, new_session, prompt, tool_text
from tests.cli.test_print_json_e2e import Project, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]


class EditorWithTerminal(Editor):
    """Runs each terminal as a local process and records what heron asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.processes: dict[str, asyncio.subprocess.Process] = {}
        self.output: dict[str, bytes] = {}
        self.log: list[tuple[str, Any]] = []

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: Any = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        variables = {v.name: v.value for v in env or []}
        self.log.append(("create", (command, args, cwd, "PATH" in variables)))
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            env=variables,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        terminal = f"term-{len(self.processes) + 1}"
        self.processes[terminal] = process
        self.output[terminal] = b""

        async def collect() -> None:
            assert process.stdout is not None
            async for chunk in process.stdout:
                self.output[terminal] += chunk

        self.collector = asyncio.ensure_future(collect())
        return CreateTerminalResponse(terminal_id=terminal)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        code = await self.processes[terminal_id].wait()
        await self.collector
        return WaitForTerminalExitResponse(
            exit_code=code if code >= 0 else None, signal="SIGKILL" if code < 0 else None
        )

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        process = self.processes[terminal_id]
        status = None if process.returncode is None else TerminalExitStatus(exit_code=max(process.returncode, 0))
        return TerminalOutputResponse(output=self.output[terminal_id].decode(), truncated=False, exit_status=status)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> KillTerminalResponse:
        self.log.append(("kill", terminal_id))
        self.processes[terminal_id].kill()
        await self.processes[terminal_id].wait()
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> ReleaseTerminalResponse:
        self.log.append(("release", terminal_id))
        return ReleaseTerminalResponse()


TERMINAL = ClientCapabilities(terminal=True)


def test_bash_runs_in_the_editors_terminal(project: Project, local_server: LocalServer) -> None:
    call = ("call_bash", "bash", {"command": "echo from-terminal; exit 3"})
    local_server.queue(openai_reply("", [call]), openai_reply("It failed."))
    editor = EditorWithTerminal()

    async def run() -> Any:
        async with heron_acp(project, local_server, editor, capabilities=TERMINAL) as conn:
            sid = await new_session(conn, project)
            return await prompt(conn, sid, "run it")

    assert asyncio.run(run()).stop_reason == "end_turn"
    [(_, (shell, args, cwd, has_path))] = [e for e in editor.log if e[0] == "create"]
    assert shell.endswith("sh") and args == ["-c", "echo from-terminal; exit 3"]
    assert cwd == str(project.cwd) and has_path
    assert ("release", "term-1") in editor.log
    [entry, answer] = fold(editor.updates)
    assert (entry["kind"], entry["title"], entry["status"]) == ("execute", "`echo from-terminal; exit 3`", "failed")
    assert entry["content"][0] == {"type": "terminal", "terminalId": "term-1"}
    assert tool_text(entry) == "from-terminal\n\nCommand exited with code 3"
    sent = local_server.requests[-1].json()["messages"]
    assert [m["content"] for m in sent if m["role"] == "tool"] == ["from-terminal\n\nCommand exited with code 3"]
    assert answer == ("agent_message_chunk", "It failed.")


def test_cancel_kills_the_terminal_command(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("", [("call_sleep", "bash", {"command": "sleep 30"})]))
    editor = EditorWithTerminal()
    editor.wanted = ("tool_call_update", None)  # the update that shows the terminal has no status

    async def run() -> tuple[Any, float]:
        async with heron_acp(project, local_server, editor, capabilities=TERMINAL) as conn:
            sid = await new_session(conn, project)
            task = asyncio.ensure_future(prompt(conn, sid, "wait"))
            await asyncio.wait_for(editor.seen.wait(), 60)
            started = time.monotonic()
            await conn.cancel(session_id=sid)
            response = await asyncio.wait_for(task, 10)
            return response, time.monotonic() - started

    response, took = asyncio.run(run())
    assert response.stop_reason == "cancelled" and took < 5.0
    assert [e[0] for e in editor.log] == ["create", "kill", "release"]
    [entry] = fold(editor.updates)
    assert entry["status"] == "failed" and "Command aborted" in tool_text(entry)
