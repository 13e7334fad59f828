"""The local executor: every session an asyncio task of this one process.

Sessions spend their time waiting on the model, so one event loop carries many of them;
the driver bounds how many run at once. A worker cannot die here without the whole
batch dying with it, which the results file and the rerun handle.
"""

from __future__ import annotations

from heron.coding.batch.results import TaskResult
from heron.coding.batch.runner import Job, run_task


class LocalExecutor:
    name = "local"

    async def start(self, workers: int) -> None:
        return None

    async def submit(self, job: Job) -> TaskResult:
        return await run_task(job)

    async def stop(self) -> None:
        return None
