"""The errors of the session layer, in one place so the store's parts can share them."""

from __future__ import annotations

import os
from pathlib import Path


class SessionError(RuntimeError):
    pass


class SessionInUseError(SessionError):
    """Another process holds the session's writer lock."""

    def __init__(self, path: Path, pid: int | None) -> None:
        self.path = path
        self.pid = pid
        if pid == os.getpid():  # a library caller that opened the file twice
            super().__init__(f"session is already open in this process (close the other store first): {path}")
            return
        holder = f"pid {pid}" if pid is not None else "pid unknown"
        super().__init__(f"session is in use by another heron process ({holder}): {path}")


class SessionWriteError(SessionError):
    """The session could not be saved: what failed, where, and the OS error.

    Raised by every write of a store (append, creating the file, rewriting it) instead of
    a bare ``OSError``, so callers can tell "the session is not being saved" from any other
    failure and stop before doing work whose record would be lost. Once a store has raised
    it, the store refuses further appends (see :attr:`SessionStore.write_error`): writing
    later entries after a lost one would leave the file's tree with a hole in it."""

    def __init__(self, message: str, path: Path | None = None, cause: BaseException | None = None) -> None:
        self.path = path
        self.cause = cause
        super().__init__(message)


class SessionReadOnlyError(SessionWriteError):
    """Appending to a session opened read-only, or to a file heron must not write (a newer
    version than this heron knows)."""


def describe_os_error(exc: BaseException) -> str:
    """``[Errno 28] No space left on device`` without the file name (the caller names it)."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"[Errno {exc.errno}] {exc.strerror or exc}"
    return str(exc) or type(exc).__name__
