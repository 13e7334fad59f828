"""One task, start to end: its copy of the directory, its session file, its answer.

This is what every executor runs - in the driver's process (local) or in a Ray actor -
so a :class:`Job` carries everything the task needs and nothing tied to the driver's
process: the model is resolved by the driver (one set-up error stops the batch before
anything runs) and sent along with its key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heron.ai.types import AssistantMessage, Model, StopReason
from heron.coding.batch import workspace
from heron.coding.batch.results import Status, TaskResult
from heron.coding.batch.tasks import BatchTask
from heron.coding.settings import Settings, deep_merge, read_settings_file, settings_from_dict, settings_paths

# After a timeout the run is aborted; this long is given for it to stop by itself.
log = logging.getLogger(__name__)

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


def summarise(messages: list[Any]) -> tuple[dict[str, int], float]:
    """Token usage and dollars of every answer of the run."""
    usage = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "total_tokens": 0}
    cost = 0.0
    for message in messages:
        if isinstance(message, AssistantMessage):
            used = message.usage
            usage["input"] += used.input
            usage["output"] += used.output
            usage["cache_read"] += used.cache_read
            usage["cache_write"] += used.cache_write
            usage["total_tokens"] += used.total_tokens or used.context_tokens()
            cost += used.cost.total
    return usage, cost


def outcome(messages: list[Any]) -> tuple[Status, str | None, str | None]:
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    if last is None:
        return "error", None, "the run produced no answer"
    if last.stop_reason == StopReason.ERROR:
        return "error", None, last.error_message or "the request failed"
    if last.stop_reason == StopReason.ABORTED:
        return "error", None, "aborted"
    return "ok", last.text(), None


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
    timed_out = False
    run = asyncio.ensure_future(session.prompt(task.prompt))
    try:
        done, _ = await asyncio.wait({run}, timeout=task.timeout_s)
        if not done:
            timed_out = True
            session.abort()
            finished, _ = await asyncio.wait({run}, timeout=ABORT_GRACE_S)
            if not finished:
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await run
        elif run.exception() is not None:
            raise run.exception()  # type: ignore[misc]
    except asyncio.CancelledError:  # the batch is stopping: abort the run, record nothing
        session.abort()
        run.cancel()
        raise
    finally:
        if tracer is not None:
            tracer.close()
        store.close()
    messages = session.messages
    result.usage, result.cost = summarise(messages)
    if timed_out:
        result.status, result.error = "timeout", f"no answer within {task.timeout_s:g} s"
        return
    result.status, result.answer, result.error = outcome(messages)
    if store.write_error is not None:
        result.status, result.answer, result.error = "error", None, f"session not saved: {store.write_error}"
