"""Every dataclass of the cli, coding, context and session layers that a one-shot ``heron -p``
run loads has its own docstring (issue 23, "Start"): without one, ``@dataclass`` builds a
``__doc__`` from ``inspect.signature`` while the module is imported, a cost paid on every
start. The module set is the real command's (the probe of test_print_import_set); each
module's source is read, not imported, so the check costs the one run."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from tests.cli.test_print_import_set import loaded_by_print
from tests.support.http_server import LocalServer

LAYERS = ("heron.cli", "heron.coding", "heron.context", "heron.session")


def _is_dataclass_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Name) and target.id == "dataclass") or (
        isinstance(target, ast.Attribute) and target.attr == "dataclass"
    )


def undocumented_dataclasses(source: str) -> list[str]:
    """The names of the classes in ``source`` made by ``@dataclass`` without a docstring."""
    return [
        node.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef)
        and any(_is_dataclass_decorator(d) for d in node.decorator_list)
        and ast.get_docstring(node) is None
    ]


def test_the_check_finds_a_dataclass_without_a_docstring() -> None:
    source = (
        "from dataclasses import dataclass\nimport dataclasses\n"
        "@dataclass\nclass A:\n    x: int\n"
        "@dataclasses.dataclass(frozen=True)\nclass B:\n    x: int\n"
        '@dataclass(slots=True)\nclass C:\n    """Why C exists."""\n\n    x: int\n'
        "class D:\n    x: int\n"
    )
    assert undocumented_dataclasses(source) == ["A", "B"]


def test_the_print_paths_dataclasses_have_docstrings(tmp_path: Path, local_server: LocalServer) -> None:
    loaded = loaded_by_print(tmp_path, local_server, "--no-session")
    ours = sorted(name for name in loaded if name.startswith(tuple(p + "." for p in LAYERS)))
    assert "heron.coding.settings" in ours  # the probe saw the run's modules
    missing: list[str] = []
    for name in ours:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, name
        missing += [f"{name}.{cls}" for cls in undocumented_dataclasses(Path(spec.origin).read_text())]
    assert missing == []
