"""The driver's rules, with an executor whose behaviour the test decides: the bound on
sessions at once, retries of a job whose worker died, a stop that records nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

from heron.ai.types import Model
from heron.coding.batch.driver import WorkerLost, run_jobs
from heron.coding.batch.results import ResultsLog, TaskResult
from heron.coding.batch.runner import Job
from heron.coding.batch.tasks import BatchTask


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    def started(self, job: Job) -> None:
        self.events.append(f"start {job.task.id} {job.attempt}")

    def retried(self, job: Job, reason: str) -> None:
        self.events.append(f"retry {job.task.id}")

    def finished(self, result: TaskResult) -> None:
        self.events.append(f"done {result.id}")


class FakeExecutor:
    name = "fake"

    def __init__(self, deaths: dict[str, int], delay: float = 0.01) -> None:
        self.deaths = dict(deaths)
        self.delay = delay
        self.running = 0
        self.most = 0
        self.stopped = False

    async def start(self, workers: int) -> None:
        return None

    async def submit(self, job: Job) -> TaskResult:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(self.delay)
            if self.deaths.get(job.task.id, 0) > 0:
                self.deaths[job.task.id] -= 1
                raise WorkerLost("killed")
            return TaskResult(id=job.task.id, status="ok", answer="yes", attempts=job.attempt)
        finally:
            self.running -= 1

    async def stop(self) -> None:
        self.stopped = True


def jobs(tmp_path: Path, count: int) -> list[Job]:
    model = Model(id="m", name="m", api="openai-chat", provider="p", base_url="http://127.0.0.1:1/v1")
    return [
        Job(
            task=BatchTask(id=f"t{n}", prompt="x", cwd=tmp_path),
            model=model,
            api_key=None,
            out_dir=tmp_path,
            home=tmp_path,
        )
        for n in range(count)
    ]


async def test_workers_bounds_the_sessions_at_once_and_retries_succeed(tmp_path: Path) -> None:
    executor = FakeExecutor({"t3": 1})
    log = ResultsLog(tmp_path)
    outcome = await run_jobs(jobs(tmp_path, 20), executor, workers=3, results=log, listener=Recorder())
    assert executor.most == 3 and executor.stopped
    assert len(outcome.results) == 20 and outcome.failed == 0
    assert log.done["t3"].attempts == 2 and log.done["t4"].attempts == 1
    assert len(ResultsLog(tmp_path).done) == 20


async def test_a_job_dying_more_than_the_retries_allow_is_an_error(tmp_path: Path) -> None:
    listener = Recorder()
    outcome = await run_jobs(
        jobs(tmp_path, 1),
        FakeExecutor({"t0": 5}),
        workers=2,
        results=ResultsLog(tmp_path),
        listener=listener,
        retries=2,
    )
    (result,) = outcome.results
    assert result.status == "error" and result.attempts == 3 and "died (3 attempt(s))" in (result.error or "")
    assert listener.events == ["start t0 1", "retry t0", "start t0 2", "retry t0", "start t0 3", "done t0"]


async def test_a_stop_records_only_what_finished(tmp_path: Path) -> None:
    stop = asyncio.Event()
    executor = FakeExecutor({}, delay=0.05)
    log = ResultsLog(tmp_path)

    async def stop_soon() -> None:
        while len(log.done) < 4:
            await asyncio.sleep(0.005)
        stop.set()

    stopper = asyncio.ensure_future(stop_soon())
    outcome = await run_jobs(jobs(tmp_path, 40), executor, workers=2, results=log, listener=Recorder(), stop=stop)
    await stopper
    assert outcome.interrupted and executor.stopped
    assert 4 <= len(outcome.results) < 40
    assert set(ResultsLog(tmp_path).done) == {r.id for r in outcome.results}
