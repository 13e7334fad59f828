"""The ``script`` tool: Python the model writes, calling heron's tools, whose inner calls
never enter the context (docs/script.md).

A survey of twenty files, a loop over search results, a filter over a large JSON: with
plain tool calls every intermediate result sits in the context until pruning or
compaction; in a script only what it prints and returns does. Why it is built this way:

* The code runs in its own process of the interpreter heron runs on (no extra dependency),
  in its own process group, with heron's environment without credentials (as bash), and is
  stopped the way bash is - timeout, abort, detached children included
  (:func:`heron.coding.tools.process.supervise`).
* Its tool calls come back to heron over a pipe of their own (the script's stdout stays
  its output) and run through the session's :class:`~heron.coding.tools.env.ToolHost`: the
  path a model's call takes, so permissions, hooks, redaction, checkpoints and the ledger see
  each one (:mod:`heron.coding.tools.script_calls`).
* Output is cut like bash's (the last lines, the rest in a file); the return value follows
  as JSON; the turn's result budgets apply to the whole text as to any result.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal as signals
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heron.agent.tool_meta import ToolMeta
from heron.agent.tools import INNER_CALLS, AgentTool, ToolError, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.secrets import child_environment
from heron.coding.tools.details import truncation_details
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.schema_table import builtin_params
from heron.context.tool_output.truncate import truncate_tail

if TYPE_CHECKING:  # the process machinery loads with the first script, not when the tool is offered
    from heron.coding.tools.bash_output import OutputCollector
    from heron.coding.tools.params import ScriptParams
    from heron.coding.tools.script_calls import CallChannel

CHILD_DIR = Path(__file__).parent / "script_child"
_BOOT = "import sys; sys.path.insert(0, sys.argv.pop(1)); import heron_script_runner; heron_script_runner.main()"

SCRIPT_META = ToolMeta(kind="execute", calls_tools=True)


class ScriptTool(AgentTool["ScriptParams"]):
    name = "script"
    label = "script"
    meta = SCRIPT_META
    parameters_ref = builtin_params("script")

    kill_grace: float = 1.0
    pipe_grace: float = 0.5
    update_interval: float = 0.2

    def __init__(self, env: ToolEnv) -> None:
        self.env = env
        self.description = (
            "Run Python that calls your other tools as functions - read(path, offset=None, limit=None), "
            "bash(command), edit(...), write(...), call(name, **args), mcp(server, tool, **args) - each returning "
            "the tool's text (.details for its data; a refused or failed call raises ToolError). Only what the "
            "script prints and returns comes back to you, so use it for many similar calls (a survey of files) "
            "or to filter large results; not for a single call. "
            f"At most {env.script_max_calls} tool calls and {env.script_max_timeout:g} s per script."
        )

    async def execute(
        self, call_id: str, params: ScriptParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        from heron.coding.tools.bash_output import OutputCollector
        from heron.coding.tools.confined import child_setup, confinement_for
        from heron.coding.tools.process import PipeProtocol, Supervision, signal_group, supervise
        from heron.coding.tools.script_calls import CallChannel
        from heron.coding.tools.terminal import StreamSanitizer

        if signal.aborted:
            return ToolResult.error("Script aborted", details={"aborted": True, INNER_CALLS: []})
        if self.env.tool_host is None:
            raise ToolError("This session cannot run scripts: no tool host (heron's runtime provides one)")
        if not self.env.cwd.is_dir():
            raise ToolError(f"Working directory does not exist: {self.env.cwd}")
        timeout = min(params.timeout or self.env.script_max_timeout, self.env.script_max_timeout)
        limits = self.env.limits
        sanitizer = StreamSanitizer()
        sink = OutputCollector(
            limits.max_lines, limits.max_bytes, lambda: self._spill_path(call_id), self.env.spill_max_bytes
        )
        requests_r, requests_w = os.pipe()
        answers_r, answers_w = os.pipe()
        env = self.env.child_env() if self.env.child_env is not None else child_environment()
        env["HERON_TOOLS_FDS"] = f"{requests_w},{answers_r}"
        loop = asyncio.get_running_loop()
        # the script's own file access is held to bash's boundary
        confinement = confinement_for(self.env, [sys.executable, "-u", "-c", _BOOT, str(CHILD_DIR)], self.env.cwd)
        argv = confinement.argv
        setup = child_setup(self.env, confinement, env)
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: PipeProtocol(loop, sanitizer, sink),
                *argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=str(self.env.cwd),
                start_new_session=True,
                env=setup.env,
                preexec_fn=setup.preexec_fn,
                pass_fds=(requests_w, answers_r),
            )
        except OSError as exc:
            for fd in (requests_r, answers_w):  # the child's ends are closed below
                os.close(fd)
            setup.release()
            raise ToolError(f"Could not start Python ({sys.executable}): {exc}") from exc
        finally:  # the child holds its own copies of its ends
            for fd in (requests_w, answers_r):
                os.close(fd)
        pgid = transport.get_pid()
        channel = CallChannel(self.env.tool_host, call_id, self.env.script_max_calls, signal, pgid, self.env.reads)
        settled = False
        served: asyncio.Task[None] | None = None
        try:
            served = await _serve(channel, requests_r, answers_w, params.code)
            waits = Supervision(timeout, self.kill_grace, self.pipe_grace, self.update_interval, reap=True)
            ending = await supervise(protocol, pgid, sink, signal, waits, lambda: on_update(self._partial(sink)))
            await _finish(served, self.pipe_grace)
            settled = True
        finally:
            if not settled:  # cancelled or failed: nothing the script started may outlive it
                signal_group(pgid, signals.SIGKILL)
                if served is not None:
                    served.cancel()
            else:  # returned: what it left running on purpose is the user's, never reaped
                setup.release()
            sink.feed(sanitizer.finish())
            sink.finish()
            transport.close()
        returncode = confinement.exit_status(transport.get_returncode() if ending.outcome == "exit" else None)
        return confinement.apply(self._result(sink, channel, ending.outcome, returncode, timeout))

    def _spill_path(self, call_id: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", call_id)[:80].strip(".") or os.urandom(8).hex()
        return self.env.spill_dir() / f"script-{safe}.log"

    def _partial(self, sink: OutputCollector) -> ToolResult:
        limits = self.env.limits
        shown = truncate_tail(sink.tail_text(), limits.max_lines, limits.max_bytes)
        return ToolResult.text(shown.content, details={"partial": True, "total_lines": sink.total_lines})

    def _result(
        self, sink: OutputCollector, channel: CallChannel, outcome: str, returncode: int | None, timeout: float
    ) -> ToolResult:
        limits = self.env.limits
        shown = truncate_tail(sink.tail_text(), limits.max_lines, limits.max_bytes)
        body = shown.content if shown.truncated else shown.content.removesuffix("\n")
        parts = [body] if body else []
        if not shown.truncated and sink.spill_path is not None:
            with contextlib.suppress(OSError):
                sink.spill_path.unlink()
            sink.spill_path = None
        if shown.truncated:
            where = f"Full output: {sink.spill_path}" if sink.spill_path else "the rest could not be saved"
            parts.append(f"[Showing the last {shown.output_lines} of {sink.total_lines} output lines. {where}]")
        done = channel.outcome or {}
        failure = _failure(done, channel, outcome, returncode, timeout, self.env.script_max_timeout)
        if failure is None and done.get("returned"):
            parts.append("Return value:\n" + json.dumps(done.get("value"), ensure_ascii=False))
        if failure is not None:
            parts.append(failure)
        details: dict[str, Any] = {
            INNER_CALLS: channel.calls,
            "exit_code": returncode,
            "timed_out": outcome == "timeout",
            "aborted": outcome == "aborted",
            "call_limit_reached": channel.limit_reached,
            "truncation": truncation_details(shown if shown.truncated else None),
            "full_output_path": str(sink.spill_path) if sink.spill_path else None,
        }
        if failure is None and done.get("returned"):
            details["returned"] = True
        return ToolResult.text("\n\n".join(parts) or "(no output)", details=details, is_error=failure is not None)


def _failure(
    done: dict[str, Any], channel: CallChannel, outcome: str, returncode: int | None, timeout: float, ceiling: float
) -> str | None:
    """The line saying why the script did not finish well, or None when it did."""
    calls = len(channel.calls)
    if channel.limit_reached:
        return (
            f"Script stopped: it asked for more than {channel.max_calls} tool calls (the cap per script, "
            f"script.maxCalls in the settings); {calls} ran. Do the work in smaller scripts, or filter more in Python."
        )
    if outcome == "timeout":
        line = f"Script timed out after {timeout:g} seconds ({calls} tool calls ran)"
        return line + (" (the longest allowed: script.maxTimeoutMs in the settings)" if timeout == ceiling else "")
    if outcome == "aborted":
        return "Script aborted"
    if channel.protocol_error is not None:
        return f"Script stopped: {channel.protocol_error}"
    if done.get("type") == "error":
        kind = str(done.get("kind"))
        head = {"syntax": "The script does not compile:", "return": "", "exit": ""}.get(kind, "The script raised:")
        return (head + "\n" if head else "") + str(done.get("traceback", ""))
    if done.get("type") != "result":
        if returncode is not None and returncode < 0:
            try:
                why = f"was killed by signal {signals.Signals(-returncode).name}"
            except ValueError:
                why = f"was killed by signal {-returncode}"
        else:
            why = f"exited with code {returncode}"
        return f"The script's process {why} before it finished (no result)"
    return None


async def _serve(channel: CallChannel, requests_fd: int, answers_fd: int, code: str) -> asyncio.Task[None]:
    """Connect the two pipes, send the code, and answer the script's requests in a task."""
    from heron.coding.tools.script_calls import LINE_LIMIT

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(requests_fd, "rb", buffering=0)
    )
    write_transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(answers_fd, "wb", buffering=0))

    def write(message: dict[str, Any]) -> None:
        if not write_transport.is_closing():
            write_transport.write((json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass"))

    async def run() -> None:
        try:
            write(channel.start_message(code))
            await channel.serve(reader, write)
        finally:
            read_transport.close()
            write_transport.close()

    return asyncio.create_task(run())


async def _finish(served: asyncio.Task[None], grace: float) -> None:
    """The script has ended: its last message is read (already in the pipe), then the channel closes."""
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(served), grace)
    if not served.done():
        served.cancel()
    await asyncio.gather(served, return_exceptions=True)
