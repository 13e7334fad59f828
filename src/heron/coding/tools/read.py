"""read: a page of a text file, or an image, sized for the model's context.

The model pages through files with a 1-based ``offset`` and a ``limit``; every cut ends
with a notice that says exactly where to continue, so a truncated read is never mistaken
for the whole file. Files are never loaded whole: lines are counted in binary blocks
(:mod:`heron.coding.tools.line_index`), the requested page is found with a seek, and only
that page is decoded. Images are handled by :mod:`heron.coding.tools.images`.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heron.agent.tool_meta import PathUse, ToolMeta, arg_int, arg_str
from heron.agent.tools import AgentTool, ToolError, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.ai.types import ImageContent, TextContent
from heron.coding.tools.details import (
    ReadEmptyDetails,
    ReadImageDetails,
    ReadTextDetails,
    ReadUnchangedDetails,
    TruncationDetails,
)
from heron.coding.tools.env import ToolEnv, display_path, resolve_path
from heron.coding.tools.files import os_error, stat_regular_file
from heron.coding.tools.images import (
    IMAGE_MAX_BASE64_BYTES,
    IMAGE_MAX_DIMENSION,
    IMAGE_MAX_FILE_BYTES,
    image_mime,
    prepare_image,
)
from heron.coding.tools.line_index import (
    BLOCK_BYTES,
    FAST_COUNT,
    BinaryFile,
    FastCount,
    LineIndex,
    build_line_index,
    build_line_index_with_wc,
    line_start,
    wc_newlines,
)
from heron.coding.tools.read_source import SNIFF_BYTES, HeldText, held_text, is_content_stamp
from heron.coding.tools.schema_table import builtin_params
from heron.context.tool_output.limits import DEFAULT_LIMITS, ToolLimits, format_size
from heron.context.tool_output.truncate import cut_line

if TYPE_CHECKING:
    from heron.coding.tools.params import ReadParams

INDEX_CACHE_ENTRIES = 16

EMPTY_FILE = "(empty file)"

DESCRIPTION = (
    "Read a text file or an image (PNG, JPEG, GIF, WebP). Text comes from line `offset` (1-based), at most "
    "`limit` lines, capped at {max_lines} lines or {max_bytes}; a cut ends with a notice saying how to "
    "continue with offset/limit. Lines over {line_chars} characters are cut."
)
DIRECTORY_HINT = "List it with ls instead."


def describe(limits: ToolLimits) -> str:
    return DESCRIPTION.format(
        max_lines=limits.max_lines, max_bytes=format_size(limits.max_bytes), line_chars=limits.line_chars
    )


# --- sniffing -------------------------------------------------------------------

_CONTROL = [chr(c) for c in range(32) if chr(c) not in "\t\n\r\f\v\b\x1b"]


def looks_binary(head: bytes) -> bool:
    """NUL bytes, or mostly undecodable bytes and control characters: not text the model
    can use.

    A few bad bytes (a Latin-1 name in a UTF-8 file) still make a text file; it is read
    with replacement characters instead of being refused.
    """
    if b"\0" in head:
        return True
    text = head.decode("utf-8", "replace")
    if len(head) == SNIFF_BYTES:
        text = text.rstrip("\ufffd")  # a character cut by the sample's end is not evidence
    if not text:
        return False
    odd = text.count("\ufffd") + sum(text.count(c) for c in _CONTROL)
    return odd / len(text) > 0.3


def _is_text(head: bytes) -> bool:
    """Whether a file whose first bytes are ``head`` is read as text (not an image, not binary)."""
    return image_mime(head) is None and not looks_binary(head)


# --- the tool ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Page:
    """The part of a file one read shows and what stopped it, so the notice can tell the
    model how to continue."""

    lines: list[str]
    start: int
    end: int  # last line shown (start - 1 when nothing could be shown)
    used_bytes: int
    invalid_utf8: bool
    stopped_by: str | None  # "lines" | "bytes" | "limit" | None (reached the end)


def read_paths(arguments: Mapping[str, Any]) -> list[PathUse]:
    """The file a read call names, with the lines it asks for (its metadata)."""
    path = arg_str(arguments, "path")
    if path is None:
        return []
    return [PathUse(path, "read", offset=arg_int(arguments, "offset"), limit=arg_int(arguments, "limit"))]


class ReadTool(AgentTool["ReadParams"]):
    name = "read"
    parameters_ref = builtin_params("read")
    label = "Read"
    meta = ToolMeta(kind="read", paths=read_paths)
    description = describe(DEFAULT_LIMITS)

    def __init__(
        self,
        env: ToolEnv,
        *,
        image_max_dimension: int = IMAGE_MAX_DIMENSION,
        image_max_base64: int = IMAGE_MAX_BASE64_BYTES,
        image_max_file_bytes: int = IMAGE_MAX_FILE_BYTES,
        block_bytes: int = BLOCK_BYTES,
        fast_count: FastCount | None = FAST_COUNT,
    ) -> None:
        self.env = env
        self.image_max_dimension = image_max_dimension
        self.image_max_base64 = image_max_base64
        self.image_max_file_bytes = image_max_file_bytes
        self.block_bytes = block_bytes
        self.fast_count = fast_count  # None: always count lines in Python
        self.description = describe(env.limits)
        # Parallel reads run in worker threads and share the cache.
        self._indexes: OrderedDict[str, LineIndex] = OrderedDict()
        self._indexes_lock = threading.Lock()

    async def execute(
        self, call_id: str, params: ReadParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        path = resolve_path(params.path, self.env.cwd)
        held = await held_text(self.env, path, _is_text)  # an editor's buffer (docs/editors.md)
        return await asyncio.to_thread(self._read, path, params, lambda: signal.aborted, held)

    # The whole read runs in a worker thread: a first scan of a big file takes a while and
    # must not stall the event loop (other tools, streaming, the UI).
    def _read(
        self, path: Path, params: ReadParams, aborted: Callable[[], bool], held: HeldText | None = None
    ) -> ToolResult:
        shown = display_path(path, self.env.cwd)
        st = stat_regular_file(path, shown, "read", DIRECTORY_HINT)
        if held is not None:  # the client's text: its size, and a content stamp as its version
            st = held.stat(st)
        size = st.st_size
        offset, limit = params.offset, params.limit
        if size == 0:
            if offset is not None and offset > 1:
                raise ToolError(f"Offset {offset} is beyond end of file (0 lines total)")
            self.env.reads.record(path, offset, limit, st.st_mtime_ns, size)
            empty = ReadEmptyDetails(path=shown, kind="empty", size=0, total_lines=0)
            return ToolResult.text(EMPTY_FILE, details=empty)
        try:
            with held.open() if held is not None else open(path, "rb") as f:
                head = f.read(SNIFF_BYTES)
                mime = image_mime(head)
                if mime is not None:
                    return self._image(f, path, shown, st, mime, params)
                previous = self.env.reads.previous(path, offset, limit)
                if previous is not None and previous.mtime_ns == st.st_mtime_ns and previous.size == size:
                    at = time.strftime("%H:%M:%S", time.localtime(previous.at))
                    return ToolResult.text(
                        f"[File unchanged since you last read it at {at}; "
                        "its content is already in the conversation above.]",
                        details=ReadUnchangedDetails(
                            path=shown,
                            kind="unchanged",
                            size=size,
                            mtime_ns=st.st_mtime_ns,
                            previous_read_at=previous.at,
                        ),
                    )
                if looks_binary(head):
                    q = shlex.quote(shown)
                    raise ToolError(
                        f"{shown} looks like a binary file ({format_size(size)}), so it was not read. "
                        f"Inspect it with bash instead, e.g. `file {q}` or `xxd {q} | head -n 20`."
                    )
                result = self._text(f, path, shown, st, params, head, aborted)
        except IsADirectoryError as exc:
            raise ToolError(f"{shown} is a directory, not a file. {DIRECTORY_HINT}") from exc
        except OSError as exc:
            raise os_error(exc, path, shown) from exc
        self.env.reads.record(path, offset, limit, st.st_mtime_ns, size)
        if isinstance(result.details, dict):  # what the view's read index keys on
            result.details.setdefault("mtime_ns", st.st_mtime_ns)
            result.details.setdefault("size", size)
        return result

    def _use_wc(self, st: os.stat_result) -> bool:
        # wc counts the file on disk: not for a client's text (whose stamp is its version)
        fast = self.fast_count
        return fast is not None and st.st_size >= fast.min_bytes and not is_content_stamp(st.st_mtime_ns)

    def _index(
        self, f: BinaryFile, path: Path, st: os.stat_result, need: int, head: bytes, aborted: Callable[[], bool]
    ) -> LineIndex:
        key = str(path)
        with self._indexes_lock:
            cached = self._indexes.get(key)
            if cached is not None and cached.mtime_ns == st.st_mtime_ns and cached.size == st.st_size:
                self._indexes.move_to_end(key)
                return cached
        index = None
        if self.fast_count is not None and self._use_wc(st):
            index = build_line_index_with_wc(f, path, st, need, head, self.block_bytes, self.fast_count, aborted)
        if index is None:  # a small file, or no working wc
            index = build_line_index(f, st.st_mtime_ns, st.st_size, self.block_bytes, aborted)
        if index.size != st.st_size:  # changed while we scanned: do not trust it later
            return index
        if st.st_size > self.block_bytes:  # small files are cheaper to rescan than to remember
            with self._indexes_lock:
                self._indexes[key] = index
                if len(self._indexes) > INDEX_CACHE_ENTRIES:
                    self._indexes.popitem(last=False)
        return index

    def _text(
        self,
        f: BinaryFile,
        path: Path,
        shown: str,
        st: os.stat_result,
        params: ReadParams,
        head: bytes,
        aborted: Callable[[], bool],
    ) -> ToolResult:
        limits = self.env.limits
        start = params.offset or 1
        index = self._index(f, path, st, start - 1, head, aborted)
        total = index.total_lines
        if start > total:
            raise ToolError(f"Offset {start} is beyond end of file ({total} lines total)")

        count_suffix: Callable[[int], int | None] | None = None
        if not index.complete and self._use_wc(st):

            def count_suffix(at: int) -> int | None:
                return wc_newlines(f, path, st, at, aborted)

        def locate(line: int) -> int:
            return line_start(f, index, line, aborted, count_suffix, self.fast_count or FAST_COUNT)

        pos = locate(start)
        page = _read_page(f, pos, start, total, index.size, params.limit, limits.max_lines, limits.max_bytes)
        details = _text_details(shown, index.size, total, page, limits)
        if not page.lines:  # the first requested line alone is over the byte limit
            line_end = locate(start + 1) - 1 if start < total else index.size
            if start == total and index.ends_with_newline:
                line_end -= 1
            return _oversized_line(shown, start, total, line_end - pos, limits, details)

        out: list[str] = []
        cut = 0
        for line in page.lines:
            kept, was_cut = cut_line(line, limits.line_chars)
            cut += was_cut
            out.append(kept)
        details["lines_cut"] = cut
        large = index.size > limits.large_file_bytes and params.offset is None and params.limit is None
        if large and page.stopped_by in ("lines", "bytes"):
            details["large_file"] = True
        notices = _page_notices(page, total, index.size, limits, large)
        text = "\n".join(out)
        if notices:
            text += "\n\n" + "\n".join(notices)
        return ToolResult(content=[TextContent(text=text)], details=details)

    def _image(
        self, f: BinaryFile, path: Path, shown: str, st: os.stat_result, mime: str, params: ReadParams
    ) -> ToolResult:
        if st.st_size > self.image_max_file_bytes:
            raise ToolError(
                f"{shown} is a {mime} image of {format_size(st.st_size)}, too large to load "
                f"(limit {format_size(self.image_max_file_bytes)}). Make a smaller copy with bash first."
            )
        f.seek(0)
        data = f.read()
        prepared = prepare_image(data, mime, self.image_max_dimension, self.image_max_base64)
        line = f"Image {shown}: {mime}, {prepared.original_width}x{prepared.original_height}, {format_size(len(data))}"
        if prepared.changed:
            line += (
                f" (sent as {prepared.mime_type}, {prepared.width}x{prepared.height}, "
                f"{format_size(prepared.encoded_bytes)})"
            )
        self.env.reads.record(path, params.offset, params.limit, st.st_mtime_ns, st.st_size)
        details = ReadImageDetails(
            path=shown,
            kind="image",
            size=st.st_size,
            mime_type=prepared.mime_type,
            original_mime_type=mime,
            width=prepared.width,
            height=prepared.height,
            original_width=prepared.original_width,
            original_height=prepared.original_height,
            resized=prepared.changed,
        )
        return ToolResult(
            content=[TextContent(text=line + "."), ImageContent(data=prepared.data, mime_type=prepared.mime_type)],
            details=details,
        )


def _text_details(shown: str, size: int, total: int, page: _Page, limits: ToolLimits) -> ReadTextDetails:
    details = ReadTextDetails(
        path=shown,
        kind="text",
        size=size,
        total_lines=total,
        start_line=page.start,
        end_line=page.end,
        lines_cut=0,
        invalid_utf8=page.invalid_utf8,
        next_offset=page.end + 1 if page.end < total else None,
        truncation=None,
    )
    if page.stopped_by in ("lines", "bytes"):
        details["truncation"] = TruncationDetails(
            truncated=True,
            truncated_by="lines" if page.stopped_by == "lines" else "bytes",
            total_lines=total,
            total_bytes=size,
            output_lines=len(page.lines),
            output_bytes=page.used_bytes,
            max_lines=limits.max_lines,
            max_bytes=limits.max_bytes,
            last_line_partial=False,
            first_line_exceeds_limit=not page.lines,
        )
    elif page.stopped_by == "limit":
        details["remaining_lines"] = total - page.end
    return details


def _oversized_line(
    shown: str, start: int, total: int, line_bytes: int, limits: ToolLimits, details: ReadTextDetails
) -> ToolResult:
    """A line that alone is over the byte limit: say how big it is and how to see part of it."""
    q = shlex.quote(shown)
    skip = f"use offset={start + 1} to skip it, or " if start < total else ""
    notice = (
        f"[Line {start} of {total} is {format_size(line_bytes)}, over the {format_size(limits.max_bytes)} "
        f"limit; {skip}use bash to see part of it: sed -n '{start}p' {q} | head -c {limits.max_bytes}]"
    )
    details["line_bytes"] = line_bytes
    details["next_offset"] = start + 1 if start < total else None
    return ToolResult.text(notice, details=details)


def _page_notices(page: _Page, total: int, size: int, limits: ToolLimits, large: bool) -> list[str]:
    """The notices after a page: undecodable bytes, and where to continue."""
    notices: list[str] = []
    start, end, nxt = page.start, page.end, page.end + 1
    if page.invalid_utf8:
        notices.append(f"[Invalid UTF-8: undecodable bytes in lines {start}-{end} are shown as U+FFFD.]")
    if page.stopped_by in ("lines", "bytes") and large:
        notices.append(
            f"[File is {format_size(size)} ({total} lines). Showing lines {start}-{end}; "
            f"use offset={nxt} to continue, offset/limit to read any part, or grep to find what you need.]"
        )
    elif page.stopped_by == "lines":
        notices.append(f"[Showing lines {start}-{end} of {total}. Use offset={nxt} to continue.]")
    elif page.stopped_by == "bytes":
        notices.append(
            f"[Showing lines {start}-{end} of {total} ({format_size(limits.max_bytes)} limit). "
            f"Use offset={nxt} to continue.]"
        )
    elif page.stopped_by == "limit":
        notices.append(f"[{total - end} more lines in file. Use offset={nxt} to continue.]")
    return notices


def _read_page(
    f: BinaryFile, pos: int, start: int, total: int, size: int, limit: int | None, max_lines: int, max_bytes: int
) -> _Page:
    """Whole lines from byte ``pos`` that fit the line and byte limits.

    Reads at most ``max_bytes + 2`` bytes: a line that does not end inside that window
    cannot fit the budget, so nothing after it is needed.
    """
    window = min(limit, max_lines) if limit is not None else max_lines
    f.seek(pos)
    chunk = f.read(max_bytes + 2)
    parts = chunk.split(b"\n")
    if pos + len(chunk) >= size:
        if parts[-1] == b"":
            parts.pop()
    else:
        parts.pop()  # runs past the window: incomplete
    raw = b"\n".join(parts[:window])
    invalid = False
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        invalid = True
    candidates = text.split("\n") if parts else []
    if pos == 0 and candidates and candidates[0].startswith("\ufeff"):
        candidates[0] = candidates[0][1:]

    lines: list[str] = []
    used = 0
    stopped: str | None = None
    for i, line in enumerate(candidates):
        cost = len(line.encode("utf-8")) + (1 if i else 0)
        if used + cost > max_bytes:
            stopped = "bytes"
            break
        lines.append(line)
        used += cost
    end = start + len(lines) - 1
    if stopped is None and end < total:
        if len(lines) < window:
            stopped = "bytes"  # the next line did not end inside the window
        elif limit is not None and limit <= max_lines:
            stopped = "limit"
        else:
            stopped = "lines"
    return _Page(lines, start, end, used, invalid, stopped)
