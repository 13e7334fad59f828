"""What ``heron batch`` shows while it runs: a rich progress bar on a terminal, else one
plain line per finished (or retried) task - a log file or CI output stays readable."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from heron.cli.terminal_text import visible
from heron.coding.batch.results import TaskResult
from heron.coding.batch.runner import Job


class BatchProgress:
    """The driver's listener: counts, tokens and cost, shown as a bar or as lines."""

    def __init__(self, total: int, *, stream: TextIO | None = None, bar: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.total = total
        self.done = 0
        self.failed = 0
        self.running: set[str] = set()
        self.tokens = 0
        self.cost = 0.0
        use_bar = bar if bar is not None else self.stream.isatty()
        self._bar: Any = None
        self._task: Any = None
        if use_bar:
            self._start_bar()

    def _start_bar(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        fields = (
            "{task.fields[running]} running · {task.fields[failed]} failed · "
            "{task.fields[tokens]} tokens · ${task.fields[cost]:.4f}"
        )
        self._bar = Progress(
            TextColumn("heron batch"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(fields),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(file=self.stream),
        )
        self._task = self._bar.add_task("batch", total=self.total, running=0, failed=0, tokens=0, cost=0.0)
        self._bar.start()

    def _refresh(self) -> None:
        if self._bar is not None:
            self._bar.update(
                self._task,
                completed=self.done,
                running=len(self.running),
                failed=self.failed,
                tokens=self.tokens,
                cost=self.cost,
            )

    def _line(self, text: str) -> None:
        text = visible(text)  # a task id or a server's error: never a terminal command
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        else:
            print(f"heron batch: {text}", file=self.stream, flush=True)

    def started(self, job: Job) -> None:
        self.running.add(job.task.id)
        self._refresh()

    def retried(self, job: Job, reason: str) -> None:
        self._line(f"{job.task.id}: its worker died, trying again (attempt {job.attempt + 1}): {reason}")

    def finished(self, result: TaskResult) -> None:
        self.running.discard(result.id)
        self.done += 1
        self.failed += result.status != "ok"
        self.tokens += result.tokens
        self.cost += result.cost
        detail = f" - {result.error}" if result.error else ""
        if self._bar is None or result.status != "ok":
            self._line(
                f"[{self.done}/{self.total}] {result.id} {result.status} {result.duration_s:.2f}s "
                f"{result.tokens} tokens ${result.cost:.4f}{detail}"
            )
        self._refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
