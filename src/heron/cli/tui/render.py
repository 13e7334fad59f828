"""Session events to terminal output, with rich.

Assistant text is printed as markdown one completed block at a time (a paragraph, a
list, a fenced code block) rather than redrawn in place with ``rich.live`` (the block
still growing is shown live above the input line: :mod:`heron.cli.tui.live_view`):
completed lines scroll like any program's output, so the result reads the same in a plain pipe, a
``TERM=dumb`` terminal, a pexpect session and a real terminal, and the input line
prompt_toolkit keeps at the bottom is never fought over. Thinking is printed dimmed the
same way. Tool calls get one line each (``● read src/app.py``) and their results a few
lines, plus every truncation or spill notice in full, because those tell the user (and
the model) that something was cut and where the rest is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.segment import Segment, Segments
from rich.text import Text

from heron.agent.messages import BashExecutionMessage
from heron.agent.tool_meta import ToolCatalog, ToolMeta
from heron.ai.types import (
    AssistantMessage,
    ImageContent,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
)
from heron.cli.notices import RetryNotices
from heron.cli.tui.footer import Totals as Totals
from heron.cli.tui.footer import format_tokens as format_tokens
from heron.cli.tui.markdown_stream import Block as Block
from heron.cli.tui.markdown_stream import BlockSplitter as BlockSplitter
from heron.cli.tui.sanitize import visible
from heron.coding.tools import builtin_meta

RESULT_LINES = 4  # lines of a tool result shown under its call
CALL_WIDTH = 160  # a tool call line is cut to this (or the console width)
NOTHING_TO_COMPACT = "nothing to compact"  # the compactor's reason when it found no older history

NOTICE = re.compile(r"^\[.*\]$")
# Lines the bash tool appends after the output: the outcome, always worth showing.
STATUS = re.compile(
    r"^(Command (exited with code|timed out after|aborted|terminated by signal)|Background processes still)"
)


# --- tool calls and results -----------------------------------------------------------


def _one_line(text: str, width: int) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    more = len(text.strip().splitlines()) > 1
    if len(first) > width:
        return first[: max(1, width - 1)] + "…"
    return first + (" …" if more else "")


def _str(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    return value if isinstance(value, str) and value else None


def describe_call(name: str, meta: ToolMeta, args: dict[str, Any], width: int = CALL_WIDTH) -> str:
    """``read src/app.py:10-59``, ``bash pytest -q``: what the call does, on one line, by
    what its tool declares (the model wrote the arguments: control characters are shown,
    not sent)."""
    return visible(_describe_call(name, meta, args, width))


def _lines_of(content: Any) -> int:
    if not isinstance(content, str) or not content:
        return 0
    return content.count("\n") + (0 if content.endswith("\n") else 1)


def _describe_call(name: str, meta: ToolMeta, args: dict[str, Any], width: int) -> str:
    uses = meta.uses(args)
    first = uses[0] if uses else None
    path = first.path.removeprefix("@") if first is not None else None
    command = meta.command_of(args)
    pattern = _str(args, "pattern")
    detail: str
    if meta.kind == "read" and first is not None and path:
        detail = path
        offset, limit = first.offset, first.limit
        if offset is not None and limit is not None:
            detail += f":{offset}-{offset + limit - 1}"
        elif offset is not None:
            detail += f":{offset}"
        elif limit is not None:
            detail += f":1-{limit}"
    elif meta.kind == "write" and path:
        lines = _lines_of(args.get("content"))
        detail = f"{path} ({lines} line{'s' if lines != 1 else ''})"
    elif meta.kind == "edit" and path:
        edits = args.get("edits")
        detail = path + (f" ({len(edits)} edits)" if isinstance(edits, list) and len(edits) > 1 else "")
    elif meta.kind == "execute" and command:
        detail = _one_line(command, width)
        timeout = args.get("timeout")
        if isinstance(timeout, int | float) and not isinstance(timeout, bool):
            detail += f" (timeout {timeout:g}s)"
    elif meta.kind == "search" and first is not None and pattern:
        detail = pattern if first.listing else json.dumps(pattern, ensure_ascii=False)  # a regex: quoted
        where = _str(args, "path")
        if where:
            detail += f" in {where.removeprefix('@')}"
        glob = _str(args, "glob")
        if glob:
            detail += f" ({glob})"
    elif meta.kind == "search" and first is not None and first.listing:
        detail = path or "."
    else:
        detail = json.dumps(args, ensure_ascii=False, separators=(",", ":")) if args else ""
    return _one_line(f"{name} {detail}".strip(), width)


@dataclass(slots=True)
class PreviewLine:
    text: str
    kind: str  # "body", "more" (the "… N more lines" line), "notice", "status"


def result_preview(text: str, max_lines: int = RESULT_LINES) -> list[PreviewLine]:
    """The first ``max_lines`` lines of a result, a count of the rest, then every notice
    (``[Showing lines …]``, ``[Output too large …]``) and outcome line, never cut."""
    lines = text.rstrip("\n").splitlines() if text.strip() else []
    if not lines:
        return [PreviewLine("(no output)", "more")]
    special = [i for i, line in enumerate(lines) if NOTICE.match(line.strip()) or STATUS.match(line.strip())]
    special_set = set(special)
    body = [i for i in range(len(lines)) if i not in special_set]
    # blank lines before a notice are separators, not content
    while body and not lines[body[-1]].strip():
        body.pop()
    out = [PreviewLine(lines[i], "body") for i in body[:max_lines]]
    hidden = len(body) - max_lines
    if hidden > 0:
        out.append(PreviewLine(f"… {hidden} more line{'s' if hidden != 1 else ''}", "more"))
    for i in special:
        kind = "notice" if NOTICE.match(lines[i].strip()) else "status"
        out.append(PreviewLine(lines[i].strip(), kind))
    return out


def result_text(content: Iterable[Any]) -> str:
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(visible(block.text))
        elif isinstance(block, ImageContent):
            parts.append(f"(image, {block.mime_type})")
    return "\n".join(parts)


def notices_of(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if NOTICE.match(line.strip())]


def diff_lines(diff: str, limit: int = 8) -> tuple[list[str], int, int]:
    """The changed lines of a unified diff (first ``limit``), and the counts of added and
    removed lines."""
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    added = sum(1 for line in changed if line.startswith("+"))
    return changed[:limit], added, len(changed) - added


# --- the renderer ------------------------------------------------------------------------


@dataclass(slots=True)
class _Stream:
    kind: str  # "text" or "thinking"
    splitter: BlockSplitter


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
        self._streams: dict[int, _Stream] = {}
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

    def print_block(self, kind: str, block: str, *, continued: bool = False) -> None:
        block = visible(block)  # the model's text: no escape sequence reaches the terminal
        if continued and self._section == kind:
            pass  # the rest of a paragraph printed in parts: no blank line between them
        else:
            self._begin(kind)
        if kind == "thinking":
            self.console.print(Text(block, style="dim italic"))
            return
        if block.count("```") % 2 == 1 or block.count("~~~") % 2 == 1:
            block += "\n```"  # an answer cut off inside a code block
        self.console.print(self.trimmed(Markdown(block, hyperlinks=False)))

    def trimmed(self, renderable: Any) -> Segments:
        """``renderable`` without the blank lines rich puts around some elements (a list
        opens with one), and without padding to the full width: the blank lines between
        blocks are this renderer's to place."""
        lines = self.console.render_lines(renderable, self.console.options, pad=False)

        def blank(line: list[Segment]) -> bool:
            return not "".join(s.text for s in line).strip() and not any(s.style and s.style.bgcolor for s in line)

        while lines and blank(lines[0]):
            lines.pop(0)
        while lines and blank(lines[-1]):
            lines.pop()
        segments: list[Segment] = []
        for line in lines:
            line = list(line)
            # justified text is padded to the width with spaces: drop them (copy and paste)
            while line and not (line[-1].style and line[-1].style.bgcolor) and not line[-1].text.rstrip():
                line.pop()
            if line and not (line[-1].style and line[-1].style.bgcolor):
                last = line[-1]
                line[-1] = Segment(last.text.rstrip(), last.style, last.control)
            segments.extend(line)
            segments.append(Segment.line())
        return Segments(segments)

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
                self.print_block(stream.kind, block.text, continued=block.continued)
        elif kind in ("text_end", "thinking_end"):
            self._flush_stream(index)
        elif kind in ("toolcall_start", "toolcall_delta"):
            self.activity = "writing a tool call"
            call = inner.partial.content[index] if 0 <= index < len(inner.partial.content) else None
            if isinstance(call, ToolCall) and call.name:  # its arguments as parsed so far
                meta = self.tools.meta(call.name)
                self.writing_call = describe_call(call.name, meta, call.arguments or {}, self._width())
        elif kind == "toolcall_end":
            self.writing_call = ""
            self.activity = f"calling {inner.tool_call.name}"

    def _splitter(self) -> BlockSplitter:
        """Print a paragraph line by line once it is wider than the terminal."""
        return BlockSplitter(soft_limit=max(40, min(160, self.console.width - 8)))

    def live_pending(self) -> tuple[str, str]:
        """The newest stream's kind ("text", "thinking") and its text not printed yet."""
        for index in sorted(self._streams, reverse=True):
            stream = self._streams[index]
            pending = stream.splitter.pending_text()
            if pending.strip():
                return stream.kind, pending
        return "text", ""

    def _flush_stream(self, index: int) -> None:
        stream = self._streams.pop(index, None)
        if stream is None:
            return
        for block in stream.splitter.finish():
            self.print_block(stream.kind, block.text, continued=block.continued)

    def _flush_streams(self) -> None:
        for index in sorted(self._streams):
            self._flush_stream(index)

    def _on_message_end(self, event: Any) -> None:
        message = event.message
        if isinstance(message, AssistantMessage):
            self._flush_streams()
            self.writing_call = ""
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

    def _on_context_warning(self, event: Any) -> None:
        """One line per warning the runtime raises about the context (docs/interactive.md)."""
        self.note(f"context: {event.message}", "yellow")
        if event.kind == "auto_compaction_off":
            # the compaction_end that follows carries the same reason: say it once
            self._warned.add(event.message.removeprefix("automatic compaction is off: "))

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
