"""The built-in tools' parameter schemas, computed ahead of time.

A request carries every tool's schema, but building them means importing pydantic and
the models (:mod:`heron.coding.tools.params`), which costs a one-shot run more than the
rest of its way to the first request. So the schemas are generated once into
``schemas.json`` beside this module and read from there; the models are loaded only to
validate a call's arguments. ``tests/coding/test_tool_schemas.py`` checks that the file
holds exactly what the models generate, byte for byte; after changing a model, run
``python -m heron.coding.tools.schema_table`` to write it again.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

from heron.agent.tools import ParamsRef

PARAMS_MODULE = "heron.coding.tools.params"
TABLE_PATH = Path(__file__).with_name("schemas.json")

# Each built-in tool's parameter model in PARAMS_MODULE, by the tool's name.
MODELS: dict[str, str] = {
    "read": "ReadParams",
    "bash": "BashParams",
    "edit": "EditParams",
    "write": "WriteParams",
    "grep": "GrepParams",
    "find": "FindParams",
    "ls": "LsParams",
    "search_history": "SearchHistoryParams",
    "json_query": "JsonQueryParams",
    "todo": "TodoParams",
    "compact": "CompactParams",
    "script": "ScriptParams",
    "task": "TaskParams",
    "goal": "GoalParams",
}

_table: dict[str, dict[str, Any]] | None = None


def builtin_params(tool: str) -> ParamsRef:
    """The built-in tool ``tool``'s parameter model, named, with its precomputed schema
    (none while the table is being written: the schema is then generated from the model)."""
    global _table
    if _table is None:
        _table = json.loads(TABLE_PATH.read_text(encoding="utf-8")) if TABLE_PATH.exists() else {}
    return ParamsRef(PARAMS_MODULE, MODELS[tool], _table.get(tool))


def generate() -> dict[str, dict[str, Any]]:
    """What the table must hold: each model's schema as :func:`schema_of` gives it."""
    from heron.agent.params import schema_of

    module = importlib.import_module(PARAMS_MODULE)
    return {tool: schema_of(getattr(module, model)) for tool, model in MODELS.items()}


def render(table: dict[str, dict[str, Any]]) -> str:
    """The file's text: key order kept (it is the order the model is shown)."""
    return json.dumps(table, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    TABLE_PATH.write_text(render(generate()), encoding="utf-8")
    print(f"wrote {TABLE_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
