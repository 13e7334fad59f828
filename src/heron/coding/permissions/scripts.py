"""The files a command line runs as code: shell scripts read, files it writes first doubted.

A script file is the project's own code (docs/permissions.md, "Commands the rules cannot
vouch for"), but two things about it the rules can see:

* a shell script that exists - ``bash build.sh``, ``. ./env.sh``, ``./run.sh`` whose ``#!``
  line names a shell (or that has none) - is read (up to :data:`MAX_SCRIPT_BYTES`) and its
  commands are checked like the line's own, so an ``rm`` in it meets ``Bash(rm:*)``; one that
  cannot be followed, or is too long to read, cannot be vouched for;
* a file the same command line writes and then runs (``printf 'rm f' > x.sh; bash x.sh``,
  ``… > mk; make -f mk``, ``cp /tmp/a run.sh && ./run.sh``) cannot be read before it runs, and
  neither can code run after a write to a path computed at run time: those commands are ones
  the rules cannot vouch for.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from heron.coding.permissions.coverage import changes_operands, written_operands
from heron.coding.permissions.shell import ShellParseError, split_commands
from heron.coding.permissions.wrappers import unwrap
from heron.coding.tools.env import resolve_path

if TYPE_CHECKING:
    from heron.coding.permissions.shell import SimpleCommand

MAX_SCRIPT_BYTES = 64 * 1024
MAX_SCRIPT_DEPTH = 2  # a script read, and the scripts it runs
_SHELL_LINE = re.compile(rb"^#!.*\b(?:ba|da|z|k|mk)?sh\b")

RunsIn = Callable[["SimpleCommand"], Path]


def script_parts(parts: list[SimpleCommand], runs_in: RunsIn, depth: int = 0) -> list[SimpleCommand]:
    """The commands of the shell scripts ``parts`` run, read from disk (module docstring)."""
    found: list[SimpleCommand] = []
    for part in parts:
        for name in part.shell_files:
            path = resolve_path(name, runs_in(part))
            try:
                text = _shell_text(path)
                inner = split_commands(text) if text is not None else []
            except (OSError, ShellParseError) as exc:
                part.opaque = part.opaque or f"it runs the script {name}, which the checker cannot follow ({exc})"
                continue
            for command in inner:
                command.implied = True  # the project's code: the deny, ask and path rules apply, not the mode
                command.cwd = (
                    os.path.join(part.cwd, command.cwd) if part.cwd and command.cwd else part.cwd or command.cwd
                )
            found += inner
            if depth + 1 < MAX_SCRIPT_DEPTH:
                found += script_parts(inner, runs_in, depth + 1)
    return found


def _shell_text(path: Path) -> str | None:
    """A shell script's text; None for a file that is not one (missing, binary, another interpreter's)."""
    if not path.is_file():
        return None
    if path.stat().st_size > MAX_SCRIPT_BYTES:
        raise OSError(f"it is longer than {MAX_SCRIPT_BYTES // 1024} KiB")
    data = path.read_bytes()
    if b"\0" in data[:4096] or (data.startswith(b"#!") and not _SHELL_LINE.match(data)):
        return None
    return data.decode("utf-8", errors="replace")


def written_then_run(parts: list[SimpleCommand], runs_in: RunsIn) -> None:
    """Mark the commands that run a file the same line writes (or may write) as ones whose
    effect cannot be bounded."""
    written: set[Path] = set()
    trees: list[Path] = []
    computed = False
    for part in parts:
        where = runs_in(part)
        targets = [w for operator, w in part.redirects if ">" in operator] + part.targets
        computed |= any(w.dynamic for w in targets) or any(w.dynamic for w in part.trees)
        written |= {_at(w.text.removesuffix("/-"), where) for w in targets if not w.dynamic}
        words = [w.text for w in part.words]
        start = unwrap(words)[-1] if words else 0
        program = words[start].rsplit("/", 1)[-1] if words[start:] else ""
        if program != "git":  # git updating the work tree brings the project's own code
            trees += [_at(w.text, where) for w in part.trees if not w.dynamic]
        if changes_operands(words[start:]):
            for path in (_at(text, where) for text in written_operands(words[start:])):
                (trees.append(path) if path.is_dir() else written.add(path))
    for part in parts:
        for name in part.code_files:
            path = _at(name, runs_in(part))
            if computed or path in written or any(path == t or t in path.parents for t in trees):
                why = "a path computed when it runs" if computed else name
                part.opaque = part.opaque or f"it runs {name}, and this command line writes {why} first"
                break


def _at(text: str, where: Path) -> Path:
    return Path(os.path.normpath(resolve_path(text, where)))
