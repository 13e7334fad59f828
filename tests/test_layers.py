"""Layers import downward only: cli -> coding -> context -> session -> agent -> ai."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "heron"
ORDER = ["ai", "agent", "session", "context", "coding", "cli"]


def imported_layers(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "heron" and len(parts) > 1 and parts[1] in ORDER:
                found.add(parts[1])
    return found


def test_no_upward_imports() -> None:
    violations = []
    checked = 0
    for layer in ORDER:
        package = SRC / layer
        if not package.exists():
            continue
        rank = ORDER.index(layer)
        for path in package.rglob("*.py"):
            checked += 1
            for target in imported_layers(path):
                if ORDER.index(target) > rank:
                    violations.append(f"{path.relative_to(SRC)} imports heron.{target}")
    assert checked > 0
    assert not violations, "\n".join(violations)
