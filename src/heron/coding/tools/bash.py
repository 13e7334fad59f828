"""The ``bash`` tool: run a shell command, give the model the end of what it printed.

Why it is built the way it is:

* stdout and stderr share one pipe, so the model sees them interleaved as a terminal
  would show them; stdin is ``/dev/null`` so nothing ever waits for input.
* The command runs in its own process group, and a timeout, an abort or a background
  child still holding the pipe after the shell exited ends with the whole group killed
  (:mod:`heron.coding.tools.process`).
* Output is cleaned of terminal escapes (:mod:`heron.coding.tools.terminal`) and kept as
  a bounded tail plus a full-output file (:mod:`heron.coding.tools.bash_output`); the
  notice's line numbers are those of that file.
* A failing command is a result, never an exception: exit codes, signals, timeouts and
  aborts each end the text with one clear line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal as signals
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from heron.agent.tool_meta import ToolMeta, command_argument
from heron.agent.tools import AgentTool, ToolError, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.secrets import child_environment
from heron.coding.tools.details import BashDetails, BashPartialDetails, truncation_details
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.schema_table import builtin_params
from heron.context.tool_output.limits import format_size
from heron.context.tool_output.truncate import Truncation, truncate_tail

if TYPE_CHECKING:
    from heron.coding.tools.bash_output import OutputCollector
    from heron.coding.tools.params import BashParams
    from heron.coding.tools.process import Ending

__all__ = ["BashTool"]  # its parameters: heron.coding.tools.params.BashParams

# --- the tool ---------------------------------------------------------------------


def _format_seconds(seconds: float) -> str:
    return f"{seconds:g}"


class BashTool(AgentTool["BashParams"]):
    name = "bash"
    label = "bash"
    meta = ToolMeta(kind="execute", command=command_argument())
    parameters_ref = builtin_params("bash")

    # How long the pipe may stay open after the shell exited (background children).
    pipe_grace: float = 0.5
    # SIGTERM -> SIGKILL delay when killing the process group.
    kill_grace: float = 2.0
    # Minimum interval between two on_update calls.
    update_interval: float = 0.1

    def __init__(
        self,
        env: ToolEnv,
        *,
        pipe_grace: float | None = None,
        kill_grace: float | None = None,
        update_interval: float | None = None,
    ) -> None:
        self.env = env
        if pipe_grace is not None:
            self.pipe_grace = pipe_grace
        if kill_grace is not None:
            self.kill_grace = kill_grace
        if update_interval is not None:
            self.update_interval = update_interval
        limits = env.limits
        self.description = (
            "Run a shell command in the working directory; stdout and stderr come back together. Output keeps "
            f"the last {limits.max_lines} lines or {format_size(limits.max_bytes)}; when cut, the full output is "
            "saved to a file named in the notice (read it with offset). stdin is empty: nothing waits for input."
        )

    async def execute(
        self, call_id: str, params: BashParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        # The process machinery loads with the first command, not when the tool is offered.
        from heron.coding.tools.bash_output import OutputCollector
        from heron.coding.tools.confined import child_setup, confinement_for
        from heron.coding.tools.process import PipeProtocol, Supervision, resolve_shell, signal_group, supervise
        from heron.coding.tools.terminal import StreamSanitizer

        if signal.aborted:
            return ToolResult.error("Command aborted", details=_details(None, None, aborted=True))
        cwd = self.env.cwd
        if not cwd.exists():
            raise ToolError(f"Working directory does not exist: {cwd}")
        if not cwd.is_dir():
            raise ToolError(f"Working directory is not a directory: {cwd}")
        shell = resolve_shell(self.env.shell)
        limits = self.env.limits
        params = params.model_copy(update={"timeout": self._timeout(params.timeout)})
        child_env = self.env.child_env() if self.env.child_env is not None else child_environment()

        loop = asyncio.get_running_loop()
        sanitizer = StreamSanitizer()
        sink = OutputCollector(
            limits.max_lines, limits.max_bytes, lambda: self._spill_path(call_id), self.env.spill_max_bytes
        )
        outside = call_id if params.outside_sandbox else None
        confinement = confinement_for(self.env, [shell, "-c", params.command], cwd, outside_call=outside)
        argv = confinement.argv
        setup = child_setup(self.env, confinement, child_env)
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: PipeProtocol(loop, sanitizer, sink),
                *argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=str(cwd),
                start_new_session=True,
                env=setup.env,
                preexec_fn=setup.preexec_fn,
            )
        except OSError as exc:
            setup.release()
            raise ToolError(f"Could not start {shell}: {exc}") from exc
        pgid = transport.get_pid()
        settled = False
        try:
            waits = Supervision(params.timeout, self.kill_grace, self.pipe_grace, self.update_interval)
            ending = await supervise(protocol, pgid, sink, signal, waits, lambda: on_update(self._partial(sink)))
            settled = True
        finally:
            if not settled:  # cancelled or failed: nothing the command started may outlive it
                signal_group(pgid, signals.SIGKILL)
            else:  # returned: what it left running on purpose is the user's, never reaped
                setup.release()
            sink.feed(sanitizer.finish())
            sink.finish()
            transport.close()
        returncode = confinement.exit_status(transport.get_returncode() if ending.outcome == "exit" else None)
        return confinement.apply(self._result(sink, ending, returncode, params))

    # -- helpers --

    def _timeout(self, asked: float | None) -> float | None:
        """The model's timeout, or the default; never above the maximum (a command that
        never ends must not hold the session forever)."""
        timeout = asked if asked is not None else self.env.bash_default_timeout
        ceiling = self.env.bash_max_timeout
        if ceiling is not None and (timeout is None or timeout > ceiling):
            return ceiling
        return timeout

    def _spill_path(self, call_id: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", call_id)[:80].strip(".") or os.urandom(8).hex()
        return self.env.spill_dir() / f"bash-{safe}.log"

    def _partial(self, sink: OutputCollector) -> ToolResult:
        limits = self.env.limits
        shown = truncate_tail(sink.tail_text(), limits.max_lines, limits.max_bytes)
        return ToolResult.text(
            shown.content,
            details=BashPartialDetails(
                partial=True,
                total_lines=sink.total_lines,
                total_bytes=sink.total_bytes,
                full_output_path=str(sink.spill_path) if sink.spill_path else None,
            ),
        )

    def _result(
        self,
        sink: OutputCollector,
        ending: Ending,
        returncode: int | None,
        params: BashParams,
    ) -> ToolResult:
        from heron.coding.tools.process import ending_lines

        outcome = ending.outcome
        limits = self.env.limits
        shown = truncate_tail(sink.tail_text(), limits.max_lines, limits.max_bytes)
        body = shown.content
        if not shown.truncated and body.endswith("\n"):
            body = body[:-1]
        parts = [body or "(no output)"]

        if not shown.truncated and sink.spill_path is not None:
            # Over the limit only by the final newline: the model sees everything, so a
            # file holding the same text would just be clutter.
            with contextlib.suppress(OSError):
                sink.spill_path.unlink()
            sink.spill_path = None
        truncation: Truncation | None = None
        if shown.truncated:
            truncation = replace(shown, total_lines=sink.total_lines, total_bytes=sink.total_bytes)
            parts.append(self._notice(sink, shown))
        parts.extend(ending_lines(ending))

        is_error = True
        if outcome == "timeout":
            assert params.timeout is not None
            line = f"Command timed out after {_format_seconds(params.timeout)} seconds"
            if params.timeout == self.env.bash_max_timeout:
                line += " (the longest allowed: bash.maxTimeoutMs in the settings)"
            parts.append(line)
        elif outcome == "aborted":
            parts.append("Command aborted")
        elif returncode is not None and returncode < 0:
            try:
                name = signals.Signals(-returncode).name
            except ValueError:
                name = str(-returncode)
            parts.append(f"Command terminated by signal {name}")
        elif returncode:
            parts.append(f"Command exited with code {returncode}")
        else:
            is_error = False

        details = _details(
            returncode,
            truncation,
            full_output_path=str(sink.spill_path) if sink.spill_path else None,
            timed_out=outcome == "timeout",
            aborted=outcome == "aborted",
        )
        if ending.background_killed:
            details["background_killed"] = True
        if ending.escaped or ending.left_running:
            details["escaped_pids"], details["left_running"] = list(ending.escaped), list(ending.left_running)
        if sink.spill_error:
            details["spill_error"] = sink.spill_error
        if sink.spill_omitted_bytes:
            details["spill_omitted_bytes"] = sink.spill_omitted_bytes
        return ToolResult.text("\n\n".join(parts), details=details, is_error=is_error)

    def _notice(self, sink: OutputCollector, shown: Truncation) -> str:
        """Line numbers are those of the full output (and so of the spill file)."""
        total = sink.total_lines
        if sink.spill_path is not None and not sink.spill_error:
            where = f"Full output: {sink.spill_path}"
            if sink.spill_omitted_bytes:
                where += (
                    f" (capped at {format_size(sink.spill_max_bytes)}: it keeps the first and the last part; "
                    f"{format_size(sink.spill_omitted_bytes)} ({sink.spill_omitted_lines} lines) in between were "
                    "left out, where a marker line says so, so its line numbers after the marker are lower)"
                )
        else:
            where = f"Full output could not be saved: {sink.spill_error or 'unknown error'}"
        if shown.last_line_partial:
            return (
                f"[Showing last {format_size(shown.output_bytes)} of line {total} "
                f"(line is {format_size(sink.last_line_bytes)}). {where}]"
            )
        start = total - shown.output_lines + 1
        if shown.truncated_by == "lines":
            return f"[Showing lines {start}-{total} of {total}. {where}]"
        return f"[Showing lines {start}-{total} of {total} ({format_size(self.env.limits.max_bytes)} limit). {where}]"


def _details(
    exit_code: int | None,
    truncation: Truncation | None,
    *,
    full_output_path: str | None = None,
    timed_out: bool = False,
    aborted: bool = False,
) -> BashDetails:
    return BashDetails(
        exit_code=exit_code,
        truncation=truncation_details(truncation),
        full_output_path=full_output_path,
        timed_out=timed_out,
        aborted=aborted,
    )
