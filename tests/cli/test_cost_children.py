"""``/cost`` counts what the task tool's sub-agents cost (recorded with each child)."""

from __future__ import annotations

from pathlib import Path

from heron.ai.types import AssistantMessage, Cost, TextContent, Usage, UserMessage
from heron.cli.tui.cost import cost_lines, usage_by_model
from heron.context.continuity.children import CHILD_CUSTOM_TYPE
from heron.session.store import SessionStore


def test_children_are_a_row_of_their_own(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, home=tmp_path / "home")  # never the user's own home
    store.append_message(UserMessage(content="delegate"))
    own = Usage(input=1_000, output=100, cost=Cost(total=0.01))
    store.append_message(
        AssistantMessage(api="faux", provider="p", model="m", content=[TextContent(text="ok")], usage=own)
    )
    store.append_custom(CHILD_CUSTOM_TYPE, {"id": "c1", "status": "running"})  # started: no usage yet
    for child, tokens, cost in (("c1", 500, 0.005), ("c2", 300, 0.003)):
        usage = Usage(input=tokens, output=tokens // 10, cost=Cost(total=cost))
        store.append_custom(CHILD_CUSTOM_TYPE, {"id": child, "status": "done", "usage": usage.to_json_dict()})
    rows = usage_by_model(store)
    assert [(r.provider, r.model) for r in rows] == [("p", "m"), ("sub-agents", "2 child session(s)")]
    assert (rows[1].input, rows[1].output, round(rows[1].cost, 4)) == (800, 80, 0.008)
    lines = cost_lines(rows, 0)
    assert any(line.strip().startswith("total") and "$0.0180" in line for line in lines)
