"""rpc ``export_report``: the session report (docs/report.md) written for an rpc client;
rpc ``memory_log``: the project memory's history (docs/memory.md).

heron's own command, next to pi's ``export_html`` (which heron does not serve): fields
``outputPath`` (optional; default ``heron-report-<id>.html`` in the session's directory) and
``full`` (optional bool: embed the whole transcript); the answer is ``{"path": ...}``. The
page is written on a worker thread, so a large session does not stall the event stream.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from heron.cli.modes.rpc_protocol import CommandError
from heron.coding.report import write_report
from heron.coding.report.sources import catalogue_windows

if TYPE_CHECKING:
    from heron.ai.types import Model
    from heron.coding.memory import MemoryKeeper
    from heron.coding.settings import Settings
    from heron.session.store import SessionStore


class Logged(Protocol):
    """What ``memory_log`` reads of a session: its project memory."""

    @property
    def memory(self) -> MemoryKeeper: ...


class Reported(Protocol):
    """What ``export_report`` reads of a session: its file, where it runs, the catalogue's
    home, and the model, window and reserve the report's curve is drawn against."""

    @property
    def store(self) -> SessionStore: ...

    @property
    def cwd(self) -> Path: ...

    @property
    def home(self) -> Path: ...

    @property
    def model(self) -> Model: ...

    @property
    def window(self) -> int: ...

    @property
    def settings(self) -> Settings: ...


async def memory_log(session: Logged, fields: dict[str, Any]) -> dict[str, Any]:
    """rpc ``memory_log``: the project memory's changes, newest first, as ``heron memory log
    --json`` gives them (docs/memory.md); read on a worker thread (it runs git)."""
    from heron.coding.memory_history import MemoryHistoryError

    try:
        changes = await asyncio.to_thread(session.memory.history.log)
    except MemoryHistoryError as exc:
        raise CommandError(str(exc)) from exc
    return {"directory": str(session.memory.directory), "changes": [c.to_json() for c in changes]}


async def export_report(session: Reported, fields: dict[str, Any]) -> dict[str, Any]:
    target = fields.get("outputPath")
    if target is not None and (not isinstance(target, str) or not target.strip()):
        raise CommandError("outputPath must be a non-empty string")
    full = fields.get("full", False)
    if not isinstance(full, bool):
        raise CommandError("full must be true or false")
    path = Path(target).expanduser() if target else session.cwd / f"heron-report-{session.store.session_id[:8]}.html"
    if not path.is_absolute():
        path = session.cwd / path
    catalogue = catalogue_windows(session.home)
    current = f"{session.model.provider}/{session.model.id}"

    def window_of(model: str) -> int | None:
        return session.window if model == current else catalogue(model)

    reserve = session.settings.compaction.reserve_tokens
    try:
        written = await asyncio.to_thread(
            write_report, session.store, path, windows=window_of, reserve=reserve, full=full
        )
    except OSError as exc:
        raise CommandError(f"could not write the report to {path}: {exc.strerror or exc}") from exc
    return {"path": str(written)}
