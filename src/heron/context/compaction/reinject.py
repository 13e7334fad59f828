"""Files re-injected after a compaction: what the model was working on, current content.

Claude Code does the same: right after a compaction the model would otherwise read
again the files it was editing. Only files whose reads the compaction summarised away
are candidates - a read still in the kept messages is already in the view - the most
recently read first, at most five, within a budget the caller sets so that the
compaction still shrinks the context. The paths come from the read calls in the
session, not from process memory, so a resumed process injects the same files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from heron.agent.messages import AgentMessage
from heron.agent.tool_meta import ToolCatalog
from heron.ai.types import AssistantMessage
from heron.context.view.build import ReadKey, read_key

REINJECT_FILES = 5
REINJECT_TOKENS = 50_000
REINJECT_WINDOW_SHARE = 0.15
MIN_REINJECT_TOKENS = 200  # below this the block would be mostly cut markers: skip it
HEADER = "Files you were working on before the history was compacted (their current contents):"


def read_paths(messages: Sequence[AgentMessage], cwd: Path, tools: ToolCatalog) -> list[str]:
    """Files named by calls of ``read``-kind tools in ``messages``, most recent last, each once."""
    order: dict[str, int] = {}
    for position, message in enumerate(messages):
        if not isinstance(message, AssistantMessage):
            continue
        for call in message.tool_calls():
            key = read_key(call, cwd, tools)
            if key is not None:
                order.pop(key.path, None)
                order[key.path] = position
    return list(order)


def candidates(
    summarised: Sequence[AgentMessage], kept: Sequence[AgentMessage], cwd: Path, tools: ToolCatalog
) -> list[str]:
    """Files read in the summarised part and not read again in the kept part."""
    still_there = set(read_paths(kept, cwd, tools))
    return [p for p in read_paths(summarised, cwd, tools) if p not in still_there]


def _display(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def reinjected_text(paths: Sequence[str], cwd: Path, budget_tokens: int) -> str | None:
    """The block for ``paths`` (most recent last) within ``budget_tokens``; None if empty."""
    if budget_tokens < MIN_REINJECT_TOKENS:
        return None
    budget = budget_tokens * 4 - len(HEADER) - 2
    blocks: list[str] = []
    for raw in reversed(paths):
        if len(blocks) >= REINJECT_FILES or budget <= 200:
            break
        path = Path(raw)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # deleted, unreadable or binary: skip
        shown = _display(path, cwd)
        wrapper = len(shown) + 24
        room = budget - wrapper
        if room <= 100:
            break
        if len(text) > room:
            marker = f"\n[... cut: read {shown} with offset/limit for the rest]"
            text = text[: max(0, room - len(marker))] + marker
        block = f'<file path="{shown}">\n{text}\n</file>'
        budget -= len(block) + 2
        blocks.append(block)
    if not blocks:
        return None
    return HEADER + "\n\n" + "\n\n".join(blocks)


__all__ = ["ReadKey", "candidates", "read_paths", "reinjected_text"]
