"""Events the coding runtime adds to the agent's: compaction, retry, ledger, context warnings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from heron.agent.events import AgentEvent
from heron.context.ledger import LedgerRecord

# native_switch: heron's summary of what a provider-native compaction covered, for another provider
CompactionReason = Literal["threshold", "boundary", "requested", "overflow", "manual", "native_switch"]


@dataclass(slots=True, kw_only=True)
class CompactionStartEvent:
    reason: CompactionReason
    tokens_before: int
    type: Literal["compaction_start"] = "compaction_start"


@dataclass(slots=True, kw_only=True)
class CompactionEndEvent:
    reason: CompactionReason
    tokens_before: int
    tokens_after: int = 0
    entry_id: str | None = None
    summary: str | None = None
    # Why nothing was compacted, or what failed.
    skipped: str | None = None
    error: str | None = None
    # Automatic compaction was switched off for the session, and why.
    auto_disabled: str | None = None
    type: Literal["compaction_end"] = "compaction_end"


@dataclass(slots=True, kw_only=True)
class RetryStartEvent:
    attempt: int
    max_attempts: int
    delay: float
    error_message: str
    type: Literal["retry_start"] = "retry_start"


@dataclass(slots=True, kw_only=True)
class RetryEndEvent:
    success: bool
    attempt: int
    final_error: str | None = None
    type: Literal["retry_end"] = "retry_end"


@dataclass(slots=True, kw_only=True)
class LedgerEvent:
    record: LedgerRecord
    type: Literal["ledger"] = "ledger"


@dataclass(slots=True, kw_only=True)
class ContextWarningEvent:
    """Something the user should know about the context: automatic compaction switched
    off, an automatic compaction that failed (its summary request did not answer in time,
    or failed after its retries), a context invariant violated (with
    ``HERON_CHECK_CONTEXT``), a window learnt, an extension disabled or its context
    transform not used (docs/extensions.md)."""

    kind: Literal[
        "auto_compaction_off", "compaction_failed", "invariant", "window_learned", "overflow_doubted", "extension"
    ]
    message: str
    type: Literal["context_warning"] = "context_warning"


@dataclass(slots=True, kw_only=True)
class TodosEvent:
    """The task list changed (the todo tool ran): the whole new list."""

    todos: list[dict[str, str]]
    type: Literal["todos"] = "todos"


@dataclass(slots=True, kw_only=True)
class GoalEvent:
    """A ``/goal`` command was answered in place of the model (``error``: bad input): the
    reply is the run's answer; ``goal`` is the goal now (None: none), ``spent`` its tokens."""

    reply: str
    error: bool = False
    goal: str | None = None
    budget: int | None = None
    spent: int = 0
    type: Literal["goal"] = "goal"


@dataclass(slots=True, kw_only=True)
class SubagentEvent:
    """An event of a sub-agent (``task`` tool), tagged with the child's session id and the
    parent's tool call that started it; ``event`` is any of the child's session events
    (text deltas excepted: the child's ``message_end`` carries its answer)."""

    session_id: str
    tool_call_id: str
    event: Any
    type: Literal["subagent"] = "subagent"


SessionEvent = (
    AgentEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | RetryStartEvent
    | RetryEndEvent
    | LedgerEvent
    | ContextWarningEvent
    | TodosEvent
    | GoalEvent
    | SubagentEvent
)
