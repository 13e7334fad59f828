"""Checkpoints of the working tree, so a turn's changes to code can be rewound.

Before each user turn (and after it, when a tool could have changed files) the project's
files are committed into a shadow git repository under ``$HERON_HOME/checkpoints/<project
hash>`` - outside the project, so its own git history, index and status are never touched.
Everything the turn changed is in it, whichever tool (edit, write or a bash command) changed
it. Files the project's ``.gitignore`` ignores, generated directories (``base.DEFAULT_EXCLUDES``),
heron's own home and files over 2 MB are left out (and so never rewound).

The ``git`` command runs the repository when it is installed, dulwich otherwise; both
write the same format (``base.py``), so either reads the other's snapshots. Snapshots
older than ``checkpoints.keepDays`` are pruned (``prune.py``). ``heron rewind``
(:mod:`heron.cli.rewind_cmd`) restores them through ``rewind.py``.

The names below are loaded on first use, so a run that takes no snapshot (``--no-session``)
never imports the shadow-repository code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from heron.coding.checkpoints.base import MAX_FILE_BYTES, CheckpointError, Snapshot, SnapshotInfo
    from heron.coding.checkpoints.prune import DEFAULT_KEEP_DAYS, prune_all
    from heron.coding.checkpoints.repo import Change, ShadowRepo
    from heron.coding.checkpoints.rewind import REWIND_TYPE, Turn, plan_code_rewind, rewind_conversation, turns
    from heron.coding.checkpoints.session import Checkpoints

_WHERE = {
    "MAX_FILE_BYTES": "base",
    "CheckpointError": "base",
    "Snapshot": "base",
    "SnapshotInfo": "base",
    "DEFAULT_KEEP_DAYS": "prune",
    "prune_all": "prune",
    "Change": "repo",
    "ShadowRepo": "repo",
    "REWIND_TYPE": "rewind",
    "Turn": "rewind",
    "plan_code_rewind": "rewind",
    "rewind_conversation": "rewind",
    "turns": "rewind",
    "Checkpoints": "session",
}

__all__ = [
    "DEFAULT_KEEP_DAYS",
    "MAX_FILE_BYTES",
    "REWIND_TYPE",
    "Change",
    "CheckpointError",
    "Checkpoints",
    "ShadowRepo",
    "Snapshot",
    "SnapshotInfo",
    "Turn",
    "plan_code_rewind",
    "prune_all",
    "rewind_conversation",
    "turns",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
