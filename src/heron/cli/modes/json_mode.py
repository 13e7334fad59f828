"""``heron --mode json -p "task"``: the session header, then one event per line.

For programs that drive heron and want everything: streaming deltas, tool calls and
results, compaction, retries and ledger records, each a JSON object on its own line.
"""

from __future__ import annotations

import sys
from typing import Any

from heron.cli.app import App, Task, run_task
from heron.cli.events_json import dumps, event_json
from heron.cli.modes.print_mode import discard_stdout, install_interrupt, outcome
from heron.coding.secrets import redact


async def run_json(app: App, task: Task) -> int:
    out = sys.stdout
    reader_gone = False

    def emit(data: dict[str, Any]) -> None:
        nonlocal reader_gone
        if reader_gone:
            return
        try:
            out.write(redact(dumps(data)) + "\n")  # no key on stdout (docs/permissions.md)
            out.flush()
        except BrokenPipeError:
            # Nobody reads the events any more (`| head`, a client that exited): stop the
            # run rather than go on editing files for no one; the session keeps what was done.
            reader_gone = True
            discard_stdout()
            app.session.abort()

    emit(app.session.store.header.to_json_dict() if app.session.store.header else {})
    if reader_gone:
        return 1
    app.session.subscribe(lambda event: emit(event_json(event)))
    install_interrupt(app)
    await run_task(app, task)
    if reader_gone:
        return 1
    _, error = outcome(app)
    if error is not None:
        print(f"heron: {error}", file=sys.stderr)
        return 1
    return 0
