"""The built-in tools send precomputed parameter schemas (``schemas.json``) so that a run
does not import pydantic before its first request: the file must hold exactly what the
parameter models generate, byte for byte (the request body is compared bytes to bytes
across restarts), and every built-in tool must send it."""

from __future__ import annotations

import json
from pathlib import Path

from heron.agent.params import schema_of
from heron.agent.tools import AgentTool, ParamsRef
from heron.coding.tools import ALL_TOOLS, GOAL_TOOL, SESSION_TOOLS, ToolEnv, create_tools
from heron.coding.tools.goal import GoalTool
from heron.coding.tools.params import ReadParams
from heron.coding.tools.schema_table import MODELS, PARAMS_MODULE, TABLE_PATH, generate, render

REGENERATE = "schemas.json is stale: run python -m heron.coding.tools.schema_table"


def test_the_table_holds_what_the_models_generate() -> None:
    assert TABLE_PATH.read_text(encoding="utf-8") == render(generate()), REGENERATE


def test_every_built_in_tool_sends_its_models_schema(tmp_path: Path) -> None:
    names = [n for n in ALL_TOOLS if n not in SESSION_TOOLS]
    tools = create_tools(ToolEnv(cwd=tmp_path, home=tmp_path / "home"), names)
    assert sorted(t.name for t in tools) == sorted(names)
    for tool in tools:
        assert tool.parameters_ref is not None and tool.parameters_ref.schema is not None, tool.name
        sent = tool.definition().parameters
        assert json.dumps(sent) == json.dumps(schema_of(tool.parameters)), tool.name
    assert set(MODELS) == set(names) | SESSION_TOOLS | {GOAL_TOOL}  # the task and goal tools' models too


def test_the_goal_tool_sends_its_models_schema() -> None:
    tool = GoalTool(lambda status, evidence: "recorded")
    assert tool.parameters_ref is not None and tool.parameters_ref.schema is not None
    assert json.dumps(tool.definition().parameters) == json.dumps(schema_of(tool.parameters))


def test_a_reference_without_a_schema_generates_it_from_the_model() -> None:
    class Bare(AgentTool[ReadParams]):
        name = "bare"
        description = "d"
        parameters_ref = ParamsRef(PARAMS_MODULE, "ReadParams")

    tool = Bare()
    assert tool.parameters is ReadParams
    assert tool.definition().parameters == schema_of(ReadParams)
