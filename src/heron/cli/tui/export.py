"""``/export``: the current branch of a session as one self-contained HTML file.

Everything from the session is untrusted text (the model's output, file contents,
command output), so every value is escaped; assistant markdown goes through
markdown-it with raw HTML disabled (it escapes tags and refuses ``javascript:`` links)
and without images, so opening the file runs nothing and fetches nothing. Pasted
images are embedded as ``data:`` URIs, only for the four image types heron accepts.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import json
import re
from html import escape
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from heron.agent.messages import BashExecutionMessage, ExtensionMessage
from heron.agent.tools import inner_calls_text
from heron.ai.types import (
    AssistantMessage,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from heron.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    ModelChangeEntry,
    ThinkingLevelChangeEntry,
)
from heron.session.private_files import write_private_text
from heron.session.store import SessionStore

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
LONG_RESULT_LINES = 40  # results longer than this start folded

_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"]).disable("image")

STYLE = """
body { font: 15px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0; background: #f6f7f9;
       color: #1f2328; }
main { max-width: 960px; margin: 0 auto; padding: 24px; }
header { border-bottom: 1px solid #d0d7de; margin-bottom: 16px; }
header h1 { font-size: 20px; margin: 0 0 4px; }
header p { margin: 2px 0; color: #57606a; font-size: 13px; }
.msg { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: 10px 14px; margin: 10px 0; }
.role { font-size: 12px; font-weight: 600; text-transform: uppercase; color: #57606a; margin-bottom: 4px; }
.user { border-left: 4px solid #0969da; }
.assistant { border-left: 4px solid #8250df; }
.tool { border-left: 4px solid #6e7781; background: #fbfbfc; }
.error { border-left: 4px solid #cf222e; }
.error-text { color: #cf222e; }
.bash { border-left: 4px solid #1a7f37; }
.summary { border-left: 4px solid #bf8700; background: #fffbeb; }
.meta { color: #57606a; font-size: 12px; margin: 6px 0; }
pre { background: #f6f8fa; border: 1px solid #e1e4e8; border-radius: 4px; padding: 8px; overflow-x: auto;
      white-space: pre-wrap; word-break: break-word; font: 12.5px/1.45 ui-monospace, Menlo, Consolas, monospace; }
code { font: 12.5px ui-monospace, Menlo, Consolas, monospace; background: #f6f8fa; padding: 0 3px; }
pre code { background: none; padding: 0; }
.thinking { color: #6e7781; font-style: italic; }
.call { margin: 6px 0; }
.call-name { font-weight: 600; font-family: ui-monospace, Menlo, Consolas, monospace; }
details > summary { cursor: pointer; color: #57606a; font-size: 13px; }
img { max-width: 100%; border: 1px solid #d0d7de; }
table { border-collapse: collapse; } td, th { border: 1px solid #d0d7de; padding: 3px 8px; }
"""


def markdown_html(text: str) -> str:
    """Markdown to HTML with raw HTML escaped, unsafe links refused and images left as text."""
    return str(_md.render(text))


def _pre(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"


def _image(block: ImageContent) -> str:
    if block.mime_type not in IMAGE_TYPES:
        return f'<p class="meta">(image of type {escape(block.mime_type)} not embedded)</p>'
    try:
        base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        return '<p class="meta">(image with invalid data not embedded)</p>'
    return f'<img alt="image" src="data:{block.mime_type};base64,{block.data}">'


def _content(content: str | list[Any], *, markdown: bool = False) -> str:
    if isinstance(content, str):
        return markdown_html(content) if markdown else _pre(content)
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(markdown_html(block.text) if markdown else _pre(block.text))
        elif isinstance(block, ImageContent):
            parts.append(_image(block))
    return "".join(parts)


def _box(css: str, role: str, body: str, anchor: str | None = None) -> str:
    ident = f' id="{escape(anchor)}"' if anchor else ""
    return f'<section class="msg {css}"{ident}><div class="role">{escape(role)}</div>{body}</section>\n'


def _call(call: ToolCall) -> str:
    args = json.dumps(call.arguments, indent=2, ensure_ascii=False)
    return (
        f'<div class="call" id="call-{escape(call.id)}"><span class="call-name">{escape(call.name)}</span>'
        f"{_pre(args)}</div>"
    )


def _assistant(message: AssistantMessage) -> str:
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append(markdown_html(block.text))
        elif isinstance(block, ThinkingContent):
            if block.thinking.strip():
                parts.append(f'<details class="thinking"><summary>thinking</summary>{_pre(block.thinking)}</details>')
        elif isinstance(block, ToolCall):
            parts.append(_call(block))
    if message.stop_reason == StopReason.ERROR:
        parts.append(f'<p class="error-text">error: {escape(message.error_message or "the request failed")}</p>')
    elif message.stop_reason == StopReason.ABORTED:
        parts.append('<p class="meta">(aborted)</p>')
    usage = message.usage
    meta = f"{message.provider}/{message.model}"
    if usage.input or usage.output:
        meta += f" · in {usage.input:,} · out {usage.output:,}"
    if usage.cost.total:
        meta += f" · ${usage.cost.total:.4f}"
    parts.append(f'<p class="meta">{escape(meta)}</p>')
    css = "assistant error" if message.stop_reason == StopReason.ERROR else "assistant"
    return _box(css, "assistant", "".join(parts))


def _tool_result(message: ToolResultMessage) -> str:
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
    images = "".join(_image(b) for b in message.content if isinstance(b, ImageContent))
    lines = text.count("\n") + 1 if text else 0
    label = f"{message.tool_name} result" + (" (error)" if message.is_error else "") + f" · {lines} lines"
    opened = "" if lines > LONG_RESULT_LINES else " open"
    body = f"<details{opened}><summary>{escape(label)}</summary>{_pre(text)}{images}</details>"
    if inner := inner_calls_text(message.details):  # a script's calls: in the session, never in the context
        body += f"<details><summary>inner tool calls</summary>{_pre(inner)}</details>"
    css = "tool error" if message.is_error else "tool"
    return _box(css, f"tool result: {message.tool_name}", body, anchor=f"result-{message.tool_call_id}")


def _bash(message: BashExecutionMessage) -> str:
    body = _pre(f"$ {message.command}\n{message.output}")
    notes: list[str] = []
    if message.cancelled:
        notes.append("cancelled")
    elif message.exit_code not in (None, 0):
        notes.append(f"exit code {message.exit_code}")
    if message.truncated and message.full_output_path:
        notes.append(f"output truncated; full output in {message.full_output_path}")
    if message.exclude_from_context:
        notes.append("not in the model's context (!!)")
    if notes:
        body += f'<p class="meta">{escape("; ".join(notes))}</p>'
    return _box("bash", "user shell command", body)


def render_entry(entry: Entry) -> str:
    if isinstance(entry, MessageEntry):
        message = entry.message
        if isinstance(message, UserMessage):
            return _box("user", "user", _content(message.content))
        if isinstance(message, AssistantMessage):
            return _assistant(message)
        if isinstance(message, ToolResultMessage):
            return _tool_result(message)
        if isinstance(message, BashExecutionMessage):
            return _bash(message)
        if isinstance(message, ExtensionMessage):
            return (
                _box("user", f"message ({message.custom_type})", _content(message.content)) if message.display else ""
            )
        return ""
    if isinstance(entry, CompactionEntry):
        body = markdown_html(entry.summary)
        body += f'<p class="meta">{escape(f"compacted ~{entry.tokens_before:,} tokens of history")}</p>'
        return _box("summary", "compaction summary", body)
    if isinstance(entry, BranchSummaryEntry):
        return _box("summary", "summary of a branch left behind", markdown_html(entry.summary))
    if isinstance(entry, CustomMessageEntry):
        return _box("user", f"message ({entry.custom_type})", _content(entry.content)) if entry.display else ""
    if isinstance(entry, ModelChangeEntry):
        return f'<p class="meta">{escape(f"model: {entry.provider}/{entry.model_id}")}</p>\n'
    if isinstance(entry, ThinkingLevelChangeEntry):
        return f'<p class="meta">{escape(f"thinking level: {entry.thinking_level}")}</p>\n'
    return ""


def export_html(store: SessionStore, *, model: str | None = None) -> str:
    """The branch from the root to the leaf, as a complete HTML document."""
    header = store.header
    name = store.name
    title = name or f"heron session {header.id[:8]}"
    entries = store.path_to(store.leaf_id) if store.leaf_id is not None else []
    facts = [
        f"session {header.id}",
        f"started {header.timestamp}",
        f"cwd {header.cwd}",
    ]
    if model:
        facts.append(f"model {model}")
    if store.path is not None:
        facts.append(f"file {store.path}")
    facts.append(f"exported {_dt.datetime.now().astimezone().isoformat(timespec='seconds')}")
    body = "".join(render_entry(entry) for entry in entries)
    if not body:
        body = '<p class="meta">(no messages yet)</p>'
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; '
        "style-src 'unsafe-inline'\">\n"
        f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n"
        f"<header><h1>{escape(title)}</h1>"
        + "".join(f"<p>{escape(fact)}</p>" for fact in facts)
        + "</header>\n"
        + body
        + "</main>\n</body>\n</html>\n"
    )


def default_export_path(cwd: Path, session_id: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9-]", "", session_id)[:8] or "session"
    return cwd / f"heron-session-{safe}.html"


def write_export(store: SessionStore, path: Path, *, model: str | None = None) -> Path:
    """Write the export, mode 0600 (it holds the whole conversation); returns the absolute
    path. A parent directory that does not exist is an error, not created: a typo in
    the path should not leave the file somewhere unexpected."""
    path = path.expanduser()
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{path.parent}: no such directory (create it first, or choose another path)")
    if path.is_dir():
        raise IsADirectoryError(f"{path}: is a directory; give a file name")
    write_private_text(path, export_html(store, model=model))
    return path.resolve()
