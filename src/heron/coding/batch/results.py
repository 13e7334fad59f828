"""DIR/results.jsonl: one line per finished task, written the moment it finishes.

The file is the batch's memory: a rerun with the same ``--out`` reads it and skips every
id in it, so a Ctrl+C, a crash or a killed machine loses at most the tasks that were
running. Each line is written with one ``write`` on an ``O_APPEND`` descriptor and
flushed to disk, so a line is either whole or (after a crash mid-write) a torn last line
that the next run ignores and writes past.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from heron.coding.secrets import redact

Status = Literal["ok", "error", "timeout"]
STATUSES = ("ok", "error", "timeout")


@dataclass
class TaskResult:
    id: str
    status: Status
    answer: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cost: float = 0.0
    duration_s: float = 0.0
    session: str | None = None
    workdir: str | None = None
    error: str | None = None
    attempts: int = 1

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskResult:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)

    @property
    def tokens(self) -> int:
        return int(self.usage.get("total_tokens", 0))


class ResultsLog:
    """The results file of one output directory: what is done, and appending to it."""

    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / "results.jsonl"
        self.done: dict[str, TaskResult] = {}
        self.warnings: list[str] = []
        self._fd: int | None = None
        self._read()

    def _read(self) -> None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        for number, raw in enumerate(data.split(b"\n"), 1):
            if not raw.strip():
                continue
            try:
                item = json.loads(raw)
                if (
                    not isinstance(item, dict)
                    or not isinstance(item.get("id"), str)
                    or item.get("status") not in STATUSES
                ):
                    raise ValueError("not a result")
            except ValueError:
                self.warnings.append(
                    f"{self.path}: line {number} is not a result (torn write?); ignored, its task runs again"
                )
                continue
            self.done[item["id"]] = TaskResult.from_json(item)

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            size = os.fstat(self._fd).st_size
            if size:
                with self.path.open("rb") as handle:
                    handle.seek(size - 1)
                    if handle.read(1) != b"\n":  # a torn last line: start ours on a line of its own
                        os.write(self._fd, b"\n")
        return self._fd

    def append(self, result: TaskResult) -> None:
        line = redact(json.dumps(result.to_json(), ensure_ascii=False)) + "\n"  # an error may quote a key
        fd = self._open()
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
        self.done[result.id] = result

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
