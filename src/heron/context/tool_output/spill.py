"""Spill files: where output too large for the context is kept, bounded, private, temporary.

Three rules, because a spill file holds whatever a command printed (secrets included) and
a runaway command can print without end (5 s of ``yes`` is about 2 GB):

* **Private.** Folders are created 0700 and files 0600, whatever the umask.
* **Capped.** A file keeps at most ``max_bytes`` (the ``spill.maxBytes`` setting, 100 MB by
  default): the first half and the last half of the output, with one marker line between
  them that says how much was left out. Writing is streamed, so memory stays small: the
  tail is kept in two rotating segment files next to the spill file, joined to it when
  the output ends.
* **Temporary.** :func:`remove_old_spills` deletes spill files older than
  ``spill.retentionDays`` (14 by default); the application calls it at start-up.

A spill is written while the tool runs, before any later step could redact its text, so
the coding layer installs a scrubber (:func:`set_scrub`) that every :class:`CappedSpill`
applies to the bytes on their way to disk; the last few bytes of each write are held
back until the next one, so a key split between two writes is still caught.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path
from typing import Protocol

from heron.session.private_files import open_private

SPILL_MAX_BYTES = 100 * 1024 * 1024
SPILL_RETENTION_DAYS = 14.0
_SEGMENT_SUFFIX = ".tail"


class Scrub(Protocol):
    """What a spill needs of a redactor: replace the secrets in bytes, and the length of
    the longest one (how much to hold back between writes)."""

    @property
    def longest(self) -> int: ...

    def data(self, data: bytes) -> bytes: ...


_scrub: Scrub | None = None


def set_scrub(scrub: Scrub | None) -> None:
    """Install the redactor every spill file written from now on goes through."""
    global _scrub
    _scrub = scrub


def gap_marker(omitted_bytes: int, omitted_lines: int, max_bytes: int) -> bytes:
    return (
        f"\n[... {omitted_bytes:,} bytes ({omitted_lines:,} lines) left out here: this file is capped at "
        f"{max_bytes:,} bytes and keeps the first and the last half of the output ...]\n"
    ).encode()


class CappedSpill:
    """Streams bytes into a spill file that never grows past about ``max_bytes``.

    The first ``max_bytes // 2`` bytes go straight to the file. After that the output goes
    to segment files of a quarter of ``max_bytes`` each; when a third segment would start,
    the oldest is deleted (its bytes and newlines are counted as left out). :meth:`close`
    appends the marker and the kept segments, so the file ends with between a quarter and
    a half of ``max_bytes`` of the output's end.
    """

    def __init__(self, path: Path, max_bytes: int = SPILL_MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max(4, max_bytes)
        self._head_left = self.max_bytes // 2
        self._segment_bytes = max(1, (self.max_bytes - self._head_left) // 2)
        self._fd: int | None = open_private(path)
        self._segments: list[tuple[Path, int, int]] = []  # path, bytes, newlines (closed ones)
        self._current: int | None = None  # fd of the open segment
        self._current_path: Path | None = None
        self._current_bytes = 0
        self._current_lines = 0
        self._serial = 0
        self.omitted_bytes = 0
        self.omitted_lines = 0
        self._scrub = _scrub
        self._held = b""  # the end of the last write, not yet on disk (it may start a key)

    @property
    def capped(self) -> bool:
        return self.omitted_bytes > 0

    def write(self, data: bytes) -> None:
        if self._fd is None:
            raise ValueError("spill file already closed")
        scrub = self._scrub
        if scrub is not None and (keep := scrub.longest - 1) >= 0:
            data = scrub.data(self._held + data)
            cut = max(0, len(data) - keep)
            data, self._held = data[:cut], data[cut:]
        self._write(data)

    def _write(self, data: bytes) -> None:
        assert self._fd is not None
        if self._head_left > 0:
            head = data[: self._head_left]
            _write_all(self._fd, head)
            self._head_left -= len(head)
            data = data[len(head) :]
        while data:
            if self._current is None or self._current_bytes >= self._segment_bytes:
                self._next_segment()
            assert self._current is not None
            piece = data[: self._segment_bytes - self._current_bytes]
            _write_all(self._current, piece)
            self._current_bytes += len(piece)
            self._current_lines += piece.count(b"\n")
            data = data[len(piece) :]

    def _next_segment(self) -> None:
        if self._current is not None:
            os.close(self._current)
            assert self._current_path is not None
            self._segments.append((self._current_path, self._current_bytes, self._current_lines))
        if len(self._segments) >= 2:
            oldest, size, lines = self._segments.pop(0)
            self.omitted_bytes += size
            self.omitted_lines += lines
            with contextlib.suppress(OSError):
                oldest.unlink()
        self._serial += 1
        self._current_path = self.path.with_name(f".{self.path.name}{_SEGMENT_SUFFIX}{self._serial}")
        self._current = open_private(self._current_path)
        self._current_bytes = self._current_lines = 0

    def close(self) -> None:
        """Join the kept tail to the file (after the marker, when something was left out)."""
        if self._fd is None:
            return
        if self._held:
            assert self._scrub is not None
            held, self._held = self._held, b""
            self._write(self._scrub.data(held))
        fd, self._fd = self._fd, None
        try:
            if self._current is not None:
                os.close(self._current)
                assert self._current_path is not None
                self._segments.append((self._current_path, self._current_bytes, self._current_lines))
                self._current = None
            if self.omitted_bytes:
                _write_all(fd, gap_marker(self.omitted_bytes, self.omitted_lines, self.max_bytes))
            with os.fdopen(os.dup(fd), "wb") as out:
                for segment, _, _ in self._segments:
                    with open(segment, "rb") as source:
                        shutil.copyfileobj(source, out, 1 << 20)
        finally:
            os.close(fd)
            for segment, _, _ in self._segments:
                with contextlib.suppress(OSError):
                    segment.unlink()
            self._segments.clear()

    def abandon(self) -> None:
        """Close without joining (after a write error): remove the segments."""
        with contextlib.suppress(OSError):
            if self._current is not None:
                os.close(self._current)
        if self._current_path is not None:
            self._segments.append((self._current_path, 0, 0))
        self._current = None
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        for segment, _, _ in self._segments:
            with contextlib.suppress(OSError):
                segment.unlink()
        self._segments.clear()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def remove_old_spills(root: Path, retention_days: float = SPILL_RETENTION_DAYS, now: float | None = None) -> int:
    """Delete spill files under ``root`` (``<heron home>/tool-output``) last written more
    than ``retention_days`` ago, then the session folders left empty; returns how many
    files went. Errors (a file removed meanwhile, a folder heron may not change) are
    skipped: cleaning up must never stop heron from starting."""
    cutoff = (time.time() if now is None else now) - retention_days * 86_400
    removed = 0
    try:
        sessions = list(os.scandir(root))
    except OSError:
        return 0
    for session in sessions:
        try:
            if not session.is_dir(follow_symlinks=False):
                continue
            entries = list(os.scandir(session.path))
        except OSError:
            continue
        left = len(entries)
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed += 1
                    left -= 1
            except OSError:
                continue
        if left == 0:
            with contextlib.suppress(OSError):
                os.rmdir(session.path)
    return removed
