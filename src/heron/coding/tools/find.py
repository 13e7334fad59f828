"""The ``find`` tool: list files whose path matches a glob.

``fd`` does the walk when it is on PATH (``fd`` or Debian's ``fdfind``), the Python walk of
``walk`` otherwise, with the same output: one path per line, relative to the session cwd
when the searched directory is inside it (else absolute), sorted the way ``rg --sort
path`` sorts (depth first, names in byte order), i.e. component by component.

* Files only: directories are not listed (``src/**`` lists the files below ``src``);
  symbolic links are neither listed nor followed.
* The pattern is a glob in gitignore style: without a ``/`` it matches a file's name at
  any depth (``*.py``, ``test_*``); with one it matches the path below the searched
  directory (``src/*.py`` only directly in ``src``, ``src/**/*.py`` at any depth,
  ``**/test_*.py`` anywhere). A leading ``/`` or ``./`` anchors to the searched
  directory; an absolute pattern inside it is made relative. ``{a,b}`` alternatives,
  ``[...]`` classes and ``?`` work; matching is case-sensitive.
* ``.gitignore``/``.ignore``/``.fdignore`` are honoured, hidden files included, ``.git``
  never (see ``walk``).
* At most ``limit`` paths (default ``limits.find_results``), with a notice naming the
  limit to ask for when more exist; the output is also capped at the generic line/byte
  limits.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from heron.agent.tool_meta import ToolMeta, tree_argument
from heron.agent.tools import AgentTool, ToolError, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.tools.details import FindDetails, truncation_details
from heron.coding.tools.env import ToolEnv, display_path, resolve_path
from heron.coding.tools.external import ExternalProcess, read_records
from heron.coding.tools.globs import GlobError, compile_glob
from heron.coding.tools.listing import Backend, cap_output, check_path, find_program, path_joiner, pick_backend
from heron.coding.tools.schema_table import builtin_params
from heron.coding.tools.walker import Walker

if TYPE_CHECKING:
    from heron.coding.tools.params import FindParams

NO_FILES = "No files found matching pattern"


def normalise_pattern(pattern: str, root: Path) -> tuple[str, bool]:
    """The glob to match and whether it is matched against the whole relative path
    (``True``) or only the file name."""
    text = pattern.strip()
    absolute_root = str(root).rstrip("/") + "/"
    if text.startswith(absolute_root):
        return text[len(absolute_root) :], True
    if text.startswith("./"):
        return text[2:], True
    if text.startswith("/"):
        return text[1:], True
    return text, "/" in text


def _escape_glob(text: str) -> str:
    return "".join(c if c.isalnum() or c == "/" else "\\" + c for c in text)


class FindTool(AgentTool["FindParams"]):
    name = "find"
    label = "Find"
    meta = ToolMeta(kind="search", paths=tree_argument(listing=True), aliases=("Glob",))
    parameters_ref = builtin_params("find")

    def __init__(self, env: ToolEnv, backend: Backend = "auto") -> None:
        self.env = env
        self.backend: Backend = backend
        self._fd = find_program("fd", "fdfind")
        self.description = (
            "Find files by glob, e.g. '*.py' (file names at any depth), 'src/**/*.ts' or '**/test_*.py' (paths). "
            "Returns matching file paths, one per line, sorted. Respects .gitignore, includes hidden files, "
            f"skips .git. At most {env.limits.find_results} results by default (use limit for more)."
        )

    async def execute(
        self, call_id: str, params: FindParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        limits = self.env.limits
        limit = params.limit or limits.find_results
        root = resolve_path(params.path or ".", self.env.cwd)
        shown = display_path(root, self.env.cwd)
        if not check_path(root, shown):
            raise ToolError(f"{shown} is a file, not a directory. find searches the files below a directory.")
        glob, whole_path = normalise_pattern(params.pattern, root)
        try:
            regex = compile_glob(glob)
        except GlobError as exc:
            raise ToolError(f"Invalid glob pattern: {params.pattern}: {exc}") from None

        program = pick_backend(self.backend, self._fd, "find", "fd")
        if program is not None:
            paths = await self._find_fd(program, root, glob, whole_path, limit, signal)
        else:
            paths = await self._find_python(root, regex, whole_path, limit, signal)
        if signal.aborted:
            raise ToolError("find was aborted.")

        more = len(paths) > limit
        paths = paths[:limit]
        details = FindDetails(
            backend="fd" if program else "python", results=len(paths), limit_reached=more, truncation=None
        )
        if not paths:
            return ToolResult.text(NO_FILES, details=details)
        join = path_joiner(root, self.env.cwd)
        notices = []
        if more:
            notices.append(f"[{limit} results limit reached. Use limit={limit * 2} for more, or refine the pattern.]")
        capped = cap_output(
            "\n".join(join(p) for p in paths), notices, limits, "Refine the pattern or use a smaller limit."
        )
        details["truncation"] = truncation_details(capped.truncation)
        return ToolResult.text(capped.text, details=details)

    async def _find_fd(
        self, program: str, root: Path, glob: str, whole_path: bool, limit: int, signal: AbortSignal
    ) -> list[str]:
        args = [
            program,
            "--type", "f",
            "--hidden",
            "--no-global-ignore-file",
            "--exclude", ".git",
            "--color", "never",
            "--print0",
            "--case-sensitive",
            "--glob",
        ]  # fmt: skip
        if whole_path:
            # fd matches a full-path glob against the absolute path it builds from its
            # working directory, i.e. the canonical one.
            args += ["--full-path", "--", _escape_glob(os.path.realpath(root)) + "/" + glob, "."]
        else:
            args += ["--", glob, "."]
        found: list[bytes] = []
        async with ExternalProcess(args, str(root), signal) as process:
            async for record in read_records(process, b"\0"):
                if record:
                    found.append(record[2:] if record.startswith(b"./") else record)
            code, stderr = await process.finish()
        if code not in (0, 1) and not found and not signal.aborted and stderr.strip():
            raise ToolError(f"find failed: {stderr.strip()}")
        found.sort(key=lambda rel: rel.split(b"/"))  # component by component: depth first
        return [os.fsdecode(rel) for rel in found[: limit + 1]]

    async def _find_python(
        self, root: Path, regex: re.Pattern[bytes], whole_path: bool, limit: int, signal: AbortSignal
    ) -> list[str]:
        stop = threading.Event()
        unsubscribe = signal.add_listener(stop.set)
        try:
            return await asyncio.to_thread(find_files, root, regex, whole_path, limit, stop.is_set)
        finally:
            stop.set()
            unsubscribe()


def find_files(
    root: Path, regex: re.Pattern[bytes], whole_path: bool, limit: int, cancelled: Callable[[], bool]
) -> list[str]:
    """Up to ``limit + 1`` matching files, in order (one more says that more exist)."""
    out: list[str] = []
    match = regex.fullmatch
    for rel, _ in Walker(root, tool_ignore_file=".fdignore").files(cancelled):
        if match(rel if whole_path else rel.rpartition(b"/")[2]):
            out.append(os.fsdecode(rel))
            if len(out) > limit:
                break
    return out
