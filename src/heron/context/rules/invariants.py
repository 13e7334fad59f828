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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from heron.agent.messages import AgentMessage
from heron.agent.tool_meta import EMPTY_CATALOG, ToolCatalog
from heron.ai.types import AssistantMessage, Context, StopReason, ToolCall, ToolResultMessage, UserMessage
from heron.context.view.build import (
    GONE_PREFIX,
    ReadKey,
    View,
    is_dedup_stub,
    is_injected,
    is_read,
    read_key,
    whole_read,
)
from heron.context.window.budget import fixed_tokens, request_tokens


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

    def __init__(self, *, reuse_counts: bool = False) -> None:
        # ``reuse_counts``: take the view's own counts (kept as it was built) instead of
        # counting it again - the incremental check's choice; strict mode recounts.
        self.reuse_counts = reuse_counts

    def check(self, snapshot: RequestSnapshot) -> list[str]:
        view = snapshot.view
        tally = view.tally if self.reuse_counts and isinstance(view, View) else None
        tokens = request_tokens(
            view, fixed_tokens_of(snapshot.context), floor_ms=snapshot.floor_ms, model=snapshot.model, tally=tally
        )
        problems = []
        limit = snapshot.window - snapshot.reserve
        if tokens > limit and snapshot.over_threshold_reason is None:
            problems.append(f"{tokens:,} tokens > window {snapshot.window:,} - reserve {snapshot.reserve:,}")
        if tokens + snapshot.max_tokens > snapshot.window:
            problems.append(f"{tokens:,} tokens + output cap {snapshot.max_tokens:,} > window {snapshot.window:,}")
        return problems


class Scanner(Protocol):
    """One rule reading a message list left to right: ``feed`` says what is wrong with
    each message given those before it, ``end`` what is wrong with the list ending there
    (without changing what was seen, so the list may still grow)."""

    def feed(self, message: Any) -> list[str]: ...

    def end(self) -> list[str]: ...


class ScanRule:
    """A rule that is one left-to-right scan over the view (or, ``over = "llm"``, over the
    provider messages): checked whole by :meth:`check`, or fed only what a request added
    by :class:`IncrementalCheck`."""

    name: ClassVar[str]
    over: ClassVar[Literal["view", "llm"]] = "view"

    def scanner(self, snapshot: RequestSnapshot) -> Scanner:
        raise NotImplementedError

    def messages(self, snapshot: RequestSnapshot) -> Sequence[Any]:
        return snapshot.view if self.over == "view" else snapshot.context.messages

    def check(self, snapshot: RequestSnapshot) -> list[str]:
        scan = self.scanner(snapshot)
        problems = [problem for message in self.messages(snapshot) for problem in scan.feed(message)]
        return problems + scan.end()


class _DedupScan:
    def __init__(self, stubs: Mapping[str, str], cwd: Path, tools: ToolCatalog) -> None:
        self.stubs, self.cwd, self.tools = stubs, cwd, tools
        self.calls: dict[str, ToolCall] = {}
        self.present: dict[ReadKey, tuple[int, int]] = {}

    def feed(self, message: Any) -> list[str]:
        if isinstance(message, AssistantMessage):
            self.calls.update((call.id, call) for call in message.tool_calls())
        if not isinstance(message, ToolResultMessage) or not is_read(message, self.tools):
            return []
        call = self.calls.get(message.tool_call_id)
        key = read_key(call, self.cwd, self.tools) if call is not None else None
        if not is_dedup_stub(message, self.tools):
            fresh = key is not None and message.tool_call_id not in self.stubs
            whole = whole_read(message, self.tools) if fresh else None
            if key is not None and whole is not None:
                self.present[key] = whole
            return []
        if message.text().startswith(GONE_PREFIX) or message.tool_call_id in self.stubs:
            return []  # says the content is gone, or pruned itself
        seen = self.present.get(key) if key is not None else None
        if seen is None:
            return [f"read {message.tool_call_id}: de-dup stub without that content earlier"]
        details: Any = message.details
        mtime, size = details.get("mtime_ns"), details.get("size")
        if isinstance(mtime, int) and (mtime, size) != seen:
            return [f"read {message.tool_call_id}: de-dup stub for a file that changed since"]
        return []

    def end(self) -> list[str]:
        return []


class DedupHasReferent(ScanRule):
    name: ClassVar[str] = "b.dedup-has-referent"

    def scanner(self, snapshot: RequestSnapshot) -> Scanner:
        return _DedupScan(snapshot.stubs, snapshot.cwd, snapshot.tools)


class _PrunedScan:
    def __init__(self, stubs: Mapping[str, str]) -> None:
        self.stubs = stubs

    def feed(self, message: Any) -> list[str]:
        if isinstance(message, ToolResultMessage):
            stub = self.stubs.get(message.tool_call_id)
            if stub is not None and message.text() != stub:
                return [f"result {message.tool_call_id} was pruned but is sent without its stub"]
        return []

    def end(self) -> list[str]:
        return []


class PrunedStaysPruned(ScanRule):
    name: ClassVar[str] = "c.pruned-stays-pruned"

    def scanner(self, snapshot: RequestSnapshot) -> Scanner:
        return _PrunedScan(snapshot.stubs)


def _content_key(message: UserMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return json.dumps([{"text": content, "type": "text"}], sort_keys=True)
    return json.dumps([b.to_json_dict() for b in content], sort_keys=True)


class TurnPromptPresent:
    name: ClassVar[str] = "d.turn-prompt-present"

    def check(self, snapshot: RequestSnapshot) -> list[str]:
        prompt = snapshot.turn_prompt
        messages = snapshot.context.messages
        if prompt is None or (messages and getattr(messages[0], "native_compaction", None) is not None):
            return []  # a request led by a provider-native block: the prompt is in its summary
        wanted = _content_key(prompt)
        # From the end: the running turn's prompt is among the latest messages.
        for message in reversed(snapshot.context.messages):
            if isinstance(message, UserMessage) and (message is prompt or _content_key(message) == wanted):
                return []
        return ["the turn's prompt is not in the request as its own user message"]


class _InjectedScan:
    def __init__(self) -> None:
        self.seen_kept = False
        self.reported = False  # one problem per request is enough: the order is wrong

    def feed(self, message: Any) -> list[str]:
        if not is_injected(message):
            self.seen_kept = True
            return []
        if not self.seen_kept or self.reported:
            return []
        self.reported = True
        kind = getattr(message, "custom_type", None) or getattr(message, "role", "?")
        return [f"injected message ({kind}) after a kept message"]

    def end(self) -> list[str]:
        return []


class InjectedFirst(ScanRule):
    name: ClassVar[str] = "e.injected-first"

    def scanner(self, snapshot: RequestSnapshot) -> Scanner:
        return _InjectedScan()


class _PairingScan:
    def __init__(self) -> None:
        self.known: set[str] = set()
        self.open_calls: dict[str, str] = {}

    def feed(self, message: Any) -> list[str]:
        problems: list[str] = []
        if isinstance(message, AssistantMessage):
            problems.extend(f"tool call {cid} has no result" for cid in self.open_calls)
            self.open_calls = {}
            calls = message.tool_calls()
            self.known.update(c.id for c in calls)
            if message.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):
                self.open_calls = {c.id: c.name for c in calls}
        elif isinstance(message, ToolResultMessage):
            if message.tool_call_id not in self.known:
                problems.append(f"tool result {message.tool_call_id} has no call before it")
            self.open_calls.pop(message.tool_call_id, None)
        elif isinstance(message, UserMessage) and self.open_calls:
            problems.extend(f"tool call {cid} has no result before the next user message" for cid in self.open_calls)
            self.open_calls = {}
        return problems

    def end(self) -> list[str]:
        return [f"tool call {cid} has no result" for cid in self.open_calls]


class ToolPairing(ScanRule):
    name: ClassVar[str] = "f.tool-pairing"
    over: ClassVar[Literal["view", "llm"]] = "llm"

    def scanner(self, snapshot: RequestSnapshot) -> Scanner:
        return _PairingScan()


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


@dataclass(slots=True)
class _Fed:
    """What one scanning rule has read of the requests so far."""

    stubs: dict[str, str]
    cwd: Path
    scanner: Scanner
    inputs: list[Any] = field(default_factory=list)


class IncrementalCheck:
    """The checks for a long-lived process outside the test suite (warn mode), at a cost
    proportional to what each request added: a scanning rule keeps its state over the
    part of the previous request this one repeats (the same messages - equal, as the
    provider messages are converted anew - and the same recorded stubs) and reads only
    the new messages; the count is the view's own (kept as it was built). A violation in
    the repeated part was reported with the request that first carried it. Anything else
    - a prune step, a compaction, another branch - is read whole again. Strict mode (the
    test suite) checks every request whole with :func:`check_request`."""

    def __init__(self) -> None:
        self.rules: tuple[Invariant, ...] = (FitsWindow(reuse_counts=True), *RULES[1:])
        self._fed: dict[str, _Fed] = {}

    def check(self, snapshot: RequestSnapshot) -> list[Violation]:
        out: list[Violation] = []
        for rule in self.rules:
            problems = self._scan(rule, snapshot) if isinstance(rule, ScanRule) else rule.check(snapshot)
            out.extend(Violation(rule.name, problem) for problem in problems)
        return out

    def _scan(self, rule: ScanRule, snapshot: RequestSnapshot) -> list[str]:
        messages = rule.messages(snapshot)
        fed = self._fed.get(rule.name)
        if (
            fed is None
            or fed.stubs != snapshot.stubs
            or fed.cwd != snapshot.cwd
            or len(fed.inputs) > len(messages)
            or messages[: len(fed.inputs)] != fed.inputs
        ):
            fed = self._fed[rule.name] = _Fed(dict(snapshot.stubs), snapshot.cwd, rule.scanner(snapshot))
        new = messages[len(fed.inputs) :]
        problems = [problem for message in new for problem in fed.scanner.feed(message)]
        fed.inputs.extend(new)
        return problems + fed.scanner.end()


def check_compaction(tokens_before: int, tokens_after: int) -> list[Violation]:
    """e, second half: a compaction never leaves the context larger than before."""
    if tokens_after > tokens_before:
        return [
            Violation(
                "e.compaction-shrinks", f"compaction grew the context: {tokens_before:,} -> {tokens_after:,} tokens"
            )
        ]
    return []


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
