"""What the sandbox lets a command touch, read from the settings files and the permission rules.

The rule parser (:mod:`heron.coding.permissions.shell`) is the first, explainable line: it
names the rule a command breaks. It is not a boundary: a shell has too many ways to reach a
file (``env -S``, ``trap``, an interpreter, a symlink). The sandbox is the boundary, enforced
by the kernel, and this module decides its shape:

* ``workspace-write`` (the default): the whole file system readable, writable only the
  project, the temp directory (``/tmp``, ``$TMPDIR``) and the paths the settings add;
  heron's home hidden.
* ``read-only``: the same, with the project read-only too (the temp directory stays writable).
* ``off``: commands run as the user, with the rule checks only.

Permission rules feed it: an ``Edit``/``Write`` deny rule on a directory or file becomes a
read-only mount, a ``Read`` deny rule a hidden one, an ``Edit``/``Write`` allow rule on an
absolute path outside the project a writable one. A rule whose pattern the kernel cannot
express (``*.lock`` at any depth) stays with the rule parser.

Like permission rules, a project's own settings file (it comes with the repository) may
tighten the sandbox but not loosen it unless the user trusts the project.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from heron.coding.permissions.engine import READING, WRITING
from heron.coding.permissions.rules import Rule
from heron.coding.permissions.scopes import Scope

SandboxMode = Literal["off", "workspace-write", "read-only"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("off", "workspace-write", "read-only")
_STRICTNESS = {"off": 0, "workspace-write": 1, "read-only": 2}
_WILDCARDS = set("*?[")


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """The shape of the sandbox a command runs in (see the module docstring)."""

    project: Path
    home: Path
    mode: SandboxMode = "workspace-write"
    network: bool = False
    writable: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    hooks: bool = False  # ``sandbox.hooks``: hook commands run in the sandbox too
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    @property
    def temp(self) -> tuple[Path, ...]:
        """The temporary directories commands may write: ``/tmp`` and ``$TMPDIR`` (tools,
        compilers and test runners write there; a script written to ``/tmp`` in one call
        runs in the next)."""
        found = [Path("/tmp"), Path(tempfile.gettempdir())]
        return tuple(dict.fromkeys(Path(os.path.realpath(path)) for path in found if path.is_dir()))

    def describe(self) -> str:
        """One line for ``/context`` and the docs' wording: what a command may do."""
        if not self.enabled:
            return "off: commands run unconfined (rule checks only)"
        writes = "nothing but the temp dir" if self.mode == "read-only" else "the project and the temp dir"
        extra = f" and {len(self.writable)} configured path(s)" if self.writable and self.mode != "read-only" else ""
        net = "network allowed" if self.network else "no network"
        return f"{self.mode}: writes to {writes}{extra}; heron's home hidden; {net}"


def sandbox_policy(
    scopes: Sequence[Scope],
    rules: Iterable[Rule],
    *,
    project: Path,
    home: Path,
    trusted: bool,
    override: SandboxMode | None = None,
) -> SandboxPolicy:
    """The policy from the settings files (user, project, local, in that order), the
    permission rules and a command-line ``override`` (``--sandbox``)."""
    warnings: list[str] = []
    mode: SandboxMode = "workspace-write"
    network = False
    hooks = False
    writable: list[Path] = []
    for scope in scopes:
        data = scope.data.get("sandbox")
        if data is None:
            continue
        if not isinstance(data, dict):
            warnings.append(f"{scope.path}: setting 'sandbox' must be an object (ignored)")
            continue
        may_loosen = scope.name == "user" or trusted
        mode = _mode(data, mode, may_loosen, scope, warnings)
        network = _network(data, network, may_loosen, scope, warnings)
        hooks = _hooks(data, hooks, may_loosen, scope, warnings)
        if may_loosen:
            writable += _paths(data.get("writable"), project, scope, warnings)
    if override is not None:
        mode = override
    writable += git_directories(project)
    read_only, hidden = _rule_paths(rules, project, writable)
    return SandboxPolicy(
        project=project,
        home=home,
        mode=mode,
        network=network,
        writable=tuple(writable),
        read_only=tuple(read_only),
        hidden=tuple(hidden),
        hooks=hooks,
        warnings=tuple(warnings),
    )


def git_directories(project: Path) -> list[Path]:
    """The repository a worktree's ``.git`` file points to (``gitdir: …``), outside the
    project: ``git commit`` in a worktree writes there."""
    marker = project / ".git"
    try:
        if not marker.is_file():
            return []
        text = marker.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return []
    if not text.startswith("gitdir:"):
        return []
    gitdir = _absolute(text.removeprefix("gitdir:").strip(), project)
    found = [gitdir]
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return found
    found.append(_absolute(common, gitdir))
    return [path for path in found if path != project and project not in path.parents]


def _mode(data: dict[str, Any], mode: SandboxMode, may_loosen: bool, scope: Scope, warnings: list[str]) -> SandboxMode:
    asked = data.get("mode")
    if asked is None:
        return mode
    if asked not in SANDBOX_MODES:
        warnings.append(f"{scope.path}: sandbox.mode must be one of {', '.join(SANDBOX_MODES)}, not {asked!r}")
        return mode
    if not may_loosen and _STRICTNESS[asked] < _STRICTNESS[mode]:
        warnings.append(
            f"{scope.path}: sandbox.mode {asked!r} ignored: an untrusted project may not loosen the sandbox"
        )
        return mode
    return cast(SandboxMode, asked)


def _network(data: dict[str, Any], network: bool, may_loosen: bool, scope: Scope, warnings: list[str]) -> bool:
    asked = data.get("network")
    if asked is None:
        return network
    if not isinstance(asked, bool):
        warnings.append(f"{scope.path}: sandbox.network must be true or false")
        return network
    if asked and not may_loosen:
        warnings.append(f"{scope.path}: sandbox.network ignored: an untrusted project may not loosen the sandbox")
        return network
    return asked


def _hooks(data: dict[str, Any], hooks: bool, may_loosen: bool, scope: Scope, warnings: list[str]) -> bool:
    """``sandbox.hooks``: true confines hooks (a tightening any file may ask for); false
    after a true from another file loosens, which an untrusted project may not."""
    asked = data.get("hooks")
    if asked is None:
        return hooks
    if not isinstance(asked, bool):
        warnings.append(f"{scope.path}: sandbox.hooks must be true or false")
        return hooks
    if hooks and not asked and not may_loosen:
        warnings.append(f"{scope.path}: sandbox.hooks ignored: an untrusted project may not loosen the sandbox")
        return hooks
    return asked


def _paths(value: Any, project: Path, scope: Scope, warnings: list[str]) -> list[Path]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        warnings.append(f'{scope.path}: sandbox.writable must be an array of paths, like ["~/.cache/pip"]')
        return []
    return [_absolute(item, project) for item in value if item.strip()]


def _absolute(text: str, project: Path) -> Path:
    path = Path(os.path.expanduser(text.strip()))
    return Path(os.path.normpath(path if path.is_absolute() else project / path))


def _rule_paths(rules: Iterable[Rule], project: Path, writable: list[Path]) -> tuple[list[Path], list[Path]]:
    """Read-only and hidden paths from deny rules; writable ones (added to ``writable``)
    from allow rules on absolute paths outside the project."""
    read_only: list[Path] = []
    hidden: list[Path] = []
    for rule in rules:
        # by what the rule covers (any tool that reads, or changes, files), not by its name
        reads, writes = rule.covers_tool("", READING), rule.covers_tool("", WRITING)
        base = literal_base(rule.specifier, project) if rule.specifier is not None else None
        if base is None or not (reads or writes):
            continue
        if rule.behavior == "deny":
            (read_only if writes else hidden).append(base)
        elif rule.behavior == "allow" and writes and not _inside(base, project):
            writable.append(base)
    return read_only, hidden


def literal_base(specifier: str, project: Path) -> Path | None:
    """The file or directory a path rule covers, when the kernel can express it: a path
    without wildcards, or one ending in ``/**``; None for every other pattern."""
    spec = specifier.strip()
    if "/" not in spec.rstrip("/"):
        return None  # a bare name matches at any depth: left to the rule parser
    if spec.endswith("/**"):
        spec = spec[:-3]
    if not spec or _WILDCARDS & set(spec):
        return None
    if spec.startswith("~"):
        return Path(os.path.normpath(os.path.expanduser(spec)))
    if spec.startswith("/"):
        return Path(os.path.normpath("/" + spec.lstrip("/")))
    return Path(os.path.normpath(project / spec.removeprefix("./")))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
