"""Where the report's window and threshold lines come from when no one passes them.

A session file records which model answered each request but not that model's window; the
model catalogue (built-ins plus ``$HERON_HOME/models.json``) knows it, and the settings know
the compaction reserve. Windows a server taught the session are in the file and win
(:mod:`heron.coding.report.data`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from heron.ai.models import ModelRegistry
from heron.coding.settings import load_settings


def catalogue_windows(home: Path) -> Callable[[str], int | None]:
    """``provider/id`` -> the catalogue's context window (None for a model it does not know)."""
    registry: ModelRegistry | None = None

    def lookup(model: str) -> int | None:
        nonlocal registry
        if registry is None:
            registry = ModelRegistry.load(home / "models.json")
        provider, _, model_id = model.partition("/")
        found = registry.get(provider, model_id) if model_id else None
        return found.context_window if found is not None and found.context_window > 0 else None

    return lookup


def configured_reserve(cwd: Path, home: Path) -> int:
    """The compaction reserve the settings of ``cwd`` give (capped per window by the policy)."""
    return load_settings(cwd, home).compaction.reserve_tokens
