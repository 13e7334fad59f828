"""Budget notices: the model is told what is left of its context budget at 50, 75 and 90%.

The budget is the compaction threshold (``window - reserve``): past it, older messages are
summarised. When a request's count first reaches a mark since the latest compaction, the
remaining budget - tokens and percentage - is added to the tool result that request ends
with, as a last text block. The notice rides a tool result because that is where a model
looks for it (Claude's own context awareness reports the token usage after each tool call)
and where it changes nothing already sent: the result is new in that request. A mark
reached by a request that does not end with a tool result is reported by the next one that
does.

The notice is a decision recorded in the session (``heron.context``, ``op: "budget_notice"``:
the result's call id, the mark, the exact text), applied by the view like a pruning stub:
every later request - in this process or a resumed one - carries the same bytes, so the
prefix changes only in the requests that cross a mark, and there only at their end. A result
pruned later carries its stub alone.

For Claude models with context awareness (they are trained on the API's own
``<system_warning>Token usage: ...`` updates) the notice uses that form, with heron's budget
- the compaction threshold - as the total; other models get a plain sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heron.agent.messages import AgentMessage
from heron.ai.types import Model, TextContent, ToolResultMessage
from heron.context.records.decisions import OP_BUDGET_NOTICE

MARKS = (50, 75, 90)  # shares of the compaction threshold, in percent
NOTICE_PREFIX = "[heron: context budget]"
NOTICE_FRAMING = 16  # tokens a notice may cost beyond chars / 4 (its block's framing)
# Claude models trained on context-awareness updates (Anthropic's documentation: Sonnet 4.5
# and 4.6, Haiku 4.5); ``compat.contextAwareness`` in models.json says it for any other model.
AWARE_MODEL_PREFIXES = ("claude-sonnet-4-5", "claude-sonnet-4-6", "claude-haiku-4-5")


def context_aware(model: Model) -> bool:
    """Whether ``model`` reads its budget in Claude's context-awareness form."""
    compat = model.compat if isinstance(model.compat, dict) else {}
    stated = compat.get("contextAwareness")
    if isinstance(stated, bool):
        return stated
    name = model.id.rsplit("/", 1)[-1].lower()
    return name.startswith(AWARE_MODEL_PREFIXES)


def render(mark: int, tokens: int, threshold: int, aware: bool) -> str:
    """The notice for ``mark`` at ``tokens`` of ``threshold``: the same bytes for the same crossing."""
    remaining = max(0, threshold - tokens)
    if aware:
        return f"<system_warning>Token usage: {tokens}/{threshold}; {remaining} remaining</system_warning>"
    share = round(100 * remaining / threshold) if threshold else 0
    return (
        f"{NOTICE_PREFIX} {mark}% of the context budget is used: {tokens:,} of {threshold:,} tokens. "
        f"{remaining:,} tokens ({share}%) remain before older messages are summarised."
    )


def due(tokens: int, threshold: int, noticed: int) -> int | None:
    """The highest mark ``tokens`` has reached above ``noticed`` (the highest already told)."""
    if threshold <= 0:
        return None
    reached = [m for m in MARKS if tokens * 100 >= m * threshold and m > noticed]
    return reached[-1] if reached else None


def notice_data(
    messages: Sequence[AgentMessage], tokens: int, threshold: int, noticed: int, model: Model
) -> dict[str, Any] | None:
    """The decision to record before this request (None: no notice now)."""
    mark = due(tokens, threshold, noticed)
    if mark is None or not messages or not isinstance(messages[-1], ToolResultMessage):
        return None
    text = render(mark, tokens, threshold, context_aware(model))
    return {"op": OP_BUDGET_NOTICE, "callId": messages[-1].tool_call_id, "mark": mark, "text": text}


def with_notice(result: ToolResultMessage, text: str) -> ToolResultMessage:
    """``result`` with the notice as a last text block (same call, same details)."""
    return ToolResultMessage(
        tool_call_id=result.tool_call_id,
        tool_name=result.tool_name,
        content=[*result.content, TextContent(text=text)],
        details=result.details,
        is_error=result.is_error,
        timestamp=result.timestamp,
    )
