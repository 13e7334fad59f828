"""read: a page of a text file, or an image, sized for the model's context.

The model pages through files with a 1-based ``offset`` and a ``limit``; every cut ends
with a notice that says exactly where to continue, so a truncated read is never mistaken
for the whole file. Files are never loaded whole: lines are counted in binary blocks, the
requested page is found with a seek, and only that page is decoded.

The notices need the exact line count, so the first read of a file version counts every
newline in it: in Python (``bytes.count``, ~1 GB/s) for files under 64 MB, and with
``wc -lc`` in a child process (4-5 GB/s) above that, Python then scanning only the blocks
next to the requested line (see ``FastCount``). Without a working ``wc`` the Python scan
is used for every file. What was counted is cached per file version, so later reads of a
multi-GB log cost a block read or two.
"""

from __future__ import annotations

import asyncio
import base64
import io
import math
import os
import shlex
import shutil
import stat
import subprocess
import threading
import time
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import Field

from heron.agent.tools import AgentTool, ToolError, ToolParams, ToolResult, UpdateCallback
from heron.ai.abort import AbortSignal
from heron.ai.types import ImageContent, TextContent
from heron.coding.tools.env import ToolEnv, display_path, resolve_path
from heron.context.limits import DEFAULT_LIMITS, ToolLimits, format_size
from heron.context.truncate import cut_line

BLOCK_BYTES = 1 << 20
SNIFF_BYTES = 8192
INDEX_CACHE_ENTRIES = 16
IMAGE_MAX_DIMENSION = 2000
IMAGE_MAX_BASE64_BYTES = 4_500_000  # providers cap an image near 5 MB of base64
IMAGE_MAX_FILE_BYTES = 64 * 1024 * 1024  # larger files are not loaded to be downscaled

EMPTY_FILE = "(empty file)"

DESCRIPTION = (
    "Read a file. Text files are returned from a 1-based line `offset` (default 1), at most "
    "`limit` lines; output is capped at {max_lines} lines or {max_bytes}, whichever comes first, "
    "and a notice at the end says how to continue (use offset/limit to page through large files). "
    "Lines longer than {line_chars} characters are cut. Images (PNG, JPEG, GIF, WebP) are returned "
    "as images."
)


def describe(limits: ToolLimits) -> str:
    return DESCRIPTION.format(
        max_lines=limits.max_lines, max_bytes=format_size(limits.max_bytes), line_chars=limits.line_chars
    )


class ReadParams(ToolParams):
    path: str = Field(description="Path of the file to read (relative to the working directory, or absolute).")
    offset: int | None = Field(default=None, ge=1, description="Line number to start reading from (1-based).")
    limit: int | None = Field(default=None, ge=1, description="Maximum number of lines to read.")


# --- line index -----------------------------------------------------------------


class BinaryFile(Protocol):
    """What the scanner needs of a file: a buffered binary file or a ``BytesIO``, whose
    ``read(n)``/``readinto`` return short only at the end of the file."""

    def seek(self, offset: int, whence: int = 0, /) -> int: ...
    def read(self, size: int = -1, /) -> bytes: ...
    def readinto(self, buffer: bytearray, /) -> int: ...


@dataclass(frozen=True, slots=True)
class FastCount:
    """When and how a big file's lines are counted by ``wc`` rather than in Python.

    ``bytes.count`` scans about 1 GB/s; ``wc -l`` (GNU's is vectorised) 4-5 GB/s, bounded
    by copying the file out of the page cache. So for a big file ``wc`` counts the whole
    file, which gives the total the notices need, and Python scans only the blocks next
    to the requested line: from the start or from the end of the file, whichever is
    nearer, or from a ``wc`` count of the file's tail when the line is deep inside.
    """

    min_bytes: int = 64 * 1024 * 1024  # smaller files: one Python scan, no process to start
    python_scan_bytes: int = 32 * 1024 * 1024  # a Python scan this long (~50 ms) is never worth a wc probe
    wc_speedup: float = 4.0  # how much faster wc counts than bytes.count
    speculate_bytes: int = 32 * 1024 * 1024  # scanned in Python while wc counts the whole file
    max_probes: int = 8


FAST_COUNT = FastCount()
WC_POLL_S = 0.05  # how often a wait for wc checks for an abort
APPENDED_MAX_BYTES = 16 * 1024 * 1024  # appended to a log while wc counted it: counted again in Python


def _changed() -> ToolError:
    return ToolError("The file changed while it was being read; read it again.")


class LineIndex:
    """Newline counts at block boundaries of one version of a file.

    Boundary ``b`` is byte ``min(b * block, size)``; ``before[i]`` is the number of
    newlines before boundary ``at[i]`` (both ascending). A Python scan of the whole file
    knows every boundary. A big file counted by ``wc`` starts with the first and the last
    only (the total is known) and learns the boundaries around each line it is asked for,
    so later reads nearby cost a bisection and a block read.
    """

    __slots__ = ("at", "before", "block", "ends_with_newline", "lock", "mtime_ns", "size")

    def __init__(
        self, mtime_ns: int, size: int, block: int, at: array[int], before: array[int], ends_with_newline: bool
    ) -> None:
        self.mtime_ns = mtime_ns
        self.size = size
        self.block = block
        self.at = at
        self.before = before
        self.ends_with_newline = ends_with_newline
        self.lock = threading.Lock()  # parallel reads share the cached index and extend it

    @property
    def total_lines(self) -> int:
        """Lines as ``split_lines`` counts them: a trailing newline adds no empty line."""
        if self.size == 0:
            return 0
        return self.before[-1] + (0 if self.ends_with_newline else 1)

    @property
    def complete(self) -> bool:
        return len(self.at) == -(-self.size // self.block) + 1

    def bracket(
        self,
        f: BinaryFile,
        need: int,
        aborted: Callable[[], bool] | None = None,
        count_suffix: Callable[[int], int | None] | None = None,
        policy: FastCount = FAST_COUNT,
    ) -> tuple[int, int]:
        """(block, newlines before it) of the block holding newline number ``need``
        (``1 <= need <=`` the total), scanning the unknown stretch around it first.

        ``count_suffix(byte)`` counts the newlines from ``byte`` to the end (with ``wc``);
        it is used when the stretch is long and the line far from both of its ends.
        """
        probes = 0
        with self.lock:
            while True:
                i = bisect_left(self.before, need) - 1
                a, c = self.at[i], self.at[i + 1]
                if c == a + 1:
                    return a, self.before[i]
                ba, bc = self.before[i], self.before[i + 1]
                est = a + (c - a) * (need - ba) / (bc - ba)  # where the line would be if lines were even
                dist = min(est - a, c - est) * self.block  # bytes Python would scan from the nearer end
                m = min(max(round(est), a + 1), c - 1)
                if (
                    count_suffix is not None
                    and probes < policy.max_probes
                    and dist > policy.python_scan_bytes
                    and self.size - m * self.block <= policy.wc_speedup * dist
                ):
                    probes += 1
                    after = count_suffix(m * self.block)
                    if after is not None:
                        self._insert(i + 1, [(m, self.before[-1] - after)])
                        continue
                    count_suffix = None  # wc failed: scan instead
                self._scan(f, i, need, est - a <= c - est, aborted)

    def _scan(self, f: BinaryFile, i: int, need: int, forward: bool, aborted: Callable[[], bool] | None) -> None:
        """Count blocks between boundaries ``at[i]`` and ``at[i + 1]`` from one end until
        newline ``need`` is bracketed by two adjacent known boundaries."""
        a, c = self.at[i], self.at[i + 1]
        buf = bytearray(self.block)
        found: list[tuple[int, int]] = []
        if forward:
            b, count = a, self.before[i]
            while b + 1 < c and count < need:
                count += count_block(f, b, self.block, self.size, buf, aborted)
                b += 1
                found.append((b, count))
        else:
            b, count = c, self.before[i + 1]
            while b - 1 > a and count >= need:
                b -= 1
                count -= count_block(f, b, self.block, self.size, buf, aborted)
                found.append((b, count))
            found.reverse()
        self._insert(i + 1, found)

    def _insert(self, pos: int, found: list[tuple[int, int]]) -> None:
        if not found:
            return
        counts = [n for _, n in found]
        if counts != sorted(counts) or counts[0] < self.before[pos - 1] or counts[-1] > self.before[pos]:
            raise _changed()  # counts that do not fit between their neighbours
        self.at[pos:pos] = array("q", [b for b, _ in found])
        self.before[pos:pos] = array("q", counts)


def count_block(
    f: BinaryFile, b: int, block: int, size: int, buf: bytearray, aborted: Callable[[], bool] | None = None
) -> int:
    """Newlines in block ``b`` of the file's first ``size`` bytes (a log may have grown
    since it was stat'ed: the bytes after ``size`` are not counted)."""
    if aborted is not None and aborted():
        raise ToolError("Read was aborted.")
    f.seek(b * block)
    length = min(block, size - b * block)
    if length == block:
        n = f.readinto(buf)
        count = buf.count(b"\n", 0, n)
    else:
        data = f.read(length)
        n, count = len(data), data.count(b"\n")
    if n != length:
        raise _changed()
    return count


def build_line_index(
    f: BinaryFile, mtime_ns: int, size: int, block: int = BLOCK_BYTES, aborted: Callable[[], bool] | None = None
) -> LineIndex:
    """One sequential pass in fixed-size blocks: constant memory, whatever the file size."""
    before = array("q", [0])
    buf = bytearray(block)
    count = 0
    last = b""
    f.seek(0)
    read = 0
    while read < size:
        if aborted is not None and aborted():
            raise ToolError("Read was aborted.")
        n = f.readinto(buf)
        if not n:
            break
        count += buf.count(b"\n", 0, n)
        before.append(count)
        last = bytes(buf[n - 1 : n])
        read += n
    return LineIndex(mtime_ns, read, block, array("q", range(len(before))), before, last == b"\n")


def _start_wc(path: Path, st: os.stat_result, start: int) -> subprocess.Popen[bytes] | None:
    """``wc -lc`` counting the file from byte ``start`` (its stdin is a descriptor of its
    own, seeked there), or None when there is no ``wc`` or the path names another file now."""
    wc = shutil.which("wc")
    if wc is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return None
        os.lseek(fd, start, os.SEEK_SET)
        return subprocess.Popen(
            [wc, "-lc"], stdin=fd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"}
        )
    except OSError:
        return None
    finally:
        os.close(fd)


def _finish_wc(
    f: BinaryFile, proc: subprocess.Popen[bytes], start: int, size: int, aborted: Callable[[], bool] | None
) -> int | None:
    """Newlines in bytes ``[start, size)`` from what ``wc`` printed, or None when it failed.

    A log appended to since it was stat'ed was counted up to its new end: the appended
    bytes (if not too many) are counted again here and taken off. Fewer bytes than
    ``size - start`` means the file was truncated: None.
    """
    try:
        while True:
            try:
                out, _ = proc.communicate(timeout=WC_POLL_S)
                break
            except subprocess.TimeoutExpired:
                if aborted is not None and aborted():
                    raise ToolError("Read was aborted.") from None
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.communicate()
    fields = out.split()
    if proc.returncode != 0 or len(fields) < 2 or not (fields[0].isdigit() and fields[1].isdigit()):
        return None
    lines, end = int(fields[0]), start + int(fields[1])
    if not size <= end <= size + APPENDED_MAX_BYTES:
        return None
    f.seek(size)
    while end > size and lines >= 0:
        if aborted is not None and aborted():
            raise ToolError("Read was aborted.")
        data = f.read(min(BLOCK_BYTES, end - size))
        if not data:
            return None
        lines -= data.count(b"\n")
        size += len(data)
    return lines if lines >= 0 else None


def wc_newlines(
    f: BinaryFile, path: Path, st: os.stat_result, start: int, aborted: Callable[[], bool] | None = None
) -> int | None:
    """Newlines from byte ``start`` to ``st.st_size``, counted by ``wc``; None when ``wc``
    is missing or fails (the caller scans in Python instead)."""
    proc = _start_wc(path, st, start)
    return None if proc is None else _finish_wc(f, proc, start, st.st_size, aborted)


def build_line_index_with_wc(
    f: BinaryFile,
    path: Path,
    st: os.stat_result,
    need: int,
    head: bytes,
    block: int = BLOCK_BYTES,
    policy: FastCount = FAST_COUNT,
    aborted: Callable[[], bool] | None = None,
) -> LineIndex | None:
    """The total from ``wc``, plus what Python scans while ``wc`` runs: blocks from the start
    until newline ``need`` is passed, or from the end when ``head`` (the first bytes)
    suggests that line is in the second half. None when ``wc`` cannot count the file.
    """
    size = st.st_size
    blocks = -(-size // block)
    proc = _start_wc(path, st, 0)
    if proc is None:
        return None
    known: dict[int, int] = {0: 0}  # boundary -> newlines before it
    tail: dict[int, int] = {}  # boundary -> newlines after it
    try:
        forward = need * len(head) / max(1, head.count(b"\n")) < size / 2
        budget = policy.speculate_bytes // block
        buf = bytearray(block)
        b, count = (0, 0) if forward else (blocks, 0)
        while budget > 0 and proc.poll() is None:
            budget -= 1
            if forward:
                if count >= need or b == blocks:
                    break
                count += count_block(f, b, block, size, buf, aborted)
                b += 1
                known[b] = count
            else:
                if b == 0:
                    break
                b -= 1
                count += count_block(f, b, block, size, buf, aborted)
                tail[b] = count
        total = _finish_wc(f, proc, 0, size, aborted)
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.communicate()
    if total is None:
        return None
    for boundary, after in tail.items():
        known[boundary] = total - after
    if known.setdefault(blocks, total) != total:
        raise _changed()
    at = sorted(known)
    before = [known[x] for x in at]
    if before != sorted(before):
        raise _changed()
    f.seek(size - 1)
    last = f.read(1)
    return LineIndex(st.st_mtime_ns, size, block, array("q", at), array("q", before), last == b"\n")


def line_start(
    f: BinaryFile,
    index: LineIndex,
    line: int,
    aborted: Callable[[], bool] | None = None,
    count_suffix: Callable[[int], int | None] | None = None,
    policy: FastCount = FAST_COUNT,
) -> int:
    """Byte offset where 1-based ``line`` begins (``line`` must exist)."""
    need = line - 1  # newlines before the line
    if need <= 0:
        return 0
    block_no, before = index.bracket(f, need, aborted, count_suffix, policy)
    f.seek(block_no * index.block)
    data = f.read(index.block)
    k = need - before  # the k-th newline of this block ends the previous line
    lo, hi, seen = 0, len(data), 0
    # Narrow [lo, hi) so that data[lo:hi] holds the k-th newline; each step counts only the
    # half it discards or keeps, so the whole search touches the block about once.
    while hi - lo > 1:
        mid = (lo + hi) // 2
        c = data.count(b"\n", lo, mid)
        if seen + c >= k:
            hi = mid
        else:
            seen += c
            lo = mid
    return block_no * index.block + lo + 1


# --- sniffing -------------------------------------------------------------------

_IMAGE_MIME = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}


def image_mime(head: bytes) -> str | None:
    """MIME type from magic bytes; extensions lie (and screenshots often have none)."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return _IMAGE_MIME["png"]
    if head.startswith(b"\xff\xd8\xff"):
        return _IMAGE_MIME["jpeg"]
    if head.startswith((b"GIF87a", b"GIF89a")):
        return _IMAGE_MIME["gif"]
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _IMAGE_MIME["webp"]
    return None


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


# --- images -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PreparedImage:
    data: str  # base64
    mime_type: str
    width: int
    height: int
    original_width: int
    original_height: int
    encoded_bytes: int
    changed: bool


def _b64_len(n: int) -> int:
    return 4 * math.ceil(n / 3)


def prepare_image(data: bytes, mime: str, max_dimension: int, max_base64: int) -> PreparedImage:
    """The image as the model gets it: within ``max_dimension`` on both sides and
    ``max_base64`` bytes once base64-encoded, sent untouched when it already fits."""
    from PIL import Image  # imported here: Pillow costs ~50 ms and most reads are text

    try:
        img = Image.open(io.BytesIO(data))
        width, height = img.size
        if width <= max_dimension and height <= max_dimension and _b64_len(len(data)) <= max_base64:
            img.verify()
            return PreparedImage(base64.b64encode(data).decode("ascii"), mime, width, height, width, height,
                                 len(data), False)
        img = Image.open(io.BytesIO(data))
        img.seek(0)
        img.load()
    except Exception as exc:  # Pillow raises many types for a bad file
        raise ToolError(f"The file looks like {mime} but could not be decoded: {exc}") from exc

    has_alpha = img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info)
    frame = img.convert("RGBA" if has_alpha else "RGB")
    scale = min(1.0, max_dimension / width, max_dimension / height)
    formats = ["PNG", "JPEG"] if has_alpha or mime in ("image/png", "image/gif") else ["JPEG", "PNG"]
    while True:
        size = (max(1, int(width * scale)), max(1, int(height * scale)))
        candidate = frame if size == frame.size else frame.resize(size, Image.Resampling.LANCZOS)
        for fmt in formats:
            for quality in (85, 70, 55, 40) if fmt == "JPEG" else (0,):
                out = io.BytesIO()
                if fmt == "JPEG":
                    flat = candidate
                    if candidate.mode == "RGBA":
                        flat = Image.new("RGB", candidate.size, (255, 255, 255))
                        flat.paste(candidate, mask=candidate.getchannel("A"))
                    flat.save(out, "JPEG", quality=quality, optimize=True)
                else:
                    candidate.save(out, "PNG")
                encoded = out.getvalue()
                if _b64_len(len(encoded)) <= max_base64:
                    return PreparedImage(
                        base64.b64encode(encoded).decode("ascii"),
                        "image/jpeg" if fmt == "JPEG" else "image/png",
                        size[0],
                        size[1],
                        width,
                        height,
                        len(encoded),
                        True,
                    )
        if size[0] <= 16 or size[1] <= 16:
            raise ToolError(f"The image could not be made small enough to send ({width}x{height}).")
        scale *= 0.75


# --- the tool ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Page:
    lines: list[str]
    start: int
    end: int  # last line shown (start - 1 when nothing could be shown)
    used_bytes: int
    invalid_utf8: bool
    stopped_by: str | None  # "lines" | "bytes" | "limit" | None (reached the end)


class ReadTool(AgentTool[ReadParams]):
    name = "read"
    label = "Read"
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
        self.parameters = ReadParams
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
        return await asyncio.to_thread(self._read, path, params, lambda: signal.aborted)

    # The whole read runs in a worker thread: a first scan of a big file takes a while and
    # must not stall the event loop (other tools, streaming, the UI).
    def _read(self, path: Path, params: ReadParams, aborted: Callable[[], bool]) -> ToolResult:
        shown = display_path(path, self.env.cwd)
        st = _stat(path, shown)
        size = st.st_size
        offset, limit = params.offset, params.limit
        if size == 0:
            if offset is not None and offset > 1:
                raise ToolError(f"Offset {offset} is beyond end of file (0 lines total)")
            self.env.reads.record(path, offset, limit, st.st_mtime_ns, size)
            return ToolResult.text(EMPTY_FILE, details={"path": shown, "kind": "empty", "size": 0, "total_lines": 0})
        try:
            with open(path, "rb") as f:
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
                        details={"path": shown, "kind": "unchanged", "size": size, "mtime_ns": st.st_mtime_ns,
                                 "previous_read_at": previous.at},
                    )
                if looks_binary(head):
                    q = shlex.quote(shown)
                    raise ToolError(
                        f"{shown} looks like a binary file ({format_size(size)}), so it was not read. "
                        f"Inspect it with bash instead, e.g. `file {q}` or `xxd {q} | head -n 20`."
                    )
                result = self._text(f, path, shown, st, params, head, aborted)
        except PermissionError as exc:
            raise ToolError(f"Permission denied: {shown}") from exc
        except IsADirectoryError as exc:
            raise ToolError(f"{shown} is a directory, not a file. List it with ls instead.") from exc
        except FileNotFoundError as exc:
            raise ToolError(f"File not found: {shown}") from exc
        except OSError as exc:
            raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from exc
        self.env.reads.record(path, offset, limit, st.st_mtime_ns, size)
        if isinstance(result.details, dict):  # what the view's read index keys on
            result.details.setdefault("mtime_ns", st.st_mtime_ns)
            result.details.setdefault("size", size)
        return result

    def _use_wc(self, st: os.stat_result) -> bool:
        return self.fast_count is not None and st.st_size >= self.fast_count.min_bytes

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
        if self.fast_count is not None and st.st_size >= self.fast_count.min_bytes:
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

        details: dict[str, Any] = {
            "path": shown,
            "kind": "text",
            "size": index.size,
            "total_lines": total,
            "start_line": start,
            "end_line": page.end,
            "lines_cut": 0,
            "invalid_utf8": page.invalid_utf8,
            "next_offset": page.end + 1 if page.end < total else None,
            "truncation": None,
        }
        if page.stopped_by in ("lines", "bytes"):
            details["truncation"] = {
                "truncated": True,
                "truncated_by": page.stopped_by,
                "total_lines": total,
                "total_bytes": index.size,
                "output_lines": len(page.lines),
                "output_bytes": page.used_bytes,
                "max_lines": limits.max_lines,
                "max_bytes": limits.max_bytes,
                "last_line_partial": False,
                "first_line_exceeds_limit": not page.lines,
            }
        elif page.stopped_by == "limit":
            details["remaining_lines"] = total - page.end

        if not page.lines:  # the first requested line alone is over the byte limit
            line_end = locate(start + 1) - 1 if start < total else index.size
            if start == total and index.ends_with_newline:
                line_end -= 1
            line_bytes = line_end - pos
            q = shlex.quote(shown)
            skip = f"use offset={start + 1} to skip it, or " if start < total else ""
            notice = (
                f"[Line {start} of {total} is {format_size(line_bytes)}, over the {format_size(limits.max_bytes)} "
                f"limit; {skip}use bash to see part of it: sed -n '{start}p' {q} | head -c {limits.max_bytes}]"
            )
            details["line_bytes"] = line_bytes
            details["next_offset"] = start + 1 if start < total else None
            return ToolResult.text(notice, details=details)

        out: list[str] = []
        cut = 0
        for line in page.lines:
            kept, was_cut = cut_line(line, limits.line_chars)
            cut += was_cut
            out.append(kept)
        details["lines_cut"] = cut

        notices: list[str] = []
        if page.invalid_utf8:
            notices.append(f"[Invalid UTF-8: undecodable bytes in lines {start}-{page.end} are shown as U+FFFD.]")
        nxt = page.end + 1
        large = index.size > limits.large_file_bytes and params.offset is None and params.limit is None
        if page.stopped_by in ("lines", "bytes") and large:
            notices.append(
                f"[File is {format_size(index.size)} ({total} lines). Showing lines {start}-{page.end}; "
                f"use offset={nxt} to continue, offset/limit to read any part, or grep to find what you need.]"
            )
            details["large_file"] = True
        elif page.stopped_by == "lines":
            notices.append(f"[Showing lines {start}-{page.end} of {total}. Use offset={nxt} to continue.]")
        elif page.stopped_by == "bytes":
            notices.append(
                f"[Showing lines {start}-{page.end} of {total} ({format_size(limits.max_bytes)} limit). "
                f"Use offset={nxt} to continue.]"
            )
        elif page.stopped_by == "limit":
            notices.append(f"[{total - page.end} more lines in file. Use offset={nxt} to continue.]")

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
        details = {
            "path": shown,
            "kind": "image",
            "size": st.st_size,
            "mime_type": prepared.mime_type,
            "original_mime_type": mime,
            "width": prepared.width,
            "height": prepared.height,
            "original_width": prepared.original_width,
            "original_height": prepared.original_height,
            "resized": prepared.changed,
        }
        return ToolResult(
            content=[TextContent(text=line + "."), ImageContent(data=prepared.data, mime_type=prepared.mime_type)],
            details=details,
        )


def _stat(path: Path, shown: str) -> os.stat_result:
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise ToolError(f"File not found: {shown}") from exc
    except PermissionError as exc:
        raise ToolError(f"Permission denied: {shown}") from exc
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{shown} is a directory, not a file. List it with ls instead.")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{shown} is not a regular file (a device, socket or pipe), so it was not read.")
    return st


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
