"""The context ledger: a record of everything heron kept out of the model's view.

heron's rule that nothing is lost silently (docs/architecture.md, "Principles"). Every truncation, spill, read
de-duplication, prune and compaction appends a record saying what was cut, where, how
big it was before and after, and how to get it back. The runtime stores records in the
session as ``custom`` entries (never in context) and emits them as events, so
``/context`` and ``heron sessions context`` can show them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from heron.agent.emitter import Emitter

LEDGER_CUSTOM_TYPE = "heron.ledger"

LedgerKind = Literal[
    "truncate",  # a tool cut its own output (read page, bash tail, grep limit)
    "spill",  # a result over budget was written to disk; the model got a preview
    "dedupe",  # a repeated read answered with a stub
    "call_args",  # a tool call's oversized arguments shown shortened (the session keeps them whole)
    "prune",  # old tool results replaced by stubs in the request (not in the session)
    "compaction",  # history summarised
    "summary_fallback",  # the summariser's own input had to be reduced
    "context_file",  # an AGENTS.md / CLAUDE.md cut to its budget
    "overflow",  # the provider rejected a request as too long; heron recovered (or not)
    "flush",  # the silent memory-flush turn before a compaction ran (or was skipped)
    "invariant",  # a context rule was broken (HERON_CHECK_CONTEXT / context.checkInvariants)
    "permission",  # a tool call was allowed, asked about or denied (heron.coding.permissions)
    "hook",  # a settings hook blocked, added context, failed or timed out (heron.coding.hooks)
    "unanswered",  # a new prompt follows one that was never answered (heron.coding.unanswered)
    "memory",  # project memory: a change committed to its history, a failed commit, a reflection pass
]


def chars_to_tokens(chars: int) -> int:
    return math.ceil(chars / 4)


@dataclass(slots=True, kw_only=True)
class LedgerRecord:
    """One thing heron did to the context (truncated, pruned, compacted, denied...) with the
    sizes before and after and how to get the content back, so nothing is lost silently."""

    kind: LedgerKind
    ref: str | None = None  # tool call id or session entry id
    tool: str | None = None
    chars_before: int = 0
    chars_after: int = 0
    tokens_before: int | None = None
    tokens_after: int | None = None
    recover: str = ""  # how to get the content back
    detail: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tokens_before is None:
            self.tokens_before = chars_to_tokens(self.chars_before)
        if self.tokens_after is None:
            self.tokens_after = chars_to_tokens(self.chars_after)

    @property
    def saved_tokens(self) -> int:
        return max(0, (self.tokens_before or 0) - (self.tokens_after or 0))

    def to_json_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "charsBefore": self.chars_before,
            "charsAfter": self.chars_after,
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
            "recover": self.recover,
        }
        if self.ref is not None:
            out["ref"] = self.ref
        if self.tool is not None:
            out["tool"] = self.tool
        if self.detail:
            out["detail"] = self.detail
        return out

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> LedgerRecord:
        return cls(
            kind=data.get("kind", "truncate"),
            ref=data.get("ref"),
            tool=data.get("tool"),
            chars_before=int(data.get("charsBefore", 0)),
            chars_after=int(data.get("charsAfter", 0)),
            tokens_before=data.get("tokensBefore"),
            tokens_after=data.get("tokensAfter"),
            recover=str(data.get("recover", "")),
            detail=dict(data.get("detail") or {}),
        )

    def describe(self) -> str:
        """One line for /context."""
        where = f" {self.tool}" if self.tool else ""
        ref = f" [{self.ref}]" if self.ref else ""
        size = f"{self.tokens_before:,} -> {self.tokens_after:,} tokens"
        recover = f"; {self.recover}" if self.recover else ""
        return f"{self.kind}{where}{ref}: {size}{recover}"


def tool_records(call_id: str, tool: str, details: Any, text_chars: int) -> list[LedgerRecord]:
    """What a tool result's details say it kept out of view: a de-dup stub instead of a
    repeated read, or output the tool cut itself (with where the rest is)."""
    if not isinstance(details, dict):
        return []
    if details.get("kind") == "unchanged":
        return [
            LedgerRecord(
                kind="dedupe",
                ref=call_id,
                tool=tool,
                chars_before=int(details.get("size") or 0),
                chars_after=text_chars,
                recover="the earlier read of the same range is in the context",
            )
        ]
    truncation = details.get("truncation")
    if isinstance(truncation, dict) and truncation.get("truncated", True):
        before = int(truncation.get("total_bytes") or truncation.get("totalBytes") or 0)
        path = details.get("full_output_path")
        recover = f"full output in {path}" if path else "page with offset/limit, or grep"
        return [
            LedgerRecord(
                kind="truncate",
                ref=call_id,
                tool=tool,
                chars_before=max(before, text_chars),
                chars_after=text_chars,
                recover=recover,
                detail={"truncation": truncation},
            )
        ]
    return []


Listener = Callable[[LedgerRecord], None]


class Ledger:
    """Records of one session, in order. Listeners (the session store, the UI) see each
    record as it is added; one that raises is logged and the others still hear of it,
    because the record itself is already kept and must not be lost to a display bug."""

    def __init__(self, records: list[LedgerRecord] | None = None) -> None:
        self.records: list[LedgerRecord] = list(records or [])
        self._events: Emitter[LedgerRecord] = Emitter("ledger listener")

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` for each record added; returns an unsubscribe function."""
        return self._events.subscribe(listener)

    def add(self, record: LedgerRecord) -> LedgerRecord:
        self.records.append(record)
        self._events.emit(record)
        return record

    def totals(self) -> dict[str, int]:
        """Tokens kept out of view, by kind."""
        out: dict[str, int] = {}
        for record in self.records:
            out[record.kind] = out.get(record.kind, 0) + record.saved_tokens
        return out
