"""Running a batch: at most ``workers`` sessions at once, whatever the executor.

The driver owns the results file and the retry rule; an executor only runs a job and
says when the worker running it died (:class:`WorkerLost`). Such a job is tried again,
by the same slot so that it cannot be left behind in a drained queue, up to ``retries``
more times, then recorded as an error. A stop (Ctrl+C) cancels what is running without
recording it: those tasks have no line, so the next run does them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from heron.coding.batch.results import ResultsLog, TaskResult
from heron.coding.batch.runner import Job


class WorkerLost(RuntimeError):
    """The process running a job went away before the job finished."""


class ExecutorError(RuntimeError):
    """The executor could not start (a Ray cluster that cannot be started or joined)."""


class Executor(Protocol):
    name: str

    async def start(self, workers: int) -> None: ...

    async def submit(self, job: Job) -> TaskResult: ...

    async def stop(self) -> None: ...


class Listener(Protocol):
    def started(self, job: Job) -> None: ...

    def retried(self, job: Job, reason: str) -> None: ...

    def finished(self, result: TaskResult) -> None: ...


@dataclass
class BatchOutcome:
    results: list[TaskResult] = field(default_factory=list)
    interrupted: bool = False

    @property
    def failed(self) -> int:
        return sum(1 for r in self.results if r.status != "ok")


async def run_jobs(
    jobs: Sequence[Job],
    executor: Executor,
    *,
    workers: int,
    results: ResultsLog,
    listener: Listener,
    retries: int = 1,
    stop: asyncio.Event | None = None,
) -> BatchOutcome:
    """Run ``jobs`` (none of them in ``results`` yet) until all have a result or ``stop``
    is set. The executor is started here and stopped at the end, also on a stop."""
    outcome = BatchOutcome()
    stop = stop or asyncio.Event()
    queue: asyncio.Queue[Job] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)

    async def slot() -> None:
        while not stop.is_set():
            try:
                job = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            result = await _run_with_retries(job, executor, listener, retries, stop)
            if result is None:
                return
            results.append(result)
            outcome.results.append(result)
            listener.finished(result)

    await executor.start(workers)
    try:
        slots = [asyncio.ensure_future(slot()) for _ in range(max(1, min(workers, len(jobs))))]
        all_done = asyncio.ensure_future(asyncio.gather(*slots))
        stopper = asyncio.ensure_future(stop.wait())
        waiting: set[asyncio.Future[Any]] = {all_done, stopper}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if not all_done.done():
            outcome.interrupted = True
            for task in slots:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*slots, return_exceptions=True)
        stopper.cancel()
        if not outcome.interrupted and all_done.exception() is not None:
            raise all_done.exception()  # type: ignore[misc]
    finally:
        await executor.stop()
    outcome.interrupted = outcome.interrupted or stop.is_set()
    return outcome


async def _run_with_retries(
    job: Job, executor: Executor, listener: Listener, retries: int, stop: asyncio.Event
) -> TaskResult | None:
    while True:
        listener.started(job)
        try:
            return await executor.submit(job)
        except WorkerLost as exc:
            if stop.is_set():
                return None
            if job.attempt > retries:
                return TaskResult(
                    id=job.task.id,
                    status="error",
                    attempts=job.attempt,
                    error=f"the worker running it died ({job.attempt} attempt(s)): {exc}",
                )
            listener.retried(job, str(exc))
            job = replace(job, attempt=job.attempt + 1)
