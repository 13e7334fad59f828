"""One task, start to end: its copy of the directory, its session file, its answer.

This is what every executor runs - in the driver's process (local) or in a Ray actor -
so a :class:`Job` carries everything the task needs and nothing tied to the driver's
process: the model is resolved by the driver (one set-up error stops the batch before
anything runs) and sent along with its key.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heron.ai.types import Model
from heron.coding.batch import workspace
from heron.coding.batch.results import TaskResult
from heron.coding.batch.tasks import BatchTask
from heron.coding.outcome import RunOutcome
from heron.coding.run import Run
from heron.coding.settings import Settings, deep_merge, read_settings_file, settings_from_dict, settings_paths

log = logging.getLogger(__name__)

# After a timeout the run is aborted; this long is given for it to stop by itself.
ABORT_GRACE_S = 10.0


@dataclass
class Job:
    task: BatchTask
    model: Model
    api_key: str | None
    out_dir: Path
    home: Path
    attempt: int = 1
    # "console" or "otlp" when traces are wanted, with message content when opted in.
    tracing: str | None = None
    trace_content: bool = False


def task_settings(cwd: Path, home: Path, overlay: dict[str, Any]) -> Settings:
    """The settings files of the task's copy, with the task's own ``settings`` on top."""
    warnings: list[str] = []
    merged: dict[str, Any] = {}
    sources: list[Path] = []
    for path in settings_paths(cwd, home):
        data = read_settings_file(path, warnings)
        if data is not None:
            sources.append(path)
            merged = deep_merge(merged, data)
    return settings_from_dict(deep_merge(merged, overlay), tuple(warnings), tuple(sources))


async def run_task(job: Job) -> TaskResult:
    """Run ``job``; every failure of the task itself becomes an ``error`` result."""
    task = job.task
    started = time.monotonic()
    session_path = job.out_dir / "sessions" / f"{task.id}.jsonl"
    result = TaskResult(id=task.id, status="error", attempts=job.attempt, session=str(session_path))
    try:
        work = await asyncio.to_thread(workspace.prepare, task.cwd, job.out_dir / "work" / task.id)
        result.workdir = str(work)
        await _run_session(job, work, session_path, result)
    except Exception as exc:  # noqa: BLE001 - a task's failure is its result, never the batch's
        result.status, result.error = "error", f"{type(exc).__name__}: {exc}"
    result.duration_s = round(time.monotonic() - started, 3)
    return result


async def _run_session(job: Job, work: Path, session_path: Path, result: TaskResult) -> None:
    from heron.coding.assembly import assemble_session
    from heron.coding.session_spec import SessionSpec, StoreSpec

    task = job.task
    session_path.parent.mkdir(parents=True, exist_ok=True)
    session_path.unlink(missing_ok=True)  # an earlier attempt's file: this attempt starts anew
    # the user's extensions, as in every other mode; a task's work copy is a new, untrusted
    # directory, so its project extensions stay off (docs/batch.md)
    spec = SessionSpec(
        cwd=work,
        model=job.model,
        api_key=job.api_key,
        home=job.home,
        settings=task_settings(work, job.home, dict(task.settings)),
        store=StoreSpec.new(session_path),
        tools=tuple(task.tools) if task.tools is not None else None,
    )
    session = assemble_session(spec, lambda text: log.warning("task %s: %s", task.id, text))
    store = session.store
    tracer = None
    if job.tracing:
        from heron.coding.tracing import SessionTracer, get_tracer

        tracer = SessionTracer(session, get_tracer(job.tracing), capture_content=job.trace_content)
    run = Run(session, task.prompt)
    try:
        timed_out = not await run.wait(task.timeout_s)
        if timed_out:
            run.abort(ABORT_GRACE_S)
        outcome = await run.outcome()
    except asyncio.CancelledError:  # the batch is stopping: abort the run, record nothing
        run.abort(0)
        raise
    finally:
        if tracer is not None:
            tracer.close()
        store.close()
    record(result, outcome, timed_out=timed_out, timeout_s=task.timeout_s)


def record(result: TaskResult, outcome: RunOutcome, *, timed_out: bool, timeout_s: float | None) -> None:
    """The task's result record from the run's outcome (docs/batch.md): ``ok`` with the
    answer, ``timeout``, or ``error`` with the explanation every mode shows."""
    result.usage = {
        "input": outcome.usage.input,
        "output": outcome.usage.output,
        "cache_read": outcome.usage.cache_read,
        "cache_write": outcome.usage.cache_write,
        "total_tokens": outcome.usage.total_tokens,
    }
    result.cost = outcome.usage.cost.total
    if timed_out and outcome.save_error is None:
        result.status, result.error = "timeout", f"no answer within {timeout_s:g} s"
    elif outcome.ok:
        result.status, result.answer = "ok", outcome.answer
    else:
        result.status, result.error = "error", outcome.explanation
