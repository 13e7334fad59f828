"""The earlier conversation, shown when a session is resumed (``--continue``,
``--resume``, ``--session``, ``/resume``), so the user sees where it stopped.

The last ``resume.turns`` turns (a turn: a prompt and everything up to the next one) of
the context are printed as they looked: the prompt, the answer's text as markdown, and
each tool call folded to one line - what it did and the first line of its result (or its
error) - because a resumed screen full of old tool output would bury the conversation.
Turns before those, and the summary of a compaction, are one line each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from heron.agent.messages import BashExecutionMessage, BranchSummaryMessage, CompactionSummaryMessage
from heron.ai.types import AssistantMessage, ToolResultMessage, UserMessage
from heron.cli.terminal_text import visible
from heron.cli.tui.call_text import describe_call, result_text
from heron.cli.tui.render import Renderer, format_tokens

MARK = "› "  # noqa: RUF001 - the input marker, as the prompt shows it
PROMPT_LINES = 6  # lines of a past prompt shown
ANSWER_LINES = 30  # lines of a past answer shown


def split_turns(messages: Sequence[Any]) -> tuple[list[Any], list[list[Any]]]:
    """What comes before the first prompt (summaries), and the turns: each starts at a
    user message or a ``!command`` the user ran."""
    head: list[Any] = []
    turns: list[list[Any]] = []
    for message in messages:
        if isinstance(message, UserMessage | BashExecutionMessage):
            turns.append([message])
        elif turns:
            turns[-1].append(message)
        else:
            head.append(message)
    return head, turns


def _first_line(text: str, width: int) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    line = visible(line)
    return line if len(line) <= width else line[: width - 1] + "…"


def _clip(text: str, limit: int) -> str:
    lines = text.strip().splitlines()
    if len(lines) <= limit:
        return text.strip()
    return "\n".join(lines[:limit]) + f"\n\n… ({len(lines) - limit} more lines)"


class Recap:
    """Prints a resumed session's last turns through the live renderer's console and
    styles (so the recap and the new conversation look alike)."""

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self.console = renderer.console

    def _line(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style=style), soft_wrap=True)

    def show(self, messages: Sequence[Any], turns: int) -> None:
        head, all_turns = split_turns(messages)
        if not all_turns and not head:
            return
        r = self.renderer
        r.reset_section()
        self._line(f"── earlier in this session ({len(all_turns)} turn{'s' if len(all_turns) != 1 else ''}) ──", "dim")
        for message in head:
            self._summary(message)
        shown = all_turns[-turns:] if turns > 0 else []
        hidden = len(all_turns) - len(shown)
        if hidden:
            self._line(
                f"… {hidden} earlier turn{'s' if hidden != 1 else ''} not shown "
                f"(resume.turns in settings; /tree lists every entry)",
                "dim",
            )
        for turn in shown:
            self._turn(turn)
        r.reset_section()
        self._line("── end of the earlier conversation ──", "dim")

    def _summary(self, message: Any) -> None:
        if isinstance(message, CompactionSummaryMessage):
            self._line(
                f"(earlier history summarised by a compaction: ~{format_tokens(message.tokens_before)} "
                f"tokens before it)",
                "dim",
            )
        elif isinstance(message, BranchSummaryMessage):
            self._line(f"(summary of a branch left behind: {_first_line(message.summary, 80)})", "dim")

    def _turn(self, turn: list[Any]) -> None:
        r = self.renderer
        calls: dict[str, str] = {}
        for message in turn:
            if isinstance(message, UserMessage):
                r.reset_section()
                self._line(MARK + visible(_clip(message.text(), PROMPT_LINES)), "bold")
            elif isinstance(message, BashExecutionMessage):
                r.reset_section()
                where = "" if not message.exclude_from_context else " (not in the context)"
                output = _first_line(message.output, 80) or "(no output)"
                self._line(f"{MARK}!{visible(message.command)}  {self.renderer.arrow} {output}{where}", "bold")
            elif isinstance(message, AssistantMessage):
                self._answer(message, calls)
            elif isinstance(message, ToolResultMessage):
                self._result(message, calls.pop(message.tool_call_id, message.tool_name))
            elif isinstance(message, CompactionSummaryMessage | BranchSummaryMessage):
                self._summary(message)

    def _answer(self, message: AssistantMessage, calls: dict[str, str]) -> None:
        text = message.text().strip()
        if text:
            self.renderer.print_block("text", _clip(text, ANSWER_LINES))
        for call in message.tool_calls():
            calls[call.id] = describe_call(call.name, self.renderer.tools.meta(call.name), call.arguments or {}, 100)
        if message.error_message and not text:
            self.renderer.note(f"(this answer failed: {_first_line(message.error_message, 100)})", "red")

    def _result(self, message: ToolResultMessage, description: str) -> None:
        """One line per tool call: what it did, and the first line of what came back."""
        r = self.renderer
        r.begin_section("tool")
        text = result_text(message.content)
        lines = len(text.splitlines())
        first = _first_line(text, 70) or "(no output)"
        more = f" (+{lines - 1} lines)" if lines > 1 else ""
        line = Text(f"{r.bullet} ", style="cyan")
        name, _, rest = description.partition(" ")
        line.append(name, style="bold")
        if rest:
            line.append(" " + rest)
        line.append(
            f"  {r.arrow} {'error: ' if message.is_error else ''}{first}{more}",
            style="red" if message.is_error else "dim",
        )
        self.console.print(line, soft_wrap=True)
