"""Writing a session file: appends, creating the file, rewriting it, and the writer lock.

The durability rules (docs/sessions.md):

- one entry = one line = one ``os.write`` on an ``O_APPEND`` descriptor, so a crash leaves
  at most the last line torn; ``fsync=True`` also flushes each entry to the disk;
- a write that fails part way (a full disk stores what fits) is cut back to where the line
  started, so the file keeps only whole lines; when even that fails the next append first
  writes a newline, so it starts on a fresh line;
- one writer per file: writers take ``flock(LOCK_EX | LOCK_NB)`` and a second writer gets
  :class:`SessionInUseError` at once (it does not wait); readers never lock;
- a rewrite (after migration) goes to a temporary file, locked before it replaces the
  old one, so no other writer can slip in between and a failed rewrite changes nothing.

Every failure is raised as :class:`SessionWriteError` naming the file and the OS error.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from heron.session.errors import SessionInUseError, SessionWriteError, describe_os_error
from heron.session.private_files import private_dir


def holder_pid(fd: int) -> int | None:
    """The pid holding an flock on the file open on ``fd``, from ``/proc/locks`` (Linux)."""
    try:
        st = os.fstat(fd)
        key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                if "->" in parts:  # a waiter, not the holder
                    continue
                if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == key:
                    return int(parts[4])
    except (OSError, ValueError):
        return None
    return None


def lock(fd: int, path: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SessionInUseError(path, holder_pid(fd)) from None


def write_error(what: str, path: Path, exc: BaseException) -> SessionWriteError:
    """``cannot save the session (<what>): <path>: [Errno 28] No space left on device``."""
    return SessionWriteError(f"cannot save the session ({what}): {path}: {describe_os_error(exc)}", path, exc)


def _write_all(fd: int, data: bytes) -> None:
    """One ``os.write`` of ``data``; only if the system stored less (a full disk stores what
    fits) the rest is written, which then fails with the real reason (``ENOSPC``)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(f"short write: {len(data) - len(view)} of {len(data)} bytes")
        view = view[written:]


def open_for_append(path: Path) -> int:
    """The locked writer descriptor of an existing session file."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError | IsADirectoryError):
            raise
        raise write_error("opening the file for writing", path, exc) from None
    try:
        lock(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


class SessionWriter:
    """Appends to one session file on a locked descriptor."""

    def __init__(self, path: Path, fd: int | None, *, fsync: bool = False, needs_newline: bool = False) -> None:
        self.path = path
        self.fd = fd
        self.fsync = fsync
        self.needs_newline = needs_newline

    def append(self, line: bytes) -> None:
        """Write one line (one ``os.write``). On failure the file is cut back to its size
        before the write, so what was saved stays exactly as it was."""
        fd = self.fd
        if fd is None:
            raise SessionWriteError(f"cannot save the session: the file is closed: {self.path}", self.path)
        data = b"\n" + line if self.needs_newline else line
        try:
            start = os.lseek(fd, 0, os.SEEK_END)
        except OSError:
            start = -1
        try:
            _write_all(fd, data)  # one write per entry: O_APPEND makes it atomic w.r.t. other appends
            if self.fsync:
                os.fsync(fd)
        except OSError as exc:
            self._cut_back(start)
            raise write_error("appending an entry", self.path, exc) from None
        self.needs_newline = False

    def _cut_back(self, size: int) -> None:
        """Remove a partly written line (from ``size`` on); if that fails, make the next
        append start on a fresh line (the loader drops the torn line)."""
        if size >= 0:
            try:
                os.ftruncate(self.fd, size)  # type: ignore[arg-type]
                return
            except OSError:
                pass
        self.needs_newline = True

    def create(self, data: bytes) -> int:
        """Create the file (it must not exist), lock it and write ``data``; returns the
        descriptor. On failure the half-made file is removed."""
        fd = _create(self.path, data, fsync=self.fsync, locked=True)
        self.fd = fd
        self.needs_newline = False
        return fd

    def replace(self, data: bytes) -> int:
        """Write the whole file anew through a locked temporary file that replaces it;
        returns the new descriptor (the old one is closed). On failure nothing changed."""
        path = self.path
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        except OSError as exc:
            raise write_error("rewriting the file in the current version", path, exc) from None
        try:
            lock(fd, tmp)
            _write_all(fd, data)
            os.fsync(fd)
            os.replace(tmp, path)
        except BaseException as exc:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise write_error("rewriting the file in the current version", path, exc) from None
            raise
        old = self.fd
        self.fd = fd
        if old is not None:
            with contextlib.suppress(OSError):
                os.close(old)
        self.needs_newline = False
        return fd


def write_new_file(path: Path, data: bytes, *, fsync: bool = False) -> None:
    """Write a whole new session file (a fork); it must not exist yet."""
    os.close(_create(path, data, fsync=fsync, locked=False))


def _create(path: Path, data: bytes, *, fsync: bool, locked: bool) -> int:
    """A new file (0600, it must not exist) holding ``data``; its descriptor. On failure
    the half-made file is removed and the error names what failed and where."""
    try:
        private_dir(path.parent)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    except OSError as exc:
        raise write_error("creating the file", path, exc) from None
    try:
        if locked:
            lock(fd, path)
        _write_all(fd, data)
        if fsync:
            os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise write_error("creating the file", path, exc) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def line_places(lines: list[bytes]) -> tuple[list[int], list[int]]:
    """Offset and length (without the newline) of each line after the first (the header)
    in the file ``b"".join(lines)``."""
    offset = len(lines[0])
    offsets: list[int] = []
    lengths: list[int] = []
    for line in lines[1:]:
        offsets.append(offset)
        lengths.append(max(0, len(line) - 1))
        offset += len(line)
    return offsets, lengths
