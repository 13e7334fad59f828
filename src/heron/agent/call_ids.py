"""Tool-call ids made unique as each assistant message arrives.

Models sometimes give two calls of one message the same id, or reuse an id from an
earlier turn. Every later request sends the whole history back, and Anthropic rejects a
request with duplicate ``tool_use`` ids, so one bad id would break the session for good.
The loop therefore rewrites a duplicate before the message is stored or its tools run:
the second ``x`` becomes ``x_2`` (then ``x_3``...), skipping any id already taken, so the
rewrite is deterministic and results pair with the rewritten id. The message's ``extra``
keeps the mapping (``toolCallIdRewrites``: new id -> id the model sent), so the session
file still says what the model wrote.
"""

from __future__ import annotations

from collections.abc import Iterable

from heron.ai.types import AssistantMessage

REWRITES_KEY = "toolCallIdRewrites"


def seen_call_ids(messages: Iterable[object]) -> set[str]:
    """The tool-call ids of the assistant messages among ``messages``."""
    seen: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            seen.update(call.id for call in message.tool_calls())
    return seen


def make_call_ids_unique(message: AssistantMessage, earlier: set[str]) -> dict[str, str]:
    """Rewrite, in place, the ids of ``message``'s tool calls that repeat an id of this
    message or of ``earlier``; returns (and records in ``message.extra``) new -> original."""
    calls = message.tool_calls()
    if not calls:
        return {}
    taken = set(earlier)
    own = [call.id for call in calls]
    rewrites: dict[str, str] = {}
    used_here: set[str] = set()
    for position, call in enumerate(calls):
        original = call.id
        if original not in taken and original not in used_here:
            used_here.add(original)
            continue
        base = original or "call"
        later_ids = set(own[position + 1 :])
        n = 2
        while (candidate := f"{base}_{n}") in taken or candidate in used_here or candidate in later_ids:
            n += 1
        call.id = candidate
        used_here.add(candidate)
        rewrites[candidate] = original
    if rewrites:
        message.extra[REWRITES_KEY] = {**message.extra.get(REWRITES_KEY, {}), **rewrites}
    return rewrites
