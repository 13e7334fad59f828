"""The ``ls`` tool: the entries of one directory.

One entry per line, sorted by name (byte order, so ``README.md`` before ``docs``):
``name/`` for a directory, ``name@`` for a symbolic link (whatever it points to; grep
and find do not follow links either), the plain name otherwise. Hidden entries are
listed; ``.git`` never is.

Entries ignored by ``.gitignore``/``.ignore``/``.fdignore`` are left out, as grep and find
leave them out, and a notice says how many were -- a model that does not see ``dist/``
should learn that it exists but is ignored, not that the build produced nothing. When
``fd`` is installed it decides what is ignored (``fd --max-depth 1``); otherwise the
Python rules of ``walk`` do, with the same result.

At most ``limit`` entries (default ``limits.ls_entries``), with a notice naming the limit
to ask for when more exist; the output is also capped at the generic line/byte limits.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from heron.agent.tool_meta import ToolMeta, tree_argument
from heron.agent.tools import AgentTool, ToolError, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.tools.details import LsDetails, truncation_details
from heron.coding.tools.env import ToolEnv, display_path, resolve_path
from heron.coding.tools.external import ExternalProcess, read_records
from heron.coding.tools.listing import Backend, cap_output, check_path, find_program, pick_backend
from heron.coding.tools.names import quoted_name
from heron.coding.tools.schema_table import builtin_params
from heron.coding.tools.walker import GIT_DIR, Walker, entry_kind, name_key

if TYPE_CHECKING:
    from heron.coding.tools.params import LsParams

EMPTY = "(empty directory)"
ALL_IGNORED = "(no entries shown)"

_SUFFIX = {"dir": "/", "symlink": "@", "file": "", "other": ""}


def _scan(root: Path) -> list[tuple[str, Literal["file", "dir", "symlink", "other"]]]:
    with os.scandir(root) as it:
        entries = [(e.name, entry_kind(e)) for e in it if e.name != GIT_DIR]
    entries.sort(key=lambda item: name_key(item[0]))
    return entries


class LsTool(AgentTool["LsParams"]):
    name = "ls"
    label = "List"
    meta = ToolMeta(kind="search", paths=tree_argument(listing=True), aliases=("LS",))
    parameters_ref = builtin_params("ls")

    def __init__(self, env: ToolEnv, backend: Backend = "auto") -> None:
        self.env = env
        self.backend: Backend = backend
        self._fd = find_program("fd", "fdfind")
        self.description = (
            "List a directory: entries sorted by name, directories end with '/', symbolic links with '@'. "
            "Includes hidden entries; leaves out .git and gitignored entries (and says how many). "
            f"At most {env.limits.ls_entries} entries by default (use limit for more)."
        )

    async def execute(
        self, call_id: str, params: LsParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        limits = self.env.limits
        limit = params.limit or limits.ls_entries
        root = resolve_path(params.path or ".", self.env.cwd)
        shown = display_path(root, self.env.cwd)
        if not check_path(root, shown):
            raise ToolError(f"{shown} is a file, not a directory. Use read to see its contents.")
        program = pick_backend(self.backend, self._fd, "ls", "fd")
        try:
            if program is not None:
                entries = await asyncio.to_thread(_scan, root)
                visible_names = await self._visible_fd(program, root, signal)
                visible = [(name, kind) for name, kind in entries if name in visible_names]
                total = len(entries)
            else:
                visible, total = await asyncio.to_thread(_visible_python, root)
        except PermissionError:
            raise ToolError(f"Permission denied: {shown}") from None
        except OSError as exc:
            raise ToolError(f"Cannot list {shown}: {exc.strerror or exc}") from None
        if signal.aborted:
            raise ToolError("ls was aborted.")

        ignored = total - len(visible)
        more = len(visible) > limit
        details = LsDetails(
            backend="fd" if program else "python",
            entries=min(len(visible), limit),
            ignored=ignored,
            limit_reached=more,
            truncation=None,
        )
        notices: list[str] = []
        if more:
            notices.append(f"[{limit} entries limit reached. Use limit={limit * 2} for more.]")
        if ignored:
            notices.append(f"[{ignored} gitignored {'entry' if ignored == 1 else 'entries'} not shown]")
        if not visible:
            body = ALL_IGNORED if ignored else EMPTY
            return ToolResult.text("\n\n".join([body, *notices]) if notices else body, details=details)
        body = "\n".join(quoted_name(name) + _SUFFIX[kind] for name, kind in visible[:limit])
        capped = cap_output(body, notices, limits, "Use a smaller limit.")
        details["truncation"] = truncation_details(capped.truncation)
        return ToolResult.text(capped.text, details=details)

    async def _visible_fd(self, program: str, root: Path, signal: AbortSignal) -> set[str]:
        args = [
            program,
            "--max-depth", "1",
            "--hidden",
            "--no-global-ignore-file",
            "--exclude", GIT_DIR,
            "--color", "never",
            "--print0",
        ]  # fmt: skip
        names: set[str] = set()
        async with ExternalProcess(args, str(root), signal) as process:
            async for record in read_records(process, b"\0"):
                if record:
                    name = os.fsdecode(record)
                    names.add(name.removeprefix("./").rstrip("/"))
            code, stderr = await process.finish()
        if code not in (0, 1) and not names and not signal.aborted and stderr.strip():
            raise ToolError(f"ls failed: {stderr.strip()}")
        return names


def _visible_python(root: Path) -> tuple[list[tuple[str, Literal["file", "dir", "symlink", "other"]]], int]:
    entries = Walker(root, tool_ignore_file=".fdignore").entries()
    return [(e.name, e.kind) for e in entries if not e.ignored], len(entries)
