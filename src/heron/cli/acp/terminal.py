"""heron's bash run in the editor's terminal: ACP ``terminal/*``, used when the client
offers it (``clientCapabilities.terminal``).

The editor runs the command and shows its output live inside the tool call (the
``tool_call_update`` carries the terminal's id); heron waits for the exit, kills the
terminal on cancel or timeout, and turns the output into the same result the local bash
tool gives - the same timeout rules, truncation, spill file and exit-code lines (it is a
:class:`BashTool` whose process is the editor's). The command's environment is heron's
child environment (credentials removed) passed as variables; what the editor adds to it
is the editor's.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal as signals
from collections.abc import Callable
from typing import Any

from acp.schema import EnvVariable

from heron.agent.tools import AgentTool, ToolError, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.secrets import child_environment
from heron.coding.tools.bash import BashTool
from heron.coding.tools.bash_output import OutputCollector
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.params import BashParams
from heron.coding.tools.process import Ending, resolve_shell

# The most output the editor keeps for heron (it drops the oldest beyond this).
OUTPUT_LIMIT_BYTES = 4 * 1024 * 1024
Show = Callable[[str, str], None]  # (tool call id, terminal id): put the terminal in the tool call


class TerminalBash(BashTool):
    def __init__(self, env: ToolEnv, conn: Any, session_id: str, show: Show) -> None:
        super().__init__(env)
        self.conn = conn
        self.session_id = session_id
        self.show = show

    async def execute(
        self, call_id: str, params: BashParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        if signal.aborted:
            return await super().execute(call_id, params, signal, on_update)
        params = params.model_copy(update={"timeout": self._timeout(params.timeout)})
        child = self.env.child_env() if self.env.child_env is not None else child_environment()
        try:
            created = await self.conn.create_terminal(
                session_id=self.session_id,
                command=resolve_shell(self.env.shell),
                args=["-c", params.command],
                cwd=str(self.env.cwd),
                env=[EnvVariable(name=k, value=v) for k, v in child.items()],
                output_byte_limit=min(OUTPUT_LIMIT_BYTES, self.env.spill_max_bytes),
            )
        except Exception as exc:  # any failure of the client: the model hears it as a tool error
            raise ToolError(f"The editor could not start the command: {exc}") from exc
        terminal = created.terminal_id
        self.show(call_id, terminal)
        try:
            outcome, code = await self._wait(terminal, params.timeout, signal)
            output = await self.conn.terminal_output(session_id=self.session_id, terminal_id=terminal)
        finally:
            with contextlib.suppress(Exception):
                await self.conn.release_terminal(session_id=self.session_id, terminal_id=terminal)
        sink = OutputCollector(
            self.env.limits.max_lines,
            self.env.limits.max_bytes,
            lambda: self._spill_path(call_id),
            self.env.spill_max_bytes,
        )
        sink.feed(output.output)
        sink.finish()
        result = self._result(sink, Ending(outcome, False), code if outcome == "exit" else None, params)
        if output.truncated and result.content:
            note = "[The editor kept only the end of the output; earlier output is not in the full-output file.]"
            result.content[0].text = f"{note}\n{result.content[0].text}"  # type: ignore[union-attr]
        return result

    async def _wait(self, terminal: str, timeout: float | None, signal: AbortSignal) -> tuple[Any, int | None]:
        """Until the command exits ("exit", its code; a signal as a negative code), is
        aborted or times out (the terminal is killed then)."""
        loop = asyncio.get_running_loop()
        aborted: asyncio.Future[None] = loop.create_future()

        def mark() -> None:
            if not aborted.done():
                aborted.set_result(None)

        def on_abort() -> None:
            loop.call_soon_threadsafe(mark)

        unsubscribe = signal.add_listener(on_abort)
        exit_task = asyncio.ensure_future(
            self.conn.wait_for_terminal_exit(session_id=self.session_id, terminal_id=terminal)
        )
        try:
            done, _ = await asyncio.wait({exit_task, aborted}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            unsubscribe()
        if exit_task in done:
            status = exit_task.result()
            if status.signal:
                number = getattr(signals, status.signal, None)
                return "exit", -int(number) if number is not None else 1
            return "exit", status.exit_code
        exit_task.cancel()
        with contextlib.suppress(Exception):
            await self.conn.kill_terminal(session_id=self.session_id, terminal_id=terminal)
        return ("aborted" if aborted.done() else "timeout"), None


def attach(
    tools: list[AgentTool[Any]], env: ToolEnv, conn: Any, session_id: str, show: Show, capabilities: Any
) -> list[AgentTool[Any]] | None:
    """The tool list with the bash tool (by its class: under whatever name it is registered)
    replaced by :class:`TerminalBash`, or None when the client has no terminal (or the
    session no bash tool)."""
    if not getattr(capabilities, "terminal", False) or not any(isinstance(t, BashTool) for t in tools):
        return None
    return [_in_terminal(t, env, conn, session_id, show) if isinstance(t, BashTool) else t for t in tools]


def _in_terminal(tool: BashTool, env: ToolEnv, conn: Any, session_id: str, show: Show) -> TerminalBash:
    terminal = TerminalBash(env, conn, session_id, show)
    terminal.name = tool.name
    return terminal
