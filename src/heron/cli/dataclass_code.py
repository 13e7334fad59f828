"""The code ``@dataclass`` generates, compiled once and kept beside heron's byte-code.

Every ``@dataclass`` writes the source of its ``__init__``, ``__repr__``, ``__eq__`` (and
more for frozen or ordered classes) and compiles it with ``exec`` while its module is
imported. Byte-code caches do not cover that text, so a ``heron -p`` start compiled about
640 small functions for 160 classes every time: ~40% of the imports before the first request
(measured with a timer around ``dataclasses._create_fn``; docs/benchmarks.md, "The command").

The text of a generated function depends only on the class's shape (field names, defaults
given by name, flags), never on the values bound into it, and the same text always compiles
to the same code under one interpreter. So :func:`install` gives the ``dataclasses`` module
an ``exec`` of its own that looks the text up in a table of code objects and compiles only
texts it has not seen; the table is stored as one marshal file in heron's ``__pycache__``
(named by the interpreter's cache tag, checked against its magic number) and written at exit
only when a text was new: after an install or an upgrade, not on every run. Nothing else
changes: the function is made from the same code with the same globals and locals, and
dataclasses still does all of its own checks.

The standard library offers no hook for this; replacing the name ``exec`` in the module's
namespace is the narrowest change that reaches it, on every version heron supports
(3.11-3.13 all compile the generated text with a plain ``exec`` call). Only the ``heron``
command installs it (:mod:`heron.cli.boot`), before its modules load; heron used as a library
leaves the standard library untouched.
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import importlib.util
import marshal
import os
import sys
from types import CodeType
from typing import Any

# A process that imports many more dataclasses (a test run, a plug-in) must not grow the
# file without bound: past this many texts, only the texts this process used are kept.
MAX_TEXTS = 4_000


class _CodeTable:
    """Texts of generated functions and their code, marshalled one by one: a start unmarshals
    only the code of the classes it defines, not the whole table (~10 ms for ~600 texts)."""

    def __init__(self, path: str | None, writable: bool = True) -> None:
        self.path = path
        self.writable = writable
        self.stored: dict[str, bytes] = _read(path) if path is not None else {}
        self.used: set[str] = set()
        self.new = 0

    def code_of(self, text: str) -> CodeType:
        self.used.add(text)
        stored = self.stored.get(text)
        if stored is not None:
            try:
                code = marshal.loads(stored)
            except (EOFError, ValueError, TypeError):
                code = None
            if isinstance(code, CodeType):
                return code
        # as exec would compile it from the dataclasses module: no future flags of ours
        code = compile(text, "<string>", "exec", dont_inherit=True)
        self.stored[text] = marshal.dumps(code)
        self.new += 1
        return code

    def save(self) -> None:
        """Write the table when this process compiled a text it did not find (atomically)."""
        if self.path is None or not self.new or not self.writable:
            return
        kept = self.stored
        if len(kept) > MAX_TEXTS:
            kept = {text: code for text, code in kept.items() if text in self.used}
        partial = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(partial, "wb") as out:
                out.write(importlib.util.MAGIC_NUMBER + marshal.dumps(kept))
            os.replace(partial, self.path)
        except (OSError, ValueError):
            return  # a package directory that cannot be written: compile next time, as before
        self.new = 0


def _read(path: str) -> dict[str, bytes]:
    """The table stored at ``path``; empty when missing, from another interpreter or damaged."""
    try:
        with open(path, "rb") as stored:
            data = stored.read()
    except OSError:
        return {}
    magic = importlib.util.MAGIC_NUMBER
    if not data.startswith(magic):
        return {}
    try:
        table = marshal.loads(data[len(magic) :])
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {text: code for text, code in table.items() if isinstance(text, str) and isinstance(code, bytes)}


def table_path() -> str | None:
    """Where heron's table lives: its package's ``__pycache__``, beside its byte-code."""
    tag = sys.implementation.cache_tag
    if tag is None:
        return None
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(package, "__pycache__", f"dataclass-code.{tag}.bin")


_table: _CodeTable | None = None


def _exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    """``exec`` for the dataclasses module: generated text runs from the table's code."""
    if _table is not None and type(source) is str:
        source = _table.code_of(source)
    builtins.exec(source, globals, locals)


def install(path: str | None = None) -> None:
    """Serve ``dataclasses``' generated code from the table at ``path`` (default
    :func:`table_path`); saved at exit when it gained a text. Installing twice does nothing.
    The default table sits in heron's ``__pycache__``, so it follows Python's byte-code switch:
    under ``PYTHONDONTWRITEBYTECODE`` (or ``-B``) it is read when present, never written."""
    global _table
    if _table is not None:
        return
    default = path is None
    _table = _CodeTable(table_path() if default else path, writable=not (default and sys.dont_write_bytecode))
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    atexit.register(_table.save)


def compiled() -> int:
    """How many generated texts this process compiled since the table was last saved, because
    the table did not hold them (0 when not installed)."""
    return _table.new if _table is not None else 0


def uninstall() -> None:
    """Give ``dataclasses`` back the builtin ``exec`` (tests), saving the table first."""
    global _table
    if _table is None:
        return
    atexit.unregister(_table.save)
    _table.save()
    _table = None
    del dataclasses.exec  # type: ignore[attr-defined]
