"""``get_session_stats``: counts, tokens, cost and ledger savings over a whole session
file (every branch: what the session cost), not only the current path; the fields are
pi's (``userMessages``, ``tokens.cacheRead`` ...) with heron's ledger figures beside them."""

from __future__ import annotations

from typing import Any

from heron.ai.types import AssistantMessage
from heron.context.records.ledger import LEDGER_CUSTOM_TYPE, LedgerRecord
from heron.session.entries import CustomEntry, MessageEntry
from heron.session.store import SessionStore

_ROLE_KEYS = {"user": "user", "assistant": "assistant", "toolResult": "tool_result"}


def session_stats(store: SessionStore) -> dict[str, Any]:
    """The figures of ``store``; entries are read without caching (a long file need not
    stay in memory for a count)."""
    types = store.types()
    roles = store.roles()
    counts = {"user": 0, "assistant": 0, "tool_result": 0, "other": 0}
    tokens = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "total": 0}
    cost = 0.0
    tool_calls = 0
    ledger_tokens: dict[str, int] = {}
    ledger_records = 0
    for index, kind in enumerate(types):
        role = roles[index]
        if kind == "message":
            counts[_ROLE_KEYS.get(role or "", "other")] += 1
            if role != "assistant":
                continue
            entry = store.entry_at(index, cache=False)
            if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
                usage = entry.message.usage
                tokens["input"] += usage.input
                tokens["output"] += usage.output
                tokens["cache_read"] += usage.cache_read
                tokens["cache_write"] += usage.cache_write
                tokens["total"] += usage.total_tokens or usage.context_tokens()
                cost += usage.cost.total
                tool_calls += len(entry.message.tool_calls())
        elif kind == "custom":
            record = _ledger_record(store, index)
            if record is not None:
                ledger_records += 1
                ledger_tokens[record.kind] = ledger_tokens.get(record.kind, 0) + record.saved_tokens
    return {
        "userMessages": counts["user"],
        "assistantMessages": counts["assistant"],
        "toolCalls": tool_calls,
        "toolResults": counts["tool_result"],
        "totalMessages": sum(counts.values()),
        "tokens": {
            "input": tokens["input"],
            "output": tokens["output"],
            "cacheRead": tokens["cache_read"],
            "cacheWrite": tokens["cache_write"],
            "total": tokens["total"],
        },
        "cost": round(cost, 6),
        # heron's own figures, beside pi's
        "otherMessages": counts["other"],
        "compactions": types.count("compaction"),
        "ledger": {
            "records": ledger_records,
            "savedTokens": ledger_tokens,
            "totalSavedTokens": sum(ledger_tokens.values()),
        },
    }


def _ledger_record(store: SessionStore, index: int) -> LedgerRecord | None:
    entry = store.entry_at(index, cache=False)
    if not isinstance(entry, CustomEntry) or entry.custom_type != LEDGER_CUSTOM_TYPE:
        return None
    if not isinstance(entry.data, dict):
        return None
    try:
        return LedgerRecord.from_json_dict(entry.data)
    except (KeyError, TypeError, ValueError):
        return None
