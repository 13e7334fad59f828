"""Pruning: old tool results replaced by stubs in the request, never in the session.

Long tool loops fill the window with file contents and command output the model has
long since acted on. Before compaction is needed (once the context passes a share of
the window), results older than the last few turns are replaced by a one-line stub that
says what was there and how to get it back. The session file keeps the originals.

Pruning moves in steps for prompt caching: when the threshold is crossed, every
prunable result is stubbed at once, and the same stubs (byte-identical, reused objects)
are sent on every later request. The prefix of the request therefore changes once per
step rather than on every turn.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from heron.agent.tool_meta import ToolCatalog
from heron.ai.types import AssistantMessage, ImageContent, TextContent, ToolCall, ToolResultMessage
from heron.context.continuity.kept_skills import is_skill_read
from heron.context.records.ledger import LedgerRecord
from heron.context.view.build import with_text

DEFAULT_KEEP_TURNS = 3
# Pruning has hysteresis (docs/context.md, "Pruning"): nothing is pruned until the view
# passes the high-water mark; then one step prunes down to the low-water mark, so the next
# turns fit without another step (each step is a prompt-cache miss). Both are shares of
# the input budget (window - reserve).
PRUNE_HIGH_WATER = 1.0
PRUNE_LOW_WATER = 0.3
PRUNE_KEEP_TURNS = DEFAULT_KEEP_TURNS  # the results of the last three assistant messages are never pruned
# Results shorter than this are left alone: the stub would save almost nothing and the
# model would lose an exact detail (an edit's confirmation, an exit code).
MIN_PRUNE_CHARS = 600


@dataclass
class PruneState:
    """Which tool results are pruned in this session's requests, with their stubs."""

    stubs: dict[str, ToolResultMessage] = field(default_factory=dict)

    def reset(self) -> None:
        """After a compaction the pruned results are summarised or gone from the context."""
        self.stubs.clear()

    def __len__(self) -> int:
        return len(self.stubs)


def _argument(call: ToolCall | None, name: str) -> str | None:
    value = call.arguments.get(name) if call is not None else None
    return value if isinstance(value, str) and value else None


def _first_path(call: ToolCall | None, tools: ToolCatalog) -> str | None:
    uses = tools.uses(call) if call is not None else []
    return uses[0].path if uses else None


def _shorten(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def recovery_hint(result: ToolResultMessage, call: ToolCall | None, tools: ToolCatalog) -> str:
    """How the model gets the content back, by the tool's kind."""
    details: Any = result.details if isinstance(result.details, dict) else {}
    spill = details.get("full_output_path") or details.get("spill_path")
    if isinstance(spill, str) and spill:
        return f"The full output is saved in {spill}; read it (with offset/limit) if you need it."
    tool = result.tool_name
    meta = tools.meta(tool)
    uses = meta.uses(call.arguments) if call is not None else []
    if meta.kind == "read":
        path = uses[0].path if uses else "the file"
        first = uses[0] if uses else None
        extra = ""
        if first is not None and (first.offset or first.limit):
            extra = f" with offset={first.offset} limit={first.limit}"
        return f"Read {path}{extra} again if you need it."
    if meta.kind == "execute":
        return "Re-run the command if you need its output."
    if meta.kind == "search" and any(use.walks for use in uses):
        return f"Run {tool} again if you need the listing."
    return f"Call {tool} again if you need it."


def describe_call(result: ToolResultMessage, call: ToolCall | None, tools: ToolCatalog) -> str:
    """The call in a few words (``read src/app.py``, ``bash `make```, ``grep "TODO"``)."""
    tool = result.tool_name
    meta = tools.meta(tool)
    if meta.kind == "read":
        return f"{tool} {_first_path(call, tools) or '?'}"
    if meta.kind == "execute":
        command = meta.command_of(call.arguments) if call is not None else None
        return f"{tool} `{_shorten(command or '?')}`"
    uses = meta.uses(call.arguments) if call is not None else []
    if meta.kind == "search" and any(use.walks for use in uses):  # a search of a tree
        pattern = _argument(call, "pattern")
        if pattern is not None:
            return f"{tool} {json.dumps(pattern)}"
        return f"{tool} {_first_path(call, tools) or '.'}"
    return tool


def make_stub(result: ToolResultMessage, call: ToolCall | None, tools: ToolCatalog) -> ToolResultMessage:
    """A deterministic stand-in: the same inputs always give the same bytes."""
    text = result.text()
    images = sum(1 for block in result.content if isinstance(block, ImageContent))
    lines = text.count("\n") + 1 if text else 0
    size = f"{len(text):,} chars, {lines:,} lines"
    if images:
        size += f", {images} image{'s' if images > 1 else ''}"
    error = " (it was an error)" if result.is_error else ""
    stub = (
        f"[Pruned from the context to save space: the result of {describe_call(result, call, tools)} "
        f"({size}){error}. {recovery_hint(result, call, tools)} search_history finds it too.]"
    )
    return with_text(result, stub)


def _result_size(result: ToolResultMessage) -> int:
    chars = len(result.text())
    images = sum(1 for block in result.content if isinstance(block, ImageContent))
    return chars + images * 4_800


def prunable(messages: Sequence[Any], keep_turns: int = DEFAULT_KEEP_TURNS) -> list[int]:
    """Indices of tool results older than the last ``keep_turns`` assistant turns and big
    enough to be worth a stub."""
    assistant_positions = [i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)]
    if len(assistant_positions) <= keep_turns:
        return []
    boundary = assistant_positions[-keep_turns] if keep_turns > 0 else len(messages)
    return [
        i
        for i in range(boundary)
        if isinstance(messages[i], ToolResultMessage) and _result_size(messages[i]) >= MIN_PRUNE_CHARS
    ]


def _saving(result: ToolResultMessage, stub: ToolResultMessage) -> int:
    """Tokens a stub saves over the result it replaces (chars/4, as everywhere)."""
    return max(0, (_result_size(result) - len(stub.text())) // 4)


def prune_step(
    messages: Sequence[Any],
    pruned: Collection[str],
    keep_turns: int = DEFAULT_KEEP_TURNS,
    min_saving_tokens: int = 0,
    target_saving_tokens: int | None = None,
    *,
    tools: ToolCatalog,
) -> tuple[dict[str, str], list[LedgerRecord]]:
    """One pruning step: stubs for prunable results not pruned yet (by tool call id), with
    the ledger records. ``messages`` are the originals (not the stubbed view).

    ``target_saving_tokens`` (None: no limit) stops the step once its stubs save that
    much, oldest results first: the most recent results - those the model is likeliest
    to still need - stay whole when older ones free enough room. A step that would save
    fewer than ``min_saving_tokens`` is not taken: each step changes the request's prefix
    (a prompt-cache miss), so stubbing one small result per turn costs more than it saves.
    """
    candidates = [messages[i] for i in prunable(messages, keep_turns) if messages[i].tool_call_id not in pruned]
    if not candidates:
        return {}, []
    calls: dict[str, ToolCall] = {
        call.id: call for message in messages if isinstance(message, AssistantMessage) for call in message.tool_calls()
    }
    # A skill's instructions stay whole while they are in the view (docs/continuity.md).
    candidates = [r for r in candidates if not is_skill_read(calls.get(r.tool_call_id), tools)]
    chosen: list[tuple[ToolResultMessage, ToolCall | None, ToolResultMessage]] = []
    saving = 0
    for result in candidates:  # oldest first
        if target_saving_tokens is not None and saving >= target_saving_tokens:
            break
        found = calls.get(result.tool_call_id)
        stub = make_stub(result, found, tools)
        chosen.append((result, found, stub))
        saving += _saving(result, stub)
    if saving < min_saving_tokens:
        return {}, []
    stubs: dict[str, str] = {}
    records = []
    for result, found, stub in chosen:
        stubs[result.tool_call_id] = stub.text()
        records.append(
            LedgerRecord(
                kind="prune",
                ref=result.tool_call_id,
                tool=result.tool_name,
                chars_before=_result_size(result),
                chars_after=len(stub.text()),
                recover=recovery_hint(result, found, tools),
            )
        )
    return stubs, records


def extend_pruning(
    messages: Sequence[Any],
    state: PruneState,
    keep_turns: int = DEFAULT_KEEP_TURNS,
    min_saving_tokens: int = 0,
    *,
    tools: ToolCatalog,
) -> list[LedgerRecord]:
    """:func:`prune_step` kept in a :class:`PruneState` (for callers without a session)."""
    stubs, records = prune_step(messages, state.stubs, keep_turns, min_saving_tokens, tools=tools)
    by_id = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}
    for call_id, text in stubs.items():
        original = by_id[call_id]
        state.stubs[call_id] = ToolResultMessage(
            tool_call_id=call_id,
            tool_name=original.tool_name,
            content=[TextContent(text=text)],
            details=original.details,
            is_error=original.is_error,
            timestamp=original.timestamp,
        )
    return records


def apply_pruning(messages: Sequence[Any], state: PruneState) -> list[Any]:
    """The messages with every pruned result replaced by its (reused) stub."""
    if not state.stubs:
        return list(messages)
    stubs = state.stubs
    out = []
    for message in messages:
        if isinstance(message, ToolResultMessage):
            stub = stubs.get(message.tool_call_id)
            if stub is not None:
                out.append(stub)
                continue
        out.append(message)
    return out
