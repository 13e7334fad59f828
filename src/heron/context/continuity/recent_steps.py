"""Recent steps: the last operational steps before a compaction, one line each, verbatim.

A summary says what happened; it rarely says what the model did last. After a
compaction the view puts the last N tool calls before it (default 5, setting
``continuity.recentSteps``) in the injected block: the tool, its main argument and the
first line of its outcome. They are read from the session path (the entries before the
compaction), so a resumed process renders the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from heron.ai.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage
from heron.session.entries import Entry, MessageEntry

RECENT_STEPS = 5
STEPS_MESSAGE_TYPE = "heron.recent-steps"
HEADER = "Your last steps before the history was compacted (oldest first):"
ARGUMENT_CHARS = 160
OUTCOME_CHARS = 160
# The argument that says what a call was about, in this order; else its first string.
_MAIN_KEYS = ("path", "file_path", "command", "pattern", "query", "url", "description", "expression")


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def main_argument(call: ToolCall) -> str:
    args = call.arguments
    for key in _MAIN_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return _one_line(value, ARGUMENT_CHARS)
    for value in args.values():
        if isinstance(value, str) and value:
            return _one_line(value, ARGUMENT_CHARS)
    return _one_line(json.dumps(args, sort_keys=True, ensure_ascii=False), ARGUMENT_CHARS) if args else ""


def outcome_line(result: ToolResultMessage | None) -> str:
    if result is None:
        return "no result"
    text = "".join(b.text for b in result.content if isinstance(b, TextContent)).strip()
    first = next((line for line in text.splitlines() if line.strip()), "")
    line = _one_line(first, OUTCOME_CHARS) or "(no output)"
    return f"error: {line}" if result.is_error else line


def steps_before(
    get: Callable[[str], Entry | None], ids: Sequence[str], types: Sequence[str], stop: int, count: int
) -> list[str]:
    """The last ``count`` tool calls among the first ``stop`` entries, one line each."""
    if count <= 0:
        return []
    results: dict[str, ToolResultMessage] = {}
    lines: list[str] = []
    for index in range(stop - 1, -1, -1):
        if types[index] != "message":
            continue
        entry = get(ids[index])
        message = entry.message if isinstance(entry, MessageEntry) else None
        if isinstance(message, ToolResultMessage):
            results[message.tool_call_id] = message
        elif isinstance(message, AssistantMessage):
            for call in reversed(message.tool_calls()):
                argument = main_argument(call)
                shown = f"{call.name} {argument}" if argument else call.name
                lines.append(f"- {shown} -> {outcome_line(results.get(call.id))}")
                if len(lines) >= count:
                    return list(reversed(lines))
    return list(reversed(lines))


def render_steps(lines: Sequence[str]) -> str | None:
    return "\n".join([HEADER, *lines]) if lines else None
