"""Everything heron writes under ``$HERON_HOME`` is private: folders 0700, files 0600.

The home holds sessions (everything the agent read), spilled tool output, checkpoints of
the project, the input history, caches of what servers answered, MCP tokens: a copy of
any of it must not be readable by other users because the user's umask is 022. Every
writer under the home goes through this module, the one place that knows the modes
(docs/configuration.md, "Files under HERON_HOME"); it sits in the lowest layer that writes
there (the session files), so every layer above can use it.

Folders are created 0700 (each missing parent too: ``mkdir``'s mode is filtered by the
umask and does not reach parents); files are created 0600 with ``O_CREAT``'s mode, never
widened afterwards; a file rewritten whole goes through a 0600 temporary file moved into
place, so a file an older version left 0644 is narrowed the first time it is written.
Programs heron runs to write there (``git`` for checkpoints) run with :data:`UMASK`.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
UMASK = 0o077  # for a program heron runs that writes under the home (git)


def private_dir(path: Path, *, narrow: bool = False) -> Path:
    """Create ``path`` (and missing parents) as 0700. ``narrow``: a folder that is heron's
    own (a spill folder, a shadow repository) is tightened to 0700 if it is ours and wider;
    never a folder the user may have chosen (a session file's, an export's). Returns ``path``."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=DIR_MODE)
        os.chmod(directory, DIR_MODE)  # mkdir's mode is filtered by the umask
    if not narrow:
        return path
    st = path.stat()
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, DIR_MODE)
    return path


def open_private(path: Path, flags: int = os.O_WRONLY | os.O_CREAT | os.O_EXCL) -> int:
    """``path`` opened with ``flags`` (default: a new file for writing, ``FileExistsError``
    if the name is taken); a file it creates is 0600, one it finds is narrowed to 0600.
    Its folder must exist (:func:`private_dir`)."""
    fd = os.open(path, flags, FILE_MODE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd


def ensure_private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600 if missing (its folder too), and narrow an
    existing one to 0600. Returns ``path``."""
    private_dir(path.parent)
    os.close(open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND))
    return path


def append_private(path: Path) -> int:
    """``path`` opened for appending (a log, a lock file): created 0600 with its folder when
    missing, narrowed to 0600 when found wider; the descriptor."""
    private_dir(path.parent)
    return open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)


def write_private_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` with mode 0600 (also when the file existed with a wider
    mode), atomically: a 0600 temporary file beside it, then moved into place. The folder
    is created 0700 when missing."""
    private_dir(path.parent)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = open_private(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_private_text(path: Path, text: str, errors: str = "strict") -> None:
    """:func:`write_private_bytes` of ``text`` in UTF-8 (``errors`` as ``str.encode``'s)."""
    write_private_bytes(path, text.encode("utf-8", errors))
