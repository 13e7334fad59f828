"""The Ray executor: a few async actors per node, each running many sessions.

A session is mostly waiting on the model, so an actor per session would pay Ray's actor
start-up (a process each) for nothing; instead a handful of async actors - by default two
per alive node, never more than ``--workers`` - each run up to their share of the
``--workers`` sessions as asyncio tasks of their own loop. Results come back one by one
as each remote call finishes.

An actor that dies (its process killed, its node lost) fails every call it was running
with a ``RayActorError``: the calls become :class:`WorkerLost` for the driver to retry,
and the actor is replaced so the batch keeps its width.

Without ``--ray-address`` a small local cluster is started: 2 CPUs, no dashboard, bound
to 127.0.0.1, usage statistics off. Ray is imported only here, when this executor runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import socket
from dataclasses import dataclass
from typing import Any

from heron.coding.batch.driver import ExecutorError, WorkerLost
from heron.coding.batch.results import TaskResult
from heron.coding.batch.runner import Job, run_task

ACTORS_PER_NODE = 2
# Environment the actors need from the driver's: heron's home, keys, tracing set-up.
FORWARDED_PREFIXES = ("HERON_", "OTEL_")
# Off: Ray keeps a local node on 127.0.0.1 (the variable's name is Ray's, for macOS and
# Windows, where that is the default).
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
LOG_FORWARD_WAIT_S = 2.0


def _actor_class() -> Any:
    import ray

    @ray.remote(num_cpus=0)
    class BatchWorker:
        """One worker process: runs the jobs it is sent on its own event loop."""

        async def run(self, job: Job) -> dict[str, Any]:
            return (await run_task(job)).to_json()

        def pid(self) -> int:
            return os.getpid()

        def flush(self) -> None:
            from heron.coding.tracing import flush_tracing

            flush_tracing()

    return BatchWorker


@dataclass
class _Slot:
    actor: Any
    running: int = 0
    generation: int = 0


class RayExecutor:
    name = "ray"

    def __init__(
        self, address: str | None = None, actors_per_node: int = ACTORS_PER_NODE, log_to_driver: bool = False
    ) -> None:
        self.address = address
        self.actors_per_node = actors_per_node
        self.log_to_driver = log_to_driver
        self._slots: list[_Slot] = []
        self._started_ray = False
        self._concurrency = 1
        self._cls: Any = None

    def _prepare_environment(self) -> None:
        """Before Ray is imported (it reads these at import): no usage statistics, and for
        a local cluster the loopback address - Ray otherwise turns 127.0.0.1 into the
        machine's network address and its processes talk over that."""
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if not self.address:
            os.environ.setdefault(LOOPBACK_ENV, "0")
        if self.log_to_driver:  # Ray would fold identical lines of different actors (two spans) into one
            os.environ.setdefault("RAY_DEDUP_LOGS", "0")

    def _check_reachable(self) -> None:
        """Ray retries an unreachable ``--ray-address`` for many minutes without a word; a
        plain ``host:port`` that refuses a connection is reported at once instead."""
        host, sep, port = (self.address or "").rpartition(":")
        if not sep or not port.isdigit() or "/" in host or not host:
            return  # "auto", "ray://...": left to Ray
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
        except OSError as exc:
            raise ExecutorError(
                f"could not join the Ray cluster at {self.address}: "
                f"{exc.strerror or exc} (is `ray start --head` running there?)"
            ) from exc

    def _init(self) -> None:
        import ray

        if ray.is_initialized():
            return
        env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_PREFIXES)}
        common: dict[str, Any] = {
            "runtime_env": {"env_vars": env},
            "log_to_driver": self.log_to_driver,
            "configure_logging": False,
        }
        if self.address:
            ray.init(address=self.address, **common)
        else:
            ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", **common)
        self._started_ray = True

    async def start(self, workers: int) -> None:
        self._prepare_environment()

        import ray

        if self.address:
            await asyncio.to_thread(self._check_reachable)
        try:
            await asyncio.to_thread(self._init)
        except Exception as exc:
            where = f"join the Ray cluster at {self.address}" if self.address else "start a local Ray cluster"
            raise ExecutorError(f"could not {where}: {exc}") from exc
        nodes = [node for node in ray.nodes() if node.get("Alive")]  # type: ignore[no-untyped-call]
        count = max(1, min(workers, self.actors_per_node * max(1, len(nodes))))
        self._concurrency = math.ceil(workers / count)
        self._cls = _actor_class()
        self._slots = [_Slot(actor=self._spawn()) for _ in range(count)]

    def _spawn(self) -> Any:
        return self._cls.options(max_concurrency=self._concurrency + 1, scheduling_strategy="SPREAD").remote()

    async def submit(self, job: Job) -> TaskResult:
        import ray

        lost: tuple[type[BaseException], ...] = tuple(
            getattr(ray.exceptions, name)
            for name in ("RayActorError", "ActorUnavailableError", "WorkerCrashedError")
            if hasattr(ray.exceptions, name)
        )
        slot = min(self._slots, key=lambda s: s.running)
        generation = slot.generation
        slot.running += 1
        try:
            data = await slot.actor.run.remote(job)
        except lost as exc:
            if slot.generation == generation:  # the first call to see this actor die replaces it
                slot.generation += 1
                slot.actor = self._spawn()
            raise WorkerLost(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
        finally:
            slot.running -= 1
        return TaskResult.from_json(data)

    async def worker_pids(self) -> list[int]:
        """The process ids of the actors (tests kill one to check the retry)."""
        return [await slot.actor.pid.remote() for slot in self._slots]

    async def stop(self) -> None:
        import ray

        if not ray.is_initialized():
            return
        for slot in self._slots:
            with contextlib.suppress(Exception):  # a dead actor has nothing to flush
                await asyncio.wait_for(slot.actor.flush.remote(), timeout=10)
        if self.log_to_driver:  # Ray forwards the actors' output (console spans) from log files, a little later
            await asyncio.sleep(LOG_FORWARD_WAIT_S)
        for slot in self._slots:
            ray.kill(slot.actor)
        self._slots = []
        if self._started_ray:
            await asyncio.to_thread(ray.shutdown)
            self._started_ray = False
