"""json_query: jq expressions on JSON and JSON Lines files, its errors, and its limits."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest

from heron.agent.tools import ToolError, ToolResult
from heron.ai.abort import AbortSignal
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.json_query import NO_OUTPUT, JsonQueryTool
from heron.coding.tools.params import JsonQueryParams


def run(env: ToolEnv, path: str, expr: str) -> ToolResult:
    tool = JsonQueryTool(env)
    return asyncio.run(tool.execute("c", JsonQueryParams(path=path, expr=expr), AbortSignal(), lambda _: None))


def text_of(result: ToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


@pytest.fixture
def env(tmp_path: Path) -> ToolEnv:
    doc = {"items": [{"id": i, "status": "failed" if i % 3 == 0 else "ok"} for i in range(10)], "total": 10}
    (tmp_path / "r.json").write_text(json.dumps(doc))
    (tmp_path / "s.jsonl").write_text('{"id": "a", "n": 1}\n{"id": "b", "n": 2}\n')
    return ToolEnv(cwd=tmp_path, home=tmp_path / "home")


def test_queries_a_json_file(env: ToolEnv) -> None:
    assert text_of(run(env, "r.json", ".items | length")) == "10"
    assert text_of(run(env, "r.json", "keys")) == '["items", "total"]'
    assert text_of(run(env, "r.json", '.items[] | select(.status == "failed") | .id')) == "0\n3\n6\n9"
    assert text_of(run(env, "r.json", ".missing")) == "null"
    assert text_of(run(env, "r.json", "empty")) == NO_OUTPUT


def test_json_lines_are_a_stream(env: ToolEnv) -> None:
    assert text_of(run(env, "s.jsonl", 'select(.id == "b") | .n')) == "2"


def test_long_values_are_pretty_printed(env: ToolEnv) -> None:
    out = text_of(run(env, "r.json", "."))
    assert out.startswith('{\n  "items": [') and json.loads(out)["total"] == 10


@pytest.mark.parametrize(
    ("path", "expr", "message"),
    [
        ("r.json", ".items[", "Invalid jq expression"),
        ("r.json", ".items.id", "jq error on r.json: Cannot index array"),
        ("bad.json", ".", "bad.json is not valid JSON: parse error"),
        ("missing.json", ".", "File not found: missing.json"),
        ("empty.json", ".", "empty.json is empty"),
        ("binary.json", ".", "not UTF-8"),
        (".", ".", "is a directory"),
    ],
)
def test_errors_are_clear(env: ToolEnv, path: str, expr: str, message: str) -> None:
    (env.cwd / "bad.json").write_text('{"a": 1,')
    (env.cwd / "empty.json").write_text("  \n")
    (env.cwd / "binary.json").write_bytes(b'"\xff\xfe"')
    with pytest.raises(ToolError, match=message.replace("(", r"\(").replace("[", r"\[")):
        run(env, path, expr)


def test_output_is_cut_at_the_line_and_byte_limits(env: ToolEnv) -> None:
    (env.cwd / "big.json").write_text(json.dumps(list(range(100_000))))
    small = replace(env, limits=replace(env.limits, max_lines=50, max_bytes=10_000))
    result = run(small, "big.json", ".[]")
    out = text_of(result)
    assert out.splitlines()[:3] == ["0", "1", "2"]
    assert "[Output truncated: showing 50 of at least" in out and "Narrow the expression" in out
    assert result.details["truncation"]["truncated"] is True
