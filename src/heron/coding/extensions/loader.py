"""Finding extensions and getting their ``register`` function.

Three places, in this order: the user's ``$HERON_HOME/extensions/*.py``, the
``heron.extensions`` entry-point group of the installed distributions, and the project's
``<cwd>/.heron/extensions/*.py`` - the last only in a trusted project, because a file in a
repository is code its author chose, not the user. A file is imported under a private
module name (``heron_extension_<source>_<stem>``) so two extensions with the same file
name do not replace each other in ``sys.modules``.

``importlib.metadata`` loads only when some distribution's ``entry_points.txt`` names the
group: importing it (with ``zipfile``, ``email`` and ``csv``) and reading every
distribution's entry points cost a ``heron -p`` start 40-60 ms, while the files alone are
read in a few (docs/benchmarks.md, "The command").
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the extension API loads with the first extension
    from heron.coding.extensions.api import ExtensionSource

ENTRY_POINT_GROUP = "heron.extensions"
Register = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One extension found: how to load its ``register``."""

    name: str
    source: ExtensionSource
    path: str
    load: Callable[[], Register]


def extension_dirs(cwd: Path, home: Path) -> list[tuple[Path, ExtensionSource]]:
    return [(home / "extensions", "user"), (cwd / ".heron" / "extensions", "project")]


def _file_loader(path: Path, source: ExtensionSource) -> Callable[[], Register]:
    def load() -> Register:
        module_name = f"heron_extension_{source}_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
        return _register_of(module, str(path))

    return load


def _register_of(obj: Any, where: str) -> Register:
    """A module's ``register``, or the object itself when it is the function."""
    register = getattr(obj, "register", None)
    if callable(register):
        return register  # type: ignore[no-any-return]
    if callable(obj) and not isinstance(obj, type(sys)):
        return obj  # type: ignore[no-any-return]
    raise AttributeError(f"{where} has no register(api) function")


def _files(directory: Path, source: ExtensionSource) -> list[Candidate]:
    try:
        paths = sorted(p for p in directory.glob("*.py") if p.is_file() and not p.name.startswith("_"))
    except OSError:
        return []
    return [Candidate(p.stem, source, str(p), _file_loader(p, source)) for p in paths]


def _may_declare(group: str) -> bool:
    """Whether any distribution ``importlib.metadata`` would find may declare ``group``:
    False only when none of the ``entry_points.txt`` files it reads (of the ``*.dist-info``
    and ``*.egg-info`` directories on ``sys.path``, and of ``.egg`` directories) contains
    the group's name. True (ask ``importlib.metadata``) for whatever this does not read:
    a zip file on the path, or another finder of distributions than the path finder."""
    finders = (f for f in sys.meta_path if hasattr(f, "find_distributions"))
    if any(f is not importlib.machinery.PathFinder for f in finders):
        return True
    name = group.encode()
    for entry in sys.path:
        try:
            children = os.listdir(entry or ".")
        except OSError:
            if os.path.isfile(entry):
                return True
            continue
        egg = os.path.basename(entry).lower().endswith(".egg")
        for child in children:
            low = child.lower()
            if not (low.endswith((".dist-info", ".egg-info")) or (egg and low == "egg-info")):
                continue
            try:
                with open(os.path.join(entry, child, "entry_points.txt"), "rb") as file:
                    if name in file.read():
                        return True
            except OSError:
                continue
    return False


def _entry_points() -> list[Candidate]:
    if not _may_declare(ENTRY_POINT_GROUP):
        return []
    from importlib.metadata import entry_points

    found: list[Candidate] = []
    seen: set[str] = set()
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if ep.name in seen:  # the same distribution on the path twice
            continue
        seen.add(ep.name)

        def load(ep: Any = ep) -> Register:
            return _register_of(ep.load(), f"entry point {ep.name} = {ep.value}")

        found.append(Candidate(ep.name, "entry-point", f"entry point {ep.name} = {ep.value}", load))
    return found


def find_extensions(cwd: Path, home: Path, *, trusted: bool, warnings: list[str]) -> list[Candidate]:
    """Every extension to load; a project's are left out (with a warning) unless trusted."""
    user_dir, project_dir = (d for d, _ in extension_dirs(cwd, home))
    found = _files(user_dir, "user")
    try:
        found += _entry_points()
    except Exception as exc:  # noqa: BLE001 - a broken distribution's metadata must not stop heron
        warnings.append(f"could not read the {ENTRY_POINT_GROUP} entry points: {exc}")
    project = _files(project_dir, "project")
    if project and not trusted:
        names = ", ".join(c.name for c in project)
        warnings.append(
            f"{project_dir}: project extensions ({names}) load only in a trusted project (run with --trust); ignored"
        )
        return found
    return found + project
