"""write: create or replace a whole file.

How the file is replaced (atomically, keeping its mode; read-only files refused; hard
links written through; symlinks followed) is :func:`heron.coding.tools.files.replace_file`.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

from heron.agent.tool_meta import ToolMeta, path_argument
from heron.agent.tools import AgentTool, ToolError, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.tools.details import WriteDetails
from heron.coding.tools.env import ToolEnv, display_path, resolve_path
from heron.coding.tools.files import Written, check_regular, client_written, permission_error, replace_file, stat_path
from heron.coding.tools.schema_table import builtin_params
from heron.coding.tools.stale_write import check_not_stale

if TYPE_CHECKING:
    from heron.coding.tools.params import WriteParams

DESCRIPTION = (
    "Create or overwrite a file with the given content; missing parent directories are created. "
    "Use edit to change part of a file. A file that changed on disk since you last read or wrote it "
    "is not overwritten (read it again first, or pass overwrite: true to replace it anyway)."
)


class WriteTool(AgentTool["WriteParams"]):
    name = "write"
    parameters_ref = builtin_params("write")
    label = "Write"
    meta = ToolMeta(kind="write", paths=path_argument(access="write"))
    description = DESCRIPTION

    def __init__(self, env: ToolEnv) -> None:
        self.env = env

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
        if not params.overwrite:
            await self._check_not_stale(path, shown, data)
        if self.env.client_files is not None:
            existed = path.exists()
            await self.env.client_files.write_text(path, params.content)
            written = client_written(data, created=not existed)
        else:
            written = await asyncio.to_thread(_write, path, shown, data)
        self.env.reads.note_write(path, written.mtime_ns, written.size)
        details = WriteDetails(path=shown, bytes=len(data), created=written.created)
        text = f"Wrote {len(data)} bytes to {shown}"
        if written.in_place:
            details["hard_link"] = True
            text += " (in place: the file has other hard links, which see the new content too)"
        return ToolResult.text(text, details=details)

    async def _check_not_stale(self, path: Path, shown: str, data: bytes) -> None:
        last = self.env.reads.last_read(path)
        if last is None:
            return
        files = self.env.client_files
        held = await files.read_text(path) if files is not None else None
        encoded = None if held is None else held.encode("utf-8", "surrogatepass")
        await asyncio.to_thread(check_not_stale, path, shown, last, data, encoded)


def _write(path: Path, shown: str, data: bytes) -> Written:
    """Replace ``path`` with ``data``, creating missing parent directories."""
    st = stat_path(path, shown, "write", missing_ok=True)
    if st is not None:
        check_regular(st, shown, "replaced", "Give the path of a file to write.")
    target = Path(os.path.realpath(path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise ToolError(f"Cannot write {shown}: part of its directory path is a file.") from exc
    except PermissionError:
        raise permission_error(target.parent, shown, "create the directory for") from None
    except OSError as exc:
        raise ToolError(f"Cannot create the directory for {shown}: {exc.strerror or exc}") from exc
    return replace_file(path, shown, data, st)
