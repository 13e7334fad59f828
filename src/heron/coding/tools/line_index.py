"""Where line N of a big file starts, without loading the file: newline counts per block.

read's notices need the exact line count, so the first read of a file version counts
every newline in it: in Python (``bytes.count``, ~1 GB/s) for files under 64 MB, and with
``wc -lc`` in a child process (4-5 GB/s) above that, Python then scanning only the blocks
next to the requested line (see ``FastCount``). Without a working ``wc`` the Python scan
is used for every file. The read tool caches the :class:`LineIndex` per file version, so
later reads of a multi-GB log cost a block read or two.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from array import array
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from heron.agent.tools import ToolError

BLOCK_BYTES = 1 << 20


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
