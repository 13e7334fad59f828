"""Tool-call arguments too large for a request, shown shortened (the session keeps them whole).

A tool call's arguments are the model's own output, part of its assistant message, and
nothing else in the context layer ever reduces them: pruning stubs results, a spill
replaces results, and a compaction keeps the running turn verbatim. So one ``write`` of
5 MB put 1.3 M tokens into every later request, and the session could send nothing
again - not the next turn, not ``/compact`` (docs/context.md, "Oversized tool-call
arguments").

A call whose arguments pass the budget of one tool result (``ToolLimits.result_chars``
for the window planned with) is therefore shown shortened: each long string in its
arguments keeps its head, followed by a note saying how much was left out and where the
whole is (the file the call wrote, the session file). The shortened arguments are
recorded in the session (``op: "call_args"``) the first time a request would carry the
call, and never change afterwards, so every later request - in this process or one that
opens the session later - carries the same bytes. The call keeps its id, so it keeps its
result (a tool call never leaves its result).

:class:`CallShortener` is held by :class:`~heron.context.policy.ContextPolicy`, which asks it
before each request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from heron.agent.messages import AgentMessage
from heron.agent.tool_meta import ToolCatalog
from heron.ai.types import AssistantMessage, ToolCall
from heron.context.records.decisions import OP_CALL_ARGS
from heron.context.records.ledger import Ledger, LedgerRecord
from heron.context.window.budget import arguments_chars

if TYPE_CHECKING:  # the policy's parts, which the view builder (importing this module) sits below
    from heron.context.records.recorder import DecisionRecorder
    from heron.context.sizes import WindowSizes

MIN_HEAD_CHARS = 200  # what a shortened string keeps at least
NOTE_KEY = "heron_note"  # arguments that cannot be shortened string by string become one note
KEEP_WHERE = "the session file keeps the call whole"


def call_size(call: ToolCall) -> int:
    """What the call's arguments put into a request: their JSON, or the text that did not parse."""
    return arguments_chars(call.arguments) + len(call.raw_arguments or "")


def _where(call: ToolCall, tools: ToolCatalog) -> str:
    """Where the whole is, for the note: the file a writing call wrote, and the session."""
    written = [use.path for use in tools.uses(call) if use.access == "write"]
    if written:
        return f"the call wrote it to {written[0]} (read the file to see it as it is now); {KEEP_WHERE}"
    return KEEP_WHERE


def _clip(text: str, head: int, where: str) -> str:
    if len(text) <= head + MIN_HEAD_CHARS:
        return text
    return f"{text[:head]}\n[heron: {len(text) - head:,} more characters of this argument are not shown; {where}]"


def _shorten(value: Any, head: int, where: str) -> Any:
    if isinstance(value, str):
        return _clip(value, head, where)
    if isinstance(value, list):
        return [_shorten(v, head, where) for v in value]
    if isinstance(value, dict):
        return {k: _shorten(v, head, where) for k, v in value.items()}
    return value


def shortened(call: ToolCall, cap: int, tools: ToolCatalog) -> dict[str, Any] | None:
    """What the request shows of ``call`` when its arguments pass ``cap`` characters: the
    decision's value (``arguments``, and ``rawArguments`` for text that did not parse);
    None when they fit."""
    size = call_size(call)
    if size <= cap:
        return None
    head = max(MIN_HEAD_CHARS, cap // 4)
    where = _where(call, tools)
    arguments = _shorten(call.arguments, head, where)
    if not isinstance(arguments, dict) or arguments_chars(arguments) > cap:  # many pieces, each short
        arguments = {NOTE_KEY: f"[heron: the {size:,} characters of this call's arguments are not shown; {where}]"}
    out: dict[str, Any] = {"arguments": arguments}
    if call.raw_arguments is not None:
        out["rawArguments"] = _clip(call.raw_arguments, head, where)
    return out


def call_args_data(calls: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"op": OP_CALL_ARGS, "calls": dict(calls)}


def shown_call(call: ToolCall, decision: dict[str, Any]) -> ToolCall:
    """``call`` as a request shows it under its recorded decision (same id, same name)."""
    arguments = decision.get("arguments")
    raw = decision.get("rawArguments")
    return ToolCall(
        id=call.id,
        name=call.name,
        arguments=arguments if isinstance(arguments, dict) else call.arguments,
        thought_signature=call.thought_signature,
        raw_arguments=raw if isinstance(raw, str) else call.raw_arguments,
        extra=call.extra,
    )


def shown_message(message: AssistantMessage, decisions: dict[str, dict[str, Any]]) -> AssistantMessage:
    """``message`` with the calls that have a decision shown shortened (a copy; the
    message itself, as the session holds it, is not changed)."""
    content = [
        shown_call(block, decisions[block.id]) if isinstance(block, ToolCall) and block.id in decisions else block
        for block in message.content
    ]
    return dataclasses.replace(message, content=content)


class CallShortener:
    """Finds the calls past the budget before each request and records how they are shown."""

    def __init__(self, sizes: WindowSizes, recorder: DecisionRecorder, *, tools: ToolCatalog, ledger: Ledger) -> None:
        self.sizes = sizes
        self.recorder = recorder
        self.tools = tools
        self.ledger = ledger
        # (messages checked, the cap they were checked against, the last of them): the next
        # check starts after them while the list only grows and the cap stays
        self._calls_checked: tuple[int, int, object] = (0, 0, None)

    def shorten_calls(self, messages: Sequence[AgentMessage]) -> None:
        """Record a shortened form for every call in ``messages`` past the budget that has
        none yet. Only the messages added since the last check are looked at, unless the
        list was replaced (a compaction, another branch) or the budget changed."""
        cap = self.sizes.tool_limits.for_window(self.sizes.window).result_chars
        decided = self.recorder.decisions.call_args
        count, checked_cap, last = self._calls_checked
        start = count if cap == checked_cap and 0 < count <= len(messages) and messages[count - 1] is last else 0
        found: dict[str, dict[str, Any]] = {}
        for message in messages[start:]:
            if not isinstance(message, AssistantMessage):
                continue
            for call in message.tool_calls():
                if call.id in decided or call.id in found:
                    continue
                shown = shortened(call, cap, self.tools)
                if shown is not None:
                    found[call.id] = shown
        self._calls_checked = (len(messages), cap, messages[-1] if messages else None)
        if not found:
            return
        self.recorder.record(call_args_data(found))
        calls = {c.id: c for m in messages[start:] if isinstance(m, AssistantMessage) for c in m.tool_calls()}
        for call_id, shown in found.items():
            self.ledger.add(
                LedgerRecord(
                    kind="call_args",
                    ref=call_id,
                    tool=calls[call_id].name,
                    chars_before=call_size(calls[call_id]),
                    chars_after=arguments_chars(shown["arguments"]) + len(shown.get("rawArguments") or ""),
                    recover=_where(calls[call_id], self.tools),
                    detail={"cap": cap},
                )
            )
