"""Reading session and spill files into rows of the recall index (``heron.session.recall``).

What an entry contributes (its role, tool, text and spill file), reading a session file
from a byte offset line by line (only whole lines; malformed lines are skipped as the
session store skips them), and cutting spill files into chunks of lines.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from heron.agent.messages import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ExtensionMessage,
    OpaqueMessage,
)
from heron.agent.tools import inner_calls_text
from heron.ai.types import (
    AssistantMessage,
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
    SessionHeader,
    entry_from_json,
)
from heron.session.jsonl import loads_line
from heron.session.store import SessionStore

MAX_ENTRY_CHARS = 1_000_000  # text indexed per entry; the rest of a giant entry is left out
SPILL_CHUNK_LINES = 100
SPILL_CHUNK_CHARS = 16_000
SPILL_KEY = "budget_spill"  # a spilled result's details (heron.context.tool_output.results writes it)
# Searches and their results are not indexed: they would match the very query that finds them.
SEARCH_TOOL = "search_history"
_HASH_BYTES = 4096
_READ_CHUNK = 8 << 20

# (source, entry_id, role, tool, timestamp, line, line count, spill path, text)
Row = tuple[Any, ...]


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class Doc:
    role: str | None
    tool: str | None
    text: str
    spill: str | None = None


def _blocks_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.text for b in content if isinstance(b, TextContent))
    return ""


def _spill_of(details: object) -> str | None:
    if not isinstance(details, dict):
        return None
    spilled = details.get(SPILL_KEY)
    if isinstance(spilled, dict) and isinstance(spilled.get("spill_path"), str):
        return str(spilled["spill_path"])
    path = details.get("full_output_path")
    return path if isinstance(path, str) and path else None


def _assistant_doc(message: AssistantMessage) -> Doc:
    parts: list[str] = []
    tools: list[str] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ThinkingContent):
            parts.append(block.thinking)
        elif isinstance(block, ToolCall) and block.name != SEARCH_TOOL:
            tools.append(block.name)
            parts.append(f"{block.name} {json.dumps(block.arguments, ensure_ascii=False)}")
    if message.error_message:
        parts.append(message.error_message)
    return Doc("assistant", ",".join(dict.fromkeys(tools)) or None, "\n".join(parts))


def _message_doc(message: object) -> Doc | None:
    if isinstance(message, UserMessage):
        return Doc("user", None, _blocks_text(message.content))
    if isinstance(message, AssistantMessage):
        return _assistant_doc(message)
    if isinstance(message, ToolResultMessage):
        if message.tool_name == SEARCH_TOOL:
            return None
        inner = inner_calls_text(message.details)  # a script's calls of the other tools
        body = _blocks_text(message.content) + (f"\n\n{inner}" if inner else "")
        return Doc("toolResult", message.tool_name, body, _spill_of(message.details))
    if isinstance(message, BashExecutionMessage):
        return Doc("bashExecution", "bash", f"{message.command}\n{message.output}", message.full_output_path)
    if isinstance(message, ExtensionMessage):
        return Doc("custom", message.custom_type or None, _blocks_text(message.content))
    if isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
        return Doc(message.role, None, message.summary)
    if isinstance(message, OpaqueMessage):
        return Doc(message.role, None, json.dumps(message.raw, ensure_ascii=False))
    return None


def entry_doc(entry: Entry) -> Doc | None:
    """The searchable text of one entry, or None for entries without any (model changes,
    labels, extension state)."""
    doc: Doc | None
    if isinstance(entry, MessageEntry):
        doc = _message_doc(entry.message)
    elif isinstance(entry, CompactionEntry):
        doc = Doc("compaction", None, entry.summary)
    elif isinstance(entry, BranchSummaryEntry):
        doc = Doc("branch_summary", None, entry.summary)
    elif isinstance(entry, CustomMessageEntry):
        doc = Doc("custom", entry.custom_type or None, _blocks_text(entry.content))
    else:
        doc = None
    if doc is None or not doc.text.strip():
        return None
    if len(doc.text) > MAX_ENTRY_CHARS:
        return Doc(doc.role, doc.tool, doc.text[:MAX_ENTRY_CHARS], doc.spill)
    return doc


class SessionReader:
    """Reads entries from a session file into index rows, line by line from an offset."""

    def __init__(self, insert: Callable[[list[Row]], None], fh: BinaryIO, source_id: int, path: Path) -> None:
        self.insert = insert
        self.fh = fh
        self.source_id = source_id
        self.path = path
        self.header: SessionHeader | None = None
        self.version = 3
        self.done = 0
        self.lines = 0
        self.added = 0

    def read_all(self) -> None:
        self.fh.seek(0)
        first = self.fh.readline()
        if not first.endswith(b"\n"):
            return  # not even a whole header yet
        try:
            data = loads_line(first)
            if isinstance(data, dict) and data.get("type") == "session":
                self.header = SessionHeader.from_json_dict(data)
        except (ValueError, UnicodeDecodeError):
            pass
        if self.header is not None and self.header.version < 3:
            self._read_migrated()
            return
        if self.header is None:
            self.read_from(0, 0, 3)
        else:
            self.read_from(len(first), 1, self.header.version)

    def _read_migrated(self) -> None:
        """Files older than version 3 need the store's migration (ids, roles); they are
        never appended to in place, so they are read whole each time they change."""
        assert self.header is not None
        self.version = self.header.version
        size = os.fstat(self.fh.fileno()).st_size
        with SessionStore.open(self.path, read_only=True) as store:
            rows = [self._row(entry, None) for entry in store]
            self._add([r for r in rows if r is not None])
        self.fh.seek(0)
        data = self.fh.read(size)
        self.done = data.rfind(b"\n") + 1
        self.lines = data.count(b"\n", 0, self.done)

    def read_from(self, offset: int, line: int, version: int) -> None:
        self.version = version
        self.done, self.lines = offset, line
        self.fh.seek(offset)
        carry = b""
        while True:
            chunk = self.fh.read(_READ_CHUNK)
            if not chunk:
                break
            data = carry + chunk
            end = data.rfind(b"\n") + 1
            carry = data[end:]
            if end:
                self._add_lines(data[:end])
        # whatever is left after the last newline is a line still being written: next time

    def _add_lines(self, data: bytes) -> None:
        rows: list[Row] = []
        for raw in data.splitlines(keepends=True):
            self.lines += 1
            self.done += len(raw)
            try:
                # decoded as the store decodes it: a lone surrogate (an escaped "\ud800" in
                # an older file) or a byte that is not UTF-8 becomes U+FFFD, since SQLite
                # cannot store text that UTF-8 cannot encode
                entry = entry_from_json(loads_line(raw))
            except (ValueError, UnicodeDecodeError):
                continue  # a malformed line: the store skips it too
            row = self._row(entry, self.lines)
            if row is not None:
                rows.append(row)
        self._add(rows)

    def _row(self, entry: Entry, line: int | None) -> Row | None:
        doc = entry_doc(entry)
        if doc is None:
            return None
        return (
            self.source_id,
            entry.id,
            doc.role,
            doc.tool,
            entry.timestamp,
            line,
            1 if line else None,
            doc.spill,
            doc.text,
        )

    def _add(self, rows: list[Row]) -> None:
        self.insert(rows)
        self.added += len(rows)


def hashes(fh: BinaryIO, done: int) -> tuple[str, str]:
    fh.seek(0)
    head = fh.read(min(done, _HASH_BYTES))
    start = max(0, done - _HASH_BYTES)
    fh.seek(start)
    tail = fh.read(done - start)
    return _digest(head), _digest(tail)


def same_bytes(fh: BinaryIO, done: int, head: str, tail: str, size: int) -> bool:
    """Whether the ``done`` bytes indexed so far are still the file's first bytes."""
    if size < done:
        return False
    return hashes(fh, done) == (head, tail)


def spill_chunks(text: str) -> Iterable[tuple[int, int, str]]:
    """(first line, line count, text) pieces of a spill file."""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        size = 0
        j = i
        while j < len(lines) and j - i < SPILL_CHUNK_LINES and (size < SPILL_CHUNK_CHARS or j == i):
            size += len(lines[j])
            j += 1
        yield i + 1, j - i, "".join(lines[i:j])
        i = j
