"""heron's own modules keep their byte-code cache even under ``PYTHONDONTWRITEBYTECODE``.

Many environments set ``PYTHONDONTWRITEBYTECODE=1`` (containers, this project's CI):
then Python compiles every module from source on every start, which for heron's ~80
modules is most of a one-shot run's start-up. The variable exists to keep caches out of
trees a user does not want touched; heron's own installed package is not such a tree,
so for heron's modules only (never the SDKs, the standard library or user code) the
``__pycache__`` file is written as Python would have written it. A cache directory
that cannot be written is skipped silently, as Python does.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import marshal
import os
import sys
from collections.abc import Sequence
from types import CodeType, ModuleType
from typing import Any

_PACKAGE = "heron"


class _CachingLoader(importlib.machinery.SourceFileLoader):
    """Writes the cache when the module had to be compiled: ``source_to_code`` runs only when
    no current cache was found, so a start that loads every module from its cache does no
    extra work per module (no second stat or read of the cache)."""

    # typeshed declares it a staticmethod of InspectLoader; SourceLoader's is a method
    def source_to_code(self, data: Any, path: Any, *args: Any, **kwargs: Any) -> CodeType:  # type: ignore[override]
        code: CodeType = super().source_to_code(data, path, *args, **kwargs)
        if isinstance(path, str):
            write_cache(path, code)
        return code


def _header(source: str) -> tuple[str, bytes] | None:
    """The cache path of ``source`` and the header a current cache starts with."""
    try:
        cache = importlib.util.cache_from_source(source)
        stat = os.stat(source)
    except (OSError, ValueError, NotImplementedError):
        return None
    mtime = (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
    size = (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    return cache, importlib.util.MAGIC_NUMBER + b"\0\0\0\0" + mtime + size


def is_current(source: str) -> bool:
    found = _header(source)
    if found is None:
        return True  # nothing to write to: treat as done
    cache, header = found
    try:
        with open(cache, "rb") as existing:
            return existing.read(16) == header
    except OSError:
        return False


def write_cache(source: str, code: CodeType) -> None:
    """Write ``code`` as the byte-code cache of ``source`` unless a current one exists."""
    found = _header(source)
    if found is None or is_current(source):
        return
    cache, header = found
    partial = f"{cache}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        with open(partial, "wb") as out:
            out.write(header + marshal.dumps(code))
        os.replace(partial, cache)
    except OSError:
        return


class _Finder:
    """Finds heron's modules as the path finder would, with the caching loader."""

    @classmethod
    def find_spec(cls, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> Any:
        if name != _PACKAGE and not name.startswith(_PACKAGE + "."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        loader = getattr(spec, "loader", None)
        if spec is not None and type(loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _CachingLoader(loader.name, loader.path)
        return spec


def keep_own_bytecode() -> None:
    """Install the finder (only when byte-code writing is off) and cache the heron modules
    imported before it (the entry point's own)."""
    if not sys.dont_write_bytecode or any(f is _Finder for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Finder)
    for name, module in list(sys.modules.items()):
        if name == _PACKAGE or name.startswith(_PACKAGE + "."):
            source = getattr(module, "__file__", None)
            spec = getattr(module, "__spec__", None)
            loader = getattr(spec, "loader", None)
            if (
                source
                and source.endswith(".py")
                and isinstance(loader, importlib.machinery.SourceFileLoader)
                and not is_current(source)
            ):
                code = loader.get_code(name)
                if code is not None:
                    write_cache(source, code)
