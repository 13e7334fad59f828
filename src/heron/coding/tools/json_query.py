"""The ``json_query`` tool: run a jq expression on a JSON file or a spill file.

A large JSON result reaches the model as a structural preview plus the path of the
spill file holding all of it; this tool lets the model drill in (``.items | length``,
``.items[] | select(.status == "failed") | .id``) instead of paging through raw text.
A file of several JSON values (JSON Lines, e.g. a session file) is a stream: the
expression runs on each value. Uses the ``jq`` package (the jq C library), so the
syntax is jq's. Each output value is one JSON document in the result (on one line when
short); the output is cut at the usual line/byte limits with a notice.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heron.agent.tool_meta import ToolMeta, path_argument
from heron.agent.tools import AgentTool, ToolError, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.tools.env import ToolEnv, display_path, resolve_path
from heron.coding.tools.schema_table import builtin_params
from heron.context.tool_output.limits import format_size
from heron.context.tool_output.truncate import truncate_head

if TYPE_CHECKING:
    from heron.coding.tools.params import JsonQueryParams

MAX_INPUT_BYTES = 512 << 20
NO_OUTPUT = "(no output: the expression produced no values)"
_ONE_LINE = 200


class JsonQueryTool(AgentTool["JsonQueryParams"]):
    name = "json_query"
    label = "JSON query"
    meta = ToolMeta(kind="search", paths=path_argument())
    parameters_ref = builtin_params("json_query")

    def __init__(self, env: ToolEnv) -> None:
        self.env = env
        self.description = (
            "Run a jq expression on a JSON file (or JSON Lines: the expression runs on each value), e.g. a "
            "spill file holding a large JSON result. Examples: 'keys', '.items | length', "
            "'.items[0:5]', '.items[] | select(.status == \"failed\") | .id'. Output is cut at "
            f"{env.limits.max_lines} lines or {format_size(env.limits.max_bytes)}."
        )

    async def execute(
        self, call_id: str, params: JsonQueryParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        return await asyncio.to_thread(self._run, params)

    def _run(self, params: JsonQueryParams) -> ToolResult:
        import jq

        path = resolve_path(params.path, self.env.cwd)
        shown = display_path(path, self.env.cwd)
        try:
            program = jq.compile(params.expr)
        except ValueError as exc:
            raise ToolError(f"Invalid jq expression {params.expr!r}: {_first_lines(str(exc))}") from None
        text = _read(path, shown)
        limits = self.env.limits
        outputs: list[str] = []
        size = 0
        more = False
        try:
            for value in program.input_text(text):
                rendered = _render(value)
                outputs.append(rendered)
                size += len(rendered) + 1
                if size > 2 * limits.max_bytes or len(outputs) > 2 * limits.max_lines:
                    more = True
                    break
        except ValueError as exc:
            message = _first_lines(str(exc))
            if message.startswith("parse error"):
                raise ToolError(f"{shown} is not valid JSON: {message}") from None
            raise ToolError(f"jq error on {shown}: {message}") from None
        details: dict[str, Any] = {"path": str(path), "values": len(outputs), "truncation": None}
        if not outputs:
            return ToolResult.text(NO_OUTPUT, details=details)
        body = "\n".join(outputs)
        cut = truncate_head(body, limits.max_lines, limits.max_bytes)
        if not cut.truncated and not more:
            return ToolResult.text(body, details=details)
        data = asdict(cut)
        del data["content"]
        data["truncated"] = True
        details["truncation"] = data
        shown_values = f"{cut.output_lines} of {'at least ' if more else ''}{cut.total_lines} lines"
        notice = (
            f"[Output truncated: showing {shown_values}. Narrow the expression: a slice (.[0:20]), "
            "a filter (select(...)), keys, or length.]"
        )
        return ToolResult.text(f"{cut.content}\n\n{notice}", details=details)


def _read(path: Path, shown: str) -> str:
    try:
        if path.is_dir():
            raise ToolError(f"{shown} is a directory, not a JSON file.")
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            limit = format_size(MAX_INPUT_BYTES)
            raise ToolError(f"{shown} is {format_size(size)}; json_query reads files up to {limit}.")
        data = path.read_bytes()
    except FileNotFoundError:
        raise ToolError(f"File not found: {shown}") from None
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from None
    if not data.strip():
        raise ToolError(f"{shown} is empty: there is no JSON to query.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{shown} is not valid JSON: not UTF-8 text (byte {exc.start})") from None


def _render(value: Any) -> str:
    compact: str = json.dumps(value, ensure_ascii=False)
    if len(compact) <= _ONE_LINE:
        return compact
    pretty: str = json.dumps(value, ensure_ascii=False, indent=2)
    return pretty


def _first_lines(text: str, count: int = 3) -> str:
    return "\n".join(text.strip().splitlines()[:count])
