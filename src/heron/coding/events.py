"""Events the coding runtime adds to the agent's: compaction, retry, ledger, context warnings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from heron.agent.events import AgentEvent
from heron.context.ledger import LedgerRecord

# native_switch: heron's summary of what a provider-native compaction covered, for another provider
CompactionReason = Literal["threshold", "boundary", "requested", "overflow", "manual", "native_switch", "idle"]


@dataclass(slots=True, kw_only=True)
class CompactionStartEvent:
    """Sent when a compaction begins, so a front end can show that the context is being
    shortened (and how large it was) before the summary request returns."""

    reason: CompactionReason
    tokens_before: int
    type: Literal["compaction_start"] = "compaction_start"


@dataclass(slots=True, kw_only=True)
class CompactionEndEvent:
    """Sent when a compaction ends, however it ended: the sizes before and after, the summary's
    entry, or why nothing was compacted or what failed, so the user is never left guessing."""

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
    """Sent before a failed request is retried, with the wait, so a front end can say why
    nothing arrives for a while instead of looking stuck."""

    attempt: int
    max_attempts: int
    delay: float
    error_message: str
    type: Literal["retry_start"] = "retry_start"


@dataclass(slots=True, kw_only=True)
class RetryEndEvent:
    """Sent when retrying stops: whether a retry got through, or the last error when they
    are used up, so the earlier retry notice can be closed."""

    success: bool
    attempt: int
    final_error: str | None = None
    type: Literal["retry_end"] = "retry_end"


@dataclass(slots=True, kw_only=True)
class LedgerEvent:
    """One ledger record (something heron did to the context) as it happens, so front ends
    and ``--mode json`` see the same record the session's ledger keeps."""

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


@dataclass(slots=True, kw_only=True)
class IdleEvent:
    """The idle policy decided, before the prompt cache of a waiting session expired, to
    warm it, compact or let it expire (docs/context.md, "The idle policy"); ``costs``:
    the dollars each option would add (None: an unpriced model); ``failed``: why a
    warm-up did not go through."""

    action: str
    reason: str
    costs: dict[str, float] | None = None
    failed: str | None = None
    type: Literal["idle"] = "idle"


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
    | IdleEvent
)
