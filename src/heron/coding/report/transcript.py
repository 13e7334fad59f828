"""The transcript part of the report: each turn's messages as the model saw them.

A 100,000-entry session holds about 190 MB of text, and the report must stay a file a
browser opens in a few seconds. So the transcript has a byte budget, spent from the newest
turn backwards (the end of a session is what people look at first): within it each message
is embedded as the model saw it (a pruned result shows its stub) with the full stored
content behind a toggle, each part capped; turns before the budget ran out keep their
prompt and totals and say how to read the rest (``heron sessions tree``, ``/export``).
``--full`` lifts the budget.

Text is cleaned for display: control characters (terminal escapes among them) become their
visible Unicode pictures, so nothing in the page can move a cursor or hide text.
"""

from __future__ import annotations

import json
from typing import Any

from heron.agent.messages import AgentMessage, BashExecutionMessage
from heron.ai.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from heron.coding.report.data import ReportData, TurnRow, text_of

DEFAULT_BUDGET = 4 * 1024 * 1024  # bytes of transcript text in the page
SEEN_CAP = 4_000  # characters of a message shown before its toggle
FULL_CAP = 64_000  # characters of a message's stored content behind the toggle
PROMPT_CAP = 200  # characters of a turn's prompt in its heading

_CONTROL = {code: 0x2400 + code for code in range(0x20) if chr(code) not in "\n\t"} | {0x7F: 0x2421}


def clean(text: str) -> str:
    """Control characters as visible pictures (ESC as U+241B); lone surrogates replaced."""
    return text.translate(_CONTROL).encode("utf-8", "replace").decode("utf-8")


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… {len(text) - limit:,} more characters in the session file"


def _assistant_text(message: AssistantMessage) -> str:
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ToolCall):
            parts.append(f"→ {block.name} {json.dumps(block.arguments, ensure_ascii=False)}")
    if message.error_message:
        parts.append(f"[error: {message.error_message}]")
    return "\n".join(parts)


def message_view(message: AgentMessage, pruned: dict[str, tuple[str, int]]) -> dict[str, Any]:
    """One message for the page: role, label, text as seen, full text when it differs."""
    out: dict[str, Any]
    if isinstance(message, UserMessage):
        text = text_of(message)
        out = {"r": "user", "label": "user"}
    elif isinstance(message, AssistantMessage):
        text = _assistant_text(message)
        out = {"r": "assistant", "label": f"assistant · {message.model}", "err": bool(message.error_message)}
    elif isinstance(message, ToolResultMessage):
        text = text_of(message)
        out = {"r": "tool", "label": f"{message.tool_name} result", "err": message.is_error}
        stub = pruned.get(message.tool_call_id)
        if stub is not None:
            out["pruned"] = clean(stub[0])
            out["note"] = f"pruned from the context before request {stub[1] + 1}; the stored result is kept"
            out["full"] = clean(_cap(text, FULL_CAP))
    elif isinstance(message, BashExecutionMessage):
        text = f"$ {message.command}\n{message.output}"
        out = {"r": "user", "label": "command the user ran"}
    else:
        text = text_of(message)
        out = {"r": "tool", "label": getattr(message, "role", "message")}
    out["t"] = clean(_cap(text, SEEN_CAP))
    if "full" not in out and len(text) > SEEN_CAP:
        out["full"] = clean(_cap(text, FULL_CAP))
    return out


def _size(view: dict[str, Any]) -> int:
    return sum(len(v) for v in view.values() if isinstance(v, str))


def turn_views(data: ReportData, *, budget: int | None = DEFAULT_BUDGET) -> list[dict[str, Any]]:
    """Every turn for the page, newest turns embedded first until ``budget`` bytes."""
    left = budget
    out: list[dict[str, Any]] = []
    for row in reversed(data.turns):
        views: list[dict[str, Any]] = []
        omitted = 0
        for item in row.messages:
            view = _item_view(item, data.pruned)
            if left is not None and left - _size(view) < 0:
                omitted = len(row.messages) - len(views)
                left = 0
                break
            views.append(view)
            if left is not None:
                left -= _size(view)
        out.append(_turn(row, views, omitted))
    out.reverse()
    return out


def _item_view(item: dict[str, Any], pruned: dict[str, tuple[str, int]]) -> dict[str, Any]:
    if "branch_summary" in item:
        return {"r": "user", "label": "branch summary", "t": clean(_cap(str(item["branch_summary"]), SEEN_CAP))}
    message: AgentMessage = item["message"]
    return message_view(message, pruned)


def _turn(row: TurnRow, views: list[dict[str, Any]], omitted: int) -> dict[str, Any]:
    turn: dict[str, Any] = {
        "i": row.index,
        "prompt": clean(row.prompt[:PROMPT_CAP]),
        "n": row.requests,
        "cost": row.cost,
        "m": views,
    }
    if omitted:
        turn["omitted"] = (
            f"{omitted} message(s) of this turn are not embedded (the report's size budget went to later turns); "
            "`heron sessions report --full` embeds them, `heron sessions tree` lists them"
        )
    return turn
