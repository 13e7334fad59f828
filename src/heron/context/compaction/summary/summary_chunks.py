"""Two refinements of the summariser: a draft before the summary, and chunked input.

**Draft, then summary** (Claude Code's approach): the summariser first writes an
``<analysis>`` block - a chronological pass over the conversation checking that every
request, decision, file, error and next step is covered - then the ``<summary>``. Only
the summary enters the context; the draft is kept in the compaction entry's details,
where it costs nothing and can be read later.

**Chunks, then merge** (OpenClaw's approach): when the history to summarise does not fit
the summariser's own window, it is cut into chunks of about equal token share at
boundaries that never separate a tool call from its results, each chunk is summarised
(each knowing the summary of the chunks before it), and the partial summaries are
merged into one. Only a single message too large for a chunk falls back to the older
head/tail reductions (``_fit_transcript``). Each chunked summary is a
``summary_fallback`` ledger record.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Sequence

from heron.agent.messages import AgentMessage
from heron.ai.types import AssistantMessage, ToolResultMessage
from heron.context.records.ledger import LedgerRecord

ANALYSIS_INSTRUCTION = (
    "First write your working notes inside <analysis></analysis>: go through the conversation in order and "
    "check that every user request, decision, file path, error message and open task is accounted for. "
    "Then write the summary itself inside <summary></summary>; only the summary is kept."
)

MERGE_PROMPT = (
    "The texts above are summaries of consecutive parts of one conversation, oldest first. Merge them into "
    "one summary of the whole conversation: keep everything that still matters, let later parts update "
    "earlier ones (finished work moves to Done), and keep exact paths, names and error messages."
)

_SUMMARY = re.compile(r"<summary>\s*(.*?)\s*(?:</summary>|$)", re.S)
_ANALYSIS = re.compile(r"<analysis>\s*(.*?)\s*(?:</analysis>|(?=<summary>)|$)", re.S)


def parse_summary(text: str) -> tuple[str, str | None]:
    """(summary, draft): the ``<summary>`` part, and the ``<analysis>`` draft if any. A
    reply without tags is all summary (minus any draft block it has)."""
    analysis_match = _ANALYSIS.search(text)
    analysis = analysis_match.group(1).strip() if analysis_match else None
    summary_match = _SUMMARY.search(text)
    if summary_match:
        return summary_match.group(1).strip(), analysis
    if analysis_match:
        text = text[: analysis_match.start()] + text[analysis_match.end() :]
        text = text.replace("</analysis>", "")
    return text.strip(), analysis


def safe_boundaries(messages: Sequence[AgentMessage]) -> list[int]:
    """Indices where a chunk may start: never on a tool result (it belongs to its call)."""
    return [
        i
        for i, m in enumerate(messages)
        if i > 0 and not isinstance(m, ToolResultMessage) and not _awaiting_results(messages, i)
    ]


def _awaiting_results(messages: Sequence[AgentMessage], index: int) -> bool:
    previous = messages[index - 1]
    return (
        isinstance(previous, AssistantMessage)
        and bool(previous.tool_calls())
        and isinstance(messages[index], ToolResultMessage)
    )


def split_chunks(
    messages: Sequence[AgentMessage], size: Callable[[Sequence[AgentMessage]], int], budget: int
) -> list[list[AgentMessage]]:
    """``messages`` in consecutive chunks of about equal size (each ideally <= ``budget``),
    cut only at :func:`safe_boundaries`."""
    total = size(messages)
    if total <= budget:
        return [list(messages)]
    count = math.ceil(total / budget)
    target = total / count
    chunks: list[list[AgentMessage]] = []
    current: list[AgentMessage] = []
    boundaries = set(safe_boundaries(messages))
    for index, message in enumerate(messages):
        if current and index in boundaries and size(current) >= target and len(chunks) < count - 1:
            chunks.append(current)
            current = []
        current.append(message)
    if current:
        chunks.append(current)
    return chunks


async def summarise_in_chunks(
    messages: Sequence[AgentMessage],
    *,
    budget_chars: int,
    serialise: Callable[[Sequence[AgentMessage]], str],
    fit: Callable[[list[AgentMessage], int], str],
    ask: Callable[[str], Awaitable[str]],
    request: Callable[[str, str | None], str],
    previous_summary: str | None,
    records: list[LedgerRecord],
    merge_format: str,
) -> str | None:
    """The summary of ``messages`` through chunks and a merge, or None when they fit in
    one request (the caller then summarises them as usual)."""
    chunks = split_chunks(messages, lambda ms: len(serialise(ms)), budget_chars)
    if len(chunks) < 2:
        return None
    records.append(
        LedgerRecord(
            kind="summary_fallback",
            chars_before=len(serialise(messages)),
            chars_after=budget_chars,
            recover="the original messages stay in the session file",
            detail={"step": "chunked", "chunks": len(chunks)},
        )
    )
    partials: list[str] = []
    carried = previous_summary
    for chunk in chunks:
        transcript = fit(chunk, budget_chars)
        partial, _ = parse_summary(await ask(request(transcript, carried)))
        partials.append(partial)
        carried = partial
    joined = "\n\n".join(f'<part index="{i + 1}">\n{p}\n</part>' for i, p in enumerate(partials))
    if len(joined) > budget_chars:
        return partials[-1]  # the last partial already carries the earlier ones forward
    return await ask(f"{joined}\n\n{MERGE_PROMPT}\n\n{merge_format}\n\n{ANALYSIS_INSTRUCTION}")
