"""write: create or replace a whole file, atomically.

The new content goes to a temporary file in the same directory which then replaces the
target with one rename, so a crash, a full disk or a concurrent reader never sees half a
file. An existing file keeps its permission bits (a script stays executable); a symlink
is followed, so the file it points to is replaced rather than the link.
"""

from __future__ import annotations

import asyncio
import os
import stat
import uuid
from pathlib import Path

from pydantic import Field

from heron.agent.tools import AgentTool, ToolError, ToolParams, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.tools.env import ToolEnv, display_path, resolve_path

DESCRIPTION = (
    "Write a file: creates it (and any missing parent directories) or replaces its whole content. "
    "Prefer edit for changing part of an existing file."
)


class WriteParams(ToolParams):
    path: str = Field(description="Path of the file to write (relative to the working directory, or absolute).")
    content: str = Field(description="The complete new content of the file.")


class WriteTool(AgentTool[WriteParams]):
    name = "write"
    label = "Write"
    description = DESCRIPTION

    def __init__(self, env: ToolEnv) -> None:
        self.env = env
        self.parameters = WriteParams

    def concurrency_key(self, params: WriteParams) -> str | None:
        return str(resolve_path(params.path, self.env.cwd))

    async def execute(
        self, call_id: str, params: WriteParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        path = resolve_path(params.path, self.env.cwd)
        shown = display_path(path, self.env.cwd)
        try:
            data = params.content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ToolError(
                f"The content cannot be written as UTF-8 (an invalid character at position {exc.start}); "
                "nothing was written."
            ) from exc
        if signal.aborted:
            raise ToolError("Write was aborted; nothing was written.")
        created = await asyncio.to_thread(_write_atomic, path, shown, data)
        st = path.stat()
        self.env.reads.note_write(path, st.st_mtime_ns, st.st_size)
        return ToolResult.text(
            f"Wrote {len(data)} bytes to {shown}",
            details={"path": shown, "bytes": len(data), "created": created},
        )


def _write_atomic(path: Path, shown: str, data: bytes) -> bool:
    """Replace ``path`` with ``data``; whether the file is new."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        st: os.stat_result | None = target.stat()
    except FileNotFoundError:
        st = None
    except NotADirectoryError as exc:
        raise ToolError(f"Cannot write {shown}: part of its directory path is a file.") from exc
    except OSError as exc:
        raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}") from exc
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{shown} is a directory; give the path of a file to write.")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{shown} is not a regular file (a device, socket or pipe), so it was not replaced.")

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise ToolError(f"Cannot write {shown}: part of its directory path is a file.") from exc
    except PermissionError as exc:
        raise ToolError(f"Permission denied: cannot create the directory for {shown}.") from exc
    except OSError as exc:
        raise ToolError(f"Cannot create the directory for {shown}: {exc.strerror or exc}") from exc

    tmp = target.parent / f".{target.name}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        # 0o666 lets the umask decide the mode of a new file, as any editor would.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except PermissionError as exc:
        raise ToolError(f"Permission denied: {shown}") from exc
    except OSError as exc:
        raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}") from exc
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if st is not None:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, PermissionError):
            raise ToolError(f"Permission denied: {shown}") from exc
        if isinstance(exc, OSError):
            raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}") from exc
        raise
    return st is None
