"""Files heron writes for the user (exports, the input history) are private: 0600.

A session may hold secrets read from files or typed at the prompt; the session files are
0600 already, and a copy of the same text must not be world-readable because the user's
umask is 022.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_private_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` with mode 0600 (also when the file existed with a wider
    mode): the bytes are written to a 0600 temp file beside it, then moved into place."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def ensure_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 if missing, and narrow an existing one to 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)
