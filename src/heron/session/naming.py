"""How a session file is named: where it lives and what its name says.

``$HERON_HOME/sessions/<encoded cwd>/<ISO time>_<uuid>.jsonl`` (``HERON_HOME`` defaults to
``~/.heron``), named the way pi names them so the two tools' directories look alike:
the cwd without its leading slash, ``/``, ``\\`` and ``:`` replaced by ``-``, between
``--`` and ``--``; the ISO time with ``:`` and ``.`` replaced by ``-``.

A module of its own, below both the store (which names a new file) and the listing in
:mod:`heron.session.paths` (which opens files with the store), so neither imports the other
in a circle.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from heron.ai.models import heron_home as default_home

_SEPARATORS = re.compile(r"[/\\:]")
_LEADING = re.compile(r"^[/\\]")


def heron_home(home: str | os.PathLike[str] | None = None) -> Path:
    """``home`` when given (tests, ``--session`` in another home), else the user's."""
    return Path(home) if home is not None else default_home()


def sessions_root(home: str | os.PathLike[str] | None = None) -> Path:
    return heron_home(home) / "sessions"


def encode_cwd(cwd: str | os.PathLike[str]) -> str:
    """pi's directory name for a cwd: ``/home/me/proj`` -> ``--home-me-proj--``."""
    text = os.fspath(cwd)
    return "--" + _SEPARATORS.sub("-", _LEADING.sub("", text)) + "--"


def session_dir(cwd: str | os.PathLike[str], home: str | os.PathLike[str] | None = None) -> Path:
    return sessions_root(home) / encode_cwd(os.path.abspath(os.fspath(cwd)))


def session_file_name(timestamp: str, session_id: str) -> str:
    """``2025-12-09T00:53:29.825Z`` + uuid -> ``2025-12-09T00-53-29-825Z_<uuid>.jsonl``."""
    return f"{timestamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"


def new_session_path(
    cwd: str | os.PathLike[str], session_id: str, timestamp: str, home: str | os.PathLike[str] | None = None
) -> Path:
    return session_dir(cwd, home) / session_file_name(timestamp, session_id)


def session_id_of(path: Path) -> str:
    """The session uuid from a file name (what follows the first ``_``)."""
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    return stem.split("_", 1)[1] if "_" in stem else stem
