"""Housekeeping that must not run before a session's first request (docs/architecture.md,
"The critical path of a turn").

Removing old spill files and starting the daily prune of checkpoints are worth doing once per
session, but nobody waits for them; run before the first request they compete with it for
the CPU and the disk. Jobs added here wait until :meth:`Housekeeping.start` (called once the
first model response has begun arriving, or at the end of the first turn), then run one
after another in a daemon thread, so a short ``heron -p`` is never held up by them either.
A job that fails is logged; the others still run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class Housekeeping:
    def __init__(self) -> None:
        self._jobs: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
        self._started = False
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return self._started

    def add(self, job: Callable[..., Any], *args: Any) -> None:
        """Run ``job(*args)`` after the first request (at once, in the thread, if that is past)."""
        with self._lock:
            if not self._started:
                self._jobs.append((job, args))
                return
        self._run_in_thread([(job, args)])

    def start(self) -> None:
        """The first request is out: run what waited for it (idempotent)."""
        with self._lock:
            if self._started:
                return
            self._started = True
            jobs, self._jobs = self._jobs, []
        if jobs:
            self._run_in_thread(jobs)

    @staticmethod
    def _run_in_thread(jobs: list[tuple[Callable[..., Any], tuple[Any, ...]]]) -> None:
        def run() -> None:
            for job, args in jobs:
                try:
                    job(*args)
                except Exception:  # housekeeping never breaks a session
                    log.exception("housekeeping job %s failed", getattr(job, "__name__", job))

        threading.Thread(target=run, daemon=True, name="heron-housekeeping").start()
