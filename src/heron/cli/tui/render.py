"""Session events to terminal output, with rich.

Assistant text is printed as markdown, a block at a time (a paragraph, a list, a fenced
code block), and within a block still growing each line as soon as it is final
(:mod:`heron.cli.tui.settled`), rather than redrawn in place with ``rich.live`` (what is
not final yet is shown live above the input line: :mod:`heron.cli.tui.live_view`).
Printed lines scroll like any program's output, so the result reads the same in a plain
pipe, a ``TERM=dumb`` terminal, a pexpect session and a real terminal, and the input line
prompt_toolkit keeps at the bottom is never fought over. Thinking is printed dimmed the
same way. Tool calls get one line each (``● read src/app.py``) and their results a few
lines, plus every truncation or spill notice in full, because those tell the user (and
the model) that something was cut and where the rest is (:mod:`heron.cli.tui.call_text`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.segment import Segment, Segments
from rich.text import Text

from heron.agent.messages import BashExecutionMessage
from heron.agent.tool_meta import ToolCatalog
from heron.ai.types import (
    AssistantMessage,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
)
from heron.cli.notices import RetryNotices
from heron.cli.terminal_text import visible
from heron.cli.tui.call_text import (
    CALL_WIDTH,
    RESULT_LINES,
    describe_call,
    diff_lines,
    notices_of,
    result_preview,
    result_text,
)
from heron.cli.tui.footer import Totals as Totals
from heron.cli.tui.footer import format_tokens as format_tokens
from heron.cli.tui.markdown_stream import Block as Block
from heron.cli.tui.markdown_stream import BlockSplitter as BlockSplitter
from heron.cli.tui.settled import settled
from heron.coding.tools import builtin_meta

SETTLE_STEP = 8  # characters added to a growing block before its settled lines are looked for again
NOTHING_TO_COMPACT = "nothing to compact"  # the compactor's reason when it found no older history


# --- the renderer ------------------------------------------------------------------------


@dataclass(slots=True)
class _Stream:
    kind: str  # "text" or "thinking"
    splitter: BlockSplitter
    printed: int = 0  # lines of the block being received printed already (settled early)
    shown: int = 0  # of those, the lines on the screen (the live block leaves them out)
    tried: int = 0  # the block's length when its settled lines were last looked for
    block: int = 0  # which block of the stream is being received
    # lines of ended blocks printed but not on the screen yet (block number, lines): the
    # live block keeps showing them until they are
    held: list[tuple[int, list[list[Segment]]]] = field(default_factory=list)


@dataclass(slots=True)
class Live:
    """What the live block shows of the stream being received: ``held`` (lines of ended
    blocks not on the screen yet), then the growing block's rendered lines from ``shown``."""

    kind: str = "text"
    pending: str = ""
    shown: int = 0
    held: list[list[Segment]] = field(default_factory=list)


class Renderer:
    """Subscribe :meth:`handle` to a :class:`CodingSession`; it prints as events arrive.

    ``activity`` says what is going on right now (for a status line), ``totals`` sums
    the usage of every answer.
    """

    def __init__(self, console: Console, *, result_lines: int = RESULT_LINES) -> None:
        self.console = console
        # what each tool is (how a call is shown); the session's, set by the controller
        self.tools = ToolCatalog(fallback=builtin_meta)
        self.result_lines = result_lines
        self.totals = Totals()
        self.activity = ""
        self.writing_call = ""  # the tool call being streamed, described (the live block shows it)
        self.writing: ToolCall | None = None  # that call, its arguments as parsed so far
        self._streams: dict[int, _Stream] = {}
        self._ended: list[_Stream] = []  # streams ended with lines not on the screen yet
        self._shown: dict[str, str] = {}  # tool call id -> result text shown at execution end
        self._calls: dict[str, str] = {}  # tool call id -> its description
        self._pruned = [0, 0]  # records, tokens saved, not yet reported
        self._warned: set[str] = set()  # auto-compaction-off reasons shown by a context warning
        self._section: str | None = None
        self.retries = RetryNotices(self._retry_note)
        # set by the controller: the tokens compaction keeps as they are (why nothing was compacted)
        self.keep_recent: Callable[[], int] | None = None
        # set by the controller: the text shown for a failed answer (adds what to do)
        self.explain: Callable[[AssistantMessage], str] | None = None
        utf = (console.encoding or "").lower().replace("-", "").startswith("utf")
        self.bullet = "●" if utf else "*"
        self.bar = "│" if utf else "|"
        self.arrow = "→" if utf else "->"
        # runs a callback once what was printed is on the screen (the terminal's writer sets it)
        self.when_written: Callable[[Callable[[], None]], None] = lambda callback: callback()

    # --- layout helpers -----------------------------------------------------------

    def reset_section(self) -> None:
        """Something else (the input line) was printed: start without a blank line."""
        self._section = None

    def _begin(self, section: str) -> None:
        last = self._section
        if last is not None and (section in ("text", "thinking") or last in ("text", "thinking")):
            self.console.print()
        self._section = section

    def begin_section(self, section: str) -> None:
        """Start a section of output ("text", "thinking", "tool", "note"): a blank line
        goes between text and anything else (the recap of a resumed session uses it)."""
        self._begin(section)

    def _width(self) -> int:
        return max(20, min(CALL_WIDTH, self.console.width - 4))

    def note(self, message: str, style: str = "dim") -> None:
        """A one-line notice (compaction, retry, commands)."""
        self._flush_pruned()
        self._begin("note")
        self.console.print(Text(visible(message), style=style), soft_wrap=True)

    def block_lines(self, kind: str, block: str) -> list[list[Segment]]:
        """A block rendered at the console's width, as lines (see :meth:`_lines`)."""
        block = visible(block)  # the model's text: no escape sequence reaches the terminal
        if kind == "thinking":
            return self._lines(Text(block, style="dim italic"))
        if block.count("```") % 2 == 1 or block.count("~~~") % 2 == 1:
            block += "\n```"  # an answer cut off inside a code block
        return self._lines(Markdown(block, hyperlinks=False))

    def text_lines(self, text: Text) -> list[list[Segment]]:
        """A line of styled text as rendered lines (one, unless it is wider than the console)."""
        return self._lines(text)

    def print_block(self, kind: str, block: str) -> None:
        """A whole block, after a blank line when it follows something else."""
        self.print_lines(kind, self.block_lines(kind, block))

    def print_lines(self, kind: str, lines: list[list[Segment]], *, first: bool = True) -> None:
        """Rendered lines of a block; ``first``: they start it (a blank line may go before)."""
        if not lines:
            return
        if first:
            self._begin(kind)
        segments: list[Segment] = []
        for line in lines:
            segments.extend(line)
            segments.append(Segment.line())
        self.console.print(Segments(segments))

    def _lines(self, renderable: Any) -> list[list[Segment]]:
        """``renderable``'s lines without the blank lines rich puts around some elements (a
        list opens with one), and without padding to the full width: the blank lines
        between blocks are this renderer's to place."""
        lines = self.console.render_lines(renderable, self.console.options, pad=False)

        def blank(line: list[Segment]) -> bool:
            return not "".join(s.text for s in line).strip() and not any(s.style and s.style.bgcolor for s in line)

        while lines and blank(lines[0]):
            lines.pop(0)
        while lines and blank(lines[-1]):
            lines.pop()
        out: list[list[Segment]] = []
        for line in lines:
            line = list(line)
            # justified text is padded to the width with spaces: drop them (copy and paste)
            while line and not (line[-1].style and line[-1].style.bgcolor) and not line[-1].text.rstrip():
                line.pop()
            if line and not (line[-1].style and line[-1].style.bgcolor):
                last = line[-1]
                line[-1] = Segment(last.text.rstrip(), last.style, last.control)
            out.append(line)
        return out

    # --- events -----------------------------------------------------------------------

    def handle(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind != "ledger":
            self._flush_pruned()
        if kind in ("retry_start", "retry_end", "message_end"):
            self.retries.handle(event)
            if kind == "retry_start":
                self.activity = f"retrying (attempt {event.attempt})"
        method = getattr(self, "_on_" + kind, None)
        if method is not None:
            method(event)

    def _on_agent_start(self, event: Any) -> None:
        self.activity = "waiting for the model"

    def _on_agent_end(self, event: Any) -> None:
        self._flush_streams()
        self.activity = ""

    def _on_message_start(self, event: Any) -> None:
        if isinstance(event.message, AssistantMessage):
            self._streams.clear()
            self.writing_call = ""
            self.writing = None
            self.activity = "waiting for the model"

    def _on_message_update(self, event: Any) -> None:
        inner = event.event
        kind = inner.type
        index = getattr(inner, "content_index", -1)
        if kind in ("text_start", "thinking_start"):
            self._streams[index] = _Stream("text" if kind == "text_start" else "thinking", self._splitter())
            self.activity = "writing" if kind == "text_start" else "thinking"
        elif kind in ("text_delta", "thinking_delta"):
            stream = self._streams.get(index)
            if stream is None:
                stream = self._streams[index] = _Stream(kind.split("_")[0], self._splitter())
            for block in stream.splitter.feed(inner.delta):
                self._settle(stream, block.text)
            self._settle_growing(stream, inner.delta)
        elif kind in ("text_end", "thinking_end"):
            self._flush_stream(index)
        elif kind in ("toolcall_start", "toolcall_delta"):
            self.activity = "writing a tool call"
            call = inner.partial.content[index] if 0 <= index < len(inner.partial.content) else None
            if isinstance(call, ToolCall) and call.name:  # its arguments as parsed so far
                meta = self.tools.meta(call.name)
                self.writing_call = describe_call(call.name, meta, call.arguments or {}, self._width())
                self.writing = call
        elif kind == "toolcall_end":
            self.writing_call = ""
            self.writing = None
            self.activity = f"calling {inner.tool_call.name}"

    def _splitter(self) -> BlockSplitter:
        return BlockSplitter()

    def _settle(self, stream: _Stream, block: str) -> None:
        """A block has ended: print what of it is not printed yet."""
        lines = self.block_lines(stream.kind, block)
        self.print_lines(stream.kind, lines[stream.printed :], first=stream.printed == 0)
        ended, unseen = stream.block, lines[stream.shown :]
        stream.printed = stream.shown = stream.tried = 0
        stream.block += 1
        if unseen:
            stream.held.append((ended, unseen))

            def on_screen() -> None:
                stream.held[:] = [entry for entry in stream.held if entry[0] > ended]

            self.when_written(on_screen)

    def _settle_growing(self, stream: _Stream, delta: str) -> None:
        """Print the lines of the block still growing that are final (:mod:`settled`);
        tried again once a word or a line has been added since the last try."""
        pending = stream.splitter.pending_text()
        if len(pending) - stream.tried < SETTLE_STEP and "\n" not in delta:
            return
        stream.tried = len(pending)
        found = settled(stream.kind, pending)
        if found is None:
            return
        lines = self.block_lines(stream.kind, found.text)
        end = len(lines) - found.unsettled
        if end > stream.printed:
            self.print_lines(stream.kind, lines[stream.printed : end], first=stream.printed == 0)
            stream.printed = end
            block = stream.block

            def on_screen() -> None:
                if stream.block == block:
                    stream.shown = max(stream.shown, end)

            self.when_written(on_screen)

    def live_pending(self) -> Live:
        """What the live block shows: the lines of ended streams not on the screen yet, then
        the newest stream with something not on the screen."""
        self._ended = [stream for stream in self._ended if stream.held]
        ended = [line for stream in self._ended for _, lines in stream.held for line in lines]
        for index in sorted(self._streams, reverse=True):
            stream = self._streams[index]
            pending = stream.splitter.pending_text()
            if pending.strip() or stream.held:
                held = [line for _, lines in stream.held for line in lines]
                return Live(stream.kind, pending, stream.shown, ended + held)
        return Live(held=ended)

    def _flush_stream(self, index: int) -> None:
        stream = self._streams.pop(index, None)
        if stream is None:
            return
        for block in stream.splitter.finish():
            self._settle(stream, block.text)
        if stream.held:  # its last lines are on their way to the screen: shown live until then
            self._ended.append(stream)

    def _flush_streams(self) -> None:
        for index in sorted(self._streams):
            self._flush_stream(index)

    def _on_message_end(self, event: Any) -> None:
        message = event.message
        if isinstance(message, AssistantMessage):
            self._flush_streams()
            self.writing_call = ""
            self.writing = None
            self.totals.add(message.usage)
            if message.stop_reason == StopReason.ERROR:
                text = self.explain(message) if self.explain else message.error_message or "the request failed"
                self.note(f"error: {text}", "bold red")
            elif message.stop_reason == StopReason.ABORTED:
                self.note(self._aborted_text(message), "yellow")
        elif isinstance(message, ToolResultMessage):
            shown = self._shown.pop(message.tool_call_id, None)
            text = result_text(message.content)
            if shown is not None and text != shown:
                # the turn budget replaced the result with a preview: say where the rest went
                for line in notices_of(text):
                    if line not in shown:
                        self._begin("tool")
                        self.console.print(Text(f"  {self.bar} {line}", style="yellow"))

    def _aborted_text(self, message: AssistantMessage) -> str:
        """``aborted · cut off: the answer after 120 words · not run: bash make deploy``:
        what the abort stopped, so nobody wonders whether a planned call still ran."""
        parts = ["aborted"]
        words = sum(len(block.text.split()) for block in message.content if isinstance(block, TextContent))
        if words and not message.tool_calls():
            parts.append(f"cut off: the answer after {words} word{'s' if words != 1 else ''}")
        calls = [
            describe_call(call.name, self.tools.meta(call.name), call.arguments or {}, self._width())
            for call in message.tool_calls()
        ]
        if calls:
            parts.append("not run: " + ", ".join(calls))
        if not message.content:
            parts.append("nothing received yet")
        return " · ".join(parts)

    def _on_tool_execution_start(self, event: Any) -> None:
        description = describe_call(event.tool_name, self.tools.meta(event.tool_name), event.args or {}, self._width())
        self._calls[event.tool_call_id] = description
        self.activity = description
        self._begin("tool")
        line = Text()
        line.append(f"{self.bullet} ", style="cyan")
        name, _, rest = description.partition(" ")
        line.append(name, style="bold")
        if rest:
            line.append(" " + rest)
        self.console.print(line)

    def _on_tool_execution_update(self, event: Any) -> None:
        details = getattr(event.partial_result, "details", None)
        description = self._calls.get(event.tool_call_id, event.tool_name)
        if isinstance(details, dict) and isinstance(details.get("total_lines"), int):
            lines = details["total_lines"]
            self.activity = f"{description} · {lines} line{'s' if lines != 1 else ''}"

    def _on_tool_execution_end(self, event: Any) -> None:
        result = event.result
        text = result_text(result.content)
        self._shown[event.tool_call_id] = text
        self._calls.pop(event.tool_call_id, None)
        self._begin("tool")
        bar = self.bar
        details = result.details if isinstance(result.details, dict) else {}
        if not event.is_error and isinstance(details.get("diff"), str) and self.tools.kind(event.tool_name) == "edit":
            changed, added, removed = diff_lines(visible(details["diff"]))
            self.console.print(Text(f"  {bar} {text.strip()} (+{added} -{removed})", style="dim"))
            for line in changed:
                self.console.print(Text(f"  {bar} {line}", style="green" if line.startswith("+") else "red"))
            hidden = added + removed - len(changed)
            if hidden > 0:
                self.console.print(Text(f"  {bar} … {hidden} more changed lines", style="dim"))
            return
        for item in result_preview(text, self.result_lines):
            if event.is_error and item.kind in ("body", "status"):
                style = "red"
            else:
                style = {"body": "dim", "more": "dim italic", "notice": "yellow", "status": "yellow"}[item.kind]
            line = item.text
            if item.kind == "body" and len(line) > self._width():
                line = line[: self._width() - 1] + "…"
            self.console.print(Text(f"  {bar} {line}", style=style), soft_wrap=True)

    def _on_compaction_start(self, event: Any) -> None:
        why = {
            "threshold": "the context is near the limit",
            "boundary": "a step is done and the context is past the soft threshold",
            "requested": "asked for by the model or a hook",
            "overflow": "the provider said the context is too long",
            "manual": "requested",
            "native_switch": "the provider's own compaction is unreadable to this model",
            "idle": "the session is idle and its prompt cache is about to expire",
        }.get(event.reason, event.reason)
        self.note(
            f"{self.bullet} compacting the context ({why}; ~{format_tokens(event.tokens_before)} tokens)…", "yellow"
        )

    def _on_compaction_end(self, event: Any) -> None:
        if event.error:
            self.note(f"compaction failed: {event.error}", "bold red")
        elif event.skipped == NOTHING_TO_COMPACT and self.keep_recent is not None:
            keep = self.keep_recent()
            self.note(
                f"nothing compacted: the conversation (~{format_tokens(event.tokens_before)} tokens) fits in the "
                f"recent part compaction keeps as it is (~{format_tokens(keep)} tokens: compaction.keepRecentTokens, "
                "at most a quarter of the window), so there is no older history to summarise",
                "yellow",
            )
        elif event.skipped:
            self.note(f"nothing compacted: {event.skipped}", "yellow")
        else:
            self.note(
                f"{self.bullet} compacted: ~{format_tokens(event.tokens_before)} {self.arrow} "
                f"~{format_tokens(event.tokens_after)} tokens (the full history stays in the session file)",
                "green",
            )
        off = getattr(event, "auto_disabled", None)
        if off and off not in self._warned:  # not said already by its context warning
            self.note(f"automatic compaction is off: {off} (/compact still works)", "yellow")
        self._warned.clear()

    def _on_todos(self, event: Any) -> None:
        """The task list, each time the model changes it (the todo tool)."""
        marks = {"completed": "✔", "in_progress": "▸", "pending": "○"}
        self.note(f"{self.bullet} tasks:", "cyan")
        for item in event.todos:
            style = "dim" if item["status"] == "completed" else ("bold" if item["status"] == "in_progress" else "")
            self.note(f"  {marks.get(item['status'], '-')} {visible(item['content'])}", style)

    def _on_goal(self, event: Any) -> None:
        """A ``/goal`` command's answer (in red when it refused bad input)."""
        for line in event.reply.splitlines() or [""]:
            self.note(line, "red" if event.error else "magenta")

    def _on_goal_loop(self, event: Any) -> None:
        """The goal loop: a line before each step it takes by itself, and one at its end."""
        style = "magenta" if event.state == "step" else ("green" if event.stop == "complete" else "yellow")
        self.note(event.line(), style)

    def _on_context_warning(self, event: Any) -> None:
        """One line per warning the runtime raises about the context (docs/interactive.md)."""
        self.note(event.message if event.kind == "memory" else f"context: {event.message}", "yellow")
        if event.kind == "auto_compaction_off":
            # the compaction_end that follows carries the same reason: say it once
            self._warned.add(event.message.removeprefix("automatic compaction is off: "))

    def _on_idle(self, event: Any) -> None:
        """The idle policy acted while the session waited (docs/context.md, "The idle policy")."""
        done = {"warm": "warmed the prompt cache", "compact": "compacting", "expire": "letting the prompt cache expire"}
        failed = f" (failed: {event.failed})" if event.failed else ""
        self.note(f"idle: {done.get(event.action, event.action)}{failed}; {event.reason}", "dim")

    def _retry_note(self, text: str, kind: str) -> None:
        style = {"retry": "yellow", "ok": "dim", "cancelled": "yellow", "failed": "bold red"}.get(kind, "")
        self.note(text, style)

    def _on_ledger(self, event: Any) -> None:
        record = event.record
        if record.kind == "prune":
            self._pruned[0] += 1
            self._pruned[1] += record.saved_tokens
        elif record.kind in ("overflow", "summary_fallback"):
            self.note(f"{record.kind}: {record.recover}", "yellow")

    def _flush_pruned(self) -> None:
        count, tokens = self._pruned
        if count:
            self._pruned = [0, 0]
            self._begin("note")
            self.console.print(
                Text(
                    f"pruned {count} old tool result{'s' if count != 1 else ''} from the request "
                    f"(~{format_tokens(tokens)} tokens; the session keeps them)",
                    style="dim",
                )
            )

    # --- things the controller shows ------------------------------------------------

    def shell_result(self, message: BashExecutionMessage, max_lines: int = 20) -> None:
        """``!cmd`` output: the last ``max_lines`` lines (what a terminal would leave on
        screen), the exit code, and where the full output went when it was cut."""
        lines = message.output.rstrip("\n").splitlines()
        if len(lines) > max_lines:
            self.console.print(Text(f"  … {len(lines) - max_lines} earlier lines", style="dim italic"))
            lines = lines[-max_lines:]
        for line in lines:
            self.console.print(Text(f"  {visible(line)}"))
        if message.cancelled:
            self.console.print(Text("  (cancelled)", style="yellow"))
        elif message.exit_code not in (None, 0):
            self.console.print(Text(f"  exit code {message.exit_code}", style="red"))
        if message.truncated and message.full_output_path:
            self.console.print(Text(f"  [Output truncated. Full output: {message.full_output_path}]", style="yellow"))
        where = "not added to the context" if message.exclude_from_context else "added to the context"
        self.console.print(Text(f"  ({where})", style="dim"))
        self._section = "tool"
