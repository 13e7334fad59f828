"""How many tokens a message list occupies in the context window.

The rules are written up in docs/context.md ("Counting tokens").

Context tokens = the usage the provider reported for the last assistant message (input +
output + cache read + cache write: the request that produced it plus its answer) plus an
estimate of every message after it. Without a usable report, everything is estimated.
A report from before the latest compaction is never used: it measured the context before
it was summarised. Estimates are ceil(chars / 4) per message, chars counted per message
kind (the same counts compaction uses to place its cut):

- user: text (images not counted: pi's cut-point estimate; the context estimate,
  :func:`estimate_context_tokens`, counts a user's image at 1,200 tokens like any other,
  since the request does carry it);
- assistant: text + thinking + for each tool call its name and its arguments as compact
  JSON (no spaces, non-ASCII kept as is);
- toolResult and custom (extension) messages: text, plus 4,800 chars (1,200 tokens) per
  image;
- bashExecution: command + output (0 when excluded from the context);
- branch and compaction summaries: the summary text;
- UI notes and messages of unknown roles: 0 (the model never sees them).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from heron.agent.messages import (
    AgentMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ExtensionMessage,
)
from heron.ai.types import (
    AssistantMessage,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

CHARS_PER_TOKEN = 4
IMAGE_CHARS = 4_800  # 1,200 tokens


def arguments_chars(arguments: Any) -> int:
    """The characters of a tool call's arguments: their compact JSON."""
    return len(json.dumps(arguments, separators=(",", ":"), ensure_ascii=False))


def message_chars(message: AgentMessage) -> int:
    """The characters of ``message`` that count towards its token estimate."""
    if isinstance(message, UserMessage):
        content = message.content
        if isinstance(content, str):
            return len(content)
        return sum(len(b.text) for b in content if isinstance(b, TextContent))
    if isinstance(message, AssistantMessage):
        native = message.native_compaction  # the summary its provider expands (counted for any reader)
        chars = len(native.content) if native is not None else 0
        for block in message.content:
            if isinstance(block, TextContent):
                chars += len(block.text)
            elif isinstance(block, ThinkingContent):
                chars += len(block.thinking)
            elif isinstance(block, ToolCall):
                chars += len(block.name)
                chars += arguments_chars(block.arguments)
        return chars
    if isinstance(message, ToolResultMessage | ExtensionMessage):
        blocks = message.content
        if isinstance(blocks, str):
            return len(blocks)
        return sum(
            len(b.text) if isinstance(b, TextContent) else IMAGE_CHARS if isinstance(b, ImageContent) else 0
            for b in blocks
        )
    if isinstance(message, BashExecutionMessage):
        return 0 if message.exclude_from_context else len(message.command) + len(message.output)
    if isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
        return len(message.summary)
    return 0


def estimate_message_tokens(message: AgentMessage) -> int:
    return math.ceil(message_chars(message) / CHARS_PER_TOKEN)


def context_message_tokens(message: AgentMessage) -> int:
    """A message's share of the context: :func:`estimate_message_tokens`, plus 1,200
    tokens for each image a user message carries."""
    tokens = estimate_message_tokens(message)
    if isinstance(message, UserMessage) and not isinstance(message.content, str):
        tokens += sum(IMAGE_CHARS // CHARS_PER_TOKEN for b in message.content if isinstance(b, ImageContent))
    return tokens


def _reported(message: AgentMessage) -> int | None:
    """The context size a provider reported with an assistant message, if it is usable
    (aborted and failed requests report nothing meaningful)."""
    if not isinstance(message, AssistantMessage):
        return None
    if message.stop_reason in (StopReason.ABORTED, StopReason.ERROR):
        return None
    usage = message.usage
    if usage.input + usage.cache_read + usage.cache_write <= 0:
        return None  # no prompt count (llama.cpp, some Ollama builds report output only): estimate
    tokens = usage.context_tokens()
    return tokens if tokens > 0 else None


class RunningTally:
    """Token estimates of a message list that only grows: each message is counted once,
    when it is added, and every later question is answered from running sums (what a
    request costs no longer depends on how long the session is). :meth:`snapshot` fixes
    what a given length of the list holds."""

    __slots__ = ("reported", "summary_ms", "sums")

    def __init__(self) -> None:
        self.sums: list[int] = [0]  # sums[i]: the tokens of the first i messages
        self.summary_ms: int | None = None  # the latest compaction summary's timestamp
        self.reported: int | None = None  # the last message with a usable provider report

    def add(self, message: AgentMessage) -> None:
        self.sums.append(self.sums[-1] + context_message_tokens(message))
        if isinstance(message, CompactionSummaryMessage):
            self.summary_ms = message.timestamp
        if _reported(message) is not None:
            self.reported = len(self.sums) - 2

    def snapshot(self) -> Tally:
        return Tally(self.sums, len(self.sums) - 1, self.summary_ms, self.reported)


@dataclass(frozen=True, slots=True)
class Tally:
    """The counts of one message list of ``length`` messages. ``sums`` may be shared with
    a :class:`RunningTally` that went on growing: only its first ``length + 1`` values
    belong to this list."""

    sums: list[int]
    length: int
    summary_ms: int | None
    reported: int | None

    def between(self, start: int, stop: int) -> int:
        """Tokens of messages ``start`` to ``stop - 1``."""
        return self.sums[stop] - self.sums[start]


def tally_of(messages: Sequence[AgentMessage]) -> Tally:
    running = RunningTally()
    for message in messages:
        running.add(message)
    return running.snapshot()


def _tally(messages: Sequence[AgentMessage], tally: Tally | None) -> Tally:
    """``tally`` when it counts ``messages`` (same length), else a fresh count."""
    return tally if tally is not None and tally.length == len(messages) else tally_of(messages)


# A provider's report this many times below heron's own estimate of the same request is
# not a measurement (a proxy that counts only the last message, a server that reports a
# constant): heron's count decides then. The same ratio judges a stated overflow count.
IMPLAUSIBLE_RATIO = 10


# A reply carrying a native compaction block: its report may exceed heron's count of the
# compacted view by this much (tokenizers, framing) and still measure that view.
NATIVE_REPORT_RATIO = 2.0


def implausible(reported: int, estimated: int) -> bool:
    """True when ``reported`` and ``estimated`` (tokens of the same request) are more than
    :data:`IMPLAUSIBLE_RATIO` times apart, in either direction."""
    low, high = sorted((max(0, reported), max(0, estimated)))
    return high > IMPLAUSIBLE_RATIO * max(1, low)


def last_usage_index(
    messages: Sequence[AgentMessage],
    *,
    floor_ms: int = 0,
    model: tuple[str, str] | None = None,
    tally: Tally | None = None,
    fixed_tokens: int = 0,
) -> int | None:
    """Position of the last assistant message whose reported usage measures this context.

    Usage from before the latest compaction is never used: an assistant message the
    compaction kept still carries the usage of the request that produced it, which
    measured the whole context before it was summarised (pi's rule: a reply whose
    timestamp is not after the compaction's does not count). ``floor_ms`` moves that
    floor later (a pruning step changed the view after that reply: its usage measured a
    request that no longer is the prefix of this one), and ``model`` (provider, id)
    ignores replies of another model, whose tokenizer counted differently. Only the last
    reply with a usable report can anchor: when it cannot, no earlier one can either. A
    report far below heron's own estimate of what its request carried (``fixed_tokens``
    plus the messages up to the reply, see :data:`IMPLAUSIBLE_RATIO`) anchors nothing: a
    server that says 100 tokens for a 400k-token request must not keep compaction away."""
    counted = _tally(messages, tally)
    floor = counted.summary_ms
    if floor_ms and (floor is None or floor_ms > floor):
        floor = floor_ms
    index = counted.reported
    if index is None:
        return None
    message = messages[index]
    if floor is not None and message.timestamp <= floor:
        return None  # this and every earlier reply predate the compaction or prune step
    if model is not None and isinstance(message, AssistantMessage) and (message.provider, message.model) != model:
        return None
    own = counted.between(0, index + 1) + fixed_tokens
    if _underreported(message, own):
        return None
    native = isinstance(message, AssistantMessage) and message.native_compaction is not None
    if native and fixed_tokens and (_reported(message) or 0) > NATIVE_REPORT_RATIO * own:
        # The provider compacted inside that request: a report well above what the view
        # now carries (the block, the reply) counted the history before the compaction,
        # which is no longer sent (OpenAI does not say which it reports). heron counts.
        return None
    return index


def _underreported(message: AgentMessage, own: int) -> bool:
    """A reply whose reported size is implausibly below heron's own count ``own`` of it."""
    reported = _reported(message) or 0
    return reported < own and implausible(reported, own)


def estimate_context_tokens(messages: Sequence[AgentMessage]) -> int:
    """Tokens ``messages`` occupy: the last usable assistant usage plus ceil(chars/4) of
    each message after it (never only one of the two)."""
    counted = tally_of(messages)
    index = last_usage_index(messages, tally=counted)
    if index is None:
        return counted.between(0, len(messages))
    reported = _reported(messages[index]) or 0
    return reported + counted.between(index + 1, len(messages))


def fixed_tokens(system_prompt: str, tools: Sequence[Tool]) -> int:
    """Tokens of the system prompt and the tool definitions, as every request carries them."""
    schemas = sum(math.ceil(len(json.dumps(t.to_json_dict(), ensure_ascii=False)) / CHARS_PER_TOKEN) for t in tools)
    return math.ceil(len(system_prompt) / CHARS_PER_TOKEN) + schemas


def request_tokens(
    messages: Sequence[AgentMessage],
    fixed_tokens: int,
    *,
    floor_ms: int = 0,
    model: tuple[str, str] | None = None,
    tally: Tally | None = None,
    ratio: float = 1.0,
) -> int:
    """Tokens of the request ``messages`` would make, counted on that view.

    The provider's last report anchors the count only for the part of the view the
    reported request carried unchanged: it covers the system prompt, the tools and every
    message up to its reply, so only what came after is estimated. Without a usable
    anchor (none yet, a compaction or pruning step since, another model), everything is
    estimated, ``fixed_tokens`` (system prompt and tool definitions) included.
    ``tally``: the counts of ``messages`` kept as the view grew (else counted here).
    ``ratio``: the server's tokens per estimated token (:mod:`heron.context.window.calibration`),
    applied to every estimated part; the reported part is the server's own count.
    """
    counted = _tally(messages, tally)
    index = last_usage_index(messages, floor_ms=floor_ms, model=model, tally=counted, fixed_tokens=fixed_tokens)
    if index is None:
        return math.ceil((fixed_tokens + counted.between(0, len(messages))) * ratio)
    reported = _reported(messages[index]) or 0
    return reported + math.ceil(counted.between(index + 1, len(messages)) * ratio)


def tail_pressure(
    messages: Sequence[AgentMessage],
    fixed_tokens: int,
    *,
    floor_ms: int = 0,
    model: tuple[str, str] | None = None,
    max_ratio: float = 1.5,
    tally: Tally | None = None,
) -> int:
    """What :func:`request_tokens` misses, estimated: the messages after the anchor at the
    provider's own rate rather than chars / 4. The rate is the anchored request's prompt
    count (input + cache, not the reply's output, which may hold hidden reasoning) over
    heron's estimate of that prompt, between 1 and ``max_ratio``; 0 without an anchor.
    chars / 4 misses JSON escaping and each message's framing, which this conversation's
    own report measures."""
    counted = _tally(messages, tally)
    index = last_usage_index(messages, floor_ms=floor_ms, model=model, tally=counted, fixed_tokens=fixed_tokens)
    if index is None:
        return 0
    message = messages[index]
    if not isinstance(message, AssistantMessage):
        return 0
    usage = message.usage
    prompt = usage.input + usage.cache_read + usage.cache_write
    estimated = fixed_tokens + counted.between(0, index)
    ratio = min(max_ratio, max(1.0, prompt / max(1, estimated)))
    tail = counted.between(index + 1, len(messages))
    return math.ceil(tail * (ratio - 1.0))
