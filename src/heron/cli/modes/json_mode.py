"""``heron --mode json -p "task"``: the session header, then one event per line.

For programs that drive heron and want everything: streaming deltas, tool calls and
results, compaction, retries and ledger records, each a JSON object on its own line. The
last line is ``run_end``, the run's outcome in rpc's shape (docs/rpc.md). The exit code
is print mode's (:func:`heron.cli.modes.print_mode.exit_code`).
"""

from __future__ import annotations

import sys
from typing import Any

from heron.cli.app_state import App
from heron.cli.delta_merge import DeltaMerger
from heron.cli.events_json import event_json, output_line
from heron.cli.modes.print_mode import discard_stdout, exit_code, failure_line, finish_background, install_interrupt
from heron.cli.modes.run_end import run_end_json
from heron.cli.task_input import Task
from heron.coding.run import Run
from heron.coding.secrets import redact


async def run_json(app: App, task: Task) -> int:
    out = sys.stdout
    reader_gone = False
    run: Run | None = None

    def emit(data: dict[str, Any]) -> None:
        nonlocal reader_gone
        if reader_gone:
            return
        try:
            out.write(redact(output_line(data)))  # no key on stdout (docs/permissions.md)
            out.flush()
        except BrokenPipeError:
            # Nobody reads the events any more (`| head`, a client that exited): stop the
            # run rather than go on editing files for no one; the session keeps what was done.
            reader_gone = True
            discard_stdout()
            if run is not None:
                run.abort()

    merger = DeltaMerger(emit)
    emit(app.session.store.header.to_json_dict() if app.session.store.header else {})
    if reader_gone:
        return 1
    unsubscribe = app.session.subscribe(lambda event: merger.write(event_json(event)))
    run = Run(app.session, task.text, task.images, resolved=app.resolved, resend=task.resend)
    termination = install_interrupt(app, run)
    outcome = await run.outcome()
    merger.write(run_end_json(outcome))
    if reader_gone:
        return termination.exit_code(1)
    unsubscribe()  # the run's end is the last event written
    line = failure_line(outcome)
    if line is not None:
        print(line, file=sys.stderr)
    await finish_background(app)
    return termination.exit_code(exit_code(outcome))
