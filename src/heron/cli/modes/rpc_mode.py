"""``heron --mode rpc``: heron driven by another program over stdin and stdout.

A client (an editor plugin, a test harness, another agent) writes one JSON command per
line on stdin and reads one JSON object per line on stdout: the response to each command
(``"type": "response"``, with the command's ``id``) and, interleaved, the session's
events exactly as ``--mode json`` prints them. The protocol is described in docs/rpc.md.

Framing is LF only: stdin is split on the byte ``\\n`` and nothing else, so text holding
U+2028, U+2029 or NEL stays inside its line (``str.splitlines`` would cut it there). A
CR before the LF needs no special case: it is JSON whitespace. On output those three
separators are written as ``\\u`` escapes, so clients that split on them do not break.

Runs (and ``compact``) execute as background tasks: the reader keeps serving, so
``steer``, ``abort`` and ``get_state`` are answered while the model streams or a tool
runs. A malformed line gets an error response and the process keeps serving; EOF on
stdin lets the current run finish (its events are still written), then heron exits 0.
SIGTERM aborts what runs and ends heron in order, exit status 143
(:mod:`heron.cli.modes.termination`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from typing import Any

from heron.cli.app_state import App
from heron.cli.delta_merge import DeltaMerger
from heron.cli.modes.rpc_io import Output, read_lines
from heron.cli.modes.rpc_io import Output as _Output
from heron.cli.modes.rpc_io import split_lines as split_lines
from heron.cli.modes.rpc_protocol import encode_line as encode_line
from heron.cli.modes.rpc_server import RpcServer
from heron.cli.modes.termination import Termination
from heron.coding.idle import idle_keeper

__all__ = ["RpcServer", "_Output", "encode_line", "run_rpc", "split_lines"]


async def run_rpc(app: App) -> int:
    """Serve commands from stdin until EOF (or Ctrl+C while nothing runs); 0 then, 1 if
    stdout was closed under heron or the session could not be saved (one line on stderr),
    143 after SIGTERM (what ran aborted, no command served after it)."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[bytes | None] = asyncio.Queue()
    server: RpcServer | None = None

    def output_closed() -> None:
        print("heron: stdout closed; stopping", file=sys.stderr)
        if server is not None:
            server.abort()
        lines.put_nowait(None)

    ending: list[bool] = []  # set once the commands are over

    def interrupt() -> None:
        if ending:  # heron is ending: what it waits for (a memory reflection) is dropped
            app.session.abort()
        elif server is not None and not server.abort():
            lines.put_nowait(None)  # nothing to abort: Ctrl+C ends heron like EOF

    def terminate() -> None:
        if server is not None:
            server.abort()
        lines.put_nowait(None)

    def stop_unsaved(event: Any) -> None:
        """A session that cannot be saved ends the server once the run it stopped ended:
        commands after it would work on a session that is not kept."""
        if getattr(event, "type", None) == "agent_end" and app.session.store.write_error is not None:
            lines.put_nowait(None)

    unsubscribe = app.session.subscribe(stop_unsaved)
    output = Output(sys.stdout.buffer, output_closed)
    server = RpcServer(app, DeltaMerger(output.write).write)
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, interrupt)
    termination = Termination(app.session, terminate)
    termination.install()
    stdin_fd = sys.stdin.fileno() if sys.stdin is not None else -1  # no stdin at all: EOF at once
    reader = threading.Thread(target=read_lines, args=(stdin_fd, loop, lines), name="heron-rpc-stdin", daemon=True)
    reader.start()
    server.warm_up(app.session.model.api)
    idle_keeper(app.session).start()  # a resumed session may be waiting with a warm cache already
    try:
        while True:
            line = await lines.get()
            if line is None or output.closed or termination.requested:
                break
            await server.handle_line(line)
            await asyncio.sleep(0)  # a run just accepted takes its first step before the next command
            if app.session.store.write_error is not None:
                break
        ending.append(True)
        termination.stop()  # after SIGTERM: a prompt accepted as it came is aborted too
        await server.finish()
        await app.session.context_owner.finish_background(wait=False)  # a summary that came back is kept
    finally:
        server.close()
        unsubscribe()
        output.flush()  # the last lines (a run's agent_settled) may still wait for the loop
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        termination.remove()
    write_error = app.session.store.write_error
    if write_error is not None:
        print(f"heron: {write_error}", file=sys.stderr)
        return termination.exit_code(1)
    return termination.exit_code(1 if output.closed else 0)
