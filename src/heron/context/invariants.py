"""The rules every request obeys, as named checks.

Each rule is a class with a ``name`` and a ``check`` that looks at one
:class:`RequestSnapshot` - the view being sent (heron's messages after pruning and
de-dup), the provider context (system prompt, LLM messages, tools), the output cap - and
returns what is wrong with it. The test suite runs every check on every request
(``HERON_CHECK_CONTEXT=strict``: a violation fails the test); users can turn them on at
run time (``HERON_CHECK_CONTEXT=1`` or the ``context.checkInvariants`` setting), where a
violation becomes a ledger record and a warning.

The rules:

- a. ``fits-window``: the request's tokens, counted on the view being sent (system
  prompt and tools included, the provider's last report used only for the part its
  request carried unchanged) are at most ``window - reserve`` - unless the policy
  recorded that nothing more could be pruned or compacted - and never more than the
  window together with the output cap.
- b. ``dedup-has-referent``: a read de-dup stub only where the same range of the same
  file is present whole earlier in the view, with the same modification time and size.
- c. ``pruned-stays-pruned``: a result once pruned carries exactly its recorded stub.
- d. ``turn-prompt-present``: the running turn's prompt is in the request, verbatim, as
  its own user message.
- e. ``injected-first``: summaries and injected blocks come before every kept message.
- f. ``tool-pairing``: every tool call has its result, every result follows its call.

``e`` has a second half that is not about one request: a compaction never leaves the
context larger than it found it - :func:`check_compaction`.

Side requests - a compaction's summaries, a branch summary, the memory flush's turns -
are checked with the same rules on a snapshot of their own (built by the coding layer's
request path): their view is what their context carries, no turn prompt, and a reserve of
zero, so ``a`` holds them to the window with their own output cap rather than to the
threshold a summary is asked for because the conversation has passed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from heron.agent.messages import AgentMessage
from heron.agent.tool_meta import EMPTY_CATALOG, ToolCatalog
from heron.ai.types import AssistantMessage, Context, StopReason, ToolResultMessage, UserMessage
from heron.context.budget import fixed_tokens, request_tokens
from heron.context.view import (
    GONE_PREFIX,
    ReadKey,
    _calls,
    is_dedup_stub,
    is_injected,
    is_read,
    read_key,
    whole_read,
)

CheckMode = Literal["off", "warn", "strict"]
ENV_VAR = "HERON_CHECK_CONTEXT"


@dataclass(frozen=True, slots=True)
class RequestSnapshot:
    """One request as it is about to be sent."""

    view: Sequence[AgentMessage]
    context: Context
    max_tokens: int
    window: int
    reserve: int
    stubs: Mapping[str, str]
    cwd: Path
    turn_prompt: UserMessage | None = None
    floor_ms: int = 0
    model: tuple[str, str] | None = None
    over_threshold_reason: str | None = None  # the policy could not get below the threshold
    tools: ToolCatalog = EMPTY_CATALOG  # what each tool is (the de-dup rule follows read-kind tools)


class ContextInvariantError(AssertionError):
    """Raised under ``strict`` before a request that breaks a rule is sent."""


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    message: str

    def __str__(self) -> str:
        return f"context invariant {self.rule} violated: {self.message}"


class Invariant(Protocol):
    name: ClassVar[str]

    def check(self, snapshot: RequestSnapshot) -> list[str]: ...


def fixed_tokens_of(context: Context) -> int:
    return fixed_tokens(context.system_prompt or "", context.tools or [])


class FitsWindow:
    name: ClassVar[str] = "a.fits-window"

    def check(self, snapshot: RequestSnapshot) -> list[str]:
        tokens = request_tokens(
            snapshot.view, fixed_tokens_of(snapshot.context), floor_ms=snapshot.floor_ms, model=snapshot.model
        )
        problems = []
        limit = snapshot.window - snapshot.reserve
        if tokens > limit and snapshot.over_threshold_reason is None:
            problems.append(f"{tokens:,} tokens > window {snapshot.window:,} - reserve {snapshot.reserve:,}")
        if tokens + snapshot.max_tokens > snapshot.window:
            problems.append(f"{tokens:,} tokens + output cap {snapshot.max_tokens:,} > window {snapshot.window:,}")
        return problems


class DedupHasReferent:
    name: ClassVar[str] = "b.dedup-has-referent"

    def check(self, snapshot: RequestSnapshot) -> list[str]:
        calls = _calls(snapshot.view)
        present: dict[ReadKey, tuple[int, int]] = {}
        problems = []
        for message in snapshot.view:
            if not isinstance(message, ToolResultMessage) or not is_read(message, snapshot.tools):
                continue
            call = calls.get(message.tool_call_id)
            key = read_key(call, snapshot.cwd, snapshot.tools) if call is not None else None
            if is_dedup_stub(message, snapshot.tools):
                if message.text().startswith(GONE_PREFIX) or message.tool_call_id in snapshot.stubs:
                    continue  # says the content is gone, or pruned itself
                seen = present.get(key) if key is not None else None
                if seen is None:
                    problems.append(f"read {message.tool_call_id}: de-dup stub without that content earlier")
                    continue
                details: Any = message.details
                mtime, size = details.get("mtime_ns"), details.get("size")
                if isinstance(mtime, int) and (mtime, size) != seen:
                    problems.append(f"read {message.tool_call_id}: de-dup stub for a file that changed since")
            elif key is not None and message.tool_call_id not in snapshot.stubs:
                whole = whole_read(message, snapshot.tools)
                if whole is not None:
                    present[key] = whole
        return problems


class PrunedStaysPruned:
    name: ClassVar[str] = "c.pruned-stays-pruned"

    def check(self, snapshot: RequestSnapshot) -> list[str]:
        problems = []
        for message in snapshot.view:
            if isinstance(message, ToolResultMessage):
                stub = snapshot.stubs.get(message.tool_call_id)
                if stub is not None and message.text() != stub:
                    problems.append(f"result {message.tool_call_id} was pruned but is sent without its stub")
        return problems


def _content_key(message: UserMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return json.dumps([{"text": content, "type": "text"}], sort_keys=True)
    return json.dumps([b.to_json_dict() for b in content], sort_keys=True)


class TurnPromptPresent:
    name: ClassVar[str] = "d.turn-prompt-present"

    def check(self, snapshot: RequestSnapshot) -> list[str]:
        prompt = snapshot.turn_prompt
        if prompt is None:
            return []
        wanted = _content_key(prompt)
        for message in snapshot.context.messages:
            if isinstance(message, UserMessage) and (message is prompt or _content_key(message) == wanted):
                return []
        return ["the turn's prompt is not in the request as its own user message"]


class InjectedFirst:
    name: ClassVar[str] = "e.injected-first"

    def check(self, snapshot: RequestSnapshot) -> list[str]:
        seen_kept = False
        for message in snapshot.view:
            if is_injected(message):
                if seen_kept:
                    kind = getattr(message, "custom_type", None) or getattr(message, "role", "?")
                    return [f"injected message ({kind}) after a kept message"]
            else:
                seen_kept = True
        return []


class ToolPairing:
    name: ClassVar[str] = "f.tool-pairing"

    def check(self, snapshot: RequestSnapshot) -> list[str]:
        problems: list[str] = []
        messages = snapshot.context.messages
        known: set[str] = set()
        open_calls: dict[str, str] = {}
        for message in messages:
            if isinstance(message, AssistantMessage):
                problems.extend(f"tool call {cid} has no result" for cid in open_calls)
                open_calls = {}
                calls = message.tool_calls()
                known.update(c.id for c in calls)
                if message.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):
                    open_calls = {c.id: c.name for c in calls}
            elif isinstance(message, ToolResultMessage):
                if message.tool_call_id not in known:
                    problems.append(f"tool result {message.tool_call_id} has no call before it")
                open_calls.pop(message.tool_call_id, None)
            elif isinstance(message, UserMessage) and open_calls:
                problems.extend(f"tool call {cid} has no result before the next user message" for cid in open_calls)
                open_calls = {}
        problems.extend(f"tool call {cid} has no result" for cid in open_calls)
        return problems


RULES: tuple[Invariant, ...] = (
    FitsWindow(),
    DedupHasReferent(),
    PrunedStaysPruned(),
    TurnPromptPresent(),
    InjectedFirst(),
    ToolPairing(),
)


def check_request(snapshot: RequestSnapshot, rules: Sequence[Invariant] = RULES) -> list[Violation]:
    return [Violation(rule.name, problem) for rule in rules for problem in rule.check(snapshot)]


def check_compaction(tokens_before: int, tokens_after: int) -> list[Violation]:
    """e, second half: a compaction never leaves the context larger than before."""
    if tokens_after > tokens_before:
        return [
            Violation(
                "e.compaction-shrinks", f"compaction grew the context: {tokens_before:,} -> {tokens_after:,} tokens"
            )
        ]
    return []


def mode_from(setting: bool, environ: Mapping[str, str] | None = None) -> CheckMode:
    """``HERON_CHECK_CONTEXT``: ``strict`` (tests), ``1``/``warn``/``true`` (warn); else the setting."""
    value = (environ if environ is not None else os.environ).get(ENV_VAR, "").strip().lower()
    if value == "strict":
        return "strict"
    if value in ("1", "true", "yes", "warn", "on"):
        return "warn"
    if value in ("0", "false", "no", "off"):
        return "off"
    return "warn" if setting else "off"


@dataclass
class ViolationLog:
    """Violations seen in this process under ``strict`` (the test suite fails on any)."""

    seen: list[Violation] = field(default_factory=list)

    def add(self, violations: Sequence[Violation]) -> None:
        self.seen.extend(violations)

    def take(self) -> list[Violation]:
        out, self.seen = self.seen, []
        return out


STRICT_LOG = ViolationLog()
