"""What grep, find and ls share: picking a backend, checking the path, capping the output."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from heron.agent.tools import ToolError
from heron.coding.tools.env import display_path
from heron.coding.tools.names import quoted_name
from heron.context.tool_output.limits import ToolLimits, format_size
from heron.context.tool_output.truncate import Truncation, truncate_head

Backend = Literal["auto", "external", "python"]


def printable(text: str) -> str:
    """File names that are not valid UTF-8 come back with surrogates; show U+FFFD instead."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def path_joiner(root: Path, cwd: Path) -> Callable[[str], str]:
    """Turns a path relative to the search root into what the model is shown: relative to
    the session cwd when the root is inside it, else absolute."""
    shown = display_path(root, cwd)
    if shown == ".":
        return quoted_path
    prefix = shown if shown.endswith("/") else shown + "/"
    return lambda rel: quoted_path(prefix + rel)


def quoted_path(path: str) -> str:
    """A path of a listing, each name quoted as :func:`quoted_name` does."""
    return "/".join(quoted_name(part) for part in path.split("/"))


def find_program(*names: str) -> str | None:
    for name in names:
        if found := shutil.which(name):
            return found
    return None


def pick_backend(backend: Backend, program: str | None, tool: str, names: str) -> str | None:
    """The external program to use, or ``None`` for the Python implementation."""
    if backend == "python":
        return None
    if program is None and backend == "external":
        raise ToolError(f"{tool} was asked to use {names}, but it is not installed.")
    return program


def check_path(path: Path, shown: str) -> bool:
    """Errors the model can act on for a missing or unreadable path; whether it is a directory."""
    try:
        is_dir = path.is_dir()
        exists = is_dir or path.exists()
    except OSError as exc:
        raise ToolError(f"Cannot access {shown}: {exc.strerror or exc}") from None
    if not exists:
        raise ToolError(f"Path not found: {shown}")
    if not os.access(path, os.R_OK | (os.X_OK if is_dir else 0)):
        raise ToolError(f"Permission denied: {shown}")
    return is_dir


@dataclass(frozen=True, slots=True)
class CappedOutput:
    text: str
    truncation: Truncation | None


def cap_output(body: str, notices: list[str], limits: ToolLimits, advice: str) -> CappedOutput:
    """Apply the generic line/byte cap to ``body``, then append the notices.

    The cap's own notice comes first among the notices, since it says that what the model
    sees is incomplete in a way no other notice covers.
    """
    cut = truncate_head(body, limits.max_lines, limits.max_bytes)
    all_notices = list(notices)
    if cut.truncated:
        limit = format_size(limits.max_bytes) if cut.truncated_by == "bytes" else f"{limits.max_lines}-line"
        all_notices.insert(
            0,
            f"[Output truncated at the {limit} limit: showing {cut.output_lines} of {cut.total_lines} lines. {advice}]",
        )
    text = cut.content
    if all_notices:
        text += "\n\n" + "\n".join(all_notices)
    return CappedOutput(text, cut if cut.truncated else None)
