"""TASKS.jsonl: one task per line, checked whole before anything runs.

A batch that would fail on line 40 after an hour of work is worse than one that refuses
to start: every line is parsed and checked first (shape, duplicate ids, the directory
exists), and all problems are reported together with their line numbers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heron.coding.tools import ALL_TOOLS

# Ids name files (sessions/<id>.jsonl, work/<id>/), so they must be safe file names.
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
KNOWN_KEYS = {"id", "prompt", "cwd", "model", "settings", "tools", "timeout_s"}
# Settings read file by file with their scope (what a project file may do differs from a
# user's), so an overlay from the task file would be silently ignored: refused instead.
PER_FILE_KEYS = {"permissions", "hooks", "env"}


class TaskFileError(ValueError):
    """TASKS.jsonl cannot be run as it is; the message lists every problem by line."""


@dataclass(frozen=True)
class BatchTask:
    id: str
    prompt: str
    cwd: Path
    model: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    tools: tuple[str, ...] | None = None
    timeout_s: float | None = None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_task(data: Any, base: Path) -> BatchTask:
    """One line's object as a task; ``ValueError`` says what is wrong with it."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(KNOWN_KEYS))}")
    for key in ("id", "prompt", "cwd"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ValueError(f'"{key}" must be a non-empty string')
    if not ID_PATTERN.match(data["id"]):
        raise ValueError(f'"id" {data["id"]!r} must be letters, digits, ".", "_" or "-" (it names files)')
    cwd = Path(data["cwd"]).expanduser()
    cwd = (cwd if cwd.is_absolute() else base / cwd).resolve()
    if not cwd.is_dir():
        raise ValueError(f'"cwd" {data["cwd"]!r}: not a directory ({cwd})')
    model = data.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ValueError('"model" must be a non-empty string like "provider/id"')
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        raise ValueError('"settings" must be an object (the shape of settings.json)')
    per_file = sorted(set(settings) & PER_FILE_KEYS)
    if per_file:
        raise ValueError(
            f'"settings" cannot set {", ".join(per_file)}: heron reads those from each settings '
            "file by its scope (docs/permissions.md); put them in the user's settings.json"
        )
    tools = data.get("tools")
    if tools is not None:
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise ValueError('"tools" must be a list of tool names')
        bad = [t for t in tools if t not in ALL_TOOLS]
        if bad:
            raise ValueError(f"unknown tool(s) {', '.join(bad)}; available: {', '.join(ALL_TOOLS)}")
    timeout = data.get("timeout_s")
    if timeout is not None and (not _number(timeout) or timeout <= 0):
        raise ValueError('"timeout_s" must be a positive number of seconds')
    return BatchTask(
        id=data["id"],
        prompt=data["prompt"],
        cwd=cwd,
        model=model,
        settings=settings,
        tools=tuple(tools) if tools is not None else None,
        timeout_s=float(timeout) if timeout is not None else None,
    )


def load_tasks(path: Path) -> list[BatchTask]:
    """Every task of ``path``; relative ``cwd`` values are relative to the file's folder.
    Blank lines are skipped. Raises :class:`TaskFileError` listing all bad lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise TaskFileError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    base = path.resolve().parent
    tasks: list[BatchTask] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            task = parse_task(json.loads(line), base)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not JSON ({exc.msg} at column {exc.colno})")
            continue
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
            continue
        if task.id in first_line:
            problems.append(f"line {number}: id {task.id!r} already used on line {first_line[task.id]}")
            continue
        first_line[task.id] = number
        tasks.append(task)
    if problems:
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        raise TaskFileError(f"{path}: {len(problems)} bad line(s), nothing was run:\n" + "\n".join(shown))
    if not tasks:
        raise TaskFileError(f"{path}: no tasks (one JSON object per line: id, prompt, cwd)")
    return tasks
