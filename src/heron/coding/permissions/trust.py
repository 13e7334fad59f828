"""Which projects the user trusts to run their own hooks and widen permissions.

A repository can ship ``.heron/settings.json`` with hooks (commands heron would run) and
allow rules. Those take effect only once the user said the project is theirs to trust:
``--trust`` (scripts) or the interactive question, remembered in
``$HERON_HOME/trusted-projects.json`` by the project's real path.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from heron.session.private_files import write_private_text

TRUST_FILE = "trusted-projects.json"


def _read(home: Path) -> list[str]:
    try:
        data = json.loads((home / TRUST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    projects = data.get("projects") if isinstance(data, dict) else None
    return [p for p in projects if isinstance(p, str)] if isinstance(projects, list) else []


def is_trusted(cwd: Path, home: Path) -> bool:
    return os.path.realpath(cwd) in _read(home)


def remember_trust(cwd: Path, home: Path) -> None:
    """Add the project to the trusted list (written atomically; errors propagate)."""
    projects = _read(home)
    real = os.path.realpath(cwd)
    if real in projects:
        return
    projects.append(real)
    write_private_text(home / TRUST_FILE, json.dumps({"projects": projects}, indent=2) + "\n")
