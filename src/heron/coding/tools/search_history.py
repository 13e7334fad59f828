"""The ``search_history`` tool: full-text search over this session's whole history.

After a compaction the model only has a summary of what happened before; the session
file still has every entry. This tool searches them (and the spill files of oversized
results) through the recall index (``heron.session.recall``), which catches up with the
files on every call, so what happened a minute ago is found too. Each hit names the
entry, its role, tool and time, and says how to read it in full: ``json_query`` on the
session file for an entry, ``read`` with offset/limit for a spill file. See docs/recall.md.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from heron.agent.tool_meta import ToolMeta
from heron.agent.tools import AgentTool, ToolError, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.schema_table import builtin_params
from heron.context.tool_output.truncate import truncate_head
from heron.session.naming import encode_cwd

if TYPE_CHECKING:
    from heron.coding.tools.params import SearchHistoryParams
    from heron.session.recall import Hit

NO_MATCHES = "No matches"


class SearchHistoryTool(AgentTool["SearchHistoryParams"]):
    name = "search_history"
    label = "Search history"
    meta = ToolMeta(kind="search")
    parameters_ref = builtin_params("search_history")

    def __init__(self, env: ToolEnv) -> None:
        self.env = env
        self.description = (
            "Search the conversation history, including everything compacted or pruned away: messages, tool "
            "calls and results, summaries and spilled outputs. Returns the best matches with entry id, role, "
            "tool and time, and how to read each in full. Use it to recover a fact, an output or a decision "
            "that is no longer in the context."
        )

    async def execute(
        self, call_id: str, params: SearchHistoryParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        if params.scope == "session" and not self.env.session_id:
            raise ToolError("This session is not recorded, so it has no history to search; use scope 'project'.")
        return await asyncio.to_thread(self._search, params)

    def _search(self, params: SearchHistoryParams) -> ToolResult:
        from heron.session.recall import QueryError, RecallError, RecallIndex

        project = encode_cwd(self.env.cwd)
        try:
            with RecallIndex(self.env.home) as index:
                result = index.search(
                    params.query,
                    scope=params.scope,
                    session_id=self.env.session_id,
                    project=project,
                    limit=params.limit,
                    lineage=self.env.lineage,
                )
        except QueryError as exc:
            raise ToolError(
                f"{exc}. Plain words need no syntax; for FTS5 syntax close every quote and use AND/OR/NOT between "
                'words, e.g. "exact phrase" OR other.'
            ) from None
        except (RecallError, OSError) as exc:
            raise ToolError(f"search_history failed: {exc}") from None
        details: dict[str, Any] = {
            "query": params.query,
            "scope": params.scope,
            "hits": [hit.to_json() for hit in result.hits],
            "notes": result.notes,
            "truncation": None,
        }
        where = {"session": "this session", "project": "this project's sessions", "all": "all sessions"}[params.scope]
        if not result.hits:
            text = f"{NO_MATCHES} for {params.query!r} in {where}."
            return ToolResult.text("\n".join([text, *result.notes]), details=details)
        lines = [f"{len(result.hits)} match(es) for {params.query!r} in {where}, best first:"]
        for number, hit in enumerate(result.hits, 1):
            lines.append("")
            lines.extend(format_hit(number, hit, show_session=params.scope != "session"))
        if len(result.hits) == params.limit:
            lines.append("")
            lines.append(f"[limit of {params.limit} reached: use limit={params.limit * 2} or a narrower query]")
        lines.extend(result.notes)
        body = "\n".join(lines)
        limits = self.env.limits
        cut = truncate_head(body, limits.max_lines, limits.max_bytes)
        if cut.truncated:
            details["truncation"] = {
                "truncated": True,
                "total_bytes": cut.total_bytes,
                "output_bytes": cut.output_bytes,
            }
            body = cut.content + "\n\n[Output truncated: use a smaller limit or a narrower query.]"
        return ToolResult.text(body, details=details)


def format_hit(number: int, hit: Hit, *, show_session: bool) -> list[str]:
    """Three or four lines per hit: what and when, the snippet, how to read it all."""
    what = hit.role or "entry"
    if hit.tool:
        what += f" ({hit.tool})"
    head = [f"{number}. {what}"]
    if hit.entry_id:
        head.append(f"entry {hit.entry_id}")
    if hit.timestamp:
        head.append(str(hit.timestamp))
    if show_session:
        head.append(f"session {hit.session[:8]}")
    out = [" · ".join(head), f"   {hit.snippet}"]
    if hit.source == "spill":
        last = (hit.line or 1) + (hit.lines or 1) - 1
        out.append(f"   spill file lines {hit.line}-{last}: read path={hit.path} offset={hit.line} limit={hit.lines}")
        return out
    if hit.entry_id:
        expr = f"select(.id == {json.dumps(hit.entry_id)})"
        out.append(f"   the whole entry: json_query path={hit.path} expr='{expr}' (or read offset={hit.line} limit=1)")
    if hit.spill_path:
        out.append(f"   full output: read path={hit.spill_path} with offset/limit")
    return out
