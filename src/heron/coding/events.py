"""Events the coding runtime adds to the agent's: compaction, retry, ledger, context warnings,
the task list, the goal and its loop, sub-agents' events, the idle timer's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from heron.agent.events import AgentEvent
from heron.context.records.ledger import LedgerRecord

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
    ``HERON_CHECK_CONTEXT``), a window learnt, a server that did not say its window in
    time (a model switched to), an extension disabled or its context transform not used
    (docs/extensions.md), project memory's history repaired or not written, a reflection
    dropped (docs/memory.md)."""

    kind: Literal[
        "auto_compaction_off",
        "compaction_failed",
        "invariant",
        "window_learned",
        "window_unknown",
        "overflow_doubted",
        "extension",
        "memory",
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
class GoalLoopEvent:
    """The goal loop (heron.coding.goal_loop): ``step`` when heron goes on by itself
    (``steps``: the continuations since the user's last prompt, this one included;
    ``evaluation``: the evaluator's reason that steers it), ``end`` when the loop stops, with
    ``stop`` saying why (complete, blocked, goal_turns, goal_budget, max_turns, aborted,
    error, cleared) and ``evidence`` the model's (or the evaluator's) words."""

    state: Literal["step", "end"]
    steps: int = 0
    max_turns: int = 0
    stop: str | None = None
    evidence: str | None = None
    evaluation: str | None = None
    evaluator_error: str | None = None  # the evaluator could not judge the step (the loop goes on)
    type: Literal["goal_loop"] = "goal_loop"

    def report(self) -> dict[str, Any]:
        """The loop's end as ``run_end`` and ACP's ``_meta`` carry it."""
        return {"steps": self.steps, "max_turns": self.max_turns, "stop": self.stop, "evidence": self.evidence}

    def line(self) -> str:
        """The line every mode shows for it (the interactive mode, ACP, ``-p``'s stderr)."""
        if self.state == "end":
            return loop_end_line(self.report())
        line = f"goal loop: going on by itself (continuation {self.steps} of at most {self.max_turns})"
        if self.evaluation:
            line += f"; the evaluator: {self.evaluation}"
        if self.evaluator_error:
            line += f"; the evaluator could not judge: {self.evaluator_error}"
        return line


def loop_end_line(report: dict[str, Any]) -> str:
    """``goal loop ended (STOP) after N automatic continuation(s)``, with the evidence of a
    goal met or blocked."""
    line = f"goal loop ended ({report['stop']}) after {report['steps']} automatic continuation(s)"
    evidence = report.get("evidence")
    return line + (f": {evidence}" if evidence and report["stop"] in ("complete", "blocked") else "")


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
    | GoalLoopEvent
    | SubagentEvent
    | IdleEvent
)
