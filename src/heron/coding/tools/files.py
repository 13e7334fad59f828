"""Looking at and replacing files: one stat helper for every tool, one way to write.

Errors are :class:`ToolError` messages the model can act on. A raw ``PermissionError:
[Errno 13] ...`` names neither what was refused nor why; here a refused path says which
directory on the way cannot be entered, when that is the reason.

Writing (``write`` and ``edit``) goes through :func:`replace_file`:

* A normal file is replaced atomically: the new bytes go to a temporary file in the same
  directory, which is renamed over the target, so a crash, a full disk or a concurrent
  reader never sees half a file. The file keeps its permission bits.
* A read-only file (no write permission for the user heron runs as, judged by its mode
  bits, so also when heron runs as root) is refused: a rename would replace it anyway,
  silently dropping the protection someone put there.
* A file with more than one hard link is written in place (truncate, write, fsync): a
  rename would give this name a new file and leave the other names with the old content.
  In place is not atomic, which the result says.
* Symbolic links are followed: the file they point to is changed and the link stays.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from heron.agent.tools import ToolError
from heron.coding.tools.read_source import content_stamp


def blocked_directory(path: Path) -> Path | None:
    """The first directory above ``path`` that this process may not enter, if any."""
    for parent in reversed(path.parents):
        try:
            st = parent.stat()
        except OSError:
            return parent
        if stat.S_ISDIR(st.st_mode) and not os.access(parent, os.X_OK):
            return parent
    return None


def permission_error(path: Path, shown: str, doing: str = "read") -> ToolError:
    """``Permission denied`` with the reason: an unreadable directory on the way, or the file."""
    blocked = blocked_directory(path)
    if blocked is not None:
        return ToolError(
            f"Permission denied: cannot {doing} {shown}, because the directory {blocked} cannot be entered "
            "(no search permission)."
        )
    return ToolError(f"Permission denied: cannot {doing} {shown} (its permissions do not allow it).")


def os_error(exc: OSError, path: Path, shown: str, doing: str = "read") -> ToolError:
    """The one translation of an ``OSError`` into a message for the model."""
    if isinstance(exc, PermissionError):
        return permission_error(path, shown, doing)
    if isinstance(exc, FileNotFoundError):
        return ToolError(f"File not found: {shown}")
    if isinstance(exc, NotADirectoryError):
        return ToolError(f"Cannot {doing} {shown}: part of its directory path is a file.")
    if isinstance(exc, IsADirectoryError):
        return ToolError(f"{shown} is a directory, not a file.")
    return ToolError(f"Cannot {doing} {shown}: {exc.strerror or exc}")


def stat_path(path: Path, shown: str, doing: str = "read", *, missing_ok: bool = False) -> os.stat_result | None:
    """``path.stat()`` (links followed); ``None`` for a missing path when ``missing_ok``."""
    try:
        return path.stat()
    except FileNotFoundError:
        if missing_ok:
            return None
        raise ToolError(f"File not found: {shown}") from None
    except NotADirectoryError:
        if doing == "write":
            raise ToolError(f"Cannot write {shown}: part of its directory path is a file.") from None
        raise ToolError(f"File not found: {shown}") from None
    except OSError as exc:
        raise os_error(exc, path, shown, doing) from None


def stat_regular_file(path: Path, shown: str, doing: str, directory_hint: str) -> os.stat_result:
    """The stat of an existing regular file, or the error saying what it is instead."""
    st = stat_path(path, shown, doing)
    assert st is not None
    check_regular(st, shown, doing, directory_hint)
    return st


def check_regular(st: os.stat_result, shown: str, doing: str, directory_hint: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{shown} is a directory, not a file. {directory_hint}")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{shown} is not a regular file (a device, socket or pipe), so it was not {doing}.")


def is_read_only(st: os.stat_result) -> bool:
    """Whether the mode bits deny this process writing (root: only when no one may write)."""
    if os.geteuid() == 0:
        return not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    if st.st_uid == os.geteuid():
        return not st.st_mode & stat.S_IWUSR
    if st.st_gid == os.getegid() or st.st_gid in os.getgroups():
        return not st.st_mode & stat.S_IWGRP
    return not st.st_mode & stat.S_IWOTH


@dataclass(frozen=True, slots=True)
class Written:
    """The version of a file after heron wrote it, so that a later edit can tell heron's own
    write from a change made by someone else."""

    mtime_ns: int
    size: int
    created: bool
    in_place: bool  # a hard-linked file, written through rather than replaced


def client_written(data: bytes, *, created: bool) -> Written:
    """The version of a file after a client took its new text (``ToolEnv.client_files``):
    the content stamp of that text, whether or not the client has saved it yet, so a
    following edit is checked against what the client holds (see ``read_source``)."""
    return Written(mtime_ns=content_stamp(data), size=len(data), created=created, in_place=False)


def replace_file(path: Path, shown: str, data: bytes, existing: os.stat_result | None) -> Written:
    """Give ``path`` the content ``data`` (see the module docstring for how).

    ``existing`` is the stat of the file (``None``: it does not exist yet and is created,
    with the mode the umask gives a new file).
    """
    target = Path(os.path.realpath(path))
    if existing is not None:
        if is_read_only(existing):
            raise ToolError(
                f"{shown} is read-only (mode {stat.S_IMODE(existing.st_mode):04o}), so it was not changed. "
                "If it should change, make it writable first (e.g. chmod u+w with bash)."
            )
        if existing.st_nlink > 1:
            return _write_in_place(target, shown, data)
    tmp = target.parent / f".{target.name}.{os.urandom(6).hex()}.tmp"
    try:
        # 0o666 lets the umask decide the mode of a new file, as any editor would.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except PermissionError:
        if blocked_directory(target) is not None:
            raise permission_error(target, shown, "write") from None
        raise ToolError(
            f"Permission denied: cannot write {shown}, because its directory {target.parent} is not writable."
        ) from None
    except OSError as exc:
        raise os_error(exc, target, shown, "write") from None
    try:
        try:
            _write_all(fd, data)
            if existing is not None:
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise os_error(exc, target, shown, "write") from None
        raise
    st = target.stat()
    return Written(st.st_mtime_ns, st.st_size, existing is None, False)


def _write_in_place(target: Path, shown: str, data: bytes) -> Written:
    try:
        fd = os.open(target, os.O_WRONLY)
    except OSError as exc:
        raise os_error(exc, target, shown, "write") from None
    try:
        _write_all(fd, data)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
        st = os.fstat(fd)
    except OSError as exc:
        raise os_error(exc, target, shown, "write") from None
    finally:
        os.close(fd)
    return Written(st.st_mtime_ns, st.st_size, False, True)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
