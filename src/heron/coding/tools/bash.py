"""The ``bash`` tool: run a shell command, give the model the end of what it printed.

Why it is built the way it is:

* The command runs in its own session (process group), so a timeout or an abort can
  stop everything it started, not just the shell.
* stdout and stderr share one pipe, so the model sees them interleaved as a terminal
  would show them; stdin is ``/dev/null`` so nothing ever waits for input.
* Memory is bounded whatever the command prints: only a rolling tail (about twice the
  byte limit) is kept. Once the output passes the limits, everything -- including what
  was already received -- streams to a spill file, and the notice names it with line
  numbers counted over the *full* output, so ``read`` with an offset lands where the
  model expects.
* Terminal noise costs tokens and confuses models: colour and cursor escapes are
  removed, and a carriage return that redraws a line (progress bars) keeps only the
  final state of that line. The spill file holds the same cleaned text, so its line
  numbers match the notice.
* A command that leaves a background child holding the pipe (``server &``) must not
  hang the agent: once the shell itself has exited, the pipe gets a short grace period,
  then the group is killed and the tool returns.
* A failing command is a result, never an exception: exit codes, signals, timeouts and
  aborts each end the text with one clear line.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import secrets
import shutil
import signal as signals
import subprocess
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import IO, Any

from pydantic import Field

from heron.agent.tools import AgentTool, ToolError, ToolParams, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.tools.env import ToolEnv
from heron.context.limits import format_size
from heron.context.truncate import Truncation, truncate_tail

# --- shell ----------------------------------------------------------------------

_KNOWN_SHELLS = frozenset({"bash", "zsh", "sh"})


def resolve_shell(configured: str | None) -> str:
    """The shell to run commands with.

    The user's own ``$SHELL`` is preferred, so commands behave as they would in the
    user's terminal, but only when it is a shell whose syntax the model writes (fish or
    nushell would reject ordinary ``&&`` / ``$(...)`` scripts).
    """
    if configured:
        return configured
    user_shell = os.environ.get("SHELL", "")
    if Path(user_shell).name in _KNOWN_SHELLS and os.access(user_shell, os.X_OK):
        return user_shell
    if os.access("/bin/bash", os.X_OK):
        return "/bin/bash"
    return shutil.which("sh") or "/bin/sh"


# --- cleaning terminal output -----------------------------------------------------

# Every pattern starts with a literal ESC so that the regex engine can skip plain text at
# C speed; 8-bit (C1) introducers are first rewritten to their ESC forms.
_ESCAPES = re.compile(
    r"\x1b(?:"
    r"\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor movement, erase
    r"|\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: window titles, hyperlinks (ends with BEL or ST)
    r"|[PX^_][^\x1b]*\x1b\\"  # DCS, SOS, PM, APC strings
    r"|[ -/]*[0-~]?"  # charset selection, keypad modes, and a lone ESC
    r")"
)
# A sequence cut off by the end of a read: carried over to the next one.
_PARTIAL = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*\x1b?|[PX^_][^\x1b]*\x1b?|[ -/]*)")
_C1_TO_ESC = {0x9B: "\x1b[", 0x9D: "\x1b]", 0x9C: "\x1b\\", 0x90: "\x1bP", 0x98: "\x1bX", 0x9E: "\x1b^",
              0x9F: "\x1b_"}
_C1_INTRODUCERS = tuple(chr(c) for c in _C1_TO_ESC)
# On a complete line: everything up to the last \r that is followed by more text.
_REDRAWN = re.compile(r"^[^\n]*\r(?=[^\r\n])", re.MULTILINE)
_OVERSTRIKE = re.compile(r"[^\n\x08]\x08")  # "x\bx" (man pages): keep what a terminal shows
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # all but \t \n \r
# Raw bytes that send a chunk down the slow path: C0 controls except \t and \n (\r, ESC and
# backspace included), DEL, and 0xC2, the lead byte of every UTF-8-encoded C1 control.
_SPECIAL_BYTES = bytes([*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, 0xC2])
_CONTROL_BYTES = bytes(b for b in _SPECIAL_BYTES if b not in (0x0D, 0x1B))  # all but CR and ESC
# An escape sequence longer than this that never ends is garbage, not something to wait for.
_MAX_CARRY = 4096


class StreamSanitizer:
    """Bytes from a terminal-oriented program -> plain text, chunk by chunk.

    Decodes UTF-8 with replacement characters, removes escape sequences (even when one
    is split across two reads) and control characters. Carriage returns are kept: what
    they mean depends on the line they are in, which :class:`OutputCollector` decides.
    Output without any special byte (the bulk of large outputs) takes a fast path that
    costs a decode and one C-level scan.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._carry = ""
        self._after_c2 = False

    def feed(self, data: bytes) -> str:
        text = self._decoder.decode(data)
        after_c2, self._after_c2 = self._after_c2, data.endswith(b"\xc2")
        if self._carry or after_c2:
            return self._clean(self._carry + text)
        size = len(data)
        if len(data.translate(None, _SPECIAL_BYTES)) == size:
            return text
        # Coloured output usually has ESC and CR only: then the control-character pass,
        # as slow as the escape pass, can be skipped.
        return self._clean(text, controls=len(data.translate(None, _CONTROL_BYTES)) != size)

    def finish(self) -> str:
        """Whatever is left: an unfinished escape sequence at the very end is dropped."""
        text = self._carry + self._decoder.decode(b"", final=True)
        return self._clean(text, final=True)

    def _clean(self, text: str, final: bool = False, controls: bool = True) -> str:
        self._carry = ""
        if controls and any(c in text for c in _C1_INTRODUCERS):
            text = text.translate(_C1_TO_ESC)
        if "\x1b" in text:
            cut = _partial_start(text)
            if cut is not None:
                if not final:
                    self._carry = text[cut:]
                text = text[:cut]
            text = _ESCAPES.sub("", text)
        if not controls:
            return text
        if "\x08" in text:
            text = _OVERSTRIKE.sub("", text)
        return _CONTROLS.sub("", text)


def _partial_start(text: str) -> int | None:
    """Where an escape sequence that the end of ``text`` cut off begins, if one does.

    At most two ESCs can be part of it (the introducer and the first half of a string
    terminator, as in ``ESC ] 0;title ESC``), so two candidates are enough.
    """
    floor = max(0, len(text) - _MAX_CARRY)
    last = text.rfind("\x1b", floor)
    if last == -1 or _PARTIAL.fullmatch(text, last) is None:
        return None
    before = text.rfind("\x1b", floor, last)
    if before != -1 and _PARTIAL.fullmatch(text, before) is not None:
        return before
    return last


class OutputCollector:
    """The cleaned output of one command: counters, a rolling tail, and the spill file.

    Line semantics: ``\\n`` ends a line; ``\\r\\n`` is a line end too; a bare ``\\r``
    followed by more text on the same line discards what came before it on that line
    (the redraw of a progress bar), so only the final state of the line is kept. The
    line being written is held back so that a redraw can still replace it, up to
    ``line_cap`` characters (beyond that it is committed; a later ``\\r`` then only
    replaces the part not yet committed).

    Memory stays bounded: the committed text is kept only as a tail of at least
    ``2 * max_bytes`` bytes once the output passes the limits, and everything goes to
    the spill file from then on.
    """

    def __init__(self, max_lines: int, max_bytes: int, spill_path: Callable[[], Path]) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.keep_bytes = 2 * max_bytes
        self.line_cap = max(max_bytes, 4096)
        self._spill_path_factory = spill_path
        self.total_bytes = 0
        self._newlines = 0
        self._since_newline = 0  # bytes of the (committed part of the) line being written
        self._previous_line = 0  # bytes of the last completed line
        self._tail: deque[tuple[str, int]] = deque()
        self._tail_bytes = 0
        self._line: list[str] = []
        self._line_len = 0
        self._pending_cr = False
        self.spilling = False
        self.spill_path: Path | None = None
        self.spill_error: str | None = None
        self._spill: IO[bytes] | None = None
        self.closed = False
        self.dirty = False

    # -- input --

    def feed(self, text: str) -> None:
        if self.closed or not text:
            return
        self.dirty = True
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        first_cr = text.find("\r")
        if first_cr == -1:
            self._feed_plain(text)
            return
        # Only the lines that contain a bare \r need the redraw treatment. The first and
        # last of them may continue or leave open the line being written (stateful); the
        # complete lines between are collapsed by one regex pass (a progress bar printed
        # a million times must not mean a million Python-level steps).
        start = text.rfind("\n", 0, first_cr) + 1
        last_cr = text.rfind("\r")
        end = text.find("\n", last_cr)
        if end == -1:
            end = len(text)
        if start:
            self._feed_plain(text[:start])
        first, *rest = text[start:end].split("\n")
        self._feed_redrawn(first)
        if rest:
            last = rest.pop()
            middle = "\n".join(rest)
            if "\r" in middle:
                middle = _REDRAWN.sub("", middle).replace("\r", "")
            self._feed_plain("\n" + middle + "\n" if rest else "\n")
            self._feed_redrawn(last)
        if end < len(text):
            self._feed_plain(text[end:])

    def _feed_redrawn(self, piece: str) -> None:
        """Part of one line containing bare carriage returns: text after a \r replaces the
        line; a \r at the end is remembered, since what follows decides what it means."""
        parts = piece.split("\r")
        last = len(parts) - 1
        while last > 0 and not parts[last]:
            last -= 1
        if last:
            self._pending_cr = True
        if parts[last]:
            self._feed_plain(parts[last])
        if len(parts) > 1 and not parts[-1]:
            self._pending_cr = True

    def _feed_plain(self, text: str) -> None:
        """Text without a bare carriage return (a pending one may precede it)."""
        if self._pending_cr:
            self._pending_cr = False
            if text[0] != "\n":
                self._line.clear()
                self._line_len = 0
        newline = text.rfind("\n")
        if newline == -1:
            self._line.append(text)
            self._line_len += len(text)
            if self._line_len > self.line_cap:
                self._flush_line()
            return
        head = text[: newline + 1]
        if self._line:
            self._line.append(head)
            head = "".join(self._line)
            self._line.clear()
        self._commit(head)
        rest = text[newline + 1 :]
        self._line_len = len(rest)
        if rest:
            self._line.append(rest)
            if self._line_len > self.line_cap:
                self._flush_line()

    def _flush_line(self) -> None:
        if self._line:
            text = "".join(self._line)
            self._line.clear()
            self._line_len = 0
            self._commit(text)

    def finish(self) -> None:
        """End of output: commit the last line and close the spill file."""
        if self.closed:
            return
        self._pending_cr = False
        self._flush_line()
        self.closed = True
        if self._spill is not None:
            try:
                self._spill.close()
            except OSError as exc:
                self.spill_error = self.spill_error or str(exc)
            self._spill = None

    # -- committed text --

    def _commit(self, text: str) -> None:
        data = text.encode("utf-8", "surrogatepass")
        size = len(data)
        self.total_bytes += size
        last = data.rfind(b"\n")
        if last == -1:
            self._since_newline += size
        else:
            self._newlines += data.count(b"\n")
            before = data.rfind(b"\n", 0, last)
            self._previous_line = (self._since_newline + last) if before == -1 else (last - before - 1)
            self._since_newline = size - last - 1
        self._tail.append((text, size))
        self._tail_bytes += size
        if not self.spilling and (self.total_bytes > self.max_bytes or self.total_lines > self.max_lines):
            self._start_spill()
        elif self._spill is not None:
            self._write(data)
        if self.spilling:
            while self._tail and self._tail_bytes - self._tail[0][1] >= self.keep_bytes:
                self._tail_bytes -= self._tail.popleft()[1]

    def _start_spill(self) -> None:
        """Open the spill file and write everything received so far (still all in the tail)."""
        self.spilling = True
        try:
            path = self._spill_path_factory()
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._spill = open(path, "xb")  # noqa: SIM115 - closed in finish()
            except FileExistsError:
                path = path.with_name(f"{path.stem}-{secrets.token_hex(4)}{path.suffix}")
                self._spill = open(path, "xb")  # noqa: SIM115
            self.spill_path = path
        except OSError as exc:
            self.spill_error = str(exc)
            return
        for text, _ in self._tail:
            self._write(text.encode("utf-8", "surrogatepass"))

    def _write(self, data: bytes) -> None:
        assert self._spill is not None
        try:
            self._spill.write(data)
        except OSError as exc:
            self.spill_error = str(exc)
            with contextlib.suppress(OSError):
                self._spill.close()
            self._spill = None

    # -- views --

    @property
    def total_lines(self) -> int:
        """Lines of the committed output; a final newline does not start another line."""
        return self._newlines + (1 if self._since_newline else 0)

    @property
    def last_line_bytes(self) -> int:
        return self._since_newline if self._since_newline else self._previous_line

    def tail_text(self) -> str:
        """The kept tail plus the line still being written."""
        return "".join(text for text, _ in self._tail) + "".join(self._line)


# --- the tool ---------------------------------------------------------------------


class BashParams(ToolParams):
    command: str = Field(description="The shell command to run (bash syntax).")
    timeout: float | None = Field(
        default=None,
        gt=0,
        description="Optional timeout in seconds; the command and everything it started are killed when it passes.",
    )


class _Protocol(asyncio.SubprocessProtocol):
    """Feeds the pipe straight into the collector; tells apart "the shell exited" from
    "the pipe closed", which a background child can delay indefinitely."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sanitizer: StreamSanitizer, sink: OutputCollector) -> None:
        self.sanitizer = sanitizer
        self.sink = sink
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if not self.sink.closed:
            self.sink.feed(self.sanitizer.feed(data.encode() if isinstance(data, str) else data))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.closed.done():
            self.closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


def _group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process is left in the group.

    ``killpg(pgid, 0)`` alone also succeeds for zombies, and in containers whose init
    does not reap orphans the killed children stay zombies forever.
    """
    proc = Path("/proc")
    if proc.is_dir() and (proc / "self" / "stat").exists():
        try:
            entries = list(os.scandir(proc))
        except OSError:
            entries = []
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                stat = (proc / entry.name / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _format_seconds(seconds: float) -> str:
    return f"{seconds:g}"


class BashTool(AgentTool[BashParams]):
    name = "bash"
    label = "bash"
    parameters = BashParams

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
            "Run a shell command in the current working directory and return what it printed "
            "(stdout and stderr together). Output is cut to the last "
            f"{limits.max_lines} lines or {format_size(limits.max_bytes)}, whichever comes first; "
            "when cut, the full output is saved to a file named in the result (read it with an offset). "
            "stdin is empty: interactive commands will not wait for input. Optional timeout in seconds."
        )

    async def execute(
        self, call_id: str, params: BashParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        if signal.aborted:
            return ToolResult.error("Command aborted", details=self._details(None, None, aborted=True))
        cwd = self.env.cwd
        if not cwd.exists():
            raise ToolError(f"Working directory does not exist: {cwd}")
        if not cwd.is_dir():
            raise ToolError(f"Working directory is not a directory: {cwd}")
        shell = resolve_shell(self.env.shell)
        limits = self.env.limits

        loop = asyncio.get_running_loop()
        sanitizer = StreamSanitizer()
        sink = OutputCollector(limits.max_lines, limits.max_bytes, lambda: self._spill_path(call_id))
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: _Protocol(loop, sanitizer, sink),
                shell,
                "-c",
                params.command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=str(cwd),
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolError(f"Could not start {shell}: {exc}") from exc
        pgid = transport.get_pid()

        abort_requested: asyncio.Future[None] = loop.create_future()

        def on_abort() -> None:
            def mark() -> None:
                if not abort_requested.done():
                    abort_requested.set_result(None)

            loop.call_soon_threadsafe(mark)

        unsubscribe = signal.add_listener(on_abort)
        deadline = loop.time() + params.timeout if params.timeout is not None else None
        outcome = "exit"
        background_killed = False
        settled = False
        last_update = 0.0
        try:
            while True:
                wait = self.update_interval
                if deadline is not None:
                    wait = max(0.0, min(wait, deadline - loop.time()))
                await asyncio.wait(
                    {protocol.exited, abort_requested}, timeout=wait, return_when=asyncio.FIRST_COMPLETED
                )
                if protocol.exited.done():
                    break
                if abort_requested.done():
                    outcome = "aborted"
                    break
                if deadline is not None and loop.time() >= deadline:
                    outcome = "timeout"
                    break
                now = loop.time()
                if sink.dirty and now - last_update >= self.update_interval:
                    last_update = now
                    sink.dirty = False
                    on_update(self._partial(sink))

            if outcome != "exit":
                grace = self.kill_grace if outcome == "timeout" else min(self.kill_grace, 1.0)
                await self._kill_group(pgid, grace)
                await self._wait_closed(protocol, self.pipe_grace)
            elif not await self._wait_closed(protocol, self.pipe_grace):
                # The shell is gone but something it started still holds the pipe open.
                background_killed = True
                await self._kill_group(pgid, self.kill_grace)
                await self._wait_closed(protocol, self.pipe_grace)
            settled = True
        finally:
            unsubscribe()
            if not settled:  # cancelled or failed: nothing the command started may outlive it
                _signal_group(pgid, signals.SIGKILL)
            sink.feed(sanitizer.finish())
            sink.finish()
            transport.close()

        returncode = transport.get_returncode() if outcome == "exit" else None
        return self._result(sink, outcome, returncode, params, background_killed)

    # -- helpers --

    def _spill_path(self, call_id: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", call_id)[:80].strip(".") or secrets.token_hex(8)
        return self.env.spill_dir() / f"bash-{safe}.log"

    async def _wait_closed(self, protocol: _Protocol, timeout: float) -> bool:
        if not protocol.closed.done():
            await asyncio.wait({protocol.closed}, timeout=timeout)
        return protocol.closed.done()

    async def _kill_group(self, pgid: int, grace: float) -> None:
        """SIGTERM to the whole group, SIGKILL to whatever still lives after ``grace``."""
        if not _signal_group(pgid, signals.SIGTERM):
            return
        loop = asyncio.get_running_loop()
        end = loop.time() + grace
        while loop.time() < end:
            await asyncio.sleep(0.05)
            if not _group_alive(pgid):
                return
        _signal_group(pgid, signals.SIGKILL)

    def _partial(self, sink: OutputCollector) -> ToolResult:
        limits = self.env.limits
        shown = truncate_tail(sink.tail_text(), limits.max_lines, limits.max_bytes)
        return ToolResult.text(
            shown.content,
            details={
                "partial": True,
                "total_lines": sink.total_lines,
                "total_bytes": sink.total_bytes,
                "full_output_path": str(sink.spill_path) if sink.spill_path else None,
            },
        )

    def _result(
        self, sink: OutputCollector, outcome: str, returncode: int | None, params: BashParams, background_killed: bool
    ) -> ToolResult:
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
        if background_killed:
            parts.append("Background processes still holding the output open were killed after the command exited.")

        is_error = True
        if outcome == "timeout":
            assert params.timeout is not None
            parts.append(f"Command timed out after {_format_seconds(params.timeout)} seconds")
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

        details = self._details(
            returncode,
            truncation,
            full_output_path=str(sink.spill_path) if sink.spill_path else None,
            timed_out=outcome == "timeout",
            aborted=outcome == "aborted",
        )
        if background_killed:
            details["background_killed"] = True
        if sink.spill_error:
            details["spill_error"] = sink.spill_error
        return ToolResult.text("\n\n".join(parts), details=details, is_error=is_error)

    def _notice(self, sink: OutputCollector, shown: Truncation) -> str:
        """Line numbers are those of the full output (and so of the spill file)."""
        total = sink.total_lines
        if sink.spill_path is not None and not sink.spill_error:
            where = f"Full output: {sink.spill_path}"
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

    @staticmethod
    def _details(
        exit_code: int | None,
        truncation: Truncation | None,
        *,
        full_output_path: str | None = None,
        timed_out: bool = False,
        aborted: bool = False,
    ) -> dict[str, Any]:
        trunc: dict[str, Any] | None = None
        if truncation is not None:
            trunc = asdict(truncation)
            del trunc["content"]
        return {
            "exit_code": exit_code,
            "truncation": trunc,
            "full_output_path": full_output_path,
            "timed_out": timed_out,
            "aborted": aborted,
        }
