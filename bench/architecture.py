"""The architecture's figures: modules, lines, the largest classes with their mixins, in-function imports.

Read from the source, not run: the same rules ``tests/test_style.py`` checks give the
numbers (a class is counted with every base class heron defines, wherever it lives; see
"A class with its mixins" there). ``--root`` measures another tree's ``src/heron`` - an
older commit exported with ``git archive`` - so the before and after of a restructuring
(issue 39: ``heron.context`` cut by stage) are measured by one script. Nothing is timed;
``--quick`` changes nothing.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, parser, table, write_json

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from tests.test_style import LAYERS, class_sizes, module_lines, modules

# The classes issue 39 measured, reported whatever their rank.
NAMED = ("ContextPolicy", "CodingSession", "SessionStore")


def in_function_imports(path: Path) -> tuple[int, int]:
    """(imports inside a function, those of them that import heron) in one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, ast.Import | ast.ImportFrom):
                found.append(child)
            visit(child, inside or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(tree, False)

    def of_heron(node: ast.Import | ast.ImportFrom) -> bool:
        if isinstance(node, ast.ImportFrom):
            return bool(node.level) or (node.module or "").split(".")[0] == "heron"
        return any(alias.name.split(".")[0] == "heron" for alias in node.names)

    return len(found), sum(map(of_heron, found))


def figures(root: Path) -> dict[str, Any]:
    paths = modules(root)
    layers: dict[str, list[int]] = {layer: [0, 0] for layer in LAYERS}
    for path in paths:
        parts = path.relative_to(root).parts
        if len(parts) > 1 and parts[0] in layers:
            layers[parts[0]][0] += 1
            layers[parts[0]][1] += module_lines(path)
    context = root / "context"
    imports = [in_function_imports(p) for p in paths]
    sizes = sorted(class_sizes(root), key=lambda c: c.lines, reverse=True)

    def row(c: Any) -> dict[str, Any]:
        files = len({c.module, *(b.rpartition(".")[0] for b in c.bases)})
        return {"class": f"{c.module}.{c.name}", "lines": c.lines, "methods": c.methods, "files": files}

    return {
        "modules": len(paths),
        "lines": sum(module_lines(p) for p in paths),
        "layers": {layer: {"modules": m, "lines": n} for layer, (m, n) in layers.items()},
        "context_top_level_modules": sum(1 for p in context.glob("*.py") if p.name != "__init__.py"),
        "context_sub_packages": sorted(p.name for p in context.iterdir() if (p / "__init__.py").is_file()),
        "largest_classes": [row(c) for c in sizes[:5]],
        "named_classes": [row(c) for c in sizes if c.name in NAMED],
        "in_function_imports": sum(t for t, _ in imports),
        "in_function_imports_of_heron": sum(h for _, h in imports),
    }


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=ROOT / "src" / "heron", help="the src/heron to measure")
    args = p.parse_args()
    data = figures(args.root.resolve())
    print(f"{data['modules']} modules, {data['lines']:,} lines under {args.root}")
    print(
        table(["layer", "modules", "lines"], [[k, v["modules"], f"{v['lines']:,}"] for k, v in data["layers"].items()])
    )
    subs = ", ".join(data["context_sub_packages"]) or "none"
    print(f"heron.context: {data['context_top_level_modules']} modules at the top; sub-packages: {subs}")
    print(f"in-function imports: {data['in_function_imports']} ({data['in_function_imports_of_heron']} of heron)")
    classes = data["largest_classes"] + [c for c in data["named_classes"] if c not in data["largest_classes"]]
    print(table(["class (with its mixins)", "lines", "methods", "files"], [list(c.values()) for c in classes]))
    write_json("architecture", data, args.json, args.quick)


if __name__ == "__main__":
    main()
