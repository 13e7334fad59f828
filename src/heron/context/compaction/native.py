"""Provider-native compaction and server-side clearing (docs/context.md, "Provider-native
compaction").

Opt-in per model (``compaction.native`` / ``compaction.serverClearing`` in the settings,
or ``compaction`` in the model's ``models.json`` entry). A request then asks the provider
to compact the conversation itself once its input passes a trigger below heron's own
threshold (Anthropic's ``compact_20260112`` edit, OpenAI Responses' ``compact_threshold``)
and, on Anthropic, to clear old tool results server-side (``clear_tool_uses_20250919``)
instead of heron's pruning. The provider's compaction comes back inside a reply
(:class:`heron.ai.types.NativeCompaction` on the assistant message), which the session
stores like any message, so everything here is a function of the session file:

- **the same provider**: the view starts at the latest reply carrying a native block
  (:func:`native_view`); the provider expands the block in place of everything before it;
- **another provider**: the opaque block is never sent (each adapter sends only its own),
  and the history it covered is summarised by heron's own compaction, kept from that
  reply on, the first time a request goes to the other provider (:func:`uncovered`);
- **a failure**: a server that rejects the fields gets the request again without them
  (``heron.ai``), and the session records that native compaction is off for that model
  (:func:`answer_records` says what the ledger keeps); a provider that never compacts
  leaves the session to heron's own threshold, above the trigger.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from heron.agent.messages import AgentMessage
from heron.ai.options import ContextManagement
from heron.ai.types import AssistantMessage, Model, StopReason
from heron.context.continuity.goal import GOAL_MESSAGE_TYPE
from heron.context.records.ledger import LedgerRecord
from heron.context.view.build import is_injected
from heron.session.context import EntrySource, last_index
from heron.session.entries import CompactionEntry, MessageEntry

NATIVE_TRIGGER_SHARE = 0.6  # of heron's threshold: the provider compacts well before heron would
NATIVE_APIS = frozenset({"anthropic-messages", "openai-responses"})
CLEARING_APIS = frozenset({"anthropic-messages"})
CLEAR_AT_LEAST_SHARE = 0.10  # of the window: a clearing breaks the cache, so it must be worth it
NATIVE_RECOVER = "every message stays in the session file; /tree shows them; search_history finds them"


@dataclass(frozen=True, slots=True)
class NativeSettings:
    """``compaction.native``, ``compaction.serverClearing``, ``compaction.nativeTrigger``
    (a share of heron's threshold) and ``compaction.nativeInstructions``."""

    native: bool = False
    server_clearing: bool = False
    trigger: float = NATIVE_TRIGGER_SHARE
    instructions: str | None = None

    def for_model(self, model: Model) -> NativeSettings:
        """These settings with the model's own ``compaction`` entry (models.json) applied."""
        own = model.compaction or {}
        native, clearing = own.get("native"), own.get("serverClearing")
        return NativeSettings(
            native=(native if isinstance(native, bool) else self.native) and model.api in NATIVE_APIS,
            server_clearing=(clearing if isinstance(clearing, bool) else self.server_clearing)
            and model.api in CLEARING_APIS,
            trigger=self.trigger,
            instructions=self.instructions,
        )


def native_index(messages: Sequence[AgentMessage], start: int = 0, found: int | None = None) -> int | None:
    """The position of the latest reply that carries a native compaction (``found``: the
    answer for ``messages[:start]``, so only what was added since is looked at)."""
    for index in range(len(messages) - 1, start - 1, -1):
        message = messages[index]
        if (
            isinstance(message, AssistantMessage)
            and message.native_compaction is not None
            and message.stop_reason not in (StopReason.ERROR, StopReason.ABORTED)
        ):
            return index
    return found


class NativeTracker:
    """:func:`native_index` for the list a session sends, found incrementally: between two
    requests the list only grows (the same objects), so a request looks only at the
    messages it added - a session without native blocks pays nothing per request for the
    feature. Any other list (a compaction, another branch) is scanned whole."""

    def __init__(self) -> None:
        self._first: AgentMessage | None = None
        self._last: AgentMessage | None = None
        self._length = 0
        self._index: int | None = None

    def index(self, messages: Sequence[AgentMessage]) -> int | None:
        length = self._length
        grown = 0 < length <= len(messages) and messages[0] is self._first and messages[length - 1] is self._last
        found = native_index(messages, length, self._index) if grown else native_index(messages)
        if messages:
            self._first, self._last, self._length, self._index = messages[0], messages[-1], len(messages), found
        return found


def native_view(messages: Sequence[AgentMessage], model: Model, index: int | None = -1) -> Sequence[AgentMessage]:
    """``messages`` from the latest native block on, when ``model`` can read that block
    (the provider expands it in place of everything before it); otherwise unchanged.
    ``index``: that block's position when already known (-1: look for it)."""
    index = native_index(messages) if index == -1 else index
    if index is None or index == 0:
        return messages
    message = messages[index]
    assert isinstance(message, AssistantMessage) and message.native_compaction is not None
    return messages[index:] if message.native_compaction.matches(model) else messages


def uncovered(messages: Sequence[AgentMessage], model: Model, index: int | None = -1) -> AssistantMessage | None:
    """The latest reply with a native block ``model`` cannot read, when conversation from
    before it is still in ``messages`` (no heron compaction has summarised that span yet):
    the reply a compaction must keep from, so the other provider gets heron's summary.
    ``index``: that reply's position when already known (-1: look for it)."""
    index = native_index(messages) if index == -1 else index
    if index is None:
        return None
    message = messages[index]
    assert isinstance(message, AssistantMessage) and message.native_compaction is not None
    if message.native_compaction.matches(model):
        return None
    if all(is_injected(m) or _is_goal(m) for m in messages[:index]):
        return None
    return message


def _is_goal(message: AgentMessage) -> bool:
    return getattr(message, "custom_type", None) == GOAL_MESSAGE_TYPE


def kept_from(source: EntrySource, leaf_id: str | None, entry_id: str) -> bool:
    """Whether the latest compaction on the path keeps from ``entry_id`` (heron already
    summarised what the native block there covered: the messages left before it in the
    conversation are that compaction's own, such as the turn prompt it kept)."""
    if leaf_id is None:
        return False
    ids, types = source.lineage(leaf_id)
    latest = last_index(types, "compaction", len(types))
    entry = source.get(ids[latest]) if latest is not None else None
    return isinstance(entry, CompactionEntry) and entry.first_kept_entry_id == entry_id


def entry_of(source: EntrySource, leaf_id: str | None, message: AssistantMessage) -> str | None:
    """The id of the message entry on the path to ``leaf_id`` that holds ``message``."""
    if leaf_id is None:
        return None
    ids, types = source.lineage(leaf_id)
    for entry_id, kind in zip(reversed(ids), reversed(types), strict=True):
        if kind != "message":
            continue
        entry = source.get(entry_id)
        if isinstance(entry, MessageEntry) and (
            entry.message is message
            or (
                isinstance(entry.message, AssistantMessage)
                and entry.message.timestamp == message.timestamp
                and entry.message.native_compaction == message.native_compaction
            )
        ):
            return entry_id
    return None


def request_fields(
    settings: NativeSettings,
    *,
    threshold: int,
    window: int,
    keep_tool_uses: int,
    exclude_tools: Sequence[str],
    off: bool,
) -> ContextManagement | None:
    """What a request asks of the provider (None: nothing). ``off``: the model's server
    rejected the fields before (recorded), so heron compacts the session itself."""
    if off or not (settings.native or settings.server_clearing):
        return None
    trigger = max(1, int(threshold * settings.trigger))
    return ContextManagement(
        compact_trigger=trigger if settings.native else None,
        instructions=settings.instructions if settings.native else None,
        clear_trigger=trigger if settings.server_clearing else None,
        clear_keep=keep_tool_uses,
        clear_at_least=int(window * CLEAR_AT_LEAST_SHARE) if settings.server_clearing else None,
        exclude_tools=tuple(exclude_tools) if settings.server_clearing else (),
    )


def answer_records(answer: AssistantMessage, tokens_before: int) -> list[LedgerRecord]:
    """The ledger records of what the provider did to the context of the request that
    produced ``answer``: a native compaction (``tokens_before``: heron's count of that
    request), server-side clearing (recorded like pruning), or a rejection of the fields."""
    records: list[LedgerRecord] = []
    native = answer.native_compaction
    if native is not None:
        after = answer.usage.input + answer.usage.cache_read + answer.usage.cache_write
        records.append(
            LedgerRecord(
                kind="compaction",
                ref=answer.response_id,
                chars_before=tokens_before * 4,
                chars_after=len(native.content),
                tokens_before=tokens_before,
                tokens_after=after or None,
                recover=NATIVE_RECOVER,
                detail={"reason": "native", "api": native.api, "provider": native.provider},
            )
        )
    for edit in answer.context_edits or []:
        records.append(_clearing_record(answer, edit))
    if answer.context_management_error is not None:
        records.append(
            LedgerRecord(
                kind="compaction",
                ref=answer.response_id,
                recover="heron compacts this session itself from now on",
                detail={"reason": "native_rejected", "error": answer.context_management_error},
            )
        )
    return records


def _clearing_record(answer: AssistantMessage, edit: dict[str, Any]) -> LedgerRecord:
    cleared = edit.get("cleared_input_tokens")
    tokens = cleared if isinstance(cleared, int) and cleared > 0 else 0
    uses = edit.get("cleared_tool_uses")
    return LedgerRecord(
        kind="prune",
        ref=answer.response_id,
        chars_before=tokens * 4,
        chars_after=0,
        recover="every tool result stays in the session file; read the file or re-run the command",
        detail={
            "server": str(edit.get("type") or ""),
            "cleared_tool_uses": uses if isinstance(uses, int) else 0,
            "cleared_input_tokens": tokens,
        },
    )
