"""No behaviour keyed on a tool's name (issue 22): tools declare what they are
(:mod:`heron.agent.tool_meta`) and every layer reads that. This test parses ``src/`` and
fails on a comparison of a tool name with a built-in tool's name - ``name == "read"``,
``tool_name in ("grep", "find")``, ``tool in READ_TOOLS`` where ``READ_TOOLS`` holds such
names - outside the places listed below, each with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "heron"

TOOL_NAMES = frozenset(
    {"read", "edit", "write", "bash", "grep", "find", "ls", "todo", "search_history", "json_query", "task"}
)
# Expressions that hold a tool's name.
NAME_HOLDERS = frozenset({"name", "tool", "tool_name", "tool_names"})
ALLOWED = {
    # registration: the built-in tools' classes by the names they are registered under
    "coding/tools/__init__.py": "registration",
    # the built-in tools' names, stated once (which by default, which on request)
    "coding/tool_names.py": "the names themselves",
    # shell programs (grep, find, ls, bash as commands a shell runs), not tools
    "coding/permissions/shell.py": "shell programs",
    "coding/permissions/trees.py": "shell programs",
    "coding/tools/process.py": "shell programs",
    # the recall index reads any session file, with no tool set: it leaves out its own
    # tool's calls (searching history must not find earlier searches) by that tool's name
    "session/recall_read.py": "the recall tool's own calls",
}


def _holds_name(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in NAME_HOLDERS
    return isinstance(node, ast.Name) and node.id in NAME_HOLDERS


def _constants(node: ast.AST, module: dict[str, ast.AST]) -> set[str]:
    """Tool names a literal (or a module-level constant it names) holds."""
    if isinstance(node, ast.Name) and node.id in module:
        node = module[node.id]
    found = {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return found & TOOL_NAMES


def _module_constants(tree: ast.Module) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name):
                out[target.id] = statement.value
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
            out[statement.target.id] = statement.value
    return out


def name_comparisons(path: Path, root: Path = SRC) -> list[str]:
    """The comparisons in ``path``, each named by its place relative to ``root``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = _module_constants(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if not any(_holds_name(side) for side in sides):
            continue
        names = set().union(*(_constants(side, module) for side in sides if not _holds_name(side)))
        if names:
            found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_layer_compares_tool_names() -> None:
    found = [
        problem
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).as_posix() not in ALLOWED
        for problem in name_comparisons(path)
    ]
    assert found == [], "tool names compared as strings; read the tool's metadata instead:\n" + "\n".join(found)


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "agent" / "sample.py"  # never into src/: a run may be read-only or shared
    sample.parent.mkdir()
    sample.write_text(
        'READS = frozenset({"read", "grep"})\n'
        "def f(call, tool, kind):\n"
        '    a = call.name == "read"\n'
        '    b = tool in ("edit", "write")\n'
        "    c = tool in READS\n"
        '    d = kind == "read"  # a kind, not a name\n'
        "    return a, b, c, d\n"
    )
    found = name_comparisons(sample, root=tmp_path)
    assert [line.split(": ", 1)[0] for line in found] == ["agent/sample.py:3", "agent/sample.py:4", "agent/sample.py:5"]
    assert [line.split(": ", 1)[1] for line in found] == [
        "call.name == 'read'",
        "tool in ('edit', 'write')",
        "tool in READS",
    ]


def test_every_allowance_is_still_needed() -> None:
    for relative in ALLOWED:
        path = SRC / relative
        assert path.exists() and name_comparisons(path), f"{relative} no longer compares tool names: drop it"
